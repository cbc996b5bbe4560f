"""``POST /search``'s request model, and the result models the core returns. The OpenAPI document is
generated from these (and the routes), committed as ``docs/openapi.json``, and a test fails when it
drifts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from winnow.api.schemas.common import StrictFloat, StrictInt, unicode_text
from winnow.api.schemas.filters import (
    MAX_FILTER_FRACTIONS,
    MAX_FILTER_VALUES,
    FilterCondition,
    port_filters,
    range_conditions,
)
from winnow.rules import CONVERSATION_ID_RULE, FIELD_NAME_RULE, is_conversation_id, is_field_name
from winnow.search.context import CONTEXT_CHARS
from winnow.search.query import DEFAULT_CANDIDATES, RERANKED_CANDIDATES, Query
from winnow.search.results import (
    AccessModel,
    ResultContext,
    SearchResponse,
    SearchResult,
    Timings,
    Usage,
)

__all__ = [
    "AccessModel",
    "ResultContext",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "Timings",
    "Usage",
]


def _default_candidates() -> str:
    """The default as the API states it: once, when a re-ranker does not change it."""
    if RERANKED_CANDIDATES == DEFAULT_CANDIDATES:
        return f"default max({DEFAULT_CANDIDATES}, 3 * top_k), with or without a re-ranker"
    return (
        f"default max({RERANKED_CANDIDATES}, 3 * top_k) when a re-ranker runs, "
        f"else max({DEFAULT_CANDIDATES}, 3 * top_k)"
    )


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to look for: 1 to 2,000 characters after trimming.")
    top_k: StrictInt = Field(default=5, ge=1, le=50, description="Most results to return.")
    candidates: StrictInt | None = Field(
        default=None,
        le=200,
        description="How many candidates each retriever brings before re-ranking: top_k to 200, "
        f"{_default_candidates()}.",
    )
    filters: dict[str, FilterCondition] = Field(
        default_factory=dict,
        max_length=20,
        description="Metadata field → value, list of values (any of; at most "
        f"{MAX_FILTER_VALUES}), or {{gte, lte}} for numbers; at most {MAX_FILTER_FRACTIONS} fractional "
        "numbers and ranges in all filters. "
        'Also `kind` ("text", "table" or "figure") and `ocr` (true for text read from scans).',
    )
    mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    rerank: Annotated[bool, Field(strict=True)] | None = Field(
        default=None, description="Default: on when a re-ranker is configured."
    )
    relevance_threshold: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Set: the minimum score of every returned passage. Unset: the default threshold is "
        "a gate (the best passage must clear it, else nothing is relevant) and the passages after the "
        "best need only the relevance floor; both are fitted with the embedding profile's relevance "
        "model, and a deployment's WINNOW_SEARCH_RELEVANCE_THRESHOLD replaces the gate (the floor is "
        "never above it). When the score is the relevance model's estimated probability, a threshold t "
        "drops passages with less than a t estimated chance of being relevant.",
    )
    score_threshold: StrictFloat | None = Field(
        default=None, ge=0, le=1, description="Minimum dense similarity, applied inside the vector search."
    )
    context: Literal["none", "neighbours", "section"] = Field(
        default="none",
        description='Text around each result, in its `context`: "neighbours" the chunk before and the chunk '
        'after in the document, "section" the rest of its own section; each side at most '
        f"{CONTEXT_CHARS} characters.",
    )
    conversation_id: str | None = Field(
        default=None,
        description="Continue this conversation (the id an earlier response returned): the query is read "
        "as a follow-up of its turns. Without it, a caller with a user id starts one. 404: not this "
        "user's; 400: the caller has no user id (docs/conversations.md).",
    )

    @field_validator("conversation_id")
    @classmethod
    def _conversation_id(cls, value: str | None) -> str | None:
        if value is not None and not is_conversation_id(value):
            raise ValueError(f"conversation_id must be {CONVERSATION_ID_RULE}")
        return value

    @field_validator("query")
    @classmethod
    def _query_length(cls, value: str) -> str:
        stripped = unicode_text(value).strip()
        if not stripped:
            raise ValueError("query must not be empty")
        if len(stripped) > 2000:
            raise ValueError("query must be at most 2,000 characters")
        return stripped

    @field_validator("filters")
    @classmethod
    def _filter_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not is_field_name(name):
                raise ValueError(
                    f"filter field {name[:40]!r} is not a metadata field name: use {FIELD_NAME_RULE}"
                )
        ranges = range_conditions(value)
        if ranges > MAX_FILTER_FRACTIONS:
            raise ValueError(
                f"filters hold {ranges} fractional numbers and ranges: at most {MAX_FILTER_FRACTIONS} in all "
                "(each is a range condition of its own); fewer filters, or one range such as "
                '{"gte": 1.5, "lte": 2.5} for neighbouring numbers'
            )
        return value

    def to_query(self) -> Query:
        """This request as the search core reads it: the filters in the store's terms."""
        return Query(
            query=self.query,
            top_k=self.top_k,
            candidates=self.candidates,
            filters=port_filters(self.filters),
            mode=self.mode,
            rerank=self.rerank,
            relevance_threshold=self.relevance_threshold,
            score_threshold=self.score_threshold,
            context=self.context,
        )

    @model_validator(mode="after")
    def _candidates_at_least_top_k(self) -> SearchRequest:
        if self.candidates is not None and self.candidates < self.top_k:
            raise ValueError("candidates must be at least top_k")
        return self
