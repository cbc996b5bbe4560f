"""The search API's request and response models. The OpenAPI document is generated from these (and the
routes), committed as ``docs/openapi.json``, and a test fails when it drifts."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_FIELD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

# Strict numbers: JSON booleans and numeric strings are rejected, integers are accepted as floats.
StrictInt = Annotated[int, Field(strict=True)]
StrictFloat = Annotated[float, Field(strict=True)]
Scalar = Annotated[str, Field(strict=True, max_length=256)] | StrictInt | StrictFloat | bool


class RangeCondition(BaseModel):
    """A numeric range; either bound may be omitted, not both."""

    model_config = ConfigDict(extra="forbid")

    gte: StrictFloat | None = None
    lte: StrictFloat | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> RangeCondition:
        if self.gte is None and self.lte is None:
            raise ValueError("a range needs gte, lte or both")
        if self.gte is not None and self.lte is not None and self.gte > self.lte:
            raise ValueError("gte must not be greater than lte")
        return self


FilterCondition = Scalar | Annotated[list[Scalar], Field(min_length=1, max_length=100)] | RangeCondition


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to look for: 1 to 2,000 characters after trimming.")
    top_k: StrictInt = Field(default=5, ge=1, le=50, description="Most results to return.")
    candidates: StrictInt | None = Field(
        default=None,
        le=200,
        description="How many candidates each retriever brings before re-ranking: top_k to 200, "
        "default max(15, 3 * top_k).",
    )
    filters: dict[str, FilterCondition] = Field(
        default_factory=dict,
        max_length=20,
        description="Metadata field → value, list of values (any of), or {gte, lte} for numbers.",
    )
    mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    rerank: Annotated[bool, Field(strict=True)] | None = Field(
        default=None, description="Default: on when a re-ranker is configured."
    )
    relevance_threshold: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Minimum score of a returned passage; default from configuration "
        "(WINNOW_SEARCH_RELEVANCE_THRESHOLD, 0.22 unless set). Without a re-ranker the score is an "
        "estimated probability of relevance, so 0.22 drops passages with less than a 22 % estimated chance.",
    )
    score_threshold: StrictFloat | None = Field(
        default=None, ge=0, le=1, description="Minimum dense similarity, applied inside the vector search."
    )

    @field_validator("query")
    @classmethod
    def _query_length(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise ValueError("query must not be empty")
        if len(stripped) > 2000:
            raise ValueError("query must be at most 2,000 characters")
        return stripped

    @field_validator("filters")
    @classmethod
    def _filter_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not _FIELD.match(name):
                raise ValueError(f"filter field {name[:40]!r} is not a valid metadata field name")
        return value

    @model_validator(mode="after")
    def _candidates_at_least_top_k(self) -> SearchRequest:
        if self.candidates is None:
            self.candidates = min(200, max(15, 3 * self.top_k))
        elif self.candidates < self.top_k:
            raise ValueError("candidates must be at least top_k")
        return self


class SearchResult(BaseModel):
    rank: int
    score: float = Field(
        description="Relevance in [0, 1]; results are ordered by it and relevance_threshold applies to it. "
        "With the re-ranker: the re-ranker's relevance score. Without: the estimated probability that the "
        "passage is relevant, from a logistic model over the retrievers' evidence (cosine, BM25 score, "
        "ranks) fitted per embedding model on an evaluation set; the dense cosine for an embedding model "
        "with no fitted model."
    )
    vector_score: float = Field(
        description="The retriever's own score, not a probability: cosine similarity in dense mode, BM25 "
        "score in sparse mode, reciprocal-rank-fusion score in hybrid mode (sum over the two retrievers "
        "of 1/(k + rank), ranks from 0, k = WINNOW_SEARCH_RRF_K, default 60)."
    )
    chunk_id: str
    key: str
    title: str
    page: int | None
    section: str
    text: str
    metadata: dict[str, Any]


class Timings(BaseModel):
    embed: float
    search: float
    rerank: float
    total: float


class SearchResponse(BaseModel):
    query: str
    count: int
    relevant: bool
    message: str
    results: list[SearchResult]
    timings_ms: Timings


class DocumentStatusModel(BaseModel):
    key: str
    status: str
    chunks: int
    embedded: int
    reused: int
    error: str | None
    title: str | None
    source_type: str | None
    created_at: str | None
    updated: str | None


class DocumentsPage(BaseModel):
    documents: list[DocumentStatusModel]
    next_cursor: str | None


class Health(BaseModel):
    status: Literal["ok"]
    version: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody
    correlation_id: str
