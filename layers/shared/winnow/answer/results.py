"""What an answer returns: the answer, the results it cites and how long each step took. The core builds
these, and the API serves them as they are (``winnow.api.schemas.answer`` re-exports them, and the
OpenAPI document describes them)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from winnow.search.results import SearchResult, Usage


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
