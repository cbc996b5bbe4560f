"""``POST /answer``'s request model, and the response models the core returns (the OpenAPI document is
generated from these)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from winnow.answer.question import Question
from winnow.answer.results import AnswerResponse, AnswerTimings, Citation
from winnow.api.schemas.common import StrictInt
from winnow.api.schemas.search import SearchRequest, Usage

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

    def to_question(self) -> Question:
        """This request as the answer core reads it."""
        return Question(self.to_query(), max_answer_tokens=self.max_answer_tokens, memory=self.memory)
