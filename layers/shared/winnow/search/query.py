"""What one search asks of the core: the query, how many results, the filters in the store's terms and
the scoring choices. The API maps its request model to this (``winnow.api.schemas.search``); tools and
benchmarks may build one directly, without HTTP."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from winnow.ports import FilterValue, SearchMode
from winnow.search.context import ContextMode

# Measured on passages, SciFact and at 5,000 and 50,000 chunks (training/NOTEBOOK.md, issues 24, 28, 46).
DEFAULT_CANDIDATES = 30
RERANKED_CANDIDATES = 30


def default_candidates(top_k: int, reranked: bool = False) -> int:
    """The candidates a search fetches when the request does not say: enough for the relevance model
    (or a re-ranker) to choose from. Why 30, not 15 (issue 46): the answering passage is then among a
    default request's candidates for 92 % of the passage questions, not 88 %, for about 5 ms a search
    (docs/quality.md). Each count has its own constant, as each was chosen on its own evidence."""
    return max(RERANKED_CANDIDATES if reranked else DEFAULT_CANDIDATES, 3 * top_k)


@dataclass(frozen=True)
class Query:
    """One search, already validated (the API's request model does that for callers)."""

    query: str
    top_k: int = 5
    candidates: int | None = None
    filters: Mapping[str, FilterValue] = field(default_factory=dict)
    mode: SearchMode = "hybrid"
    rerank: bool | None = None
    relevance_threshold: float | None = None
    score_threshold: float | None = None
    context: ContextMode = "none"

    def candidate_count(self, reranked: bool = False) -> int:
        """How many candidates this search fetches (the product path and the benchmarks' study path)."""
        return self.candidates if self.candidates is not None else default_candidates(self.top_k, reranked)
