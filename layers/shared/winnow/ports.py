"""The ports: small abstract classes the domain code talks to. Adapters in ``winnow.adapters`` implement
them; ``winnow.factory`` chooses which from settings. Domain code never imports boto3, httpx or a parser
library directly."""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from winnow.models import (
    AccessList,
    ChunkPoint,
    EmbeddingProfile,
    LedgerRecord,
    ObjectEvent,
    ObjectInfo,
    ReadScope,
    SparseVector,
    StoredChunk,
)

InputType = Literal["document", "query"]
_TEXTS_PER_GROUP = 256  # the local model sorts a call's texts by length, so wider groups pad less
_SPECIAL_TOKENS = 4  # [CLS]/[SEP] or <s>/</s>, with room to spare
SearchMode = Literal["hybrid", "dense", "sparse"]


class Embedder(ABC):
    """Turns texts into dense vectors. ``input_type`` matters to asymmetric models (Voyage)."""

    @property
    @abstractmethod
    def profile(self) -> EmbeddingProfile: ...

    @abstractmethod
    def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        """One vector per text, in order. Raises ``TransientError`` subclasses for provider outages."""

    @property
    def max_input_tokens(self) -> int | None:
        """The model's input window in tokens, when it is small enough for chunk sizes to matter
        (ingest then sizes chunks to fit it); None when any chunk fits, as with Voyage's 32K."""
        return None

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes in the model's input, special tokens included. This default never
        under-counts for WordPiece or byte-level BPE vocabularies (every token covers at least one
        byte of UTF-8), plus a few special tokens: an adapter with the model's tokenizer overrides it."""
        return [len(text.encode("utf-8", "surrogatepass")) + _SPECIAL_TOKENS for text in texts]

    def request_groups(self, texts: Sequence[str]) -> list[list[int]]:
        """Consecutive index groups that each make one ``embed`` call of sensible size: ingest embeds the
        texts of several documents group by group, and a document whose texts are done writes while the
        next group is embedded. An adapter with per-request limits (Voyage) groups by them."""
        step = _TEXTS_PER_GROUP
        return [list(range(start, min(start + step, len(texts)))) for start in range(0, len(texts), step)]


@dataclass(frozen=True)
class RerankScore:
    index: int  # position in the documents list passed to ``rerank``
    score: float  # relevance in [0, 1]


class Reranker(ABC):
    @property
    @abstractmethod
    def model(self) -> str: ...

    @abstractmethod
    def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None) -> list[RerankScore]:
        """Scores for the given documents, best first."""


@dataclass(frozen=True)
class RangeFilter:
    """Numbers, or RFC 3339 date-times for a datetime field."""

    gte: float | str | None = None
    lte: float | str | None = None


# A metadata filter value: one value, any-of a list of values, or a range.
FilterValue = str | int | float | bool | list[str | int | float | bool] | RangeFilter


@dataclass(frozen=True)
class ChunkPlace:
    """Chunks of one document version by position (``chunk_index``); ``doc_version`` None: any version."""

    key: str
    doc_version: str | None
    indexes: tuple[int, ...]


@dataclass(frozen=True)
class SearchQuery:
    """One search of one tenant's points that ``reader`` may read (required: no default can widen it)."""

    tenant: str
    dense: list[float] | None
    sparse: SparseVector | None
    mode: SearchMode
    limit: int
    filters: dict[str, FilterValue]
    reader: ReadScope
    score_threshold: float | None = None
    with_dense: bool = False  # sparse mode: return each hit's dense vector too (its cosine, no 2nd call)


class VectorStore(ABC):
    """Where chunks live. Every read and write is scoped by tenant."""

    @abstractmethod
    def ensure_collection(self) -> None:
        """Create the collection and payload indexes when missing; raise ``ProfileMismatch`` when the
        existing collection was made for another embedding profile."""

    @abstractmethod
    def existing_vectors(self, tenant: str, key: str) -> dict[str, list[float]]:
        """Dense vectors of the document's current points, by content hash (for reuse on edits)."""

    def reusable_vectors(self, tenant: str, key: str, wanted: Collection[str]) -> dict[str, array[float]]:
        """The stored dense vectors of the ``wanted`` content hashes, as float32 arrays: what a re-index
        reuses. This default goes through ``existing_vectors``, every vector a list of Python floats at
        once (12 KB each at 384 dimensions: 240 MB for a document at the 20,000-chunk cap, issue 44);
        a store that reads in pages overrides it to convert page by page."""
        return {h: array("f", v) for h, v in self.existing_vectors(tenant, key).items() if h in wanted}

    @abstractmethod
    def point_ids(self, tenant: str, key: str) -> set[str]: ...

    @abstractmethod
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        """Write in batches (at most 256 points each) and wait for each batch to be applied."""

    @abstractmethod
    def delete_points(self, point_ids: Sequence[str]) -> None: ...

    @abstractmethod
    def delete_document(self, tenant: str, key: str) -> int:
        """Remove every point of the document; return how many there were."""

    @abstractmethod
    def set_metadata(self, tenant: str, key: str, metadata: dict[str, Any]) -> int:
        """Replace the user metadata on every point of the document, without touching vectors."""

    @abstractmethod
    def search(self, query: SearchQuery) -> list[StoredChunk]:
        """Best first. For ``hybrid``: one call, dense and sparse prefetches fused with RRF."""

    @abstractmethod
    def readable_keys(self, tenant: str, reader: ReadScope, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` have points ``reader`` may read (one filtered query, the listing routes)."""

    @abstractmethod
    def document_access(self, tenant: str, key: str) -> tuple[bool, AccessList | None]:
        """Whether the document has points, and the access list they carry (None: no list)."""

    @abstractmethod
    def dense_vectors(self, point_ids: Sequence[str]) -> dict[str, list[float]]: ...

    @abstractmethod
    def chunks_at(self, tenant: str, reader: ReadScope, places: Sequence[ChunkPlace]) -> list[StoredChunk]:
        """The chunks at these places that ``reader`` may read, in one filtered call (a result's
        neighbours, ``winnow.search.context``); a place names one document version's chunk indexes."""

    @abstractmethod
    def count_by_document(self, tenant: str | None = None) -> dict[tuple[str, str], int]:
        """Point counts per (tenant, key): reconcile compares these with the ledger."""

    def document_keys(self, tenant: str | None = None) -> Iterator[tuple[str, str]]:
        """(tenant, key) of every point, one per point, in no particular order, streamed page by page so
        that reconcile can count a million points without holding them. The default expands
        ``count_by_document``; adapters stream from the engine."""
        for (owner, key), count in self.count_by_document(tenant).items():
            for _ in range(count):
                yield owner, key

    def tenants(self) -> set[str]:
        """Every tenant that has points (reconcile finds tenants whose objects are all gone with it).
        Holds only the distinct tenants."""
        return {tenant for tenant, _ in self.document_keys()}


class Ledger(ABC):
    """One record per (tenant, key). Writes are conditional on the S3 event sequencer so that an
    older or duplicate event can never overwrite newer state."""

    @abstractmethod
    def get(self, tenant: str, key: str) -> LedgerRecord | None: ...

    @abstractmethod
    def put(self, record: LedgerRecord, *, same_event_ok: bool = False) -> bool:
        """Store the record when its sequencer is newer than the stored one; returns False when stale.

        An equal sequencer is a duplicate delivery and is refused, unless ``same_event_ok``: the worker
        that handles an event may write that event's record more than once (a first state, then the
        final one; or metadata re-applied to the record it just read). A record without a sequencer
        (reconcile's synthetic events) is written unconditionally and keeps the stored sequencer, so a
        late S3 event is still judged against the newest one ever seen."""

    @abstractmethod
    def list(
        self, tenant: str, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[LedgerRecord], str | None]:
        """A page of the tenant's records ordered by key, and the cursor of the next page (or None)."""

    @abstractmethod
    def cursor_after(self, tenant: str, key: str) -> str:
        """The cursor of the page that starts after ``key``: a page filtered by the caller's rights ends
        on a record they may see, never on one whose key its cursor would name."""

    @abstractmethod
    def scan(self, tenant: str | None = None) -> Iterator[LedgerRecord]:
        """Every record (of one tenant, or all), streamed."""

    def tenants(self) -> set[str]:
        """Every tenant with a record, streamed through ``scan`` (only the set of names is kept)."""
        return {record.tenant for record in self.scan()}

    @abstractmethod
    def acquire(self, tenant: str, key: str, owner: str, ttl_seconds: int) -> bool:
        """Take the per-document lease; False when another owner holds an unexpired one."""

    @abstractmethod
    def release(self, tenant: str, key: str, owner: str) -> None: ...

    def put_and_release(self, record: LedgerRecord, owner: str, *, same_event_ok: bool = False) -> bool:
        """``put`` then ``release`` of ``owner``'s lease on the record's key: the last write under a
        lease. An adapter overrides it when its store does both in one request."""
        try:
            return self.put(record, same_event_ok=same_event_ok)
        finally:
            self.release(record.tenant, record.key, owner)

    def acquire_and_get(
        self, tenant: str, key: str, owner: str, ttl_seconds: int
    ) -> tuple[bool, LedgerRecord | None]:
        """Take the lease and read the record under it: ``(False, None)`` when another owner holds the
        lease. An adapter overrides it when its store does both in one request (a bulk ingest pays
        every request per document)."""
        if not self.acquire(tenant, key, owner, ttl_seconds):
            return False, None
        return True, self.get(tenant, key)


@dataclass(frozen=True)
class UploadPolicy:
    """What one browser upload may write: exactly ``key``, 1 to ``max_bytes`` bytes, with this content
    type and these user metadata (names lowercased, as S3 stores them), until ``expires_in`` seconds."""

    key: str
    max_bytes: int
    content_type: str
    metadata: dict[str, str]
    expires_in: int


@dataclass(frozen=True)
class UploadForm:
    """A form a browser POSTs (``multipart/form-data``: these fields, then the ``file``) to ``url``."""

    url: str
    fields: dict[str, str]


class ObjectSource(ABC):
    """Access to the bucket (S3 in AWS, a folder on the embedded default): reads for ingest and
    reconcile; for the search API, deleting an object and signing a form that uploads one."""

    @abstractmethod
    def head(self, key: str) -> ObjectInfo:
        """Raise ``ObjectGone`` when the object does not exist."""

    @abstractmethod
    def get(self, key: str, info: ObjectInfo | None = None) -> bytes:
        """The object's bytes; when ``info`` is given, the bytes of that version (ETag / version id),
        raising ``ObjectGone`` if it changed or vanished meanwhile."""

    def read(self, key: str, max_bytes: int) -> tuple[ObjectInfo, bytes | None]:
        """``head`` and ``get`` of that version in one step: the bytes are None when the object is
        empty or larger than ``max_bytes`` (nothing read). An adapter overrides it when one request
        answers both (S3's GetObject carries HEAD's headers)."""
        info = self.head(key)
        if info.size == 0 or info.size > max_bytes:
            return info, None
        return info, self.get(key, info)

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object under the prefix, streamed page by page (never the whole listing in memory)."""

    def list_after(self, prefix: str, start_after: str | None) -> Iterator[ObjectInfo]:
        """Like ``list``, from the first key after ``start_after`` (a paged reconcile resuming). The
        default skips what comes before; an adapter overrides it when the provider can start there."""
        for info in self.list(prefix):
            if start_after is None or info.key > start_after:
                yield info

    def delete(self, key: str) -> str | None:
        """Remove the object; deleting a missing one is not an error. Returns the sequencer of the
        removal when the adapter knows it (the folder bucket), else None."""
        from winnow.errors import FeatureDisabled

        raise FeatureDisabled("this bucket does not delete objects")

    def upload_form(self, policy: UploadPolicy) -> UploadForm:
        """A signed form that lets a browser write exactly what ``policy`` allows, and nothing else."""
        from winnow.errors import FeatureDisabled

        raise FeatureDisabled("this bucket does not sign uploads")

    def put_figure(self, key: str, data: bytes, content_type: str) -> None:
        """Store a document's figure image (a key under ``rules.FIGURE_PREFIX``)."""
        from winnow.errors import FeatureDisabled

        raise FeatureDisabled("this bucket does not store figures")

    def figure_url(self, key: str, expires_in: int) -> str | None:
        """A URL that reads the figure image ``key`` for ``expires_in`` seconds and names no other
        object; None when this bucket cannot make one (no server to read it from)."""
        return None


@dataclass(frozen=True)
class OcrPage:
    """One page to read: a one-page PDF or an image (``media_type`` image/png, image/jpeg, image/tiff)."""

    data: bytes
    media_type: str
    figure: bool = False  # a figure inside a page: a provider's refusal keeps its caption, fails nothing


class Ocr(ABC):
    """Reads the text of page images (scans, photos). Amazon Textract in AWS, a local engine on the
    embedded default."""

    @property
    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def read(self, pages: Sequence[OcrPage], *, deadline: float | None = None) -> list[str]:
        """Each page's text, lines separated by newlines, in order. A page the engine cannot read gives
        an empty string; provider outages raise ``TransientError`` subclasses. ``deadline`` (a
        ``time.monotonic()`` instant, the parse budget's): no page is started after it and a local read
        still running then is stopped, its page giving no text; the caller decides what that means."""


class EventQueue(ABC):
    """Where reconcile hands its synthetic S3 events to ingest: in AWS the queue the bucket feeds, so
    concurrency limits, retries and the DLQ apply to them exactly as to S3's own events."""

    @abstractmethod
    def send(self, events: Sequence[ObjectEvent]) -> None:
        """Deliver every event as an S3 notification. Raises ``EnqueueFailed`` naming the keys that could
        not be delivered (the others were), or another ``TransientError`` when the queue is unreachable."""


class FunctionInvoker(ABC):
    """Starts an invocation of a function without waiting for it: a long reconcile run continues in a
    fresh invocation instead of racing the time limit."""

    @abstractmethod
    def invoke(self, function: str, payload: dict[str, Any]) -> None:
        """Queue an invocation of ``function`` (name or ARN) with ``payload``."""


class ActiveIndex(ABC):
    """Which embedding profile's collection searches read. Ingest writes into the configured profile's
    collection; reconcile moves this pointer only once that collection holds every document, so an
    embedding-model change never leaves searches on a half-built index."""

    @abstractmethod
    def active(self) -> EmbeddingProfile | None:
        """The profile searches use, or None when no pointer has been set yet."""

    @abstractmethod
    def activate(self, profile: EmbeddingProfile) -> None:
        """Point searches at the collection of ``profile`` in one atomic step."""

    @abstractmethod
    def available(self) -> list[EmbeddingProfile]:
        """Profiles that have a collection (what the pointer may name)."""


@dataclass(frozen=True)
class Passage:
    """One kept search result as a generator sees it: ``number`` is the citation marker ([1], [2]...),
    equal to the result's rank."""

    number: int
    title: str
    section: str
    page: int | None
    text: str
    before: str = ""  # the document's text just before and after the passage (``winnow.search.context``)
    after: str = ""
    # The sentences of ``text`` that best answer the question, best first (the result's ``highlight``).
    highlights: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prompt:
    """What a generator sends: instructions (the system part), and the user turn with the passages
    delimited as data and the question."""

    system: str
    user: str
    max_tokens: int
    temperature: float = 0.0
    # A figure to describe (vision models only): its bytes and format ("png", "jpeg").
    image: bytes = field(default=b"", repr=False)
    image_format: str = ""


@dataclass(frozen=True)
class Generation:
    text: str
    model: str
    input_tokens: int
    output_tokens: int
    stop_reason: str | None = None


class Generator(ABC):
    """Writes an answer from a prompt (Amazon Bedrock, Ollama). Adapters retry within bounds and raise
    ``TransientError`` subclasses for timeouts, throttling and outages, ``ProviderRejected`` or
    ``ConfigurationError`` for requests that retrying cannot fix."""

    @property
    @abstractmethod
    def model(self) -> str: ...

    @abstractmethod
    def generate(self, prompt: Prompt, deadline: float | None = None) -> Generation:
        """``deadline`` (``time.monotonic()`` seconds): start no attempt that could not finish by then."""


class VectorCheckpoint(ABC):
    """A large document's finished embedding groups, kept across deliveries of its message so a retry
    does not embed (and pay for) them again (``winnow.ingest.checkpoint``). Best effort: a failure to
    load is a miss and a failure to save is logged, never the document's failure."""

    @abstractmethod
    def load(self, key: str) -> list[list[float]] | None: ...

    @abstractmethod
    def save(self, key: str, vectors: Sequence[Sequence[float]]) -> None: ...
