"""What every Qdrant engine's ``VectorStore`` shares: the collection rules, written once.

One collection per embedding profile (``<prefix>_<profile slug>``) with a named dense vector ``dense``
(cosine) and a sparse vector ``bm25`` whose IDF the engine computes (``Modifier.IDF``), counted over the
points the caller may read in their tenant (``QueryPlan.idf_corpus``): another tenant's documents, or a
restricted one of the caller's own tenant, never move their scores. The profile is recorded in the
collection's metadata and checked before any vector is written or searched, so vectors of two models can
never meet. Every read and write is scoped by tenant (``qdrant_filters``).

``CollectionStore`` implements the ``VectorStore`` port in terms of a dozen engine calls; the engines
(``QdrantVectorStore`` on qdrant-client, ``EdgeVectorStore`` on Qdrant Edge) implement only those, so
both keep one contract (tests/integration/test_qdrant_store.py runs on each)."""

from __future__ import annotations

import threading
import uuid
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from winnow.access import (
    PAYLOAD_FIELDS,
    AccessList,
    ReadScope,
    access_of_payload,
    split_metadata,
)
from winnow.adapters.qdrant_errors import CollectionNotFound, QdrantCaller
from winnow.adapters.qdrant_filters import (
    Conditions,
    document_filter,
    index_fields,
    readable_filter,
    search_filter,
    tenant_filter,
    typed_metadata,
    unreadable_filters,
)
from winnow.adapters.qdrant_points import DENSE_VECTOR, SPARSE_VECTOR, dense_of, fuse_rrf, stored_chunk
from winnow.errors import (
    BadRequest,
    ConfigurationError,
    ProfileMismatch,
    ProviderRejected,
    QueryRejected,
    WinnowError,
)
from winnow.models import ChunkPoint, EmbeddingProfile, SparseVector, StoredChunk
from winnow.observability import logger
from winnow.ports import ActiveIndex, ChunkPlace, FilterValue, SearchQuery, VectorStore

if TYPE_CHECKING:
    from winnow.settings import QdrantSettings

T = TypeVar("T")
IndexSchema = Literal["tenant", "keyword", "integer", "float", "bool", "datetime"]

METADATA_KEY = "winnow"  # collection metadata: {"winnow": {"profile": {...}, "schema": 1}}
SCHEMA_VERSION = 1
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


def collection_name_for(settings: QdrantSettings, profile: EmbeddingProfile) -> str:
    return f"{settings.collection_prefix}_{profile.slug}"


def alias_name(settings: QdrantSettings) -> str:
    """The alias (pointer) naming the collection searches read."""
    return f"{settings.collection_prefix}_active"


def collection_metadata(profile: EmbeddingProfile) -> dict[str, Any]:
    return {
        METADATA_KEY: {
            "profile": {"provider": profile.provider, "model": profile.model, "dimension": profile.dimension},
            "slug": profile.slug,
            "schema": SCHEMA_VERSION,
        }
    }


def profile_from_metadata(metadata: dict[str, Any] | None) -> EmbeddingProfile | None:
    """The embedding profile recorded on a collection, or None when it carries none."""
    recorded = (metadata or {}).get(METADATA_KEY)
    if not isinstance(recorded, dict) or not isinstance(recorded.get("profile"), dict):
        return None
    p = recorded["profile"]
    try:
        return EmbeddingProfile(
            provider=str(p["provider"]), model=str(p["model"]), dimension=int(p["dimension"])
        )
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class CollectionFacts:
    """What an engine reports about an existing collection."""

    metadata: dict[str, Any] | None
    dense_size: int | None  # of the ``dense`` vector, None when there is none
    has_sparse: bool  # a ``bm25`` sparse vector exists
    indexed: dict[str, str]  # payload fields with an index, and its type ("keyword", "integer", ...)


@dataclass(frozen=True)
class QueryPlan:
    """One nearest-neighbour query of a search: dense or sparse, filtered by ``where``."""

    vector: list[float] | SparseVector
    using: str
    where: Any
    limit: int
    score_threshold: float | None = None
    with_dense: bool = False
    idf_corpus: Any = None  # sparse: the points IDF is counted over (the caller's readable ones), None = all
    # Given only when ``where`` and ``idf_corpus`` are the caller's readable points alone (no filter of the
    # request): filters that between them hold every point the caller may not read. An engine that finds
    # none holds a point may search without ``where`` and ``idf_corpus`` (``EdgeVectorStore._query``).
    unreadable: tuple[Any, ...] | None = None


class CollectionStore(VectorStore):
    """See the module docstring. ``rrf_k`` is the RRF ranking constant of hybrid fusion."""

    conditions: Conditions  # the engine's filter vocabulary
    # Whether a filter on an undeclared metadata field is refused (a Qdrant server, strict as Qdrant
    # Cloud: no index, no filter) or written for the value's type (the embedded engine).
    declared_only: bool = False

    def __init__(
        self,
        profile: EmbeddingProfile,
        settings: QdrantSettings,
        *,
        rrf_k: int,
        collection_name: str | None,
        sleep: Callable[[float], None],
        guard: AbstractContextManager[Any] | None = None,
    ) -> None:
        if rrf_k < 1:
            raise ConfigurationError("rrf_k must be at least 1")
        self._profile = profile
        self._settings = settings
        self._rrf_k = rrf_k
        self._name = collection_name or collection_name_for(settings, profile)
        self._sleep = sleep
        self._caller = QdrantCaller(settings.max_attempts, sleep, guard, settings.retry_budget_seconds)
        self._batch_size = min(settings.upsert_batch_size, 256)
        self._ready = False  # collection seen and its profile verified
        self._ready_lock = threading.Lock()

    @property
    def collection_name(self) -> str:
        return self._name

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    # --- the engine ---------------------------------------------------------------------------------
    @abstractmethod
    def for_profile(self, profile: EmbeddingProfile) -> CollectionStore:
        """The store of another profile's collection on the same engine (a rebuild's old collection)."""

    @abstractmethod
    def active_index(self) -> ActiveIndex:
        """The pointer to the collection searches read, kept by the same engine."""

    @abstractmethod
    def close(self) -> None:
        """Release the engine (the client, or the Edge folder and its lock); other stores on it too."""

    @abstractmethod
    def _exists(self) -> bool: ...

    @abstractmethod
    def _create(self) -> None:
        """Create the collection with the ``dense``/``bm25`` layout and ``collection_metadata``."""

    @abstractmethod
    def _facts(self) -> CollectionFacts: ...

    @abstractmethod
    def _create_index(self, field: str, schema: IndexSchema) -> None:
        """A payload index of a ``FieldType``, or ``tenant`` (the keyword index Qdrant co-locates points
        by); it replaces an index of another type on the same field."""

    @abstractmethod
    def _collection_names(self) -> list[str]: ...

    @abstractmethod
    def _write(self, points: Sequence[ChunkPoint]) -> None:
        """Upsert one batch and wait until it is applied."""

    @abstractmethod
    def _delete_ids(self, ids: list[str]) -> None: ...

    @abstractmethod
    def _delete_where(self, where: Any) -> None: ...

    @abstractmethod
    def _set_payload_where(self, where: Any, payload: dict[str, Any], points: int) -> None:
        """Set these top-level payload fields (each replaced whole) on every point ``where`` selects
        (``points`` of them, as the caller counted)."""

    @abstractmethod
    def _count_where(self, where: Any) -> int: ...

    @abstractmethod
    def _scroll_page(
        self, where: Any, with_payload: bool | list[str], with_dense: bool, limit: int, offset: Any
    ) -> tuple[list[Any], Any]:
        """One page of points (objects with ``id``, ``payload``, ``vector``) and the next offset."""

    @abstractmethod
    def _retrieve_dense(self, ids: list[str]) -> list[Any]: ...

    @abstractmethod
    def _query(self, plans: list[QueryPlan]) -> list[list[Any]]:
        """Each plan's hits (objects with ``id``, ``score``, ``payload``, ``vector``), best first."""

    def _call(
        self,
        what: str,
        fn: Callable[[], T],
        *,
        rejected: type[WinnowError] = ProviderRejected,
        retry: bool = True,
    ) -> T:
        try:
            return self._caller(what, fn, rejected=rejected, retry=retry, collection=self._name)
        except CollectionNotFound:
            self._ready = False
            raise
        except WinnowError as error:
            if not self._collection_gone(error):
                raise
            self._ready = False
            raise CollectionNotFound(f"Qdrant {what}: collection {self._name} not found") from error.__cause__

    def _collection_gone(self, error: WinnowError) -> bool:
        """Whether ``error`` means the collection is gone, for an engine whose error does not say so."""
        return False

    # --- collection ---------------------------------------------------------------------------------
    def ensure_collection(self) -> None:
        with self._ready_lock:
            if not self._call("check collection", self._exists):
                try:
                    self._call("create collection", self._create, retry=False)
                    logger.info("created Qdrant collection", extra={"collection": self._name})
                except (ProviderRejected, ConfigurationError):
                    # A concurrent worker may have created it first; anything else fails the check below.
                    if not self._call("check collection", self._exists):
                        raise
            facts = self._call("read collection", self._facts)
            self._verify(facts)
            self._ensure_indexes(facts)
            self._ready = True

    def _ensure_indexes(self, facts: CollectionFacts) -> None:
        """A payload index of the declared type for every field a query filters on (``index_fields``):
        a collection made before a field was declared, or with another type, gets it now, without
        re-embedding."""
        for field in index_fields(self._settings.declared_metadata):
            if facts.indexed.get(field.path) != field.value_type:
                self._call(
                    "create payload index",
                    lambda f=field: self._create_index(f.path, f.type),  # type: ignore[misc]
                )

    def recorded_profile(self) -> EmbeddingProfile | None:
        """The profile recorded on the collection, or None when the collection does not exist."""
        if not self._call("check collection", self._exists):
            return None
        return profile_from_metadata(self._call("read collection", self._facts).metadata)

    def _verify(self, facts: CollectionFacts) -> None:
        recorded = profile_from_metadata(facts.metadata)
        if recorded is None:
            raise ProfileMismatch(
                f"collection {self._name} records no embedding profile; it was not made by Winnow"
            )
        if recorded != self._profile:
            raise ProfileMismatch(
                f"collection {self._name} holds vectors of {recorded.provider}/{recorded.model} "
                f"({recorded.dimension} dims), not {self._profile.provider}/{self._profile.model} "
                f"({self._profile.dimension} dims)"
            )
        if facts.dense_size != self._profile.dimension or not facts.has_sparse:
            raise ProfileMismatch(f"collection {self._name} lacks a {DENSE_VECTOR}/{SPARSE_VECTOR} layout")

    def _require(self, create: bool) -> bool:
        """Whether the collection exists (creating it when ``create``), verifying its profile once."""
        if self._ready:
            return True
        if create:
            self.ensure_collection()
            return True
        with self._ready_lock:
            if not self._call("check collection", self._exists):
                return False
            facts = self._call("read collection", self._facts)
            self._verify(facts)
            self._ensure_indexes(facts)
            self._ready = True
            return True

    def _require_for_search(self) -> bool:
        """Like ``_require`` but a missing collection is only fine when no other profile's collection
        exists: otherwise the query embedder differs from the one the documents were indexed with."""
        if self._require(create=False):
            return True
        prefix = f"{self._settings.collection_prefix}_"
        names = self._call("list collections", self._collection_names)
        others = sorted(n for n in names if n.startswith(prefix))
        if others:
            raise ProfileMismatch(
                f"the query embedder ({self._profile.slug}) has no collection; documents are indexed in "
                f"{', '.join(others)}: configure the embedder they were indexed with, or re-index"
            )
        return False

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
