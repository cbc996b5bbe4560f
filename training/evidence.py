"""Every candidate of a search with the evidence the relevance model reads, gathered through the search
service's own steps (``retrieve`` and ``evidence``), so the models are fitted on what a search sees."""

from __future__ import annotations

from typing import Any

from training import relevance_fit


def candidates(svc: Any, tenant: str, request: Any, *, as_searched: bool = False) -> list[tuple[Any, Any]]:
    """``(hit, Evidence)`` in retrieval order, before any model, threshold or ``top_k``: by default as
    many as the model orders (what it is fitted on); ``as_searched``: as many as a search fetches for
    this request (more when a re-ranker reads them), so its results are always some of these."""
    query = request.to_query()  # the API's request model, as the search core reads it
    caller = svc.caller(tenant)
    dense = svc.embedder.embed([query.query], "query")[0]
    sparse = svc.sparse.encode_query(query.query)
    retrieve = sparse if query.mode != "dense" else None
    wanted = svc.reranker is not None if query.rerank is None else query.rerank
    reranked = as_searched and wanted and svc.reranker is not None
    hits = svc.retrieve(caller, query, dense, retrieve, query.candidate_count(reranked), with_dense=True)
    # The candidates' segments, in the default mode, when this fit's order model reads them.
    readings = (
        svc.read(dense, hits, query.query) if query.mode == "hybrid" and relevance_fit.READ_SEGMENTS else None
    )
    return list(zip(hits, svc.evidence(dense, hits, sparse, readings), strict=True))
