"""``POST /answer``'s request and response models (the OpenAPI document is generated from these)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from winnow.api.schemas.common import StrictInt
from winnow.api.schemas.search import SearchRequest, SearchResult, Usage

__all__ = ["AnswerRequest", "AnswerResponse", "AnswerTimings", "Citation", "Usage"]


class AnswerRequest(SearchRequest):
    """The ``/search`` fields, validated the same way, plus the answer's length cap."""

    max_answer_tokens: StrictInt | None = Field(
        default=None,
        ge=16,
        le=4096,
        description="Most tokens the answer may use; default from configuration.",
    )
    context: Literal["none", "neighbours", "section"] = Field(
        default="neighbours",
        description="As in /search, but on by default: the model reads the text around each passage.",
    )
    memory: Annotated[bool, Field(strict=True)] = Field(
        default=True, description="false: neither read nor add to the user's long-term memory."
    )


class Citation(BaseModel):
    rank: int = Field(description="The cited result's rank: the answer's marker [rank].")
    chunk_id: str
    key: str
    title: str
    page: int | None
    section: str


class AnswerTimings(BaseModel):
    embed: float
    search: float
    rerank: float
    generate: float
    total: float


class AnswerResponse(BaseModel):
    query: str
    answer: str | None = Field(description="Null when no passage cleared the relevance threshold.")
    relevant: bool = Field(description="False when no passage was relevant: no model was called.")
    message: str
    citations: list[Citation] = Field(description="Exactly the results the answer cites, by rank.")
    results: list[SearchResult] = Field(description="The passages, exactly as /search returns them.")
    model: str | None = Field(description="The model that wrote the answer; null when none was called.")
    usage: Usage = Field(description="Model tokens of this request: the answer and any follow-up rewrite.")
    timings_ms: AnswerTimings
    query_used: str | None = Field(
        default=None, description="What was searched: the query, or a follow-up made standalone."
    )
    conversation_id: str | None = Field(
        default=None, description="The conversation this turn belongs to; null for a one-shot request."
    )
