"""Reconcile's components built from a ``Container``, like ``winnow.factory`` builds the others: the event
queue (SQS when ``WINNOW_QUEUE_URL`` is set, else straight into the ingest service), the active-index
pointer (a Qdrant alias), and what searches and ingest use while an embedding-profile rebuild runs.

Adapters are imported lazily here, as in the factory, so importing ``winnow.reconcile`` stays cheap."""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

from winnow.errors import ConfigurationError
from winnow.reconcile.active import ActiveProfileCache, TransitionStore

if TYPE_CHECKING:
    from winnow.factory import Container
    from winnow.ingest.service import IngestService
    from winnow.models import EmbeddingProfile
    from winnow.ports import ActiveIndex, Embedder, EventQueue, VectorStore
    from winnow.reconcile.service import Reconciler

_lock = threading.RLock()
# Per container: the pointer cache and the components of the active profile (one client of each kind).
_state: weakref.WeakKeyDictionary[Container, dict[str, Any]] = weakref.WeakKeyDictionary()


def _of(container: Container) -> dict[str, Any]:
    with _lock:
        return _state.setdefault(container, {})


def active_index_for(container: Container) -> ActiveIndex | None:
    """The pointer, on the store's own Qdrant client; None for a store that is not Qdrant."""
    injected = getattr(container, "active_index", None)
    if injected is not None:
        return injected
    state = _of(container)
    with _lock:
        if "index" not in state:
            from winnow.adapters.qdrant_collection import CollectionStore

            store = container.store
            state["index"] = store.active_index() if isinstance(store, CollectionStore) else None
        return state["index"]


def active_profile(container: Container, ttl_seconds: float = 60.0) -> EmbeddingProfile | None:
    """What searches read (cached for ``ttl_seconds``); None when no pointer is set."""
    index = active_index_for(container)
    if index is None:
        return None
    state = _of(container)
    with _lock:
        cache = state.get("cache")
        if cache is None:
            cache = state["cache"] = ActiveProfileCache(index, ttl_seconds)
    return cache.get()


def forget_active(container: Container) -> None:
    """Drop the cached pointer, so this process sees a switch at once (the CLI after a run, tests)."""
    cache = _of(container).get("cache")
    if cache is not None:
        cache.invalidate()


def embedder_for(container: Container, profile: EmbeddingProfile) -> Embedder:
    """A query embedder for ``profile`` (the collection searches still read during a rebuild)."""
    if profile == container.embedder.profile:
        return container.embedder
    if profile.provider == "voyage":
        from winnow.adapters.voyage import VoyageEmbedder

        voyage = container.settings.voyage.model_copy(
            update={"embed_model": profile.model, "output_dimension": profile.dimension}
        )
        return VoyageEmbedder(voyage, container._voyage_key(), container.voyage_http)
    if profile.provider == "local":
        from winnow.adapters.onnx_embedder import LocalOnnxEmbedder

        p = container.settings.providers
        embedder = LocalOnnxEmbedder(
            model_path=p.local_model_path,
            tokenizer_path=p.local_tokenizer_path,
            batch_size=p.local_batch_size,
            max_tokens=p.local_max_tokens,
        )
        if embedder.profile == profile:
            return embedder
    raise ConfigurationError(
        f"searches read the {profile.slug} collection but no embedder for it can be built here: "
        "finish the rebuild with reconcile, or configure that embedder"
    )


def _store_for(container: Container, profile: EmbeddingProfile) -> VectorStore:
    from winnow.adapters.qdrant_collection import CollectionStore

    store = container.store
    if not isinstance(store, CollectionStore):
        raise ConfigurationError("profile switching needs the Qdrant vector store")
    return store.for_profile(profile)


def search_components(container: Container) -> tuple[Embedder, VectorStore]:
    """The embedder and store searches should use: the configured ones, unless the pointer names
    another profile (a rebuild is under way), then that profile's. Same objects while it stays put,
    so a handler can rebuild its service only when ``store`` changes identity."""
    active = active_profile(container)
    if active is None or active == container.embedder.profile:
        return container.embedder, container.store
    state = _of(container)
    with _lock:
        cached = state.get("search")
        if cached is None or cached[0] != active:
            cached = state["search"] = (
                active,
                embedder_for(container, active),
                _store_for(container, active),
            )
    return cached[1], cached[2]


def ingest_store(container: Container) -> VectorStore:
    """The store ingest should write: the configured profile's, mirroring deletions and metadata to the
    collection searches still read while a rebuild is under way."""
    active = active_profile(container)
    if active is None or active == container.embedder.profile:
        return container.store
    state = _of(container)
    with _lock:
        cached = state.get("ingest")
        if cached is None or cached[0] != active:
            cached = state["ingest"] = (
                active,
                TransitionStore(container.store, _store_for(container, active)),
            )
    return cached[1]


def ingest_service(container: Container) -> IngestService:
    from winnow.ingest.service import IngestService

    return IngestService(
        objects=container.objects,
        ledger=container.ledger,
        store=ingest_store(container),
        embedder=container.embedder,
        sparse=container.sparse,
        chunking=container.settings.chunking,
        settings=container.settings.ingest,
        ocr=container.ocr,
        ocr_settings=container.settings.ocr,
    )


def event_queue_for(container: Container) -> EventQueue:
    injected = getattr(container, "event_queue", None)
    if injected is not None:
        return injected
    url = container.settings.storage.queue_url
    if url:
        from winnow.adapters.queue_sqs import SqsEventQueue

        state = _of(container)
        with _lock:  # one SQS client per warm container
            queue = state.get("sqs")
            if queue is None or queue[0] != url:
                queue = state["sqs"] = (url, SqsEventQueue(url))
        return queue[1]
    from winnow.adapters.queue_inprocess import InProcessEventQueue

    return InProcessEventQueue(ingest_service(container).handle)


def bucket_name(container: Container) -> str:
    return container.settings.storage.bucket or "local"


def reconciler_for(container: Container, queue: EventQueue | None = None) -> Reconciler:
    # Imported here: the search handler imports this module, and the reconciler pulls in the ingest service.
    from winnow.reconcile.service import Reconciler

    return Reconciler(
        objects=container.objects,
        ledger=container.ledger,
        store=container.store,
        queue=queue or event_queue_for(container),
        profile=container.embedder.profile,
        bucket=bucket_name(container),
        active_index=active_index_for(container),
    )
