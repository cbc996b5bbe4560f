"""The ``VectorStore`` on qdrant-client, for Qdrant Cloud or any Qdrant server over REST. Without a URL the
engine is Qdrant Edge, which the local tools provide (``winnow.embedded``).

The collection rules are ``CollectionStore``'s; filters are ``qdrant_filters``'; errors and retries are
``qdrant_errors``'. ``qdrant_client`` is imported lazily: it pulls numpy and grpc."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from winnow.adapters.qdrant_collection import (
    DENSE_VECTOR,
    SEARCH_PAYLOAD,
    SPARSE_VECTOR,
    CollectionFacts,
    CollectionStore,
    IndexSchema,
    QueryPlan,
    collection_metadata,
    profile_from_metadata,
)
from winnow.adapters.qdrant_filters import QdrantConditions
from winnow.adapters.qdrant_points import fuse_rrf, payload_of
from winnow.errors import ConfigurationError, WinnowError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qm

    from winnow.adapters.secrets import KeySource
    from winnow.models import ChunkPoint, EmbeddingProfile
    from winnow.ports import ActiveIndex
    from winnow.settings import QdrantSettings

__all__ = ["QdrantVectorStore", "fuse_rrf", "make_qdrant_client", "open_store", "profile_from_metadata"]

T = TypeVar("T")
MIN_SERVER_VERSION = (1, 19)  # IDF counted over a filter (the tenant's points), SearchParams.idf

# qdrant-client's in-process local mode (the tests' stand-in for a Qdrant server, and what the move of an
# old local-mode folder to Edge reads) mutates numpy arrays and a SQLite file without locks of its own:
# one lock per process serialises every call on such a client.
_LOCAL_LOCK = threading.RLock()


class EmbeddedEngine(Protocol):
    """An engine of a local folder that is not a ``QdrantClient`` (Qdrant Edge), provided by the local
    tools (``winnow.embedded``): it builds the stores of its collections."""

    closed: bool

    def store(
        self, profile: EmbeddingProfile, settings: QdrantSettings, *, rrf_k: int, collection_name: str | None
    ) -> CollectionStore: ...

    def close(self) -> None: ...


def make_qdrant_client(
    settings: QdrantSettings, api_key: str | KeySource | None, local_path: Path
) -> QdrantClient | EmbeddedEngine:
    """Qdrant Cloud (or any server) when ``settings.url`` is set, else the embedded engine at
    ``settings.path`` or ``local_path`` (``:memory:`` allowed), which the local tools provide. The
    server's compatibility check is skipped because it costs a round trip at cold start. A key source
    (a secret) is asked on every request, so a rotated key reaches a warm client (``QdrantKeyAuth``)."""
    if settings.url:
        from qdrant_client import QdrantClient

        from winnow.adapters.tls import tls_context

        key: dict[str, Any] = {"api_key": api_key}
        if callable(api_key):
            from winnow.adapters.qdrant_auth import QdrantKeyAuth

            key = {"auth": QdrantKeyAuth(api_key)}  # passed through to the REST client (httpx)
        return QdrantClient(
            url=settings.url,
            timeout=settings.timeout_seconds,
            prefer_grpc=False,
            check_compatibility=False,
            verify=tls_context(),  # passed through to the REST client (httpx), as ``auth`` is
            **key,
        )
    from winnow.embedded import embedded

    open_embedded = embedded("qdrant", instead="QDRANT_URL")
    engine: QdrantClient | EmbeddedEngine = open_embedded(settings, local_path)
    return engine


def open_store(
    settings: QdrantSettings,
    api_key: str | KeySource | None,
    local_path: Path,
    profile: EmbeddingProfile,
    *,
    rrf_k: int = 60,
) -> CollectionStore:
    """The store of ``profile``'s collection on the engine the settings choose."""
    return store_on(make_qdrant_client(settings, api_key, local_path), profile, settings, rrf_k=rrf_k)


def store_on(
    engine: QdrantClient | EmbeddedEngine,
    profile: EmbeddingProfile,
    settings: QdrantSettings,
    *,
    rrf_k: int = 60,
    collection_name: str | None = None,
) -> CollectionStore:
    """The store of ``profile``'s collection on an engine ``make_qdrant_client`` opened. qdrant-client is
    not imported to tell (about 55 MB): an engine can only be its client once something imported it."""
    client_module = sys.modules.get("qdrant_client")
    if client_module is not None and isinstance(engine, client_module.QdrantClient):
        return QdrantVectorStore(engine, profile, settings, rrf_k=rrf_k, collection_name=collection_name)
    embedded = cast("EmbeddedEngine", engine)
    return embedded.store(profile, settings, rrf_k=rrf_k, collection_name=collection_name)


def is_local_mode(client: Any) -> bool:
    """Whether the client runs qdrant-client's local mode (in this process, without locks of its own)."""
    from qdrant_client.local.qdrant_local import QdrantLocal

    return isinstance(getattr(client, "_client", None), QdrantLocal)


def local_guard(client: Any) -> AbstractContextManager[Any] | None:
    """The process-wide lock every call on a local-mode client takes; None for a server."""
    return _LOCAL_LOCK if is_local_mode(client) else None


def collection_layout(settings: QdrantSettings, dimension: int) -> dict[str, Any]:
    """``create_collection`` arguments from the settings: named ``dense`` (cosine) and ``bm25`` (IDF)
    vectors, HNSW with per-tenant graphs, INT8 scalar quantization, on-disk storage and shard count
    (docs/scaling.md). Local mode accepts and ignores what it does not implement."""
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
        "replication_factor": settings.replication_factor,
        "write_consistency_factor": settings.write_consistency_factor,
        "strict_mode_config": strict_mode(settings),
    }


def strict_mode(settings: QdrantSettings) -> qm.StrictModeConfig | None:
    """Qdrant Cloud's default strict mode for a new collection (filters only on fields with a fitting
    payload index, reads and filtered updates alike; at most 100 indexes), so a self-hosted Qdrant
    refuses what Cloud refuses; None leaves the server's default."""
    from qdrant_client.http import models as qm

    if not settings.strict_mode:
        return None
    return qm.StrictModeConfig(
        enabled=True,
        unindexed_filtering_retrieve=False,
        unindexed_filtering_update=False,
        max_payload_index_count=100,
    )


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


class QdrantVectorStore(CollectionStore):
    """``CollectionStore`` on a ``QdrantClient`` (a server, or local mode)."""

    conditions = QdrantConditions()

    def __init__(
        self,
        client: QdrantClient,
        profile: EmbeddingProfile,
        settings: QdrantSettings,
        *,
        rrf_k: int = 60,
        collection_name: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._local = is_local_mode(client)
        # A server refuses filters on unindexed fields (strict mode): so does its store, before asking.
        # Local mode (a folder moved to Edge, older tests) has no strict mode, like Edge.
        self.declared_only = not self._local
        super().__init__(
            profile,
            settings,
            rrf_k=rrf_k,
            collection_name=collection_name,
            sleep=sleep,
            guard=local_guard(client),
        )

    @property
    def client(self) -> QdrantClient:
        """The underlying client, for components that share it (the active-collection pointer)."""
        return self._client

    def for_profile(self, profile: EmbeddingProfile) -> QdrantVectorStore:
        return QdrantVectorStore(self._client, profile, self._settings, rrf_k=self._rrf_k, sleep=self._sleep)

    def close(self) -> None:
        self._client.close()

    def active_index(self) -> ActiveIndex:
        from winnow.adapters.qdrant_active import QdrantActiveIndex

        return QdrantActiveIndex(self._client, self._settings, local_guard(self._client))

    def _collection_gone(self, error: WinnowError) -> bool:
        # Local mode reports a missing collection as any bad request (a ValueError): ask it which.
        return self._local and isinstance(error.__cause__, ValueError) and not self._still_exists()

    def _still_exists(self) -> bool:
        with _LOCAL_LOCK:
            return self._client.collection_exists(self._name)

    # --- the engine calls ---------------------------------------------------------------------------
    def _exists(self) -> bool:
        return self._client.collection_exists(self._name)

    def _create(self) -> None:
        self._client.create_collection(
            self._name,
            **collection_layout(self._settings, self._profile.dimension),
            metadata=collection_metadata(self._profile),
        )

    def _facts(self) -> CollectionFacts:
        if not self._local:  # once per container, with the profile check: one round trip
            require_tenant_idf(self._client.info().version)
        info = self._client.get_collection(self._name)
        vectors = info.config.params.vectors
        dense = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else None
        return CollectionFacts(
            metadata=info.config.metadata,
            dense_size=dense.size if dense is not None else None,
            has_sparse=SPARSE_VECTOR in (info.config.params.sparse_vectors or {}),
            indexed={
                name: str(getattr(index.data_type, "value", index.data_type))
                for name, index in (info.payload_schema or {}).items()
            },
        )

    def _create_index(self, field: str, schema: IndexSchema) -> None:
        from qdrant_client.http import models as qm

        params: qm.PayloadSchemaType | qm.KeywordIndexParams = (
            qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
            if schema == "tenant"
            else qm.PayloadSchemaType(schema)
        )
        self._client.create_payload_index(self._name, field_name=field, field_schema=params, wait=True)

    def _collection_names(self) -> list[str]:
        return [c.name for c in self._client.get_collections().collections]

    def _write(self, points: Sequence[ChunkPoint]) -> None:
        from qdrant_client.http import models as qm

        batch = [
            qm.PointStruct(
                id=p.point_id,
                vector={
                    DENSE_VECTOR: list(p.dense),
                    SPARSE_VECTOR: qm.SparseVector(
                        indices=list(p.sparse.indices), values=list(p.sparse.values)
                    ),
                },
                payload=payload_of(p),
            )
            for p in points
        ]
        self._client.upsert(self._name, points=batch, wait=True)

    def _delete_ids(self, ids: list[str]) -> None:
        from qdrant_client.http import models as qm

        self._client.delete(self._name, points_selector=qm.PointIdsList(points=list(ids)), wait=True)

    def _delete_where(self, where: Any) -> None:
        from qdrant_client.http import models as qm

        self._client.delete(self._name, points_selector=qm.FilterSelector(filter=where), wait=True)

    def _set_payload_where(self, where: Any, payload: dict[str, Any], points: int) -> None:
        from qdrant_client.http import models as qm

        self._client.set_payload(
            self._name, payload=payload, points=qm.FilterSelector(filter=where), wait=True
        )

    def _count_where(self, where: Any) -> int:
        return int(self._client.count(self._name, count_filter=where, exact=True).count)

    def _scroll_page(
        self, where: Any, with_payload: bool | list[str], with_dense: bool, limit: int, offset: Any
    ) -> tuple[list[Any], Any]:
        points, next_offset = self._client.scroll(
            self._name,
            scroll_filter=where,
            limit=limit,
            offset=offset,
            with_payload=with_payload,
            with_vectors=[DENSE_VECTOR] if with_dense else False,
        )
        return list(points), next_offset

    def _retrieve_dense(self, ids: list[str]) -> list[Any]:
        return list(
            self._client.retrieve(self._name, ids=ids, with_payload=False, with_vectors=[DENSE_VECTOR])
        )

    def _query(self, plans: list[QueryPlan]) -> list[list[Any]]:
        # Local mode is exact search: it would only warn that search params do nothing there.
        dense_params = None if self._local else dense_search_params(self._settings)
        requests = [_request(p, dense_params) for p in plans]
        return [list(r.points) for r in self._client.query_batch_points(self._name, requests=requests)]


def _request(plan: QueryPlan, dense_params: qm.SearchParams | None) -> qm.QueryRequest:
    from qdrant_client.http import models as qm

    if isinstance(plan.vector, list):
        return qm.QueryRequest(
            query=plan.vector,
            using=plan.using,
            filter=plan.where,
            params=dense_params,
            score_threshold=plan.score_threshold,
            limit=plan.limit,
            with_payload=SEARCH_PAYLOAD,
        )
    return qm.QueryRequest(
        query=qm.SparseVector(indices=list(plan.vector.indices), values=list(plan.vector.values)),
        using=plan.using,
        filter=plan.where,
        params=None if plan.idf_corpus is None else _tenant_idf(plan.idf_corpus),
        limit=plan.limit,
        with_payload=SEARCH_PAYLOAD,
        with_vector=[DENSE_VECTOR] if plan.with_dense else False,
    )


def require_tenant_idf(version: str) -> None:
    """Refuse a server that cannot count IDF over one tenant's points (``SearchParams.idf``, Qdrant 1.19):
    on it one tenant's documents would move every other tenant's BM25 scores."""
    if _major_minor(version) < MIN_SERVER_VERSION:
        wanted = ".".join(map(str, MIN_SERVER_VERSION))
        raise ConfigurationError(
            f"Qdrant {version[:40]} cannot keep BM25 statistics per tenant: "
            f"Winnow needs Qdrant {wanted} or newer"
        )


def _tenant_idf(corpus: Any) -> qm.SearchParams:
    """IDF counted over ``corpus`` (the tenant's points), not the whole collection (Qdrant >= 1.19)."""
    from qdrant_client.http import models as qm

    return qm.SearchParams(idf=qm.IdfCorpusParams(corpus=corpus))


def _major_minor(version: str) -> tuple[int, int]:
    """``1.19.0-dev`` → (1, 19); (0, 0) for what does not start with two dotted numbers. String code, no
    pattern: the version comes from the server."""
    parts = version.strip()[:40].split(".")
    numbers = ["".join(itertools.takewhile(str.isdigit, part)) for part in parts[:2]]
    if len(numbers) < 2 or not all(numbers) or len(parts[0]) != len(numbers[0]):
        return (0, 0)
    return (int(numbers[0]), int(numbers[1]))
