"""The engine side of every Qdrant ``VectorStore``: the calls each engine implements, and the collection's
life (created with the ``dense``/``bm25`` layout, its profile recorded and verified before any vector is
written or searched, a payload index for every field a query filters on).

``CollectionEngine`` is the base of ``CollectionStore`` (``qdrant_collection``), which builds the
``VectorStore`` port on these calls; the engines (``QdrantVectorStore`` on qdrant-client,
``EdgeVectorStore`` on Qdrant Edge) implement only the abstract ones."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from winnow.adapters.qdrant_errors import CollectionNotFound, QdrantCaller
from winnow.adapters.qdrant_filters import Conditions, index_fields
from winnow.adapters.qdrant_points import DENSE_VECTOR, SPARSE_VECTOR
from winnow.errors import ConfigurationError, ProfileMismatch, ProviderRejected, WinnowError
from winnow.models import ChunkPoint, EmbeddingProfile, SparseVector
from winnow.observability import logger
from winnow.ports import ActiveIndex

if TYPE_CHECKING:
    from winnow.settings import QdrantSettings

T = TypeVar("T")
IndexSchema = Literal["tenant", "keyword", "integer", "float", "bool", "datetime"]

METADATA_KEY = "winnow"  # collection metadata: {"winnow": {"profile": {...}, "schema": 1}}
SCHEMA_VERSION = 1


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


class CollectionEngine(ABC):
    """The engine calls and the collection's life. ``rrf_k`` is the RRF ranking constant of hybrid fusion."""

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
