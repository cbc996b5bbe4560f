"""The rules that cross layers, each defined once: what a tenant is, how an object key names one, what a
metadata field may be called, how S3 sequencers order events, how we write a timestamp, and what an S3
notification looks like. The schema, ingest, the ledgers, the store and the local server all ask this
module; none keeps a copy (tests/unit/test_rules.py checks). Patterns are private and matched with
``fullmatch``, so no caller can reach for ``re.match`` and let ``"acme\\n"`` through."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote_plus, unquote_plus

from winnow.errors import DocumentError, InvalidKey

_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TENANT_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"

# Ledger rows for object keys that name no tenant. It breaks the tenant rule on purpose (a leading
# underscore), so no real tenant can ever read or overwrite them.
UNASSIGNED_TENANT = "_unassigned"

# No '.': the vector store reads a dotted name as a path into nested payload, so ``dept.team`` could be
# indexed but never filtered on.
_FIELD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
FIELD_NAME_RULE = "1-64 letters, digits, '_' or '-', starting with a letter or digit"


def is_tenant(name: object) -> bool:
    """Whether ``name`` is a valid tenant: a JWT claim, the first segment of an object key, a header."""
    return isinstance(name, str) and _TENANT.fullmatch(name) is not None


def is_field_name(name: object) -> bool:
    """Whether ``name`` may name a metadata field: in a sidecar, in S3 user metadata, in a filter."""
    return isinstance(name, str) and _FIELD_NAME.fullmatch(name) is not None


# The types a metadata field may be declared with (``WINNOW_METADATA_FIELDS``): each is the payload index
# the field gets and decides how a filter on it is written (a range needs integer, float or datetime).
FieldType = Literal["keyword", "integer", "float", "bool", "datetime"]
FIELD_TYPES: tuple[FieldType, ...] = ("keyword", "integer", "float", "bool", "datetime")
METADATA_FIELDS_SETTING = "WINNOW_METADATA_FIELDS"
# Qdrant Cloud's strict mode allows 100 payload indexes a collection; Winnow's own fields take 11.
MAX_METADATA_FIELDS = 80


@dataclass(frozen=True)
class FilterableField:
    """A payload field some query filters on, declared once: the payload index it gets and the type every
    condition on it is written for (``tenant`` is a keyword index Qdrant co-locates points by)."""

    path: str
    type: FieldType | Literal["tenant"]

    @property
    def value_type(self) -> FieldType:
        return "keyword" if self.type == "tenant" else self.type


def undeclared_field_message(name: str) -> str:
    """What a caller filtering on an undeclared metadata field is told to do."""
    return (
        f"filter field {name!r} is not declared: declare it with its type in {METADATA_FIELDS_SETTING} "
        f'(stack parameter MetadataFields), e.g. {{"{name}": "keyword"}}; types: {", ".join(FIELD_TYPES)}'
    )


# A user id or group name in a document's access list or a caller's token (``auth0|64f1``, a Cognito
# group, an Entra ID group GUID). No whitespace or commas: a groups claim may arrive as one string
# separated by either. ``*`` is reserved.
_PRINCIPAL = re.compile(r"[^\s,\x00-\x1f\x7f]{1,256}")
CONVERSATION_ID_RULE = "8-64 letters, digits, '_' or '-' (the id a previous response returned)"
_CONVERSATION_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


def is_conversation_id(value: object) -> bool:
    return isinstance(value, str) and _CONVERSATION_ID.fullmatch(value) is not None


def in_conversation(user: str | None, conversation_id: str | None) -> bool:
    """Whether a request goes through conversations: a caller with a user id (a new or continued
    conversation), or an id sent without one (answered 400). Anything else is one-shot: no store call."""
    return user is not None or conversation_id is not None


PRINCIPAL_RULE = "1-256 characters without spaces, commas or control characters (and not '*')"


def is_principal(name: object) -> bool:
    """Whether ``name`` may name a user or a group: in an ``access`` list, a JWT claim, a header."""
    return isinstance(name, str) and name != "*" and _PRINCIPAL.fullmatch(name) is not None


# A path a caller chooses inside their tenant (``handbook/leave.pdf``): the object key is
# ``<tenant>/<path>``, and S3 keys are at most 1,024 bytes of UTF-8.
MAX_KEY_BYTES = 1024
PATH_RULE = (
    "a relative path such as 'handbook/leave.pdf': no leading '/', no '.', '..' or empty segments, "
    "no backslashes or control characters"
)


def path_problem(tenant: str, path: object) -> str | None:
    """Why ``<tenant>/<path>`` is not a key a caller may write, or None when it is. The one rule for
    caller-chosen paths: the search API's uploads and deletes, and ``winnow serve``'s upload route."""
    if not isinstance(path, str) or not path:
        return f"the path must be {PATH_RULE}"
    if path.startswith("/") or "\\" in path or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return f"the path must be {PATH_RULE}"
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        return f"the path must be {PATH_RULE}"
    try:
        size = len(object_key(tenant, path).encode())
    except UnicodeEncodeError:
        return "the path must be valid Unicode text"
    if size > MAX_KEY_BYTES:
        return f"the path is too long: <tenant>/<path> must be at most {MAX_KEY_BYTES} bytes of UTF-8"
    return None


# A Bedrock-style metadata sidecar: ``<document key>.metadata.json`` carries the document's metadata.
SIDECAR_SUFFIX = ".metadata.json"


def is_sidecar(key: str) -> bool:
    """Whether ``key`` names a metadata sidecar (of the document whose key it ends)."""
    return key.endswith(SIDECAR_SUFFIX) and len(key) > len(SIDECAR_SUFFIX)


def upload_path_problem(tenant: str, path: object) -> str | None:
    """Why a caller may not upload a file to ``<tenant>/<path>``, or None. The one rule of every upload
    route (the search API's signed forms, ``winnow serve``'s ``/upload``): a caller path, and never a
    sidecar, whose metadata would override the document's."""
    problem = path_problem(tenant, path)
    if problem is None and isinstance(path, str) and is_sidecar(object_key(tenant, path)):
        problem = "the path names a metadata sidecar (*.metadata.json): send metadata in 'metadata'"
    return problem


def object_key(tenant: str, path: str) -> str:
    """The object key of ``path`` within ``tenant``: the first key segment names the tenant."""
    return f"{tenant}/{path}"


def path_in_tenant(tenant: str, key: str) -> str:
    """``acme/handbook.pdf`` within ``acme`` is ``handbook.pdf``; a key that is not the tenant's (or is
    already a bare path) comes back as it was."""
    prefix = object_key(tenant, "")
    return key[len(prefix) :] if key.startswith(prefix) else key


def split_key(key: str) -> tuple[str, str]:
    """``acme/handbook.pdf`` → (``acme``, ``handbook.pdf``). A key without a tenant segment is invalid."""
    tenant, sep, rest = key.partition("/")
    if not sep or not rest or not is_tenant(tenant):
        raise InvalidKey("key has no tenant segment: expected <tenant>/<path>")
    return tenant, rest


# --- figures -------------------------------------------------------------------------------------------
# A document's figure images (``winnow.parsing.figures``) live under this prefix, one folder per document:
# ``_figures/<tenant>/<hash of the document key>/<digest>.<ext>``. The leading underscore breaks the
# tenant rule, so no upload can write there, ingest never indexes it and reconcile never lists it.
FIGURE_PREFIX = "_figures/"
_FIGURE_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/tiff": "tif"}
FIGURE_CONTENT_TYPES = {extension: media for media, extension in _FIGURE_EXTENSIONS.items()}
_FIGURE_NAME = re.compile(r"[0-9a-f]{32}\.(?:png|jpg|tif)")


def is_figure_key(key: str) -> bool:
    """Whether ``key`` is a stored figure image (or the reserved prefix): never a document."""
    return key.startswith(FIGURE_PREFIX)


def figure_name(digest: str, media_type: str) -> str:
    """A figure image's name in its document's folder: its content digest and its format."""
    return f"{digest[:32]}.{_FIGURE_EXTENSIONS.get(media_type, 'png')}"


def figure_folder(document_key: str) -> str:
    """The folder of a document's figures (its key hashed: any key fits, none leaks into a listing)."""
    import hashlib

    tenant, _ = split_key(document_key)
    digest = hashlib.sha256(document_key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{FIGURE_PREFIX}{tenant}/{digest[:40]}/"


def figure_key(document_key: str, name: str) -> str | None:
    """The object key of the figure ``name`` of a document; None for a name that is not one."""
    if _FIGURE_NAME.fullmatch(name) is None:
        return None
    return figure_folder(document_key) + name


# --- S3 event order ---------------------------------------------------------------------------------
# S3 sequencers are hex strings of varying length (16-18 characters today). The S3 notification docs
# prescribe the order: pad the shorter one with zeros on the right, then compare as strings. Padded to
# this width, every valid sequencer compares that way against every other, so ledgers can store the
# padded form and let the database compare.
SEQUENCER_WIDTH = 64
_SEQUENCER = re.compile(r"[0-9A-Fa-f]{1,64}")


def is_sequencer(value: object) -> bool:
    """Whether ``value`` could be an S3 event sequencer (1-64 hex digits)."""
    return isinstance(value, str) and _SEQUENCER.fullmatch(value) is not None


def _padded(sequencer: str, width: int) -> str:
    return sequencer.upper().ljust(width, "0")


def sequencer_sort_key(sequencer: str) -> str:
    """The sequencer uppercased and right-padded with zeros, so that plain string order is event order."""
    if not is_sequencer(sequencer):
        raise DocumentError(f"malformed S3 event sequencer {sequencer[:80]!r}")
    return _padded(sequencer, SEQUENCER_WIDTH)


def sequencer_is_newer(candidate: str | None, stored: str | None) -> bool:
    """Whether an event with sequencer ``candidate`` comes after one with ``stored``. A missing sequencer
    (synthetic events from reconcile, or a record without one) never counts as stale. Never raises: the
    batch scheduler compares sequencers before ingest refuses malformed ones."""
    if candidate is None or stored is None:
        return True
    width = max(len(candidate), len(stored))
    return _padded(candidate, width) > _padded(stored, width)


# --- timestamps -------------------------------------------------------------------------------------
def iso_timestamp(moment: datetime) -> str:
    """``moment`` in UTC as S3 writes ``eventTime``: ISO 8601, milliseconds, ``Z`` (ledger, API and object
    timestamps). A naive ``moment`` is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    """Now, as ``iso_timestamp`` writes it."""
    return iso_timestamp(datetime.now(UTC))


# --- S3 event notifications -------------------------------------------------------------------------
def encode_event_key(key: str) -> str:
    """A key as S3 writes it into a notification: URL-encoded, ``+`` for a space."""
    return quote_plus(key, safe="/")


def decode_event_key(key: str) -> str:
    """A notification's key as stored in S3 (``a+b%2Bc.pdf`` is ``a b+c.pdf``)."""
    return unquote_plus(key)


def s3_record(
    event_name: str,
    bucket: str,
    key: str,
    *,
    size: int | None = None,
    etag: str | None = None,
    version_id: str | None = None,
    sequencer: str | None = None,
    region: str = "us-east-1",
    principal: str = "winnow",
) -> dict[str, Any]:
    """One record of an S3 notification (event structure 2.1), field for field as S3 writes it. Fields
    left None are left out, as S3 leaves ``size`` and ``eTag`` out of deletes. ``principal`` stands where
    S3 names the caller and the configuration: it tells an operator reading a message in the DLQ who made
    it."""
    obj: dict[str, Any] = {"key": encode_event_key(key)}
    if size is not None:
        obj["size"] = size
    if etag is not None:
        obj["eTag"] = etag.strip('"')
    if version_id is not None:
        obj["versionId"] = version_id
    if sequencer is not None:
        obj["sequencer"] = sequencer
    request_id = uuid.uuid4().hex[:16].upper()
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": region,
        "eventTime": now_iso(),
        "eventName": event_name,
        "userIdentity": {"principalId": principal},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": request_id, "x-amz-id-2": request_id},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": principal,
            "bucket": {
                "name": bucket,
                "ownerIdentity": {"principalId": principal},
                "arn": f"arn:aws:s3:::{bucket}",
            },
            "object": obj,
        },
    }


def s3_notification(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """An S3 notification holding ``records`` (S3 itself sends one record per message)."""
    return {"Records": list(records)}
