"""Search: cast a wide net (dense + BM25 candidates in one Qdrant call), winnow it (re-ranker, or the
relevance model), and keep only what clears the relevance threshold, so callers get a few trustworthy
passages or an honest "nothing". By default the threshold is a gate: the best result must clear it, or
nothing is relevant; the results after it need only the artifact's lower floor, on the relevance model's
probabilities it was fitted for (a threshold applied to every result cut answers ranked second and
third: docs/quality.md). A threshold the request sets is applied to every result, and so is the threshold
to a re-ranker's or the cosine's scores.

Every result's ``score`` is in [0, 1] and results are ordered by it: the re-ranker's score when it runs;
otherwise the probability that the passage is relevant, estimated by the embedding profile's logistic
relevance model (``winnow.search.relevance``) from the evidence both retrievers returned. A profile with
no fitted model falls back to the cosine similarity; in hybrid mode the first ``top_k`` candidates in
fusion order that clear the threshold. No two results repeat each other: of two passages whose texts
overlap by more than half, the better placed stays (``winnow.search.overlap``). Each result's
``highlight`` marks the sentences that best answer the question (``winnow.search.reader``): read for
every candidate when the relevance model orders by them, else for the returned results only; either
way in one embed call per search.
``vector_score`` keeps the retriever's own score (RRF-fused in hybrid mode). The default threshold is
the one fitted with the profile's relevance model (its artifact), unless the deployment sets one. Why
this ordering, measured by cross-validation: docs/quality.md."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from winnow.access import Caller, ReadScope
from winnow.models import SparseVector, StoredChunk
from winnow.ports import Embedder, Reranker, SearchQuery, VectorStore
from winnow.search.context import contexts
from winnow.search.overlap import distinct
from winnow.search.query import Query
from winnow.search.reader import (
    HIGHLIGHT_SEGMENTS,
    KEEP_SEGMENTS,
    NOT_READ,
    Reading,
    SegmentVectors,
    cosine,
    read,
)
from winnow.search.relevance import (
    Evidence,
    RelevanceModel,
    RelevanceModels,
    default_floor,
    default_threshold,
    load_models,
    reads_keywords,
    reads_segments,
)
from winnow.search.results import Highlight, ResultContext, SearchResponse, SearchResult, Timings
from winnow.settings import SearchSettings

if TYPE_CHECKING:
    from winnow.ports import ObjectSource
    from winnow.text.sparse import Bm25Encoder

NOTHING_RELEVANT = "No relevant passages found"


# Stored kinds as the answer names them (points written before a kind existed are text).
_KINDS: dict[str, Literal["text", "table", "figure"]] = {"table": "table", "figure": "figure"}
_FIGURE_TEXTS: dict[str, Literal["vision", "ocr", "caption"]] = {
    "vision": "vision",
    "ocr": "ocr",
    "caption": "caption",
}


@dataclass(frozen=True)
class _Plan:
    """What a search will do: re-rank or not, the threshold its best result must clear (else nothing is
    relevant) and the floor the results after it must clear, how many candidates, and whether the dense
    side is needed (cosine evidence, or dense retrieval)."""

    rerank: bool
    threshold: float
    floor: float
    candidates: int
    cosine: bool


class SearchService:
    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        sparse: Bm25Encoder,
        reranker: Reranker | None,
        settings: SearchSettings,
        cache_size: int = 256,
        models: RelevanceModels | Literal["shipped"] | None = "shipped",
        objects: ObjectSource | None = None,
    ) -> None:
        self.embedder = embedder
        self.objects = objects  # signs figures' image URLs
        self.store = store
        self.sparse = sparse
        self.reranker = reranker
        self.settings = settings
        # A small LRU of query vectors for the warm container: a caller's repeated queries skip the
        # provider. Keyed by (tenant, user, embedding profile, query): a caller only ever hits their own
        # entries, so neither the answer nor its timing (``timings_ms.embed``) can tell one tenant, or
        # one user of a tenant, what another has asked.
        self._query_vector = lru_cache(maxsize=cache_size)(self._embed_uncached)
        # The returned passages' segment vectors, per tenant: the same passages come back search after search.
        self._segment_vectors = SegmentVectors()
        # The relevance models fitted for this embedding profile (None: cosine scores, see ``_relevance``).
        self.models = load_models(embedder.profile.slug) if models == "shipped" else models

    @property
    def threshold(self) -> float:
        """The default threshold: the deployment's when it sets one, else the artifact's."""
        configured = self.settings.relevance_threshold
        return configured if configured is not None else default_threshold(self.models)

    @property
    def floor(self) -> float:
        """The default floor of the results after the first: the artifact's, never above the threshold."""
        return min(default_floor(self.models), self.threshold)

    def _embed_query(self, caller: Caller, query: str) -> list[float]:
        return self._query_vector(caller.tenant, caller.user, self.embedder.profile.slug, query)

    def _embed_uncached(self, _tenant: str, _user: str | None, _profile: str, query: str) -> list[float]:
        return self.embedder.embed([query], "query")[0]

    def caller(self, who: Caller | str) -> Caller:
        """``who`` as a caller; a bare tenant (benchmarks, tools) is an anonymous member of it."""
        return who if isinstance(who, Caller) else Caller(who)

    def read_scope(self, caller: Caller) -> ReadScope:
        return caller.scope(self.settings.default_access == "deny")

    def search(self, who: Caller | str, request: Query) -> SearchResponse:
        """Plan, encode the query, retrieve the candidates (one store call, filtered to what the caller
        may read), score them, keep what clears the threshold."""
        started = time.perf_counter()
        caller = self.caller(who)
        plan = self._plan(request)
        t0 = time.perf_counter()
        dense, sparse = self._encode(caller, request, plan)
        embed_ms = (time.perf_counter() - t0) * 1000
        t1 = time.perf_counter()
        retrieve = sparse if request.mode != "dense" else None
        hits = self.retrieve(caller, request, dense, retrieve, plan.candidates, with_dense=plan.cosine)
        search_ms = (time.perf_counter() - t1) * 1000
        t2 = time.perf_counter()
        scored, readings = self._relevance(request, dense, sparse, hits, plan.rerank, caller.tenant)
        rerank_ms = (time.perf_counter() - t2) * 1000 if plan.rerank else 0.0
        results = self._keep(request, plan, scored, caller, dense, readings)
        timings = Timings(
            embed=round(embed_ms, 2),
            search=round(search_ms, 2),
            rerank=round(rerank_ms, 2),
            total=round((time.perf_counter() - started) * 1000, 2),
        )
        return SearchResponse(
            query=request.query,
            count=len(results),
            relevant=bool(results),
            message=(f"{len(results)} relevant passage(s) found" if results else NOTHING_RELEVANT),
            results=results,
            timings_ms=timings,
            relevance_threshold=plan.threshold,
            relevance_floor=plan.floor,
            query_used=request.query,
        )

    def _plan(self, request: Query) -> _Plan:
        rerank = self.reranker is not None if request.rerank is None else request.rerank
        # Asked for, but none configured: fall back to the relevance model, say so in timings.
        rerank = rerank and self.reranker is not None
        # The request's threshold is applied to every result. By default the threshold gates and the
        # floor keeps the rest, on the scores it was fitted for: the relevance model's probabilities (a
        # re-ranker's scores and the cosine fallback are cut at the threshold, as before the floor).
        explicit = request.relevance_threshold
        threshold = self.threshold if explicit is None else explicit
        fitted = not rerank and self._model(request.mode) is not None
        return _Plan(
            rerank=rerank,
            threshold=threshold,
            floor=self.floor if explicit is None and fitted else threshold,
            candidates=request.candidate_count(rerank),
            # Embed unless nothing downstream needs the dense vector (sparse retrieval re-ranked).
            cosine=request.mode != "sparse" or not rerank,
        )

    def _encode(
        self, caller: Caller, request: Query, plan: _Plan
    ) -> tuple[list[float] | None, SparseVector | None]:
        dense = self._embed_query(caller, request.query) if plan.cosine else None
        model = self._model(request.mode)
        # Dense mode encodes the keywords too when its model reads their coverage (never to retrieve).
        coverage = not plan.rerank and reads_keywords(model)
        sparse = self.sparse.encode_query(request.query) if request.mode != "dense" or coverage else None
        return dense, sparse

    def _keep(
        self,
        request: Query,
        plan: _Plan,
        scored: list[tuple[float, StoredChunk]],
        caller: Caller,
        dense: list[float] | None,
        readings: dict[str, Reading],
    ) -> list[SearchResult]:
        """What clears the floor, best first, at most ``top_k``, no two repeating each other (texts
        that overlap by more than half: ``overlap``; the better placed stays), each with its highlight
        (the results not read yet are read now, in one embed call); nothing unless the first clears
        the threshold."""
        kept = [(score, hit) for score, hit in scored if score >= plan.floor]
        if request.mode == "hybrid" and not plan.rerank and self._model(request.mode) is None:
            # no relevance model: the fusion picks, the cosine orders
            kept = distinct(kept, _text, request.top_k)
        kept.sort(key=lambda sh: (-sh[0], sh[1].key, sh[1].chunk_index))
        kept = distinct(kept, _text, request.top_k)
        if kept and kept[0][0] < plan.threshold:
            kept = []  # the gate: the best result says whether anything is relevant
        around = contexts(
            self.store, caller.tenant, self.read_scope(caller), [h for _, h in kept], request.context
        )
        unread = [h for _, h in kept if h.point_id not in readings] if self.settings.highlights else []
        if unread:
            # Keyword highlights need no query vector (HIGHLIGHT_SEGMENTS 0: nothing is embedded).
            query_vector = dense or (self._embed_query(caller, request.query) if HIGHLIGHT_SEGMENTS else [])
            readings.update(
                zip(
                    (h.point_id for h in unread),
                    self.read(query_vector, unread, request.query, caller.tenant, HIGHLIGHT_SEGMENTS),
                    strict=True,
                )
            )
        return [
            _result(i + 1, scored_hit, caller, request, near, readings, self.objects, self.settings)
            for i, (scored_hit, near) in enumerate(zip(kept, around, strict=True))
        ]

    def retrieve(
        self,
        caller: Caller,
        request: Query,
        dense: list[float] | None,
        sparse: SparseVector | None,
        candidates: int,
        *,
        with_dense: bool = False,
    ) -> list[StoredChunk]:
        """One store call, deduplicated. ``with_dense``: a sparse search brings each hit's dense vector
        along, so its cosine needs no second call. (Public: the training package collects its candidates
        through this step and ``evidence``, as a search does.)"""
        hits: list[StoredChunk] = []
        tenant, reader = caller.tenant, self.read_scope(caller)
        if request.mode == "dense" or sparse is None or sparse.indices:
            hits = self.store.search(
                SearchQuery(
                    tenant=tenant,
                    dense=dense if request.mode != "sparse" else None,
                    sparse=sparse,
                    mode=request.mode,
                    limit=candidates,
                    filters=dict(request.filters),
                    reader=reader,
                    score_threshold=request.score_threshold,
                    with_dense=with_dense and request.mode == "sparse",
                )
            )
        elif request.mode == "hybrid" and dense is not None:
            # Only stop-words in the query: the keyword side has nothing to say, the dense side still does.
            hits = self.store.search(
                SearchQuery(
                    tenant=tenant,
                    dense=dense,
                    sparse=None,
                    mode="dense",
                    limit=candidates,
                    filters=dict(request.filters),
                    reader=reader,
                    score_threshold=request.score_threshold,
                )
            )
        return _dedupe(hits)

    def _model(self, mode: str) -> RelevanceModel | None:
        return self.models.for_mode(mode) if self.models is not None else None

    def _relevance(
        self,
        request: Query,
        dense: list[float] | None,
        sparse: SparseVector | None,
        hits: list[StoredChunk],
        use_rerank: bool,
        tenant: str | None = None,
    ) -> tuple[list[tuple[float, StoredChunk]], dict[str, Reading]]:
        """Each hit's ``score``: the re-ranker's, else the relevance model's probability, else (no model
        fitted for this profile and mode) the cosine similarity; and the readings of the hits read to
        score them (by point id; none unless the model reads segments)."""
        if not hits:
            return [], {}
        if use_rerank and self.reranker is not None:
            scores = self.reranker.rerank(request.query, [h.text for h in hits])
            by_index = {s.index: s.score for s in scores}
            return [(min(1.0, max(0.0, by_index.get(i, 0.0))), h) for i, h in enumerate(hits)], {}
        assert dense is not None
        model = self._model(request.mode)
        readings = self.read(dense, hits, request.query, tenant) if reads_segments(model) else None
        evidence = self.evidence(dense, hits, sparse if reads_keywords(model) else None, readings)
        # A hit past the search's segment budget is read again if it is returned.
        read_by_id = {h.point_id: r for h, r in zip(hits, readings or (), strict=False) if r.ranked}
        if model is not None:
            return list(zip(model.probabilities(evidence), hits, strict=True)), read_by_id
        return [(min(1.0, max(0.0, e.cosine)), h) for e, h in zip(evidence, hits, strict=True)], read_by_id

    def read(
        self,
        dense: Sequence[float],
        hits: Sequence[StoredChunk],
        query: str | None = None,
        tenant: str | None = None,
        keep: int = KEEP_SEGMENTS,
    ) -> list[Reading]:
        """Each hit's segments scored against the query vector ``dense``, in one embed call (a figure is
        not read: ``winnow.search.reader``); with the ``query``'s text, only ``keep`` segments per hit
        that its keywords pre-select are embedded (0: none, the keywords alone pick); with the
        ``tenant``, its segments' vectors read before come from the container's ``SegmentVectors``.
        Public: the training package reads candidates this way."""
        keywords = (self.sparse, self.sparse.encode_query(query)) if query is not None else None
        texts = [None if h.kind == "figure" else h.text for h in hits]
        if tenant is None:
            return read(self.embedder, dense, texts, keywords=keywords, keep=keep)
        scope = f"{tenant}\x00{self.embedder.profile.slug}"
        cache = self._segment_vectors
        return read(self.embedder, dense, texts, keywords=keywords, keep=keep, cache=cache, scope=scope)

    def evidence(
        self,
        dense: list[float],
        hits: list[StoredChunk],
        sparse: SparseVector | None = None,
        readings: Sequence[Reading] | None = None,
    ) -> list[Evidence]:
        """What the relevance model reads of each hit; each hit's keyword coverage only when ``sparse`` is
        given (it costs a pass over each passage's text), its best segment only when ``readings`` are."""
        missing = [h.point_id for h in hits if h.dense_score is None and h.dense is None]
        vectors = self.store.dense_vectors(missing) if missing else {}
        # Each hit's share of the query's terms (None: not measured).
        coverage: list[float | None] = [None] * len(hits)
        if sparse is not None:
            coverage = [self.sparse.share(sparse, self.sparse.covered(sparse, h.text)) for h in hits]
        out = []
        best: list[float | None] = [r.best for r in readings] if readings is not None else [None] * len(hits)
        for h, share, segment in zip(hits, coverage, best, strict=True):
            if h.dense_score is not None:
                similarity = h.dense_score
            else:
                vector = h.dense if h.dense is not None else vectors.get(h.point_id)
                similarity = cosine(dense, vector) if vector is not None else 0.0
            out.append(
                Evidence(
                    cosine=similarity,
                    bm25=h.sparse_score,
                    dense_rank=h.dense_rank,
                    sparse_rank=h.sparse_rank,
                    coverage=share,
                    segment=segment,
                )
            )
        return out


def _result(
    rank: int,
    scored: tuple[float, StoredChunk],
    caller: Caller,
    request: Query,
    around: tuple[str, str],
    readings: dict[str, Reading],
    objects: ObjectSource | None,
    settings: SearchSettings,
) -> SearchResult:
    """One kept hit as the caller sees it: scores, citation, access, context and highlight."""
    score, hit = scored
    before, after = around
    return SearchResult(
        rank=rank,
        score=round(score, 6),
        vector_score=round(hit.score, 6),
        chunk_id=hit.point_id,
        key=hit.key,
        title=hit.title,
        page=hit.page,
        section=hit.section,
        text=hit.text,
        metadata=hit.metadata,
        kind=_KINDS.get(hit.kind, "text"),
        ocr=hit.ocr,
        figure_text=_FIGURE_TEXTS.get(hit.figure_text) if hit.kind == "figure" else None,
        image_url=_image_url(hit, objects, settings.image_url_seconds),
        **_access_shown(hit, caller),
        context=None if request.context == "none" else ResultContext(before=before, after=after),
        highlight=[
            Highlight(start=seg.start, end=seg.end)
            for seg in readings.get(hit.point_id, NOT_READ).highlight()
            if settings.highlights
        ],
    )


def _image_url(hit: StoredChunk, objects: ObjectSource | None, seconds: int) -> str | None:
    """The figure's image URL: only for a passage the caller is being shown (its tenant's and one it
    may read, as the search filter already decided), of that document's own folder."""
    from winnow.rules import figure_key

    if hit.kind != "figure" or not hit.image or objects is None:
        return None
    key = figure_key(hit.key, hit.image)
    return objects.figure_url(key, seconds) if key else None


def _access_shown(hit: StoredChunk, caller: Caller) -> dict[str, Any]:
    """``restricted`` for every reader; who else may read it only to those who may change it (the
    admins and its listed users): a group member learns that a passage is restricted, not to whom."""
    if hit.access is None:
        return {"restricted": False}
    writer = caller.is_admin or (caller.user is not None and caller.user in hit.access.get("users", []))
    return {"restricted": True, "access": hit.access if writer else None}


def _text(scored: tuple[float, StoredChunk]) -> str:
    return scored[1].text


def _dedupe(hits: list[StoredChunk]) -> list[StoredChunk]:
    """One result per chunk: a point id, or the same passage of the same document, appears once."""
    seen: set[tuple[str, str]] = set()
    ids: set[str] = set()
    out = []
    for h in hits:
        marker = (h.key, h.content_hash)
        if h.point_id in ids or marker in seen:
            continue
        ids.add(h.point_id)
        seen.add(marker)
        out.append(h)
    return out
