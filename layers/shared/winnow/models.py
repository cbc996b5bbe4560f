"""Plain data that crosses the ports. Frozen dataclasses: cheap to import, easy to compare in tests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal


@dataclass(frozen=True)
class Table:
    """A table as rows of cell texts. ``header`` names the columns (empty when the table has none);
    ``caption`` is the table's own caption, or the nearest heading when it has none."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class Figure:
    """A picture inside a document (a chart, a diagram, a photo). While parsing it holds the image
    (``data``, PNG/JPEG/TIFF, ``digest`` its SHA-256) and what the document says of it (``caption``,
    ``alt``); ``winnow.parsing.figures`` then keeps or drops it and says where its text came from:
    ``figure_text`` is "vision", "ocr" or "caption"."""

    caption: str = ""
    alt: str = ""
    media_type: str = ""
    digest: str = ""
    width: int = 0
    height: int = 0
    figure_text: str = "caption"
    # The caption line was taken out of the running text (the figure carries it, as a table carries its
    # "Table N" line): should the figure be dropped, the caption goes back as text.
    owns_caption: bool = False
    data: bytes = field(default=b"", repr=False, compare=False)


@dataclass(frozen=True)
class Block:
    """A run of text from a parsed document, with where it sits in the document's structure. A table
    block carries its cells in ``table`` (``text`` is the whole table rendered); ``ocr`` marks text that
    was read from an image."""

    text: str
    section_path: tuple[str, ...] = ()
    page: int | None = None
    table: Table | None = None
    ocr: bool = False
    figure: Figure | None = None
    # A definition-list entry, a term with its definition (an option, a signature): a chunk of its own.
    entry: bool = False
    # What leads the block and must lead every piece of it when it is split: an entry's term (the
    # option's name), a list's introduction. Empty: nothing to repeat.
    head: str = ""

    @property
    def kind(self) -> str:
        if self.figure is not None:
            return "figure"
        return "table" if self.table is not None else "text"


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    blocks: list[Block]
    source_type: str  # pdf | docx | markdown | text | html | image | pptx | xlsx | csv | rst | epub
    ocr_pages: int = 0  # pages (or images) whose text came from OCR
    vision_calls: int = 0  # figures sent to a vision model (winnow.ingest.figures), and their tokens
    vision_tokens: int = 0


@dataclass(frozen=True)
class Chunk:
    """A passage to index. ``text`` is shown to users; ``embed_text`` adds the title and section as
    context, and is what both the dense and the sparse encoders see."""

    index: int
    text: str
    title: str
    section_path: tuple[str, ...]
    page: int | None
    kind: str = "text"  # "text" | "table" | "figure"
    ocr: bool = False
    figure_text: str = ""  # a figure's: "vision" | "ocr" | "caption"
    image: str = ""  # a figure's stored image (``rules.figure_name``), in its document's folder

    @property
    def section(self) -> str:
        return " > ".join(self.section_path)

    @property
    def embed_text(self) -> str:
        header = " > ".join(part for part in (self.title, *self.section_path) if part)
        return f"{header}\n\n{self.text}" if header else self.text

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SparseVector:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class EmbeddingProfile:
    """Which model made a vector. Vectors of different profiles must never meet."""

    provider: str
    model: str
    dimension: int

    @property
    def slug(self) -> str:
        safe = "".join(c if c.isalnum() else "-" for c in self.model.lower()).strip("-")
        return f"{self.provider}-{safe}-{self.dimension}"


@dataclass(frozen=True)
class ChunkPoint:
    """One chunk ready for the vector store."""

    point_id: str
    tenant: str
    key: str
    chunk: Chunk
    dense: list[float]
    sparse: SparseVector
    metadata: dict[str, Any]
    source_type: str
    doc_version: str


@dataclass(frozen=True)
class AccessList:
    """Who may read a document besides the tenant's admins. Both empty: the admins only."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def as_json(self) -> dict[str, list[str]]:
        return {"users": list(self.users), "groups": list(self.groups)}

    def encoded(self) -> str:
        """Compact ASCII JSON: what S3 user metadata can carry."""
        import json

        return json.dumps(self.as_json(), separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True)
class ReadScope:
    """What a caller may read, as the vector store's filter needs it. ``everything``: the admins."""

    everything: bool = False
    open_documents: bool = False
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    @property
    def nothing(self) -> bool:
        return not (self.everything or self.open_documents or self.users or self.groups)


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the vector store returns it from a search or a scroll."""

    point_id: str
    key: str
    title: str
    section: str
    page: int | None
    chunk_index: int
    text: str
    content_hash: str
    metadata: dict[str, Any]
    score: float = 0.0
    dense: list[float] | None = None
    kind: str = "text"
    ocr: bool = False
    figure_text: str = ""
    image: str = ""
    # Each retriever's own evidence, when it returned the chunk: cosine and rank (1 = best) among the
    # dense candidates, BM25 score and rank among the sparse ones. The relevance model reads these.
    dense_score: float | None = None
    dense_rank: int | None = None
    sparse_score: float | None = None
    sparse_rank: int | None = None
    # Who may read the document ({"users": [...], "groups": [...]}); None: no access list.
    access: dict[str, list[str]] | None = None
    # The document version the chunk was indexed from: its neighbours are the same version's chunks.
    doc_version: str | None = None


@dataclass(frozen=True)
class ObjectInfo:
    """What HEAD says about an object."""

    key: str
    size: int
    etag: str
    version_id: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    last_modified: str | None = None


Action = Literal["created", "removed"]


@dataclass(frozen=True)
class ObjectEvent:
    """One object created in or removed from the bucket, as its S3 notification says."""

    action: Action
    bucket: str
    key: str  # URL-decoded, as stored in S3
    sequencer: str | None
    etag: str | None
    version_id: str | None
    size: int | None
    event_name: str


class DocumentStatus(StrEnum):
    INDEXED = "indexed"
    FAILED = "failed"
    DELETED = "deleted"


@dataclass
class LedgerRecord:
    """One document's ingest state. ``sequencer`` orders S3 events per key; an event whose sequencer is
    not greater than the stored one is stale and must not change anything. ``access``: the document's
    access list as last known (``AccessList.encoded()``, None for none or a record written before the
    field), kept when it turns ``deleted`` so who may see the record outlives its points and object."""

    tenant: str
    key: str
    status: DocumentStatus
    content_sha256: str | None = None
    etag: str | None = None
    version_id: str | None = None
    sequencer: str | None = None
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    error: str | None = None
    title: str | None = None
    source_type: str | None = None
    metadata_sha256: str | None = None
    profile: str | None = None
    ocr_pages: int = 0
    created_at: str | None = None
    updated_at: str | None = None
    access: str | None = None
    vision_calls: int = 0  # figures described by a vision model for this version, and their tokens
    vision_tokens: int = 0
    figures: int = 0  # figure images stored for this version (none: nothing to prune when it goes)
    reader: int = 0  # READER_VERSION that made the passages (0: written before the field existed)
