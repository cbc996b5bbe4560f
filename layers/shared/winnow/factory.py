"""The composition root: every component and service is built here from validated settings, lazily and
once per process (one client of each kind per warm Lambda container). Handlers and the CLI call
``get_container()``; tests build a ``Container`` with their own settings or inject components directly
(assigning ``container.store`` and the like replaces the component; services follow it)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from winnow.errors import ConfigurationError
from winnow.settings import (
    AnswerSettings,
    ChunkingSettings,
    ConversationSettings,
    FigureSettings,
    IngestSettings,
    OcrSettings,
    ProviderSettings,
    QdrantSettings,
    ReconcileSettings,
    SearchSettings,
    StorageSettings,
    VoyageSettings,
)

if TYPE_CHECKING:
    import httpx

    from winnow.adapters.secrets import KeySource, SecretCache
    from winnow.answer.service import AnswerService
    from winnow.conversations.service import ConversationService
    from winnow.conversations.store import ConversationStore
    from winnow.index import IndexLifecycle
    from winnow.ingest.service import IngestService
    from winnow.models import EmbeddingProfile
    from winnow.ports import (
        ActiveIndex,
        Embedder,
        EventQueue,
        FunctionInvoker,
        Generator,
        Ledger,
        ObjectSource,
        Ocr,
        Reranker,
        VectorCheckpoint,
        VectorStore,
    )
    from winnow.reconcile.service import Reconciler
    from winnow.search.service import SearchService
    from winnow.text.sparse import Bm25Encoder

ACTIVE_PROFILE_TTL_SECONDS = 60.0


@dataclass
class Settings:
    """Every settings class, read from the environment when the bundle is created."""

    storage: StorageSettings = field(default_factory=StorageSettings)
    qdrant: QdrantSettings = field(default_factory=QdrantSettings)
    voyage: VoyageSettings = field(default_factory=VoyageSettings)
    providers: ProviderSettings = field(default_factory=ProviderSettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    figures: FigureSettings = field(default_factory=FigureSettings)
    ocr: OcrSettings = field(default_factory=OcrSettings)
    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    conversations: ConversationSettings = field(default_factory=ConversationSettings)


class Container:
    """The wired components and services. Properties create their object on first use."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._lock = threading.RLock()
        # Services keyed by the components they were built on: a new store (a profile switch, a test
        # injecting one) gets a new service, the same store keeps the warm one and its query cache.
        self._search: tuple[VectorStore, SearchService] | None = None
        self._ingest: tuple[VectorStore, IngestService] | None = None

    # --- secrets -----------------------------------------------------------------------------------
    @cached_property
    def secrets(self) -> SecretCache:
        """Secrets Manager values, read again after ``SecretsMaxAgeSeconds`` (rotation reaches a warm
        function) or when a provider answers 401. Tests assign one with their own clock."""
        from winnow.adapters.secrets import SecretCache

        return SecretCache(self.settings.providers.secrets_max_age_seconds)

    def _secret(self, plain: object, arn: str | None) -> str | None:
        if plain is not None:
            return str(plain.get_secret_value()) if hasattr(plain, "get_secret_value") else str(plain)
        if arn:
            return self.secrets.get(arn)
        return None

    @property
    def uses_voyage_embedder(self) -> bool:
        choice = self.settings.providers.embedder
        return choice == "voyage" or (choice == "auto" and self.settings.voyage.configured)

    @property
    def uses_voyage_reranker(self) -> bool:
        choice = self.settings.providers.reranker
        return choice == "voyage" or (choice == "auto" and self.settings.voyage.configured)

    # --- components --------------------------------------------------------------------------------
    @cached_property
    def embedder(self) -> Embedder:
        with self._lock:
            if self.uses_voyage_embedder:
                from winnow.adapters.voyage import VoyageEmbedder

                return VoyageEmbedder(self.settings.voyage, self._voyage_key(), self.voyage_http)
            return self._local_embedder()

    def _local_embedder(self) -> Embedder:
        from winnow.embedded import embedded

        p = self.settings.providers
        local_onnx_embedder = embedded("embedder", instead="VOYAGE_API_KEY")
        return local_onnx_embedder(
            model_path=p.local_model_path,
            tokenizer_path=p.local_tokenizer_path,
            batch_size=p.local_batch_size,
            max_tokens=p.local_max_tokens,
        )

    @cached_property
    def reranker(self) -> Reranker | None:
        with self._lock:
            if not self.uses_voyage_reranker:
                return None
            from winnow.adapters.voyage import VoyageReranker

            return VoyageReranker(self.settings.voyage, self._voyage_key(), self.voyage_http)

    @cached_property
    def voyage_http(self) -> httpx.Client:
        """One connection pool shared by the Voyage embedder and re-ranker (see ``voyage_http_client``)."""
        with self._lock:
            from winnow.adapters.voyage import voyage_http_client

            return voyage_http_client(self.settings.voyage)

    def _voyage_key(self) -> str | KeySource:
        v = self.settings.voyage
        key = self._key(v.api_key, v.api_key_secret_arn)
        if not key:
            raise ConfigurationError("Voyage is selected but no key is set: set VOYAGE_API_KEY")
        return key

    def _key(self, plain: object, arn: str | None) -> str | KeySource | None:
        """The key, or with a secret ARN a source asked on every request (see ``SecretCache``)."""
        key = self._secret(plain, arn)  # read now: a missing secret fails here
        return self.secrets.source(arn) if plain is None and arn and key else key

    @cached_property
    def ocr(self) -> Ocr | None:
        """Textract in Lambda, the local engine elsewhere (when installed), or None (OCR off)."""
        with self._lock:
            from winnow.adapters.ocr import make_ocr

            return make_ocr(self.settings.ocr)

    @cached_property
    def sparse(self) -> Bm25Encoder:
        from winnow.text.sparse import Bm25Encoder

        return Bm25Encoder()

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

    @cached_property
    def ledger(self) -> Ledger:
        with self._lock:
            s = self.settings.storage
            if s.ledger_table:
                from winnow.adapters.ledger_dynamodb import DynamoDbLedger

                return DynamoDbLedger(s.ledger_table)
            from winnow.embedded import embedded

            sqlite_ledger = embedded("ledger", instead="WINNOW_LEDGER_TABLE")
            s.home.mkdir(parents=True, exist_ok=True)
            return sqlite_ledger(s.sqlite_path)

    @cached_property
    def vector_checkpoint(self) -> VectorCheckpoint | None:
        """Where a large document's finished embedding groups wait for a retry: the DynamoDB ledger's
        table in AWS; none in the embedded default (no redelivery there)."""
        table = self.settings.storage.ledger_table
        if not table:
            return None
        from winnow.adapters.checkpoint_dynamodb import DynamoDbVectorCheckpoint

        return DynamoDbVectorCheckpoint(table)

    @cached_property
    def objects(self) -> ObjectSource:
        with self._lock:
            s = self.settings.storage
            if s.bucket:
                from winnow.adapters.objects_s3 import S3ObjectSource

                return S3ObjectSource(s.bucket)
            from winnow.embedded import embedded

            folder_bucket = embedded("objects", instead="WINNOW_BUCKET")
            s.local_bucket_dir.mkdir(parents=True, exist_ok=True)
            return folder_bucket(s.local_bucket_dir)

    @cached_property
    def generator(self) -> Generator:
        """The answer generator; ``FeatureDisabled`` (501 on ``/answer``) when none is configured."""
        with self._lock:
            a = self.settings.answer
            chosen = a.chosen
            if chosen == "bedrock":
                from winnow.adapters.bedrock import BedrockGenerator

                return BedrockGenerator(a)
            if chosen == "ollama":
                from winnow.adapters.ollama import OllamaGenerator

                return OllamaGenerator(a)
            from winnow.errors import FeatureDisabled

            raise FeatureDisabled(
                "answers are not enabled here: in AWS deploy with AnswerGenerator=bedrock (BedrockModelId "
                "names the model); on the embedded default set OLLAMA_HOST to a running Ollama server "
                "(and WINNOW_ANSWER_OLLAMA_MODEL to a pulled model)"
            )

    @cached_property
    def vision(self) -> Generator | None:
        """The model that describes figures (``FigureSettings``), on the answer's provider settings;
        None when off."""
        with self._lock:
            figures, answer = self.settings.figures, self.settings.answer
            chosen = figures.chosen(answer)
            if chosen == "bedrock":
                from winnow.adapters.bedrock import BedrockGenerator

                return BedrockGenerator(
                    answer.model_copy(update={"bedrock_model_id": figures.bedrock_model_id})
                )
            if chosen == "ollama":
                from winnow.adapters.ollama import OllamaGenerator

                return OllamaGenerator(answer.model_copy(update={"ollama_model": figures.ollama_model}))
            return None

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

    def query_embedder(self, profile: EmbeddingProfile) -> Embedder:
        """A query embedder for ``profile`` (the collection searches still read during a rebuild)."""
        if profile == self.embedder.profile:
            return self.embedder
        if profile.provider == "voyage":
            from winnow.adapters.voyage import VoyageEmbedder

            voyage = self.settings.voyage.model_copy(
                update={"embed_model": profile.model, "output_dimension": profile.dimension}
            )
            return VoyageEmbedder(voyage, self._voyage_key(), self.voyage_http)
        if profile.provider == "local":
            embedder = self._local_embedder()
            if embedder.profile == profile:
                return embedder
        raise ConfigurationError(
            f"searches read the {profile.slug} collection but no embedder for it can be built here: "
            "finish the rebuild with reconcile, or configure that embedder"
        )

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

    @cached_property
    def conversation_store(self) -> ConversationStore:
        """DynamoDB when ``WINNOW_CONVERSATION_TABLE`` is set, else SQLite beside the ledger."""
        with self._lock:
            c = self.settings.conversations
            if c.table:
                from winnow.adapters.conversations_dynamodb import DynamoDbConversationStore

                return DynamoDbConversationStore(c.table)
            from winnow.embedded import embedded

            sqlite_conversations = embedded("conversations", instead="WINNOW_CONVERSATION_TABLE")
            home = self.settings.storage.home
            store: ConversationStore = sqlite_conversations(home / "conversations.sqlite3")
            return store

    def conversation_service(self) -> ConversationService:
        """Follow-ups are rewritten by the answer generator when one is configured, else by the rule
        (the generator is built only when a follow-up first needs it)."""
        from winnow.conversations.service import ConversationService

        return ConversationService(
            self.search_service(), self.conversation_store, self.settings.conversations, self._rewriter
        )

    def _rewriter(self) -> Generator | None:
        from winnow.errors import FeatureDisabled

        try:
            return self.generator
        except FeatureDisabled:
            return None

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
