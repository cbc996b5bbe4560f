"""The composition root: every component and service is built here from validated settings, lazily and
once per process (one client of each kind per warm Lambda container). Handlers and the CLI call
``get_container()``; tests build a ``Container`` with their own settings or inject components directly
(assigning ``container.store`` and the like replaces the component; services follow it)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import cached_property
from typing import TYPE_CHECKING

from winnow.wiring import Settings
from winnow.wiring.providers import ProviderParts
from winnow.wiring.records import RecordParts

if TYPE_CHECKING:
    from winnow.answer.service import AnswerService
    from winnow.conversations.service import ConversationService
    from winnow.index import IndexLifecycle
    from winnow.ingest.service import IngestService
    from winnow.ports import ActiveIndex, EventQueue, FunctionInvoker, Reranker, VectorStore
    from winnow.reconcile.service import Reconciler
    from winnow.search.service import SearchService

ACTIVE_PROFILE_TTL_SECONDS = 60.0


class Container(ProviderParts, RecordParts):
    """The wired components and services. Properties create their object on first use: the providers
    (``winnow.wiring.providers``) and the records (``winnow.wiring.records``) in their parts; the vector
    store, the re-ranker, the index lifecycle and the services here."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._lock = threading.RLock()
        # Services keyed by the components they were built on: a new store (a profile switch, a test
        # injecting one) gets a new service, the same store keeps the warm one and its query cache.
        self._search: tuple[VectorStore, SearchService] | None = None
        self._ingest: tuple[VectorStore, IngestService] | None = None

    # --- components --------------------------------------------------------------------------------
    @cached_property
    def reranker(self) -> Reranker | None:
        with self._lock:
            if self.settings.providers.reranker == "http":
                from winnow.adapters.rerank_server import ServerReranker

                r = self.settings.rerank_server
                return ServerReranker(r, self._key(r.api_key, r.api_key_secret_arn))
            if not self.uses_voyage_reranker:
                return None
            from winnow.adapters.voyage import VoyageReranker

            return VoyageReranker(self.settings.voyage, self._voyage_key(), self.voyage_http)

    @cached_property
    def store(self) -> VectorStore:
        with self._lock:
            from winnow.adapters.qdrant_store import open_store

            q = self.settings.qdrant
            api_key = self._key(q.api_key, q.api_key_secret_arn) if q.url else None  # rotates
            local_path = self.settings.storage.qdrant_local_path
            rrf_k = self.settings.search.rrf_k
            store = open_store(q, api_key, local_path, self.embedder.profile, rrf_k=rrf_k)
            store.ensure_collection()
            return store

    def close(self) -> None:
        """Release the vector store's engine when one was opened (an embedded folder's lock, files and
        mappings; a Qdrant client's connections). A Lambda never closes its container; a local server or a
        test done with one does, rather than leave the files mapped until the collector meets them."""
        store = self.__dict__.get("store")
        close = getattr(store, "close", None)
        if close is not None:
            close()

    # --- the index lifecycle (which collection serves reads, which take writes) ------------------------
    @cached_property
    def index(self) -> IndexLifecycle:
        from winnow.index import IndexLifecycle

        return IndexLifecycle(self, self._lock, ACTIVE_PROFILE_TTL_SECONDS)

    @property
    def active_index(self) -> ActiveIndex | None:
        return self.index.active_index

    def forget_active(self) -> None:
        self.index.forget_active()

    # --- services ----------------------------------------------------------------------------------------
    def search_service(self) -> SearchService:
        """The search service on the collection searches read: the configured profile's, or the previous
        one while reconcile rebuilds. The first build imports qdrant-client and opens the clients without
        collector passes (see ``winnow.coldstart``)."""
        from winnow.coldstart import building_long_lived_objects

        with self._lock:
            cold: AbstractContextManager[None] = (
                building_long_lived_objects() if self._search is None else nullcontext()
            )
            with cold:
                embedder, store = self.index.reads()
                if self._search is None or self._search[0] is not store:
                    from winnow.search.service import SearchService

                    service = SearchService(
                        embedder=embedder,
                        store=store,
                        sparse=self.sparse,
                        reranker=self.reranker,
                        settings=self.settings.search,
                        cache_size=self.settings.providers.query_cache_size,
                        objects=self.objects,
                    )
                    self._search = (store, service)
                return self._search[1]

    def answer_service(self) -> AnswerService:
        """``FeatureDisabled`` (501) before anything else is built when no generator is configured."""
        generator = self.generator
        from winnow.answer.service import AnswerService

        return AnswerService(self.search_service(), generator, self.settings.answer)

    def conversation_service(self) -> ConversationService:
        """Follow-ups are rewritten by the answer generator when one is configured, else by the rule
        (the generator is built only when a follow-up first needs it)."""
        from winnow.conversations.service import ConversationService

        return ConversationService(
            self.search_service(), self.conversation_store, self.settings.conversations, self._rewriter
        )

    def ingest_service(self) -> IngestService:
        store = self.index.writes()
        with self._lock:
            if self._ingest is None or self._ingest[0] is not store:
                from winnow.ingest.service import IngestService

                service = IngestService(
                    objects=self.objects,
                    ledger=self.ledger,
                    store=store,
                    embedder=self.embedder,
                    sparse=self.sparse,
                    chunking=self.settings.chunking,
                    settings=self.settings.ingest,
                    ocr=self.ocr,
                    ocr_settings=self.settings.ocr,
                    vision=self.vision,
                    figure_settings=self.settings.figures,
                    checkpoint=self.vector_checkpoint,
                )
                self._ingest = (store, service)
            return self._ingest[1]

    @cached_property
    def event_queue(self) -> EventQueue:
        """Where reconcile sends its events: SQS when ``WINNOW_QUEUE_URL`` is set, else straight into
        the ingest service (the embedded default)."""
        with self._lock:
            url = self.settings.storage.queue_url
            if url:
                from winnow.adapters.queue_sqs import SqsEventQueue

                return SqsEventQueue(url)
            from winnow.embedded import embedded

            in_process_queue = embedded("queue", instead="WINNOW_QUEUE_URL")
            return in_process_queue(
                lambda event: self.ingest_service().handle(event),
                self.embedder,
                self.settings.ingest.batch_concurrency,
            )

    @cached_property
    def invoker(self) -> FunctionInvoker:
        """How the reconcile function continues a long run in a fresh invocation of itself."""
        from winnow.adapters.lambda_invoke import LambdaAsyncInvoker

        return LambdaAsyncInvoker()

    def reconciler(self) -> Reconciler:
        from winnow.reconcile.service import Reconciler

        return Reconciler(
            objects=self.objects,
            ledger=self.ledger,
            store=self.store,
            queue=self.event_queue,
            profile=self.embedder.profile,
            bucket=self.settings.storage.bucket or "local",
            active_index=self.active_index,
        )


_container: Container | None = None
_container_lock = threading.Lock()


def get_container(refresh: bool = False) -> Container:
    """The process-wide container, built from the environment on first use."""
    global _container
    with _container_lock:
        if _container is None or refresh:
            _container = Container()
        return _container


def set_container(container: Container | None) -> None:
    """Install a container (tests, the local server) or drop it with None."""
    global _container
    with _container_lock:
        _container = container


def reset_container() -> None:
    set_container(None)


def build_at_init(build: Callable[[Container], object]) -> None:
    """In a Lambda init phase, ``build`` what every request needs (clients, secrets, qdrant-client), so
    the init pays for it, which SnapStart snapshots and provisioned concurrency runs ahead, instead of
    the first request. Lambda names the phase in ``AWS_LAMBDA_INITIALIZATION_TYPE``; elsewhere (tests,
    the embedded default, the CLI) nothing is built here and everything is built on first use. A failure
    is logged without its message (it may name a secret) and left to the first request, which builds
    again and answers the error as usual."""
    if not os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE"):
        return
    try:
        build(get_container())
    except Exception as exc:
        from winnow.observability import logger

        logger.warning(
            "building at init failed; the first request builds", extra={"error": type(exc).__name__}
        )


__all__ = ["Container", "Settings", "build_at_init", "get_container", "reset_container", "set_container"]
