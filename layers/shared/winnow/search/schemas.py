"""The search API's request and response models. The OpenAPI document is generated from these (and the
routes), committed as ``docs/openapi.json``, and a test fails when it drifts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictStr,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from winnow.access import UPLOAD_METADATA_NAME, AccessList, parse_access
from winnow.errors import InvalidMetadata
from winnow.models import DocumentStatus, LedgerRecord
from winnow.rules import CONVERSATION_ID_RULE, FIELD_NAME_RULE, is_conversation_id, is_field_name
from winnow.search.context import CONTEXT_CHARS


def _unicode(value: str) -> str:
    """Text must be encodable as UTF-8: JSON can carry a lone surrogate (``"\\ud800"``), which is not
    text, and every later step (tokenising, embedding, the vector store) would fail on it. (Strict
    strings, as in filters, get the same check from pydantic itself: ``string_unicode``.)"""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it holds a lone UTF-16 surrogate)") from None
    return value


# Strict numbers: JSON booleans and numeric strings are rejected, integers are accepted as floats.
StrictInt = Annotated[int, Field(strict=True)]
StrictFloat = Annotated[float, Field(strict=True)]


def _scalar_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "str"
    if isinstance(value, int):
        return "int"
    return "float" if isinstance(value, float) else None


# Unions are tagged by the JSON type the caller sent, so a wrong value gets one message about the member
# it was meant for, not one complaint per member.
Scalar = Annotated[
    Annotated[str, Field(strict=True, max_length=256), Tag("str")]
    | Annotated[StrictInt, Tag("int")]
    | Annotated[StrictFloat, Tag("float")]
    | Annotated[bool, Tag("bool")],
    # anyOf, not the oneOf a tagged union documents: an integer is also a JSON Schema "number".
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "maxLength": 256},
                {"type": "integer"},
                {"type": "number"},
                {"type": "boolean"},
            ]
        }
    ),
    Discriminator(
        _scalar_kind,
        custom_error_type="filter_value",
        custom_error_message="a filter value must be a string, a number or a boolean "
        '(a filter takes one value, a list of values or a range {"gte": 1, "lte": 2})',
    ),
]


def _is_moment(text: str) -> bool:
    """An RFC 3339 date-time (``2024-01-31T00:00:00Z``) or date: never a number written as a string."""
    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return False
    return "-" in text


class RangeCondition(BaseModel):
    """A range of numbers, or of RFC 3339 date-times (for a datetime field); either bound may be
    omitted, not both."""

    model_config = ConfigDict(extra="forbid")

    gte: StrictFloat | Annotated[StrictStr, Field(max_length=40)] | None = None
    lte: StrictFloat | Annotated[StrictStr, Field(max_length=40)] | None = None

    @field_validator("gte", "lte")
    @classmethod
    def _number_or_moment(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, str) and not _is_moment(value):
            raise ValueError("a bound is a number, or an RFC 3339 date-time such as 2024-01-31T00:00:00Z")
        return value

    @model_validator(mode="after")
    def _one_bound(self) -> RangeCondition:
        if self.gte is None and self.lte is None:
            raise ValueError("a range needs gte, lte or both")
        bounds = [b for b in (self.gte, self.lte) if b is not None]
        if len({isinstance(b, str) for b in bounds}) > 1:
            raise ValueError("a range's bounds are both numbers or both date-times")
        if len(bounds) == 2 and not isinstance(bounds[0], str) and bounds[0] > bounds[1]:  # type: ignore[operator]
            raise ValueError("gte must not be greater than lte")
        return self


# What one search's filters may cost, the same rule in AWS and on `winnow serve` (training/NOTEBOOK.md,
# "Search cost"): the engine checks a list's values per point. Past 50 values a list cost 20 x more on
# Qdrant Edge (20 lists of 100 strings 163 ms, of 50 7 ms, at 300 chunks), and a fractional number in a
# list is a range condition of its own (about 7 ms each there; an integer or a string joins one MatchAny).
# An explicit range {"gte", "lte"} and a single fractional value are range conditions too, so they count
# against the same bound (issue 44: 20 ranges cost 11.1 s per search at 9,653 chunks, 7 ms without).
MAX_FILTER_VALUES = 50
MAX_FILTER_FRACTIONS = 10


def _fractional(value: Any) -> bool:
    return isinstance(value, float) and not value.is_integer()


def range_conditions(filters: dict[str, Any]) -> int:
    """How many range conditions these filters make: each explicit range, each fractional number alone
    or in a list (an integer, a string or a boolean joins a match instead)."""
    count = 0
    for condition in filters.values():
        if isinstance(condition, RangeCondition | dict):
            count += 1
        elif isinstance(condition, list):
            count += sum(1 for item in condition if _fractional(item))
        elif _fractional(condition):
            count += 1
    return count


def _condition_kind(value: Any) -> str:
    if isinstance(value, dict | RangeCondition):
        return "range"
    return "list" if isinstance(value, list) else "value"


FilterCondition = Annotated[
    Annotated[Scalar, Tag("value")]
    | Annotated[list[Scalar], Field(min_length=1, max_length=MAX_FILTER_VALUES), Tag("list")]
    | Annotated[RangeCondition, Tag("range")],
    Discriminator(_condition_kind),
]


def error_path(loc: tuple[int | str, ...]) -> list[str]:
    """A validation error's location as the caller's field path: ``body.filters.year.range.gte`` is
    ``filters.year.gte`` (the resolver's ``body`` and the union tags above are ours, not the caller's)."""
    parts = [str(p) for p in (loc[1:] if loc[:1] == ("body",) else loc)]
    if len(parts) > 2 and parts[0] == "filters":
        tag, rest = parts[2], parts[3:]
        if tag == "value":
            rest = []  # the scalar's own tag
        elif tag == "list":
            rest = rest[:1]  # the index; drop the scalar's tag after it
        parts = parts[:2] + rest
    return parts


# Measured on passages, SciFact and at 5,000 and 50,000 chunks (training/NOTEBOOK.md, issues 24 and 28).
DEFAULT_CANDIDATES = 15
RERANKED_CANDIDATES = 30


def default_candidates(top_k: int, reranked: bool = False) -> int:
    """The candidates a search fetches when the request does not say: enough for fusion to choose from;
    twice that when a re-ranker reads them. Why: without one, 30 instead of 15 found the answering
    passage for 3 more of 332 passage questions, and cost a default search a quarter of its time."""
    return max(RERANKED_CANDIDATES if reranked else DEFAULT_CANDIDATES, 3 * top_k)


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to look for: 1 to 2,000 characters after trimming.")
    top_k: StrictInt = Field(default=5, ge=1, le=50, description="Most results to return.")
    candidates: StrictInt | None = Field(
        default=None,
        le=200,
        description="How many candidates each retriever brings before re-ranking: top_k to 200, "
        f"default max({RERANKED_CANDIDATES}, 3 * top_k) when a re-ranker runs, else "
        f"max({DEFAULT_CANDIDATES}, 3 * top_k).",
    )
    filters: dict[str, FilterCondition] = Field(
        default_factory=dict,
        max_length=20,
        description="Metadata field → value, list of values (any of; at most "
        f"{MAX_FILTER_VALUES}), or {{gte, lte}} for numbers; at most {MAX_FILTER_FRACTIONS} fractional "
        "numbers and ranges in all filters. "
        'Also `kind` ("text", "table" or "figure") and `ocr` (true for text read from scans).',
    )
    mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    rerank: Annotated[bool, Field(strict=True)] | None = Field(
        default=None, description="Default: on when a re-ranker is configured."
    )
    relevance_threshold: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Minimum score of a returned passage; default: the threshold fitted with the "
        "embedding profile's relevance model, unless the deployment sets WINNOW_SEARCH_RELEVANCE_THRESHOLD. "
        "When the score is the relevance model's estimated probability, a threshold t drops passages "
        "with less than a t estimated chance of being relevant.",
    )
    score_threshold: StrictFloat | None = Field(
        default=None, ge=0, le=1, description="Minimum dense similarity, applied inside the vector search."
    )
    context: Literal["none", "neighbours", "section"] = Field(
        default="none",
        description='Text around each result, in its `context`: "neighbours" the chunk before and the chunk '
        'after in the document, "section" the rest of its own section; each side at most '
        f"{CONTEXT_CHARS} characters.",
    )
    conversation_id: str | None = Field(
        default=None,
        description="Continue this conversation (the id an earlier response returned): the query is read "
        "as a follow-up of its turns. Without it, a caller with a user id starts one. 404: not this "
        "user's; 400: the caller has no user id (docs/conversations.md).",
    )

    @field_validator("conversation_id")
    @classmethod
    def _conversation_id(cls, value: str | None) -> str | None:
        if value is not None and not is_conversation_id(value):
            raise ValueError(f"conversation_id must be {CONVERSATION_ID_RULE}")
        return value

    @field_validator("query")
    @classmethod
    def _query_length(cls, value: str) -> str:
        stripped = _unicode(value).strip()
        if not stripped:
            raise ValueError("query must not be empty")
        if len(stripped) > 2000:
            raise ValueError("query must be at most 2,000 characters")
        return stripped

    @field_validator("filters")
    @classmethod
    def _filter_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not is_field_name(name):
                raise ValueError(
                    f"filter field {name[:40]!r} is not a metadata field name: use {FIELD_NAME_RULE}"
                )
        ranges = range_conditions(value)
        if ranges > MAX_FILTER_FRACTIONS:
            raise ValueError(
                f"filters hold {ranges} fractional numbers and ranges: at most {MAX_FILTER_FRACTIONS} in all "
                "(each is a range condition of its own); fewer filters, or one range such as "
                '{"gte": 1.5, "lte": 2.5} for neighbouring numbers'
            )
        return value

    def candidate_count(self, reranked: bool = False) -> int:
        """How many candidates this search fetches (the product path and the benchmarks' study path)."""
        return self.candidates if self.candidates is not None else default_candidates(self.top_k, reranked)

    @model_validator(mode="after")
    def _candidates_at_least_top_k(self) -> SearchRequest:
        if self.candidates is not None and self.candidates < self.top_k:
            raise ValueError("candidates must be at least top_k")
        return self


class AccessModel(BaseModel):
    """Who may read a document besides the tenant's admins (``winnow.access``; names up to 256
    characters without spaces or commas, at most 200 per list)."""

    model_config = ConfigDict(extra="forbid")

    users: list[str] = Field(default_factory=list, description="User ids (the user claim, default sub).")
    groups: list[str] = Field(default_factory=list, description="Groups (the groups claim).")

    @model_validator(mode="after")
    def _names(self) -> AccessModel:
        try:
            parse_access({"users": self.users, "groups": self.groups})
        except InvalidMetadata as exc:
            raise ValueError(str(exc)) from exc
        return self

    def as_list(self) -> AccessList:
        return parse_access({"users": self.users, "groups": self.groups})


class ResultContext(BaseModel):
    """The text around a result in its document (``context`` in the request)."""

    before: str = Field(description=f"Text just before the passage, at most {CONTEXT_CHARS} characters.")
    after: str = Field(description=f"Text just after the passage, at most {CONTEXT_CHARS} characters.")


class SearchResult(BaseModel):
    rank: int
    score: float = Field(
        description="Relevance in [0, 1]; results are ordered by it and relevance_threshold applies to it. "
        "With the re-ranker: the re-ranker's relevance score. Without: the estimated probability that the "
        "passage is relevant, from logistic models over the retrievers' evidence (cosine similarity, BM25 "
        "score) fitted per embedding model and search mode on an evaluation set (SciFact: on other "
        "documents an estimate carried over, not a guarantee); in each mode an order model sets the "
        "order and an answer model the best passage's score. For an embedding model with no fitted model: "
        "the dense cosine similarity (0 when negative)."
    )
    vector_score: float = Field(
        description="The retriever's own score, not a probability: cosine similarity in dense mode, BM25 "
        "score in sparse mode, reciprocal-rank-fusion score in hybrid mode (sum over the retrievers that "
        "returned the passage of 1/(k + rank), ranks from 0, k = WINNOW_SEARCH_RRF_K, default 60; the "
        "cosine similarity when the query has no keyword terms, e.g. only stop-words)."
    )
    chunk_id: str
    key: str
    title: str
    page: int | None
    section: str
    text: str
    metadata: dict[str, Any]
    kind: Literal["text", "table", "figure"] = Field(
        default="text",
        description='"table": rows of a table, one per line as "column: value" pairs. "figure": a chart, '
        "diagram or photo inside the document: its caption, alt text and the text read in it.",
    )
    figure_text: Literal["vision", "ocr", "caption"] | None = Field(
        default=None,
        description='A figure\'s text: "ocr" read in the image, "vision" described by a vision model, '
        '"caption" its caption and alt text only.',
    )
    image_url: str | None = Field(
        default=None,
        description="A figure's image: a short-lived URL (a presigned S3 GET in AWS, a signed `winnow serve` "
        "URL locally) that reads this one image; given only with the passage, to those who may read it.",
    )
    ocr: bool = Field(default=False, description="The text was read from a scanned page or image by OCR.")
    restricted: bool = Field(
        default=False, description="The document has an access list: not every member of the tenant reads it."
    )
    access: AccessModel | None = Field(
        default=None,
        description="Who may read a restricted document; shown only to those who may change it (the "
        "admin group and its listed users).",
    )
    context: ResultContext | None = Field(
        default=None, description="The text around the passage; null unless the request asked for `context`."
    )


class Timings(BaseModel):
    embed: float
    search: float
    rerank: float
    total: float


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int


class SearchResponse(BaseModel):
    query: str
    count: int
    relevant: bool
    message: str
    results: list[SearchResult]
    timings_ms: Timings
    relevance_threshold: float = Field(
        description="The threshold this search applied: the request's, else the deployment's default."
    )
    query_used: str | None = Field(
        default=None, description="What was searched: the query, or a follow-up made standalone."
    )
    conversation_id: str | None = Field(
        default=None, description="The conversation this turn belongs to; null for a one-shot request."
    )
    usage: Usage | None = Field(
        default=None, description="Model tokens of a follow-up's rewrite; null when no model was called."
    )


class DocumentStatusModel(BaseModel):
    """A document's ingest state; ``pending`` while it is in the bucket and ingest has not recorded it.
    Timestamps are named ``*_at``, as in the ledger."""

    key: str
    status: DocumentStatus | Literal["pending"]
    chunks: int
    embedded: int
    reused: int
    error: str | None
    title: str | None
    source_type: str | None
    created_at: str | None
    updated_at: str | None

    @classmethod
    def of(cls, record: LedgerRecord | None, key: str) -> DocumentStatusModel:
        """``record``'s state, or ``pending`` for ``key`` when ingest has no record of it yet."""
        if record is None:
            return cls(
                key=key,
                status="pending",
                chunks=0,
                embedded=0,
                reused=0,
                error=None,
                title=None,
                source_type=None,
                created_at=None,
                updated_at=None,
            )
        return cls(
            key=record.key,
            status=record.status,
            chunks=record.chunks,
            embedded=record.embedded,
            reused=record.reused,
            error=record.error,
            title=record.title,
            source_type=record.source_type,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )


class DocumentsPage(BaseModel):
    documents: list[DocumentStatusModel]
    next_cursor: str | None


class Health(BaseModel):
    status: Literal["ok"]
    version: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody
    correlation_id: str


class UploadRequest(BaseModel):
    """``POST /uploads``: where the file goes within the caller's tenant, its type and metadata."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1,
        max_length=1024,
        description="Where the file goes within the caller's tenant, e.g. handbook/leave.pdf; the object "
        "key is <tenant>/<path>.",
    )
    content_type: str | None = Field(
        default=None, max_length=255, description="The file's media type; default: guessed from the path."
    )
    metadata: dict[str, Annotated[str, Field(max_length=1024)]] = Field(
        default_factory=dict,
        max_length=50,
        description="Filterable metadata (stored as x-amz-meta-*): printable ASCII values; names follow "
        "the metadata field-name rule.",
    )
    access: AccessModel | None = Field(
        default=None,
        description="Who may read the document (pinned in the signed form as x-amz-meta-winnow-access); "
        "without it, a document that exists keeps its list, and a new one is read by every member of the "
        "tenant (or only the admins with DefaultAccess=deny). Only admins may grant a group they are not in.",
    )

    @field_validator("path")
    @classmethod
    def _path_text(cls, value: str) -> str:
        return _unicode(value)

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not is_field_name(name):
                raise ValueError(f"metadata field {name[:40]!r} is not allowed: use {FIELD_NAME_RULE}")
            if name.lower() == UPLOAD_METADATA_NAME:
                raise ValueError(f"metadata field {name!r} is reserved: send the access list in 'access'")
            if not all(" " <= ch <= "~" for ch in text):
                raise ValueError(f"metadata field {name!r}: values must be printable ASCII")
        return value


class UploadResponse(BaseModel):
    key: str = Field(description="The object key the form writes: <tenant>/<path>.")
    url: str = Field(description="POST the form here (multipart/form-data).")
    fields: dict[str, str] = Field(description="Send these form fields first, then the file as 'file'.")
    expires_in: int = Field(description="Seconds the form stays valid.")


class DeleteResponse(BaseModel):
    key: str
    status: Literal["deleting"] = Field(
        description="The object is gone; its passages leave the index when ingest handles the removal."
    )


class MemoryItem(BaseModel):
    """One remembered exchange of the caller (``GET /memory``)."""

    id: str
    conversation_id: str
    question: str
    answer: str
    at: str = Field(description="When it was answered (ISO 8601, UTC).")


class MemoryList(BaseModel):
    memories: list[MemoryItem] = Field(description="Newest first.")


class Forgotten(BaseModel):
    deleted: int = Field(description="Memories and conversation turns removed for good.")


class ConversationDeleted(BaseModel):
    conversation_id: str
    status: Literal["deleted"]
