"""Validated settings, one class per concern. Every field is read from the environment (the SAM template
sets them in Lambda; the embedded default needs none). A test checks that every variable the template
sets is a field here and that every required field is set by the template.

Provider choice: no Voyage key → local ONNX embedder and no re-ranker; no ``QDRANT_URL`` → Qdrant Edge
under ``WINNOW_HOME``; no ``WINNOW_BUCKET`` / ``WINNOW_LEDGER_TABLE`` → a folder bucket and a SQLite
ledger under ``WINNOW_HOME``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from winnow.rules import (
    FIELD_NAME_RULE,
    MAX_METADATA_FIELDS,
    METADATA_FIELDS_SETTING,
    FieldType,
    is_field_name,
)
from winnow.settings_answers import AnswerSettings as AnswerSettings
from winnow.settings_answers import ConversationSettings as ConversationSettings
from winnow.settings_base import env_config as _config


class StorageSettings(BaseSettings):
    """Where documents, the ledger and local state live."""

    model_config = _config("WINNOW_")

    home: Path = Field(default=Path(".winnow"), description="Local state: Qdrant data, ledger, bucket.")
    bucket: str | None = Field(default=None, description="S3 bucket; unset means the local folder bucket.")
    ledger_table: str | None = Field(default=None, description="DynamoDB table; unset means SQLite.")
    queue_url: str | None = Field(default=None, description="Ingest queue (reconcile enqueues here).")

    @property
    def local_bucket_dir(self) -> Path:
        return self.home / "bucket"

    @property
    def sqlite_path(self) -> Path:
        return self.home / "ledger.sqlite3"

    @property
    def qdrant_local_path(self) -> Path:
        return self.home / "qdrant"


class QdrantSettings(BaseSettings):
    model_config = SettingsConfigDict(**_config("QDRANT_"), populate_by_name=True)

    url: str | None = Field(default=None, description="Qdrant Cloud URL; unset means Qdrant Edge, embedded.")
    api_key: SecretStr | None = None
    api_key_secret_arn: str | None = Field(default=None, description="Secrets Manager ARN of the API key.")
    path: str | None = Field(default=None, description="Embedded engine folder, or ':memory:'.")
    local_engine: str | None = Field(
        default=None,
        description="Removed: without a URL the engine is Qdrant Edge (stores under <path>/edge); "
        "'edge' is still accepted, 'local' is refused (a local-mode folder is moved to Edge on first open).",
    )
    collection_prefix: str = "winnow"
    timeout_seconds: int = Field(default=10, ge=1, le=120)
    upsert_batch_size: int = Field(default=256, ge=1, le=256)
    metadata_indexes: list[str] = Field(
        default_factory=list,
        description="Older form of metadata_fields: user metadata fields declared keyword.",
    )
    metadata_fields: dict[str, FieldType] = Field(
        default_factory=dict,
        validation_alias=METADATA_FIELDS_SETTING,
        description="User metadata fields a search may filter on, each with its type (keyword, integer, "
        'float, bool, datetime), e.g. {"year": "integer", "department": "keyword"}: each gets a payload '
        "index of that type; on a Qdrant server a filter on an undeclared field is refused.",
    )
    strict_mode: bool = Field(
        default=True,
        description="Create new collections in strict mode (filters only on indexed fields), as Qdrant "
        "Cloud does, so a self-hosted Qdrant refuses what Cloud refuses.",
    )
    replication_factor: int = Field(
        default=2, ge=1, le=10, description="Copies of each shard in a new collection (Qdrant Cloud)."
    )
    write_consistency_factor: int = Field(
        default=1, ge=1, le=10, description="Replicas that must apply a write before it is acknowledged."
    )
    max_attempts: int = Field(default=3, ge=1, le=10)
    retry_budget_seconds: float = Field(
        default=10.0,
        ge=0.0,
        le=120.0,
        description="Time one Qdrant call may spend on retries (a 429's Retry-After included) before the "
        "request answers 503 with Retry-After.",
    )
    edge_segment_points: int = Field(
        default=8192,
        ge=0,
        le=1_000_000,
        description="Qdrant Edge (embedded): points a collection's appendable segment takes before a write "
        "seals it (int8 copies in RAM, originals and indexes on disk), with the document model's memory "
        "given back meanwhile; 0 never seals (one appendable segment, read whole by every dense search). "
        "Applied when a collection is created; training/NOTEBOOK.md has the figures behind 8,192.",
    )
    # Collection layout for Qdrant Cloud, applied when a collection is created (docs/scaling.md explains
    # the defaults). The embedded engine ignores what it lacks; changing one later needs a new collection
    # (reconcile rebuild).
    hnsw_m: int = Field(
        default=0,
        ge=0,
        le=128,
        description="Edges per node of the global HNSW graph; 0 builds none (every search filters by "
        "tenant, so per-tenant graphs from hnsw_payload_m serve every query).",
    )
    hnsw_payload_m: int = Field(
        default=16, ge=0, le=128, description="Edges per node of the per-tenant graphs (is_tenant index)."
    )
    hnsw_ef_construct: int = Field(default=100, ge=4, le=1000, description="HNSW build-time beam width.")
    quantization: Literal["none", "int8"] = Field(
        default="int8", description="Scalar INT8 quantization of the dense vectors (4x less RAM)."
    )
    quantization_always_ram: bool = Field(default=True, description="Keep the quantized vectors in RAM.")
    quantization_rescore: bool = Field(
        default=True, description="Re-score quantized candidates with the original vectors."
    )
    quantization_oversampling: float = Field(
        default=2.0, ge=1.0, le=10.0, description="Candidates fetched per result before rescoring."
    )
    vectors_on_disk: bool = Field(
        default=True, description="Original dense vectors and the sparse index memory-mapped from disk."
    )
    payload_on_disk: bool = Field(default=True, description="Payloads (chunk text) on disk, not in RAM.")
    shard_number: int = Field(default=2, ge=1, le=64, description="Shards of a new collection.")

    @model_validator(mode="after")
    def _fields_declared_once(self) -> QdrantSettings:
        declared = self.declared_metadata
        bad = [n for n in declared if not is_field_name(n)]
        if bad:
            raise ValueError(f"metadata field {bad[0][:40]!r} is not a field name: use {FIELD_NAME_RULE}")
        if len(declared) > MAX_METADATA_FIELDS:
            raise ValueError(
                f"{len(declared)} metadata fields declared: at most {MAX_METADATA_FIELDS} (Qdrant allows "
                "100 payload indexes a collection, Winnow's own fields take the rest)"
            )
        return self

    @property
    def declared_metadata(self) -> dict[str, FieldType]:
        """Every declared metadata field and its type: ``metadata_indexes`` are keyword fields."""
        return {**dict.fromkeys(self.metadata_indexes, "keyword"), **self.metadata_fields}

    @field_validator("local_engine")
    @classmethod
    def _local_mode_removed(cls, value: str | None) -> str | None:
        """An old config may still ask for qdrant-client's local mode: say what replaced it, in one line."""
        if value is not None and value.strip().lower() != "edge":
            raise ValueError(
                f"QDRANT_LOCAL_ENGINE={value} is no longer supported: qdrant-client's local mode was "
                "removed, the embedded engine is Qdrant Edge and a local-mode folder is moved to Edge "
                "automatically on first open (docs/local.md); unset QDRANT_LOCAL_ENGINE"
            )
        return value


class VoyageSettings(BaseSettings):
    """Voyage's endpoint, models and limits. Unset limits and base URL follow the model and the key
    (``winnow.adapters.voyage_models``: Voyage's documented per-model table, Atlas keys to Atlas)."""

    model_config = _config("VOYAGE_")

    api_key: SecretStr | None = None
    api_key_secret_arn: str | None = Field(default=None, description="Secrets Manager ARN of the API key.")
    base_url: str | None = Field(
        default=None, description="None: api.voyageai.com, or ai.mongodb.com for an Atlas key (al-...)."
    )
    embed_model: str = "voyage-3.5"
    output_dimension: int | None = Field(default=1024, description="None keeps the model's default.")
    rerank_model: str = "rerank-2.5"
    timeout_seconds: float = Field(default=30.0, gt=0, le=300)
    max_attempts: int = Field(default=5, ge=1, le=10)
    backoff_base_seconds: float = Field(default=0.5, ge=0)
    backoff_max_seconds: float = Field(default=20.0, ge=0)
    rate_limit_window_seconds: float = Field(
        default=60.0,
        ge=0,
        le=600,
        description="A 429 without Retry-After: retries spread over at least this long (Voyage's "
        "limits are per minute). 0: the ordinary back-off (search, whose request budget cannot wait).",
    )
    max_batch_texts: int = Field(default=1000, ge=1, le=1000)
    max_batch_tokens: int | None = Field(default=None, ge=1000, description="None: the model's limit.")
    rerank_max_documents: int = Field(default=1000, ge=1, le=1000)
    rerank_max_tokens: int | None = Field(default=None, ge=1000, description="None: the model's limit.")

    @field_validator("base_url", "max_batch_tokens", "rerank_max_tokens", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """A stack parameter left blank (or 0) means "follow the model / the key"."""
        return None if value in ("", "0", 0) else value

    @property
    def configured(self) -> bool:
        return self.api_key is not None or self.api_key_secret_arn is not None


class ProviderSettings(BaseSettings):
    """Which embedder and re-ranker to use. ``auto``: Voyage when a Voyage key is configured, else the
    local ONNX model and no re-ranker."""

    model_config = _config("WINNOW_")

    embedder: Literal["auto", "local", "voyage"] = "auto"
    reranker: Literal["auto", "none", "voyage", "http"] = Field(
        default="auto", description="http: a self-hosted re-ranking server (``RerankServerSettings``)."
    )
    local_model_path: Path | None = Field(default=None, description="Override for model.onnx.")
    local_tokenizer_path: Path | None = Field(default=None, description="Override for tokenizer.json.")
    local_batch_size: int = Field(default=64, ge=1, le=1024)
    local_max_tokens: int = Field(default=256, ge=16, le=512)
    query_cache_size: int = Field(default=256, ge=0, le=100_000)
    secrets_max_age_seconds: int = Field(default=300, ge=0, description="Secrets cache age in Lambda.")


class RerankServerSettings(BaseSettings):
    """A self-hosted cross-encoder behind ``WINNOW_RERANKER=http``: text-embeddings-inference's ``/rerank``
    (``api=tei``) or the Cohere-style ``/v1/rerank`` of Infinity, vLLM and llama.cpp's server
    (``api=cohere``). Timeouts and retries default to Voyage's (docs/deploy.md "A self-hosted re-ranker")."""

    model_config = _config("WINNOW_RERANKER_")

    url: str | None = Field(
        default=None,
        description="The whole endpoint, e.g. http://tei:8080/rerank or http://vllm:8000/v1/rerank.",
    )
    api: Literal["tei", "cohere"] = "tei"
    model: str | None = Field(default=None, description="Sent as ``model`` (cohere); None: the server's own.")
    api_key: SecretStr | None = None
    api_key_secret_arn: str | None = Field(default=None, description="Secrets Manager ARN of the API key.")
    scores: Literal["probability", "logit"] = Field(
        default="probability",
        description="logit: the server answers raw logits (llama.cpp's server does), mapped by the sigmoid.",
    )
    max_batch: int = Field(
        default=32,
        ge=1,
        le=2048,
        description="Documents per request (TEI's --max-client-batch-size default).",
    )
    timeout_seconds: float = Field(default=30.0, gt=0, le=300)
    max_attempts: int = Field(default=5, ge=1, le=10)
    backoff_base_seconds: float = Field(default=0.5, ge=0)
    backoff_max_seconds: float = Field(default=20.0, ge=0)

    @field_validator("url", "model", "api_key_secret_arn", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """A stack parameter left blank means unset."""
        return None if value == "" else value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("WINNOW_RERANKER_URL must be an http:// or https:// URL of the /rerank endpoint")
        return value


class ChunkingSettings(BaseSettings):
    model_config = _config("WINNOW_CHUNK_")

    target_chars: int = Field(default=1200, ge=200, le=20_000)
    overlap_chars: int = Field(default=150, ge=0, le=5_000)
    # Below this a fragment is merged into a neighbour. Low enough that a real two-sentence section keeps
    # its own chunk (and its own citation), high enough that a heading with one short line does not.
    min_chars: int = Field(default=100, ge=0, le=5_000)
    # Table chunks are smaller: every row must fall inside the local model's 256-token window (a 1,200-
    # character table chunk is ~350 tokens of "column: value" pairs), and a row is found by its few cells.
    table_target_chars: int = Field(default=400, ge=100, le=20_000)
    # Consecutive small sections packed into one passage up to the target (winnow.text.chunking, rule 7).
    pack_sections: bool = False

    @model_validator(mode="after")
    def _overlap_smaller_than_target(self) -> ChunkingSettings:
        if self.overlap_chars >= self.target_chars // 2:
            raise ValueError("overlap_chars must be less than half of target_chars")
        if self.min_chars >= self.target_chars:
            raise ValueError("min_chars must be less than target_chars")
        return self


# The embedded default's chunk cap (issue 44: the ingest process within 400 MB on any accepted input).
# Its peak grows about 14.6 KB a chunk from about 104 MB, and the local model adds about 172 MB (298 MB
# at 1,520 chunks, 357 MB at 5,720): 20,000 chunks would need about 550 MB, 6,000 about 365 MB, with room
# for the machine's variance (docs/guarantees.md, ``benchmarks/ingest_cap_memory.py``).
EMBEDDED_MAX_CHUNKS = 6_000


class IngestSettings(BaseSettings):
    model_config = _config("WINNOW_INGEST_")

    max_object_bytes: int = Field(default=25 * 1024 * 1024, ge=1)
    max_uncompressed_bytes: int = Field(default=200 * 1024 * 1024, ge=1, description="DOCX zip-bomb guard.")
    max_compression_ratio: float = Field(default=100.0, ge=1)
    max_sidecar_bytes: int = Field(default=10 * 1024, ge=1)
    # A DOCX's XML is counted before python-docx builds its tree (about 220 bytes of memory per element):
    # 1.5 million elements parse in under 400 MB; a real 1,000-page report has well under a million.
    max_docx_xml_elements: int = Field(default=1_500_000, ge=1, description="DOCX element-count guard.")
    max_docx_xml_part_bytes: int = Field(default=64 * 1024 * 1024, ge=1, description="Largest DOCX XML part.")
    # Chunks per document. In AWS 20,000; the embedded default accepts ``EMBEDDED_MAX_CHUNKS`` unless
    # WINNOW_INGEST_MAX_CHUNKS is set (``embedded``).
    max_chunks: int = Field(default=20_000, ge=1)
    lease_seconds: int = Field(default=900, ge=1)
    # The parse budget (winnow.parsing.budget): every document is parsed in a worker process that is
    # killed past the time budget and cannot allocate past the memory budget. The defaults fit a 1,024 MB
    # Lambda with a 300 s timeout: the worker's cap plus the ingest process (about 200 MB with a 25 MB
    # file in hand) stay under 1,024 MB, and 120 s leave time to embed and write what was parsed.
    parse_timeout_seconds: float = Field(default=120.0, gt=0, le=900, description="Parse time budget.")
    parse_memory_mb: int = Field(
        default=512, ge=128, le=10_240, description="Parse memory budget (the worker's address space)."
    )
    # Documents of one batch indexed at once, their texts embedded together (1: one after another).
    # Messages on the same document stay sequential; parsing stays one document at a time (the memory
    # budget above assumes one worker).
    batch_concurrency: int = Field(
        default=10, ge=1, le=32, description="Documents of one batch indexed at once (1 = sequential)."
    )
    # The function's time (winnow.ingest.deadline): no message starts with less than this left, and a
    # parse running then is cut to the time left. Room to embed and write a parsed document and answer.
    time_reserve_seconds: float = Field(
        default=30.0, ge=0, le=600, description="Ingest time kept for finishing; later messages go back."
    )
    # Figures inside documents (winnow.parsing.figures): at most this many per document (0: none), and
    # an image with a side under the floor is decoration (a bullet, a rule, an icon), not a figure.
    max_figures: int = Field(default=50, ge=0, le=1000, description="Figures kept per document.")
    figure_min_side_pixels: int = Field(default=64, ge=1, le=4096, description="Smaller images are skipped.")

    def embedded(self) -> IngestSettings:
        """These settings in the embedded default (Qdrant Edge and the local model in the ingest process):
        at most ``EMBEDDED_MAX_CHUNKS`` chunks a document unless the chunk cap was set explicitly."""
        if "max_chunks" in self.model_fields_set:
            return self
        return self.model_copy(update={"max_chunks": EMBEDDED_MAX_CHUNKS})


class OcrSettings(BaseSettings):
    """Reading scanned pages and images. ``auto``: Amazon Textract in Lambda, else the local engine when it
    is installed (``make demo`` installs it), else none (scans and images are refused with a reason)."""

    model_config = _config("WINNOW_OCR_")

    engine: Literal["auto", "none", "local", "textract"] = "auto"
    max_pages: int = Field(default=100, ge=0, le=3000, description="OCR pages per document (cost cap).")
    max_concurrency: int = Field(default=4, ge=1, le=32, description="Pages read at once.")
    max_attempts: int = Field(default=5, ge=1, le=10)
    max_image_pixels: int = Field(
        default=60_000_000, ge=1, description="Larger page images are refused before any decoding."
    )
    max_side_pixels: int = Field(default=20_000, ge=1, description="Longest side of a page image.")
    local_memory_mb: int = Field(
        default=512, ge=128, le=10_240, description="Address-space cap of one local OCR (tesseract) process."
    )
    textract_max_bytes: int = Field(default=10 * 1024 * 1024, ge=1, description="Textract's sync limit.")


class SearchSettings(BaseSettings):
    model_config = _config("WINNOW_SEARCH_")

    # Unset: the threshold fitted with the embedding profile's relevance model, read from its artifact
    # (winnow/search/models/<profile>.json, docs/quality.md). Set: this one, for every search: the gate
    # the best result must clear (the artifact's floor, capped at it, keeps the results after it).
    relevance_threshold: float | None = Field(
        default=None, ge=0, le=1, description="Default threshold (a gate); unset: the relevance model's own."
    )
    tenant_claim: str = Field(default="tenant", description="JWT claim that names the caller's tenant.")
    authorizer_tenant_key: str = Field(default="tenant", description="Lambda authorizer context key.")
    allow_tenant_header: bool = Field(
        default=False, description="Embedded default only: let a header name the tenant. Never in AWS."
    )
    tenant_header: str = "x-winnow-tenant"
    # Document-level access (winnow.access): who the caller is comes from these claims only.
    user_claim: str = Field(default="sub", description="JWT claim (or Lambda authorizer key): the user id.")
    groups_claim: str = Field(
        default="cognito:groups", description="JWT claim holding the caller's groups (list or string)."
    )
    admin_group: str = Field(
        default="winnow-admins", description="Group whose members read and change every document."
    )
    default_access: Literal["allow", "deny"] = Field(
        default="allow", description="deny: documents without an access list are for admins only."
    )
    user_header: str = "x-winnow-user"  # embedded default only, with allow_tenant_header
    groups_header: str = "x-winnow-groups"
    show_configuration_errors: bool = Field(
        default=False,
        description="Embedded default only (the CLI and winnow serve turn it on): the caller is the "
        "operator, so configuration errors are answered in full. Never in AWS: they name secrets.",
    )
    rrf_k: int = Field(default=60, ge=1, le=1000)
    upload_expires_seconds: int = Field(
        default=300, ge=10, le=3600, description="How long an upload form from POST /uploads stays valid."
    )
    image_url_seconds: int = Field(
        default=300, ge=10, le=3600, description="How long a figure's image_url works."
    )
    # Off: results carry no highlight and a search makes no extra embed call for them (a relevance
    # model that orders by the best segment still reads its candidates). docs/quality.md: the cost.
    highlights: bool = Field(default=True, description="Mark each result's best-answering sentences.")


class ReconcileSettings(BaseSettings):
    """The reconcile function's paging: stop and continue in a new invocation when less time is left
    than ``margin_ms``; give up after ``max_invocations`` (a guard against a runaway chain)."""

    model_config = _config("WINNOW_RECONCILE_")

    margin_ms: int = Field(default=90_000, ge=5_000, le=840_000)
    max_invocations: int = Field(default=1000, ge=1, le=100_000)


class FigureSettings(BaseSettings):
    """Describing figures with a vision model (docs/figures.md). ``auto``: Bedrock when
    ``WINNOW_FIGURES_BEDROCK_MODEL_ID`` is set, else Ollama when ``OLLAMA_HOST`` and
    ``WINNOW_FIGURES_OLLAMA_MODEL`` are, else none (figures keep caption and OCR text). Calls, tokens and
    seconds are bounded per document; the provider's host, region, timeout and retries are the answer's."""

    model_config = _config("WINNOW_FIGURES_")

    vision: Literal["auto", "bedrock", "ollama", "none"] = "auto"
    bedrock_model_id: str = Field(
        default="", description="A Bedrock model that reads images (off when empty)."
    )
    ollama_model: str = Field(default="", description="An Ollama vision model, e.g. llava (off when empty).")
    max_calls: int = Field(default=20, ge=0, le=1000, description="Vision calls per document.")
    max_tokens: int = Field(default=20_000, ge=0, description="Vision tokens (in + out) per document.")
    max_seconds: float = Field(
        default=120.0,
        ge=1,
        le=900,
        description="Seconds of vision calls per document: the ingest timeout must hold the rest.",
    )
    description_tokens: int = Field(default=300, ge=16, le=4096, description="Longest description.")

    def chosen(self, answer: AnswerSettings) -> Literal["bedrock", "ollama", "none"]:
        if self.vision != "auto":
            return self.vision
        if self.bedrock_model_id:
            return "bedrock"
        if answer.ollama_host and self.ollama_model:
            return "ollama"
        return "none"
