"""What every Qdrant engine's ``VectorStore`` shares: the collection rules, written once.

One collection per embedding profile (``<prefix>_<profile slug>``) with a named dense vector ``dense``
(cosine) and a sparse vector ``bm25`` whose IDF the engine computes (``Modifier.IDF``), counted over the
points the caller may read in their tenant (``QueryPlan.idf_corpus``): another tenant's documents, or a
restricted one of the caller's own tenant, never move their scores. The profile is recorded in the
collection's metadata and checked before any vector is written or searched, so vectors of two models can
never meet. Every read and write is scoped by tenant (``qdrant_filters``).

``CollectionStore`` implements the ``VectorStore`` port in terms of a dozen engine calls, declared with
the collection's life in ``CollectionEngine`` (``qdrant_engine``); the engines (``QdrantVectorStore`` on
qdrant-client, ``EdgeVectorStore`` on Qdrant Edge) implement only those, so both keep one contract
(tests/integration/test_qdrant_store.py runs on each)."""

from __future__ import annotations

import uuid
from abc import abstractmethod
from array import array
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import replace
from typing import Any

from winnow.access import (
    PAYLOAD_FIELDS,
    AccessList,
    ReadScope,
    access_of_payload,
    split_metadata,
)
from winnow.adapters.qdrant_engine import (
    METADATA_KEY,
    SCHEMA_VERSION,
    CollectionEngine,
    CollectionFacts,
    IndexSchema,
    QueryPlan,
    alias_name,
    collection_metadata,
    collection_name_for,
    profile_from_metadata,
)
from winnow.adapters.qdrant_filters import (
    document_filter,
    readable_filter,
    search_filter,
    tenant_filter,
    typed_metadata,
    unreadable_filters,
)
from winnow.adapters.qdrant_points import DENSE_VECTOR, SPARSE_VECTOR, dense_of, fuse_rrf, stored_chunk
from winnow.errors import BadRequest, ProfileMismatch, QueryRejected
from winnow.models import ChunkPoint, EmbeddingProfile, StoredChunk
from winnow.ports import ChunkPlace, FilterValue, SearchQuery, VectorStore

__all__ = [
    "DENSE_VECTOR",
    "METADATA_KEY",
    "SCHEMA_VERSION",
    "SEARCH_PAYLOAD",
    "SPARSE_VECTOR",
    "CollectionFacts",
    "CollectionStore",
    "IndexSchema",
    "QueryPlan",
    "alias_name",
    "collection_metadata",
    "collection_name_for",
    "profile_from_metadata",
]

SEARCH_PAYLOAD = [
    "key",
    "title",
    "section",
    "page",
    "chunk_index",
    "text",
    "content_hash",
    "meta",
    "kind",
    "ocr",
    "doc_version",
    "figure_text",
    "image",
    *PAYLOAD_FIELDS,
]
SCROLL_PAGE = 256
MAX_PLACES = 50  # chunks_at: the most places (a search's top_k) and indexes per place one call reads
MAX_PLACE_INDEXES = 8
DELETE_BATCH = 1000


class CollectionStore(CollectionEngine, VectorStore):
    """See the module docstring: the ``VectorStore`` port on the engine calls of ``CollectionEngine``."""

    @abstractmethod
    def for_profile(self, profile: EmbeddingProfile) -> CollectionStore:
        """The store of another profile's collection on the same engine (a rebuild's old collection)."""

    # --- writes -------------------------------------------------------------------------------------
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        if not points:
            return
        for p in points:
            self._check_point(p)
        declared = self._settings.declared_metadata
        if declared:
            points = [replace(p, metadata=typed_metadata(p.metadata, declared)) for p in points]
        self._require(create=True)
        for start in range(0, len(points), self._batch_size):
            batch = points[start : start + self._batch_size]
            self._call("upsert", lambda b=batch: self._write(b))  # type: ignore[misc]

    def _check_point(self, p: ChunkPoint) -> None:
        if len(p.dense) != self._profile.dimension:
            raise ProfileMismatch(
                f"a vector of {len(p.dense)} dims cannot go into {self._name} "
                f"({self._profile.dimension} dims, {self._profile.slug})"
            )
        if not p.tenant or not p.key:
            raise ValueError("a point needs a tenant and a key")
        if len(p.sparse.indices) != len(p.sparse.values):
            raise ValueError("sparse vector indices and values differ in length")
        if str(uuid.UUID(p.point_id)) != p.point_id:
            raise ValueError(f"point id {p.point_id!r} is not a canonical UUID string")

    def delete_points(self, point_ids: Sequence[str]) -> None:
        ids = list(point_ids)
        if not ids or not self._require(create=False):
            return
        for start in range(0, len(ids), DELETE_BATCH):
            chunk = ids[start : start + DELETE_BATCH]
            self._call("delete points", lambda c=chunk: self._delete_ids(c))  # type: ignore[misc]

    def delete_document(self, tenant: str, key: str) -> int:
        if not self._require(create=False):
            return 0
        document = document_filter(self.conditions, tenant, key)
        count = self._call("count", lambda: self._count_where(document))
        if count:
            self._call("delete document", lambda: self._delete_where(document))
        return count

    def set_metadata(self, tenant: str, key: str, metadata: dict[str, Any]) -> int:
        """Replace ``meta`` and the access fields wholesale: a top-level payload key set replaces its
        value (it is not deep merged), so fields dropped from the metadata disappear from the points too."""
        if not self._require(create=False):
            return 0
        document = document_filter(self.conditions, tenant, key)
        count = self._call("count", lambda: self._count_where(document))
        if count:
            user_meta, access = split_metadata(metadata)
            payload = {"meta": typed_metadata(user_meta, self._settings.declared_metadata), **access}
            self._call("set metadata", lambda: self._set_payload_where(document, payload, count))
        return count

    # --- reads --------------------------------------------------------------------------------------
    def existing_vectors(self, tenant: str, key: str) -> dict[str, list[float]]:
        if not self._require(create=False):
            return {}
        vectors: dict[str, list[float]] = {}
        for point in self._scroll(
            document_filter(self.conditions, tenant, key), ["content_hash"], with_dense=True
        ):
            dense = dense_of(point)
            content_hash = (point.payload or {}).get("content_hash")
            if dense is not None and content_hash:
                vectors[str(content_hash)] = dense
        return vectors

    def reusable_vectors(self, tenant: str, key: str, wanted: Collection[str]) -> dict[str, array[float]]:
        """Page by page (``SCROLL_PAGE`` points), each vector made float32 as it arrives: one page of
        lists at a time, never the document's (see the port)."""
        if not self._require(create=False):
            return {}
        vectors: dict[str, array[float]] = {}
        for point in self._scroll(
            document_filter(self.conditions, tenant, key), ["content_hash"], with_dense=True
        ):
            content_hash = str((point.payload or {}).get("content_hash") or "")
            if content_hash in wanted and content_hash not in vectors:
                dense = dense_of(point)
                if dense is not None:
                    vectors[content_hash] = array("f", dense)
        return vectors

    def point_ids(self, tenant: str, key: str) -> set[str]:
        if not self._require(create=False):
            return set()
        return {str(p.id) for p in self._scroll(document_filter(self.conditions, tenant, key), False)}

    def dense_vectors(self, point_ids: Sequence[str]) -> dict[str, list[float]]:
        ids = list(dict.fromkeys(point_ids))
        if not ids or not self._require(create=False):
            return {}
        found: dict[str, list[float]] = {}
        for record in self._call("retrieve vectors", lambda: self._retrieve_dense(ids)):
            dense = dense_of(record)
            if dense is not None:
                found[str(record.id)] = dense
        return found

    def count_by_document(self, tenant: str | None = None) -> dict[tuple[str, str], int]:
        return dict(Counter(self.document_keys(tenant)))

    def document_keys(self, tenant: str | None = None) -> Iterator[tuple[str, str]]:
        if not self._require(create=False):
            return
        for point in self._scroll(tenant_filter(self.conditions, tenant), ["tenant", "key"], page=1000):
            payload = point.payload or {}
            yield str(payload.get("tenant")), str(payload.get("key"))

    def _scroll(
        self, where: Any, with_payload: bool | list[str], *, with_dense: bool = False, page: int = SCROLL_PAGE
    ) -> Iterator[Any]:
        offset: Any = None
        while True:
            points, offset = self._call(
                "scroll",
                lambda o=offset: self._scroll_page(where, with_payload, with_dense, page, o),  # type: ignore[misc]
            )
            yield from points
            if offset is None:
                return

    def _search_filter(
        self, tenant: str, filters: dict[str, FilterValue], reader: ReadScope | None = None
    ) -> Any:
        return search_filter(
            self.conditions,
            tenant,
            reader or ReadScope(),
            filters,
            self._settings.declared_metadata,
            strict=self.declared_only,
        )

    def readable_keys(self, tenant: str, reader: ReadScope, keys: Sequence[str]) -> set[str]:
        """One scroll over each document's first chunk (``chunk_index`` 0): a page of 100 keys reads at
        most 200 points, however long the documents (two versions of a chunk 0 coexist for a moment
        while a document is re-indexed: new points first, then the old ones go)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted or not self._require(create=False):
            return set()
        c = self.conditions
        where = readable_filter(c, tenant, reader, c.match_any("key", wanted), c.match("chunk_index", 0))
        points, _ = self._call(
            "scroll", lambda: self._scroll_page(where, ["key"], False, 2 * len(wanted), None)
        )
        return {str((p.payload or {}).get("key")) for p in points}

    def document_access(self, tenant: str, key: str) -> tuple[bool, AccessList | None]:
        if not self._require(create=False):
            return False, None
        where = document_filter(self.conditions, tenant, key)
        points, _ = self._call(
            "scroll", lambda: self._scroll_page(where, list(PAYLOAD_FIELDS), False, 1, None)
        )
        if not points:
            return False, None
        return True, access_of_payload(points[0].payload or {})

    def chunks_at(self, tenant: str, reader: ReadScope, places: Sequence[ChunkPlace]) -> list[StoredChunk]:
        """One scroll: the tenant's readable points matching any place (key, version, indexes). At most
        ``MAX_PLACES`` places of ``MAX_PLACE_INDEXES`` indexes: the work is bounded by what is asked."""
        wanted = [p for p in places if p.indexes][:MAX_PLACES]
        if not wanted or not self._require(create=False):
            return []
        c = self.conditions
        anyof = []
        for place in wanted:
            must = [
                c.match("key", place.key),
                c.match_any("chunk_index", list(place.indexes[:MAX_PLACE_INDEXES])),
            ]
            if place.doc_version is not None:
                must.append(c.match("doc_version", place.doc_version))
            anyof.append(c.filter(must=must))
        where = readable_filter(c, tenant, reader, c.filter(should=anyof))
        # Two versions of a chunk coexist for a moment while a document is re-indexed: room for both.
        limit = 2 * sum(min(len(p.indexes), MAX_PLACE_INDEXES) for p in wanted)
        points, _ = self._call("scroll", lambda: self._scroll_page(where, SEARCH_PAYLOAD, False, limit, None))
        return [stored_chunk(p) for p in points]

    def search(self, query: SearchQuery) -> list[StoredChunk]:
        if query.limit < 1:
            raise BadRequest("limit must be at least 1")
        if not query.tenant:
            raise BadRequest("a search needs a tenant")
        if query.mode in ("dense", "hybrid"):
            if query.dense is None:
                raise BadRequest(f"{query.mode} search needs a dense query vector")
            if len(query.dense) != self._profile.dimension:
                raise ProfileMismatch(
                    f"query vector has {len(query.dense)} dims, collection {self._name} has "
                    f"{self._profile.dimension}"
                )
        has_sparse = query.sparse is not None and len(query.sparse.indices) > 0
        if query.mode == "sparse" and not has_sparse:
            return []  # nothing to match on (e.g. a query of stop words only)
        reader = query.reader or ReadScope()
        where = self._search_filter(query.tenant, query.filters, reader)
        idf_corpus = readable_filter(self.conditions, query.tenant, reader)
        if not self._require_for_search():
            return []
        unreadable = None if query.filters else unreadable_filters(self.conditions, query.tenant, reader)
        dense = QueryPlan(
            list(query.dense or []),
            DENSE_VECTOR,
            where,
            query.limit,
            query.score_threshold,
            unreadable=unreadable,
        )

        def sparse(with_dense: bool) -> QueryPlan:
            assert query.sparse is not None
            # IDF over the points this caller may read in their tenant, not the metadata filter's: filters
            # narrow results, they do not re-weigh terms, and no document the caller cannot read (another
            # tenant's, or a restricted one of their own) makes a term common or rare.
            return QueryPlan(
                query.sparse,
                SPARSE_VECTOR,
                where,
                query.limit,
                with_dense=with_dense,
                idf_corpus=idf_corpus,
                unreadable=unreadable,
            )

        if query.mode == "dense":
            plans = [dense]
        elif query.mode == "sparse":
            plans = [sparse(with_dense=query.with_dense)]
        else:
            # Both retrievers in one round trip, each with its own raw scores (a fused query would only
            # return the fused score); the sparse side brings dense vectors so every candidate gets a
            # cosine without a second call. The filter sits on each request.
            plans = [dense] + ([sparse(with_dense=True)] if has_sparse else [])
        lists = self._call("search", lambda: self._query(plans), rejected=QueryRejected)
        if query.mode == "sparse":
            return [stored_chunk(p, sparse_rank=r) for r, p in enumerate(lists[0], start=1)]
        dense_hits = [stored_chunk(p, dense_rank=r) for r, p in enumerate(lists[0], start=1)]
        if query.mode == "dense":
            return dense_hits
        sparse_hits = (
            [stored_chunk(p, sparse_rank=r) for r, p in enumerate(lists[1], start=1)]
            if len(lists) > 1
            else []
        )
        return fuse_rrf(dense_hits, sparse_hits, self._rrf_k)[: query.limit]
