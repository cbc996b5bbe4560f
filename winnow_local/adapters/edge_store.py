"""The ``VectorStore`` and ``ActiveIndex`` on an ``EdgeFolder`` (``qdrant_edge``): Edge's filter
vocabulary, the engine calls ``CollectionStore`` asks for, and a dense search of a sealed collection in two
steps (a shortlist by int8 scores, re-scored by the original vectors)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from winnow.adapters.qdrant_collection import (
    DENSE_VECTOR,
    SEARCH_PAYLOAD,
    SPARSE_VECTOR,
    CollectionFacts,
    CollectionStore,
    IndexSchema,
    QueryPlan,
    alias_name,
    collection_metadata,
    collection_name_for,
    profile_from_metadata,
)
from winnow.adapters.qdrant_errors import CollectionNotFound
from winnow.adapters.qdrant_points import payload_of
from winnow.errors import ConfigurationError
from winnow.ports import ActiveIndex

if TYPE_CHECKING:
    import qdrant_edge as E

    from winnow.models import ChunkPoint, EmbeddingProfile
    from winnow.settings import QdrantSettings
    from winnow_local.adapters.edge_folder import EdgeShards

_SCORED_PER_READ = 60  # see ``EdgeVectorStore._rescored``


class EdgeConditions:
    """Qdrant Edge's filter vocabulary (``qdrant_filters``)."""

    def match(self, path: str, value: str | int | bool) -> Any:
        import qdrant_edge as E

        if isinstance(value, bool):
            # qdrant-edge-py 0.9.0 turns a Python bool into the integer 1/0, which never matches a stored
            # boolean; numpy's bool is not an int subclass and arrives as a boolean.
            import numpy as np

            return E.FieldCondition(key=path, match=E.MatchValue(value=np.bool_(value)))  # type: ignore[arg-type]
        return E.FieldCondition(key=path, match=E.MatchValue(value=value))

    def match_any(self, path: str, values: list[str] | list[int]) -> Any:
        import qdrant_edge as E

        return E.FieldCondition(key=path, match=E.MatchAny(any=values))

    def range(self, path: str, gte: float | None, lte: float | None) -> Any:
        import qdrant_edge as E

        bounds = E.RangeFloat(gte=_float(gte), lte=_float(lte))
        return E.FieldCondition(key=path, range=bounds)

    def datetime_range(self, path: str, gte: str | None, lte: str | None) -> Any:
        import qdrant_edge as E

        return E.FieldCondition(key=path, range=E.RangeDateTime(gte=gte, lte=lte))

    def is_empty(self, path: str) -> Any:
        import qdrant_edge as E

        return E.IsEmptyCondition(key=path)

    def filter(
        self,
        must: list[Any] | None = None,
        should: list[Any] | None = None,
        must_not: list[Any] | None = None,
    ) -> Any:
        import qdrant_edge as E

        return E.Filter(must=must, should=should, must_not=must_not)


class EdgeVectorStore(CollectionStore):
    """``CollectionStore`` on an ``EdgeFolder``."""

    conditions = EdgeConditions()

    def __init__(
        self,
        folder: EdgeShards,
        profile: EmbeddingProfile,
        settings: QdrantSettings,
        *,
        rrf_k: int = 60,
        collection_name: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.folder = folder
        super().__init__(profile, settings, rrf_k=rrf_k, collection_name=collection_name, sleep=sleep)

    def for_profile(self, profile: EmbeddingProfile) -> EdgeVectorStore:
        return EdgeVectorStore(self.folder, profile, self._settings, rrf_k=self._rrf_k, sleep=self._sleep)

    def close(self) -> None:
        self.folder.close()

    def active_index(self) -> EdgeActiveIndex:
        return EdgeActiveIndex(self.folder, self._settings)

    # --- the engine calls ---------------------------------------------------------------------------
    def _exists(self) -> bool:
        return self.folder.config(self._name) is not None

    def _create(self) -> None:
        self.folder.create(
            self._name,
            {DENSE_VECTOR: self._profile.dimension},
            [SPARSE_VECTOR],
            collection_metadata(self._profile),
            self._settings.edge_segment_points,
        )

    def _facts(self) -> CollectionFacts:
        config = self.folder.config(self._name)
        if config is None:
            raise CollectionNotFound(f"Qdrant Edge: collection {self._name} not found")
        dense = config["vectors"].get(DENSE_VECTOR)
        return CollectionFacts(
            metadata=config.get("metadata"),
            dense_size=int(dense["size"]) if dense else None,
            has_sparse=SPARSE_VECTOR in config["sparse_vectors"],
            indexed={
                name: str(index.data_type).rsplit(".", 1)[-1].lower()
                for name, index in self.folder.shard(self._name).info().payload_schema.items()
            },
        )

    def _create_index(self, field: str, schema: IndexSchema) -> None:
        import qdrant_edge as E

        kinds = {
            "keyword": E.PayloadSchemaType.Keyword,
            "integer": E.PayloadSchemaType.Integer,
            "float": E.PayloadSchemaType.Float,
            "bool": E.PayloadSchemaType.Bool,
            "datetime": E.PayloadSchemaType.Datetime,
        }
        params = E.KeywordIndexParams(is_tenant=True) if schema == "tenant" else kinds[schema]
        self._update(E.UpdateOperation.create_field_index(field, params))

    def _collection_names(self) -> list[str]:
        return self.folder.names()

    def _write(self, points: Sequence[ChunkPoint]) -> None:
        import qdrant_edge as E

        batch = [
            E.Point(
                p.point_id,
                {
                    DENSE_VECTOR: [float(x) for x in p.dense],
                    SPARSE_VECTOR: E.SparseVector(
                        list(p.sparse.indices), [float(v) for v in p.sparse.values]
                    ),
                },
                payload_of(p),
            )
            for p in points
        ]
        self._update(E.UpdateOperation.upsert_points(batch), points=len(batch))

    def _delete_ids(self, ids: list[str]) -> None:
        import qdrant_edge as E

        self._update(E.UpdateOperation.delete_points(list(ids)))

    def _delete_where(self, where: Any) -> None:
        import qdrant_edge as E

        self._update(E.UpdateOperation.delete_points_by_filter(where))

    def _set_payload_where(self, where: Any, payload: dict[str, Any], points: int) -> None:
        import qdrant_edge as E

        # The points change segment: the appendable one takes each (``EdgeFolder.write``'s count).
        self._update(E.UpdateOperation.set_payload_by_filter(where, payload, None), points=points)

    def _count_where(self, where: Any) -> int:
        import qdrant_edge as E

        with self.folder.reading():
            return int(self.folder.shard(self._name).count(E.CountRequest(exact=True, filter=where)))

    def _scroll_page(
        self, where: Any, with_payload: bool | list[str], with_dense: bool, limit: int, offset: Any
    ) -> tuple[list[Any], Any]:
        import qdrant_edge as E

        request = E.ScrollRequest(
            offset=offset,
            limit=limit,
            filter=where,
            with_payload=with_payload,
            with_vector=[DENSE_VECTOR] if with_dense else False,
        )
        with self.folder.reading():
            records, next_offset = self.folder.shard(self._name).scroll(request)
        return list(records), next_offset

    def _retrieve_dense(self, ids: list[str]) -> list[Any]:
        with self.folder.reading():
            return list(self.folder.shard(self._name).retrieve(list[Any](ids), False, [DENSE_VECTOR]))

    def _query(self, plans: list[QueryPlan]) -> list[list[Any]]:
        """The plans' answers; where the caller may read every point of the collection (``holds_none``
        of ``QueryPlan.unreadable``), without the filter that says so, provided no change of the points
        ran meanwhile: else again with it. The filters of a request are always kept."""
        version = self.folder.version(self._name)
        if version is not None and any(
            p.unreadable is not None and self.folder.holds_none(self._name, p.unreadable, version)
            for p in plans
        ):
            bare = [
                dataclasses.replace(p, where=None, idf_corpus=None) if p.unreadable is not None else p
                for p in plans
            ]
            lists = self._answers(bare)
            if self.folder.version(self._name) == version:
                return lists
        return self._answers(plans)

    def _answers(self, plans: list[QueryPlan]) -> list[list[Any]]:
        import qdrant_edge as E

        with self.folder.reading():
            shard = self.folder.shard(self._name)
            narrowed = [self._narrowed(p, shard) for p in plans]
            requests = [
                self._shortlist(p) if n else self._request(p) for p, n in zip(plans, narrowed, strict=True)
            ]
            found = shard.query_batch(E.QueryBatchRequest(requests))
            lists = [
                self._rescored(shard, p, list(hits)) if n else list(hits)
                for p, hits, n in zip(plans, found, narrowed, strict=True)
            ]
        self.folder.searched(self._name)
        return lists

    def _rescored(self, shard: E.EdgeShard, plan: QueryPlan, shortlist: list[Any]) -> list[Any]:
        """The best ``plan.limit`` of ``shortlist`` by their original vectors, ties by id (Edge's order
        among equal scores changes from call to call), with their payloads; or, when a point left off the
        shortlist could still beat them (``_shortlist_sufficed``), the answer of Edge's own re-scoring in
        every segment. The originals are read ``_SCORED_PER_READ`` at a time, the pages of what was read
        before released ahead of each part and of the payloads (``EdgeFolder.release_vectors``): one part's
        pages at most are ever on top of the process."""
        if not shortlist:
            return []
        scored = []
        for start in range(0, len(shortlist), _SCORED_PER_READ):
            self.folder.release_vectors(self._name)  # what the step before read
            scored += shard.query(self._scores_among(plan, shortlist[start : start + _SCORED_PER_READ]))
        self.folder.release_vectors(self._name)
        scored.sort(key=lambda hit: (-hit.score, str(hit.id)))
        best = scored[: plan.limit]
        if not _shortlist_sufficed(plan, shortlist, best, self._shortlist_size(plan)):
            return list(shard.query(self._request(plan)))
        records = {
            str(record.id): record
            for record in shard.retrieve(
                [hit.id for hit in best], SEARCH_PAYLOAD, [DENSE_VECTOR] if plan.with_dense else False
            )
        }
        return [
            ScoredRecord(record, hit.score)
            for hit in best
            if (record := records.get(str(hit.id))) is not None
        ]

    def _narrowed(self, plan: QueryPlan, shard: E.EdgeShard) -> bool:
        """Whether a dense query of a sealed collection is answered in two steps: a shortlist of the
        shard's best points by their int8 copies (``_shortlist``), then their scores by the original
        vectors (``_scores_among``), of which ``_rescored`` keeps the best. Why: Edge's own re-scoring
        reads ``oversampling`` x limit originals in every segment, and each one read from the mapped file
        maps 16 neighbouring pages; here only the shortlist's are read. Where the shortlist may have left
        out an answer, ``_rescored`` falls back to Edge's re-scoring (figures in training/NOTEBOOK.md)."""
        return (
            isinstance(plan.vector, list)
            and self._settings.quantization_rescore
            and self.folder.sealed(self._name)
            and shard.info().segments_count > 1  # a segment sealed: int8 copies to narrow by (22 us)
        )

    def _shortlist(self, plan: QueryPlan) -> E.QueryRequest:
        """The ids of the best ``_shortlist_size`` points by their int8 copies (exact in the appendable
        segment): no payload, no vector, no original read."""
        import qdrant_edge as E

        return E.QueryRequest(
            limit=self._shortlist_size(plan),
            query=E.Query.Nearest(_edge_vector(plan.vector), using=plan.using),
            filter=plan.where,
            with_payload=False,
            with_vector=False,
            params=E.SearchParams(quantization=E.QuantizationSearchParams(rescore=False)),
        )

    def _shortlist_size(self, plan: QueryPlan) -> int:
        """One and a half times the candidates Edge re-scores in each segment: a margin over int8's error
        wide enough that ``_shortlist_sufficed`` seldom sends a question back to Edge, and no wider, as
        every original read costs time and pages (training/NOTEBOOK.md)."""
        return max(plan.limit, math.ceil(1.5 * plan.limit * self._settings.quantization_oversampling))

    def _request(self, plan: QueryPlan) -> E.QueryRequest:
        """The Edge request of ``plan`` in one step."""
        import qdrant_edge as E

        return E.QueryRequest(
            limit=plan.limit,
            query=E.Query.Nearest(_edge_vector(plan.vector), using=plan.using),
            filter=plan.where,
            score_threshold=plan.score_threshold,
            with_payload=SEARCH_PAYLOAD,
            with_vector=[DENSE_VECTOR] if plan.with_dense else False,
            params=self._search_params(plan),
        )

    def _scores_among(self, plan: QueryPlan, shortlist: list[Any]) -> E.QueryRequest:
        """The scores by original vectors of every shortlisted point the filter still admits (a write
        between the steps may have changed who may read one), ids only."""
        import qdrant_edge as E

        ids = {hit.id for hit in shortlist}
        where = E.Filter(must=[E.HasIdCondition(ids), *([plan.where] if plan.where is not None else [])])
        return E.QueryRequest(
            limit=len(ids),
            query=E.Query.Nearest(_edge_vector(plan.vector), using=plan.using),
            filter=where,
            score_threshold=plan.score_threshold,
            with_payload=False,
            with_vector=False,
            params=_ORIGINALS_ONLY(),
        )

    def _search_params(self, plan: QueryPlan) -> E.SearchParams | None:
        """A dense query of a sealed collection not narrowed re-scores its int8 candidates with the original
        vectors, so a sealed segment ranks and scores as the appendable one does (Edge returns the int8
        scores otherwise); a sparse one may count its IDF over a subset of the points."""
        import qdrant_edge as E

        if isinstance(plan.vector, list):
            if not self.folder.sealed(self._name):
                return None  # no int8 copies to re-score
            rescore, oversampling = (
                self._settings.quantization_rescore,
                self._settings.quantization_oversampling,
            )
            return E.SearchParams(
                quantization=E.QuantizationSearchParams(rescore=rescore, oversampling=oversampling)
            )
        return None if plan.idf_corpus is None else E.SearchParams(idf=E.IdfParams(corpus=plan.idf_corpus))

    def _update(self, operation: E.UpdateOperation, points: int = 0) -> None:
        self.folder.write(self._name, operation, points)


class EdgeActiveIndex(ActiveIndex):
    """The ``<prefix>_active`` alias of an ``EdgeFolder``: as ``QdrantActiveIndex`` on a Qdrant server."""

    def __init__(self, folder: EdgeShards, settings: QdrantSettings) -> None:
        self._folder = folder
        self._settings = settings
        self.alias = alias_name(settings)

    def collection_for(self, profile: EmbeddingProfile) -> str:
        return collection_name_for(self._settings, profile)

    def active_collection(self) -> str | None:
        return self._folder.aliases().get(self.alias)

    def active(self) -> EmbeddingProfile | None:
        name = self.active_collection()
        config = self._folder.config(name) if name is not None else None
        return profile_from_metadata(config.get("metadata")) if config is not None else None

    def activate(self, profile: EmbeddingProfile) -> None:
        name = self.collection_for(profile)
        try:
            self._folder.point_alias(self.alias, name)
        except CollectionNotFound:
            raise ConfigurationError(
                f"cannot point searches at {name}: the collection does not exist"
            ) from None

    def available(self) -> list[EmbeddingProfile]:
        prefix = f"{self._settings.collection_prefix}_"
        profiles = []
        for name in self._folder.names():
            config = self._folder.config(name) if name.startswith(prefix) else None
            profile = profile_from_metadata(config.get("metadata")) if config is not None else None
            if profile is not None:
                profiles.append(profile)
        return profiles


def _edge_vector(vector: list[float] | Any) -> Any:
    import qdrant_edge as E

    if isinstance(vector, list):
        return [float(x) for x in vector]
    return E.SparseVector(list(vector.indices), [float(v) for v in vector.values])


class ScoredRecord:
    """A point Edge retrieved (no score of its own) with the score the shortlist's second step gave it."""

    __slots__ = ("id", "payload", "score", "vector")

    def __init__(self, record: Any, score: float) -> None:
        self.id, self.payload, self.vector, self.score = record.id, record.payload, record.vector, score


# How far an int8 score may stray from the original vectors' cosine for ``_shortlist_sufficed``: about
# seven standard deviations of the error measured on 384-d vectors (training/NOTEBOOK.md, issue 28).
INT8_SCORE_SLACK = 0.01


def _shortlist_sufficed(plan: QueryPlan, shortlist: list[Any], best: list[Any], size: int) -> bool:
    """Whether no point left off ``shortlist`` (hits by int8 score, best first, ``size`` asked for) can
    belong in ``best`` (the shortlist's best by original vectors): the shortlist held every match, or its
    last int8 score is more than ``INT8_SCORE_SLACK`` under the score a point must beat (the last of a
    full answer, else the threshold). Otherwise (near-equal points crowd the shortlist, or a write took
    shortlisted points away between the steps) the answer must come from Edge's own re-scoring."""
    if len(shortlist) < size:
        return True
    if len(best) >= plan.limit:
        bar = best[-1].score
    elif plan.score_threshold is not None:
        bar = plan.score_threshold
    else:
        return False
    return float(shortlist[-1].score) + INT8_SCORE_SLACK < float(bar)


def _ORIGINALS_ONLY() -> E.SearchParams:
    """Search parameters that score by the original vectors, never their int8 copies."""
    import qdrant_edge as E

    return E.SearchParams(exact=True, quantization=E.QuantizationSearchParams(ignore=True))


def _float(value: float | None) -> float | None:
    return float(value) if value is not None else None
