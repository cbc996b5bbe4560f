"""What one answer asks of the core: the search for its passages, the answer's length cap and whether
the user's long-term memory takes part. The API maps its request model to this
(``winnow.api.schemas.answer``); tools may build one directly, without HTTP."""

from __future__ import annotations

from dataclasses import dataclass, replace

from winnow.search.query import Query


@dataclass(frozen=True)
class Question:
    """One question, already validated (the API's request model does that for callers)."""

    search: Query
    max_answer_tokens: int | None = None  # None: the configured default
    memory: bool = True  # in a conversation: read and add to the user's memories

    def searching(self, text: str) -> Question:
        """The same question with another search text (a follow-up made standalone)."""
        return replace(self, search=replace(self.search, query=text))
