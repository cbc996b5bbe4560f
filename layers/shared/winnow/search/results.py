"""What a search returns: passages with their scores, citations and context, and how long each step
took. The core builds these, and the API serves them as they are (``winnow.api.schemas.search``
re-exports them, and the OpenAPI document describes them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from winnow.access import AccessList, parse_access
from winnow.errors import InvalidMetadata
from winnow.search.context import CONTEXT_CHARS


class AccessModel(BaseModel):
    """Who may read a document besides the tenant's admins (``winnow.access``; names up to 256
    characters without spaces or commas, at most 200 per list)."""

    model_config = ConfigDict(extra="forbid")

    users: list[str] = Field(default_factory=list, description="User ids (the user claim, default sub).")
    groups: list[str] = Field(default_factory=list, description="Groups (the groups claim).")

    @model_validator(mode="after")
    def _names(self) -> AccessModel:
        try:
            parse_access({"users": self.users, "groups": self.groups})
        except InvalidMetadata as exc:
            raise ValueError(str(exc)) from exc
        return self

    def as_list(self) -> AccessList:
        return parse_access({"users": self.users, "groups": self.groups})


class ResultContext(BaseModel):
    """The text around a result in its document (``context`` in the request)."""

    before: str = Field(description=f"Text just before the passage, at most {CONTEXT_CHARS} characters.")
    after: str = Field(description=f"Text just after the passage, at most {CONTEXT_CHARS} characters.")


class Highlight(BaseModel):
    """One sentence (or pair of short lines) of ``text`` that best answers the question."""

    start: int = Field(ge=0, description="Offset of the first character in `text` (Unicode code points).")
    end: int = Field(
        ge=0, description="Offset just past the last character: the sentence is text[start:end]."
    )


class SearchResult(BaseModel):
    rank: int
    score: float = Field(
        description="Relevance in [0, 1]; results are ordered by it and relevance_threshold applies to it. "
        "With the re-ranker: the re-ranker's relevance score. Without: the estimated probability that the "
        "passage is relevant, from logistic models over the retrievers' evidence (cosine similarity, BM25 "
        "score) fitted per embedding model and search mode on an evaluation set (SciFact: on other "
        "documents an estimate carried over, not a guarantee); in each mode an order model sets the "
        "order and an answer model the best passage's score. For an embedding model with no fitted model: "
        "the dense cosine similarity (0 when negative)."
    )
    vector_score: float = Field(
        description="The retriever's own score, not a probability: cosine similarity in dense mode, BM25 "
        "score in sparse mode, reciprocal-rank-fusion score in hybrid mode (sum over the retrievers that "
        "returned the passage of 1/(k + rank), ranks from 0, k = WINNOW_SEARCH_RRF_K, default 60; the "
        "cosine similarity when the query has no keyword terms, e.g. only stop-words)."
    )
    chunk_id: str
    key: str
    title: str
    page: int | None
    section: str
    text: str
    metadata: dict[str, Any]
    kind: Literal["text", "table", "figure"] = Field(
        default="text",
        description='"table": rows of a table, one per line as "column: value" pairs. "figure": a chart, '
        "diagram or photo inside the document: its caption, alt text and the text read in it.",
    )
    figure_text: Literal["vision", "ocr", "caption"] | None = Field(
        default=None,
        description='A figure\'s text: "ocr" read in the image, "vision" described by a vision model, '
        '"caption" its caption and alt text only.',
    )
    image_url: str | None = Field(
        default=None,
        description="A figure's image: a short-lived URL (a presigned S3 GET in AWS, a signed `winnow serve` "
        "URL locally) that reads this one image; given only with the passage, to those who may read it.",
    )
    ocr: bool = Field(default=False, description="The text was read from a scanned page or image by OCR.")
    restricted: bool = Field(
        default=False, description="The document has an access list: not every member of the tenant reads it."
    )
    access: AccessModel | None = Field(
        default=None,
        description="Who may read a restricted document; shown only to those who may change it (the "
        "admin group and its listed users).",
    )
    context: ResultContext | None = Field(
        default=None, description="The text around the passage; null unless the request asked for `context`."
    )
    highlight: list[Highlight] = Field(
        default_factory=list,
        description="The sentences of `text` that best answer the question, best first, as offsets into "
        "`text` (never overlapping, always inside it); empty when none stands out.",
    )


class Timings(BaseModel):
    embed: float
    search: float
    rerank: float
    total: float


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int


class SearchResponse(BaseModel):
    query: str
    count: int
    relevant: bool
    message: str
    results: list[SearchResult]
    timings_ms: Timings
    relevance_threshold: float = Field(
        description="The threshold this search applied: the request's (to every result), else the "
        "deployment's default, which the best result must clear (else nothing is relevant)."
    )
    relevance_floor: float = Field(
        description="The least score of a result after the first: the request's threshold when it sets "
        "one, else the floor fitted with the relevance model (never above `relevance_threshold`), or the "
        "threshold when the scores are the re-ranker's or the cosine, for which no floor was fitted.",
    )
    query_used: str | None = Field(
        default=None, description="What was searched: the query, or a follow-up made standalone."
    )
    conversation_id: str | None = Field(
        default=None, description="The conversation this turn belongs to; null for a one-shot request."
    )
    usage: Usage | None = Field(
        default=None, description="Model tokens of a follow-up's rewrite; null when no model was called."
    )
