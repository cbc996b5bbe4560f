"""The ``VectorStore`` on Qdrant: Qdrant Cloud over REST, or local mode (a folder or ``:memory:``) for tests
and the embedded default, through the same code path.

One collection per embedding profile (``<prefix>_<profile slug>``) with a named dense vector ``dense``
(cosine) and a sparse vector ``bm25`` whose IDF Qdrant computes (``Modifier.IDF``). The profile is recorded
in the collection's metadata and checked before any vector is written or searched, so vectors of two
models can never meet. Every read and write is scoped by tenant; the tenant condition is always the
first ``must`` and can never be replaced by a user filter (user filters address ``meta.<name>``).

Qdrant errors are translated: connection problems, timeouts, 429 and 5xx are retried a bounded number of
times and then raised as ``ProviderUnavailable``; other 4xx become ``ConfigurationError`` (auth, missing
collection) or a rejection. ``qdrant_client`` is imported lazily: it pulls numpy and grpc.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from winnow.errors import (
    BadRequest,
    ConfigurationError,
    ProfileMismatch,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
    QueryRejected,
    TransientError,
    WinnowError,
)
from winnow.models import ChunkPoint, EmbeddingProfile, StoredChunk
from winnow.observability import logger
from winnow.ports import FilterValue, RangeFilter, SearchQuery, VectorStore
from winnow.rules import FIELD_NAME_RULE, is_field_name, is_tenant

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qm

    from winnow.settings import QdrantSettings

T = TypeVar("T")

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"
METADATA_KEY = "winnow"  # collection metadata: {"winnow": {"profile": {...}, "schema": 1}}
SCHEMA_VERSION = 1
# Filter names that address top-level payload fields; every other name addresses ``meta.<name>``.
RESERVED_FILTER_FIELDS = frozenset({"key", "source_type", "title", "kind", "ocr"})
_SEARCH_PAYLOAD = [
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
]
_SCROLL_PAGE = 256
_DELETE_BATCH = 1000

# Local mode mutates numpy arrays and a SQLite file without locks of its own: one lock per process
# serialises every call on a local client (threads of a test, or the local server's workers).
_LOCAL_LOCK = threading.RLock()
_LOCAL_CLIENTS: dict[str, QdrantClient] = {}


def make_qdrant_client(settings: QdrantSettings, api_key: str | None, local_path: Path) -> QdrantClient:
    """Qdrant Cloud (or any server) when ``settings.url`` is set, else local mode at ``settings.path`` or
    ``local_path`` (``:memory:`` allowed). A local folder admits one client per process, so local clients
    are shared by path; the compatibility check is skipped because it costs a round trip at cold start."""
    from qdrant_client import QdrantClient

    if settings.url:
        return QdrantClient(
            url=settings.url,
            api_key=api_key,
            timeout=settings.timeout_seconds,
            prefer_grpc=False,
            check_compatibility=False,
        )
    location = settings.path or str(local_path)
    if location == ":memory:":
        return _open_local(location, settings.local_engine)
    resolved = str(Path(location).expanduser().resolve())
    with _LOCAL_LOCK:
        cached = _LOCAL_CLIENTS.get(resolved)
        if cached is not None and not getattr(cached._client, "closed", False):
            return cached
        Path(resolved).mkdir(parents=True, exist_ok=True)
        try:
            client = _open_local(resolved, local_engine_for(settings, Path(resolved)))
        except RuntimeError as exc:  # portalocker: another process holds the folder
            raise ConfigurationError(
                f"Qdrant local storage {resolved} is in use by another process (a running `winnow serve`?): "
                "stop it, or give this command another state folder with WINNOW_HOME"
            ) from exc
        _LOCAL_CLIENTS[resolved] = client
        return client


def local_engine_for(settings: QdrantSettings, folder: Path) -> str:
    """The engine for a local folder. Edge is the default, but a folder that holds only an index made by
    qdrant-client's local mode (the default before Edge) keeps it until ``QDRANT_LOCAL_ENGINE`` is set,
    so an upgrade never shows an empty index; a warning says how to move to Edge."""
    if "local_engine" in settings.model_fields_set or settings.local_engine != "edge":
        return settings.local_engine
    collections = folder / "collection"
    if not (folder / "edge").exists() and collections.is_dir() and any(collections.iterdir()):
        logger.warning(
            "the index in this folder was made by qdrant-client's local mode and stays in use; set "
            "QDRANT_LOCAL_ENGINE=edge and run `winnow reconcile` to rebuild it on Qdrant Edge (much "
            "faster search), or QDRANT_LOCAL_ENGINE=local to keep it and silence this warning",
            extra={"folder": str(folder)},
        )
        return "local"
    return "edge"


def _open_local(location: str, engine: str) -> QdrantClient:
    """qdrant-client's local mode, or Qdrant Edge behind the same client API (``QDRANT_LOCAL_ENGINE``)."""
    if engine == "edge":
        from winnow.adapters.qdrant_edge_client import EdgeQdrantClient

        return EdgeQdrantClient(location)  # type: ignore[return-value]
    from qdrant_client import QdrantClient

    return QdrantClient(":memory:") if location == ":memory:" else QdrantClient(path=location)


def collection_layout(settings: QdrantSettings, dimension: int) -> dict[str, Any]:
    """``create_collection`` arguments from the settings: named ``dense`` (cosine) and ``bm25`` (IDF)
    vectors, HNSW with per-tenant graphs, INT8 scalar quantization, on-disk storage and shard count
    (docs/scaling.md). Local mode and Edge accept and ignore what they do not implement."""
    from qdrant_client.http import models as qm

    quantization = (
        qm.ScalarQuantization(
            scalar=qm.ScalarQuantizationConfig(
                type=qm.ScalarType.INT8, quantile=0.99, always_ram=settings.quantization_always_ram
            )
        )
        if settings.quantization == "int8"
        else None
    )
    return {
        "vectors_config": {
            DENSE_VECTOR: qm.VectorParams(
                size=dimension, distance=qm.Distance.COSINE, on_disk=settings.vectors_on_disk
            )
        },
        "sparse_vectors_config": {
            SPARSE_VECTOR: qm.SparseVectorParams(
                modifier=qm.Modifier.IDF, index=qm.SparseIndexParams(on_disk=settings.vectors_on_disk)
            )
        },
        "hnsw_config": qm.HnswConfigDiff(
            m=settings.hnsw_m, payload_m=settings.hnsw_payload_m, ef_construct=settings.hnsw_ef_construct
        ),
        "quantization_config": quantization,
        "on_disk_payload": settings.payload_on_disk,
        "shard_number": settings.shard_number,
    }


def dense_search_params(settings: QdrantSettings) -> qm.SearchParams | None:
    """Rescoring of quantized candidates with the original vectors (``oversampling`` x limit of them)."""
    from qdrant_client.http import models as qm

    if settings.quantization == "none":
        return None
    return qm.SearchParams(
        quantization=qm.QuantizationSearchParams(
            rescore=settings.quantization_rescore, oversampling=settings.quantization_oversampling
        )
    )


def _is_local(client: QdrantClient) -> bool:
    return type(getattr(client, "_client", None)).__name__ == "QdrantLocal"


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


class QdrantVectorStore(VectorStore):
    """See the module docstring. ``rrf_k`` is the RRF ranking constant of hybrid fusion.
    ``tenant_idf`` scopes BM25 IDF statistics to the caller's tenant (Qdrant >= 1.19), so one tenant's
    corpus never shifts another's keyword scores; off by default because older servers reject it."""

    def __init__(
        self,
        client: QdrantClient,
        profile: EmbeddingProfile,
        settings: QdrantSettings,
        *,
        rrf_k: int = 60,
        tenant_idf: bool = False,
        collection_name: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rrf_k < 1:
            raise ConfigurationError("rrf_k must be at least 1")
        self._client = client
        self._profile = profile
        self._settings = settings
        self._rrf_k = rrf_k
        self._tenant_idf = tenant_idf
        self._name = collection_name or f"{settings.collection_prefix}_{profile.slug}"
        self._sleep = sleep
        self._batch_size = min(settings.upsert_batch_size, 256)
        self._local = _is_local(client)
        self._ready = False  # collection seen and its profile verified
        self._ready_lock = threading.Lock()

    @property
    def collection_name(self) -> str:
        return self._name

    @property
    def client(self) -> QdrantClient:
        """The underlying client, for components that share it (the active-collection pointer)."""
        return self._client

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    # --- collection --------------------------------------------------------------------------------
    def ensure_collection(self) -> None:
        from qdrant_client.http import models as qm

        with self._ready_lock:
            if not self._call("check collection", lambda: self._client.collection_exists(self._name)):
                try:
                    self._call("create collection", self._create_collection, retry=False)
                    logger.info("created Qdrant collection", extra={"collection": self._name})
                except (ProviderRejected, ConfigurationError):
                    # A concurrent worker may have created it first; anything else fails the check below.
                    if not self._call("check collection", lambda: self._client.collection_exists(self._name)):
                        raise
            info = self._call("read collection", lambda: self._client.get_collection(self._name))
            self._verify(info)
            existing = set((info.payload_schema or {}).keys())
            wanted: list[tuple[str, qm.PayloadSchemaType | qm.KeywordIndexParams]] = [
                ("tenant", qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)),
                ("key", qm.PayloadSchemaType.KEYWORD),
                ("kind", qm.PayloadSchemaType.KEYWORD),
            ]
            wanted += [
                (f"meta.{field}", qm.PayloadSchemaType.KEYWORD) for field in self._settings.metadata_indexes
            ]
            for field_name, schema in wanted:
                if field_name in existing:
                    continue
                self._call(
                    "create payload index",
                    lambda f=field_name, s=schema: self._client.create_payload_index(  # type: ignore[misc]
                        self._name, field_name=f, field_schema=s, wait=True
                    ),
                )
            self._ready = True

    def _create_collection(self) -> bool:
        return self._client.create_collection(
            self._name,
            **collection_layout(self._settings, self._profile.dimension),
            metadata={
                METADATA_KEY: {
                    "profile": {
                        "provider": self._profile.provider,
                        "model": self._profile.model,
                        "dimension": self._profile.dimension,
                    },
                    "slug": self._profile.slug,
                    "schema": SCHEMA_VERSION,
                }
            },
        )

    def recorded_profile(self) -> EmbeddingProfile | None:
        """The profile recorded on the collection, or None when the collection does not exist."""
        if not self._call("check collection", lambda: self._client.collection_exists(self._name)):
            return None
        info = self._call("read collection", lambda: self._client.get_collection(self._name))
        return profile_from_metadata(info.config.metadata)

    def _verify(self, info: Any) -> None:
        recorded = profile_from_metadata(info.config.metadata)
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
        vectors = info.config.params.vectors
        dense = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else None
        sparse = info.config.params.sparse_vectors or {}
        if dense is None or dense.size != self._profile.dimension or SPARSE_VECTOR not in sparse:
            raise ProfileMismatch(f"collection {self._name} lacks a {DENSE_VECTOR}/{SPARSE_VECTOR} layout")

    def _require(self, create: bool) -> bool:
        """Whether the collection exists (creating it when ``create``), verifying its profile once."""
        if self._ready:
            return True
        if create:
            self.ensure_collection()
            return True
        with self._ready_lock:
            if not self._call("check collection", lambda: self._client.collection_exists(self._name)):
                return False
            self._verify(self._call("read collection", lambda: self._client.get_collection(self._name)))
            self._ready = True
            return True

    def _require_for_search(self) -> bool:
        """Like ``_require`` but a missing collection is only fine when no other profile's collection
        exists: otherwise the query embedder differs from the one the documents were indexed with."""
        if self._require(create=False):
            return True
        response = self._call("list collections", self._client.get_collections)
        prefix = f"{self._settings.collection_prefix}_"
        others = sorted(c.name for c in response.collections if c.name.startswith(prefix))
        if others:
            raise ProfileMismatch(
                f"the query embedder ({self._profile.slug}) has no collection; documents are indexed in "
                f"{', '.join(others)}: configure the embedder they were indexed with, or re-index"
            )
        return False

    # --- writes ------------------------------------------------------------------------------------
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        from qdrant_client.http import models as qm

        if not points:
            return
        for p in points:
            self._check_point(p)
        self._require(create=True)
        for start in range(0, len(points), self._batch_size):
            batch = [
                qm.PointStruct(
                    id=p.point_id,
                    vector={
                        DENSE_VECTOR: list(p.dense),
                        SPARSE_VECTOR: qm.SparseVector(
                            indices=list(p.sparse.indices), values=list(p.sparse.values)
                        ),
                    },
                    payload=_payload(p),
                )
                for p in points[start : start + self._batch_size]
            ]
            self._call(
                "upsert",
                lambda b=batch: self._client.upsert(self._name, points=b, wait=True),  # type: ignore[misc]
            )

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
        from qdrant_client.http import models as qm

        ids = list(point_ids)
        if not ids or not self._require(create=False):
            return
        for start in range(0, len(ids), _DELETE_BATCH):
            selector = qm.PointIdsList(points=list(ids[start : start + _DELETE_BATCH]))
            self._call(
                "delete points",
                lambda s=selector: self._client.delete(self._name, points_selector=s, wait=True),  # type: ignore[misc]
            )

    def delete_document(self, tenant: str, key: str) -> int:
        from qdrant_client.http import models as qm

        if not self._require(create=False):
            return 0
        document = self._document_filter(tenant, key)
        count = self._count(document)
        if count:
            self._call(
                "delete document",
                lambda: self._client.delete(
                    self._name, points_selector=qm.FilterSelector(filter=document), wait=True
                ),
            )
        return count

    def set_metadata(self, tenant: str, key: str, metadata: dict[str, Any]) -> int:
        """Replace ``meta`` wholesale: a top-level ``set_payload`` key replaces its value (it is not deep
        merged), so fields dropped from the metadata disappear from the points too."""
        from qdrant_client.http import models as qm

        if not self._require(create=False):
            return 0
        document = self._document_filter(tenant, key)
        count = self._count(document)
        if count:
            self._call(
                "set metadata",
                lambda: self._client.set_payload(
                    self._name,
                    payload={"meta": dict(metadata)},
                    points=qm.FilterSelector(filter=document),
                    wait=True,
                ),
            )
        return count

    # --- reads -------------------------------------------------------------------------------------
    def existing_vectors(self, tenant: str, key: str) -> dict[str, list[float]]:
        if not self._require(create=False):
            return {}
        vectors: dict[str, list[float]] = {}
        for point in self._scroll(self._document_filter(tenant, key), ["content_hash"], with_dense=True):
            dense = _dense_of(point)
            content_hash = (point.payload or {}).get("content_hash")
            if dense is not None and content_hash:
                vectors[str(content_hash)] = dense
        return vectors

    def point_ids(self, tenant: str, key: str) -> set[str]:
        if not self._require(create=False):
            return set()
        return {str(p.id) for p in self._scroll(self._document_filter(tenant, key), False)}

    def dense_vectors(self, point_ids: Sequence[str]) -> dict[str, list[float]]:
        ids = list(dict.fromkeys(point_ids))
        if not ids or not self._require(create=False):
            return {}
        records = self._call(
            "retrieve vectors",
            lambda: self._client.retrieve(
                self._name, ids=ids, with_payload=False, with_vectors=[DENSE_VECTOR]
            ),
        )
        found: dict[str, list[float]] = {}
        for record in records:
            dense = _dense_of(record)
            if dense is not None:
                found[str(record.id)] = dense
        return found

    def count_by_document(self, tenant: str | None = None) -> dict[tuple[str, str], int]:
        return dict(Counter(self.document_keys(tenant)))

    def document_keys(self, tenant: str | None = None) -> Iterator[tuple[str, str]]:
        from qdrant_client.http import models as qm

        if not self._require(create=False):
            return
        scope = qm.Filter(must=[_tenant_condition(tenant)]) if tenant is not None else None
        for point in self._scroll(scope, ["tenant", "key"], page=1000):
            payload = point.payload or {}
            yield str(payload.get("tenant")), str(payload.get("key"))

    def search(self, query: SearchQuery) -> list[StoredChunk]:
        from qdrant_client.http import models as qm

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
        where = self._search_filter(query.tenant, query.filters)
        if not self._require_for_search():
            return []

        sparse_vector = (
            qm.SparseVector(indices=list(query.sparse.indices), values=list(query.sparse.values))
            if query.sparse is not None and has_sparse
            else None
        )
        sparse_params = self._sparse_params(query.tenant)
        # Local mode is exact search: it would only warn that search params do nothing there.
        dense_params = None if self._local else dense_search_params(self._settings)

        def dense_request() -> Any:
            return qm.QueryRequest(
                query=list(query.dense or []),
                using=DENSE_VECTOR,
                filter=where,
                params=dense_params,
                score_threshold=query.score_threshold,
                limit=query.limit,
                with_payload=_SEARCH_PAYLOAD,
            )

        def sparse_request(with_dense: bool) -> Any:
            return qm.QueryRequest(
                query=sparse_vector,
                using=SPARSE_VECTOR,
                filter=where,
                params=sparse_params,
                limit=query.limit,
                with_payload=_SEARCH_PAYLOAD,
                with_vector=[DENSE_VECTOR] if with_dense else False,
            )

        if query.mode == "dense":
            requests = [dense_request()]
        elif query.mode == "sparse":
            requests = [sparse_request(with_dense=query.with_dense)]
        else:
            # Both retrievers in one round trip, each with its own raw scores (a fused query would only
            # return the fused score); the sparse side brings dense vectors so every candidate gets a
            # cosine without a second call. The filter sits on each request.
            requests = [dense_request()] + ([sparse_request(with_dense=True)] if sparse_vector else [])
        lists = self._call("search", lambda: self._query_batch(requests), rejected=QueryRejected)
        if query.mode == "sparse":
            return [_stored_chunk(p, sparse_rank=r) for r, p in enumerate(lists[0], start=1)]
        dense_hits = [_stored_chunk(p, dense_rank=r) for r, p in enumerate(lists[0], start=1)]
        if query.mode == "dense":
            return dense_hits
        sparse_hits = (
            [_stored_chunk(p, sparse_rank=r) for r, p in enumerate(lists[1], start=1)]
            if (len(lists) > 1)
            else []
        )
        return fuse_rrf(dense_hits, sparse_hits, self._rrf_k)[: query.limit]

    def _query_batch(self, requests: list[Any]) -> list[list[Any]]:
        """One ``query_batch_points`` call where the client has it (REST, local mode), else one
        ``query_points`` per request (the Edge client)."""
        if hasattr(self._client, "query_batch_points"):
            responses = self._client.query_batch_points(self._name, requests=requests)
            return [list(r.points) for r in responses]
        out = []
        for r in requests:
            response = self._client.query_points(
                self._name,
                query=r.query,
                using=r.using,
                query_filter=r.filter,
                search_params=r.params,
                score_threshold=r.score_threshold,
                limit=r.limit,
                with_payload=r.with_payload,
                with_vectors=r.with_vector or False,
            )
            out.append(list(response.points))
        return out

    # --- filters -----------------------------------------------------------------------------------
    def _document_filter(self, tenant: str, key: str) -> qm.Filter:
        from qdrant_client.http import models as qm

        if not tenant or not key:
            raise ValueError("tenant and key are required")
        return qm.Filter(
            must=[_tenant_condition(tenant), qm.FieldCondition(key="key", match=qm.MatchValue(value=key))]
        )

    def _search_filter(self, tenant: str, filters: dict[str, FilterValue]) -> qm.Filter:
        """The tenant first, then one condition per user filter. A user filter can only ever narrow the
        tenant's points: its name addresses ``meta.<name>`` (or a reserved top-level field), never
        ``tenant``."""
        from qdrant_client.http import models as qm

        must: list[qm.Condition] = [_tenant_condition(tenant)]
        for name, value in filters.items():
            if not is_field_name(name):
                raise BadRequest(
                    f"filter field {str(name)[:40]!r} is not a field name: use {FIELD_NAME_RULE}"
                )
            path = name if name in RESERVED_FILTER_FIELDS else f"meta.{name}"
            must.append(_condition(path, name, value))
        return qm.Filter(must=must)

    def _sparse_params(self, tenant: str) -> qm.SearchParams | None:
        from qdrant_client.http import models as qm

        if not self._tenant_idf:
            return None
        return qm.SearchParams(idf=qm.IdfCorpusParams(corpus=qm.Filter(must=[_tenant_condition(tenant)])))

    # --- plumbing ----------------------------------------------------------------------------------
    def _count(self, where: qm.Filter) -> int:
        result = self._call("count", lambda: self._client.count(self._name, count_filter=where, exact=True))
        return int(result.count)

    def _scroll(
        self,
        where: qm.Filter | None,
        with_payload: bool | list[str],
        *,
        with_dense: bool = False,
        page: int = _SCROLL_PAGE,
    ) -> Iterator[Any]:
        offset: Any = None
        while True:
            points, offset = self._call(
                "scroll",
                lambda o=offset: self._client.scroll(  # type: ignore[misc]
                    self._name,
                    scroll_filter=where,
                    limit=page,
                    offset=o,
                    with_payload=with_payload,
                    with_vectors=[DENSE_VECTOR] if with_dense else False,
                ),
            )
            yield from points
            if offset is None:
                return

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        return _LOCAL_LOCK if self._local else contextlib.nullcontext()

    def _call(
        self,
        what: str,
        fn: Callable[[], T],
        *,
        rejected: type[WinnowError] = ProviderRejected,
        retry: bool = True,
    ) -> T:
        attempts = self._settings.max_attempts if retry else 1
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._guard():
                    return fn()
            except WinnowError:
                raise
            except Exception as exc:
                error = self._translate(exc, what, rejected)
                if error is None:
                    raise
                if isinstance(error, TransientError) and attempt < attempts:
                    delay = _backoff(attempt, error.retry_after)
                    logger.warning(
                        "Qdrant call failed, retrying",
                        extra={"operation": what, "attempt": attempt, "error_type": type(exc).__name__},
                    )
                    self._sleep(delay)
                    continue
                raise error from exc

    def _translate(self, exc: Exception, what: str, rejected: type[WinnowError]) -> WinnowError | None:
        """Our exception for a Qdrant/transport error, or None for a bug that should surface as is."""
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        if isinstance(exc, UnexpectedResponse):
            status = exc.status_code
            detail = _detail(exc)
            if status is None or status >= 500:
                return ProviderUnavailable(f"Qdrant {what} failed: HTTP {status}")
            if status == 429:
                return ProviderRateLimited(
                    f"Qdrant {what} throttled (HTTP 429)", retry_after=_retry_after(exc.headers)
                )
            if status in (401, 403):
                return ConfigurationError(f"Qdrant refused the credentials (HTTP {status}) on {what}")
            if status == 404:
                self._ready = False
                return ConfigurationError(f"Qdrant {what}: collection {self._name} not found ({detail})")
            return rejected(f"Qdrant rejected {what} (HTTP {status}): {detail}")
        if isinstance(exc, ResponseHandlingException):
            source = getattr(exc, "source", None)
            return ProviderUnavailable(f"Qdrant {what} failed: {type(source or exc).__name__}")
        if isinstance(exc, ConnectionError | TimeoutError):
            return ProviderUnavailable(f"Qdrant {what} failed: {type(exc).__name__}")
        import httpx

        if isinstance(exc, httpx.TransportError):
            return ProviderUnavailable(f"Qdrant {what} failed: {type(exc).__name__}")
        grpc_error = _translate_grpc(exc, what, rejected)
        if grpc_error is not None:
            return grpc_error
        if self._local and isinstance(exc, ValueError):
            if "not found" in str(exc).lower() and "collection" in str(exc).lower():
                self._ready = False
                return ConfigurationError(f"Qdrant {what}: collection {self._name} not found")
            return rejected(f"Qdrant rejected {what}: {str(exc)[:200]}")
        return None


def _tenant_condition(tenant: str) -> qm.FieldCondition:
    from qdrant_client.http import models as qm

    if not is_tenant(tenant):
        raise ValueError("a valid tenant is required")
    return qm.FieldCondition(key="tenant", match=qm.MatchValue(value=tenant))


def _condition(path: str, name: str, value: FilterValue) -> qm.Condition:
    from qdrant_client.http import models as qm

    if isinstance(value, RangeFilter):
        if value.gte is None and value.lte is None:
            raise BadRequest(f"filter {name!r}: a range needs gte or lte")
        return qm.FieldCondition(key=path, range=qm.Range(gte=value.gte, lte=value.lte))
    if isinstance(value, list):
        if not value:
            raise BadRequest(f"filter {name!r}: the list of values is empty")
        if all(isinstance(v, str) for v in value):
            return qm.FieldCondition(key=path, match=qm.MatchAny(any=[str(v) for v in value]))
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return qm.FieldCondition(key=path, match=qm.MatchAny(any=[int(v) for v in value]))
        # Mixed types: one MatchAny per kind (each condition costs a payload lookup per point in local
        # mode: 20 fields x 100 mixed values took seconds as one condition per value), then what only a
        # condition of its own can match (booleans, fractional floats).
        words = list(dict.fromkeys(v for v in value if isinstance(v, str)))
        numbers = list(dict.fromkeys(int(v) for v in value if _integral(v)))
        others_seen: set[tuple[type, object]] = set()
        others: list[FilterValue] = []
        for v in value:  # 1 == 1.0 == True: keep each (kind, value) once without merging kinds
            if not isinstance(v, str) and not _integral(v) and (type(v), v) not in others_seen:
                others_seen.add((type(v), v))
                others.append(v)
        grouped: list[qm.Condition] = []
        if words:
            grouped.append(qm.FieldCondition(key=path, match=qm.MatchAny(any=words)))
        if numbers:
            grouped.append(qm.FieldCondition(key=path, match=qm.MatchAny(any=numbers)))
        grouped.extend(_condition(path, name, v) for v in others)
        if len(grouped) == 1:
            return grouped[0]
        fractions = [float(v) for v in others if isinstance(v, float)]
        if len(fractions) < 2:
            return qm.Filter(should=grouped)
        # Fractional floats need a condition each; a point whose value is in no group and outside their
        # span fails on the coarse test first, so most points cost a few conditions, not one per value.
        coarse = [c for c in grouped if not isinstance(getattr(c, "range", None), qm.Range)]
        coarse.append(qm.FieldCondition(key=path, range=qm.Range(gte=min(fractions), lte=max(fractions))))
        return qm.Filter(must=[qm.Filter(should=coarse)], should=grouped)
    if isinstance(value, bool | str):
        return qm.FieldCondition(key=path, match=qm.MatchValue(value=value))
    if isinstance(value, int):
        return qm.FieldCondition(key=path, match=qm.MatchValue(value=value))
    if isinstance(value, float):
        if value.is_integer():  # 2020.0 matches a stored 2020
            return qm.FieldCondition(key=path, match=qm.MatchValue(value=int(value)))
        return qm.FieldCondition(key=path, range=qm.Range(gte=value, lte=value))
    raise BadRequest(f"filter {name!r}: unsupported value type {type(value).__name__}")


def _integral(value: object) -> bool:
    """An int, or a float with an integer value (2020.0 matches a stored 2020); never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _payload(p: ChunkPoint) -> dict[str, Any]:
    return {
        "tenant": p.tenant,
        "key": p.key,
        "title": p.chunk.title,
        "section": p.chunk.section,
        "section_path": list(p.chunk.section_path),
        "page": p.chunk.page,
        "chunk_index": p.chunk.index,
        "text": p.chunk.text,
        "content_hash": p.chunk.content_hash,
        "source_type": p.source_type,
        "kind": p.chunk.kind,
        "ocr": p.chunk.ocr,
        "doc_version": p.doc_version,
        "meta": dict(p.metadata),
    }


def fuse_rrf(dense: list[StoredChunk], sparse: list[StoredChunk], k: int) -> list[StoredChunk]:
    """Reciprocal rank fusion of the two candidate lists (what Qdrant's ``RrfQuery`` computes), keeping
    each retriever's score and rank on the merged chunk; ``score`` becomes the fused score."""
    merged: dict[str, StoredChunk] = {}
    for hit in [*dense, *sparse]:
        seen = merged.get(hit.point_id)
        if seen is None:
            merged[hit.point_id] = hit
            continue
        merged[hit.point_id] = replace(
            seen,
            dense=seen.dense if seen.dense is not None else hit.dense,
            dense_score=seen.dense_score if seen.dense_score is not None else hit.dense_score,
            dense_rank=seen.dense_rank if seen.dense_rank is not None else hit.dense_rank,
            sparse_score=seen.sparse_score if seen.sparse_score is not None else hit.sparse_score,
            sparse_rank=seen.sparse_rank if seen.sparse_rank is not None else hit.sparse_rank,
        )
    fused = [
        replace(
            h,
            # Qdrant counts ranks from 0: the best chunk of a list adds 1/k
            score=sum(1.0 / (k + rank - 1) for rank in (h.dense_rank, h.sparse_rank) if rank is not None),
        )
        for h in merged.values()
    ]
    order = {pid: i for i, pid in enumerate(merged)}
    fused.sort(key=lambda h: (-h.score, order[h.point_id]))
    return fused


def _stored_chunk(
    point: Any, *, dense_rank: int | None = None, sparse_rank: int | None = None
) -> StoredChunk:
    payload = point.payload or {}
    page = payload.get("page")
    score = float(point.score) if getattr(point, "score", None) is not None else 0.0
    return StoredChunk(
        point_id=str(point.id),
        key=str(payload.get("key", "")),
        title=str(payload.get("title") or ""),
        section=str(payload.get("section") or ""),
        page=int(page) if page is not None else None,
        chunk_index=int(payload.get("chunk_index") or 0),
        text=str(payload.get("text") or ""),
        content_hash=str(payload.get("content_hash") or ""),
        metadata=dict(payload.get("meta") or {}),
        score=score,
        dense=_dense_of(point),
        kind=str(payload.get("kind") or "text"),  # points written before kind existed are text
        ocr=bool(payload.get("ocr", False)),
        dense_score=score if dense_rank is not None else None,
        dense_rank=dense_rank,
        sparse_score=score if sparse_rank is not None else None,
        sparse_rank=sparse_rank,
    )


def _dense_of(point: Any) -> list[float] | None:
    vector = getattr(point, "vector", None)
    if isinstance(vector, dict):
        vector = vector.get(DENSE_VECTOR)
    if vector is None or isinstance(vector, dict):
        return None
    return [float(x) for x in vector]


def _backoff(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(retry_after, 10.0)
    return random.uniform(0, min(2.0, 0.2 * 2 ** (attempt - 1)))


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _detail(exc: Any) -> str:
    try:
        structured = exc.structured()
        message = structured.get("status", {}).get("error") if isinstance(structured, dict) else None
    except Exception:
        message = None
    return str(message or exc.reason_phrase or "no detail")[:200]


_GRPC_TRANSIENT = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "INTERNAL", "UNKNOWN"}
_GRPC_CONFIG = {"UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND"}


def _translate_grpc(exc: Exception, what: str, rejected: type[WinnowError]) -> WinnowError | None:
    """grpc errors (``prefer_grpc=True``), recognised without importing grpc on the REST path."""
    code_of = getattr(exc, "code", None)
    if not type(exc).__module__.startswith("grpc") or not callable(code_of):
        return None
    try:
        code = getattr(code_of(), "name", str(code_of()))
    except Exception:
        return None
    if code in _GRPC_TRANSIENT:
        return ProviderUnavailable(f"Qdrant {what} failed: gRPC {code}")
    if code in _GRPC_CONFIG:
        return ConfigurationError(f"Qdrant {what} failed: gRPC {code}")
    return rejected(f"Qdrant rejected {what}: gRPC {code}")
