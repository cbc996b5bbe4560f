"""User metadata that becomes filterable payload: S3 user metadata (``x-amz-meta-*``) and an optional
Bedrock-style sidecar ``<key>.metadata.json`` (``{"metadataAttributes": {...}, "access": {...}}``). The
sidecar wins when both name the same field; the access list follows ``winnow.access.applicable_access``
(one an upload form pinned on the object wins over the sidecar's)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from winnow.access import ACCESS_KEY, UPLOAD_METADATA_NAME, applicable_access, decode_access, parse_access
from winnow.errors import InvalidMetadata
from winnow.jsonbounds import nesting_depth
from winnow.rules import FIELD_NAME_RULE, is_field_name
from winnow.rules import SIDECAR_SUFFIX as SIDECAR_SUFFIX  # defined once there; ingest reads it here
from winnow.rules import is_sidecar as is_sidecar

MAX_KEY_BYTES = 1024  # S3's limit on an object key, in UTF-8 bytes
MetadataValue = str | int | float | bool | list[str]
# The deepest valid sidecar: {"metadataAttributes": {"field": ["a", "b"]}}.
_MAX_SIDECAR_DEPTH = 3


def sidecar_key(document_key: str) -> str:
    return document_key + SIDECAR_SUFFIX


def can_have_sidecar(document_key: str) -> bool:
    """Whether the sidecar's key fits S3's 1,024-byte limit: a document key of 1,011 bytes or more has
    no possible sidecar, and asking for one would be refused as an invalid key."""
    return len(sidecar_key(document_key).encode("utf-8", "surrogatepass")) <= MAX_KEY_BYTES


def document_key_of(sidecar: str) -> str:
    return sidecar[: -len(SIDECAR_SUFFIX)]


def _check_field(name: str) -> str:
    if not is_field_name(name):
        raise InvalidMetadata(f"metadata field name {name[:40]!r} is not allowed: use {FIELD_NAME_RULE}")
    return name


def parse_sidecar(data: bytes, max_bytes: int) -> dict[str, Any]:
    """Validate a sidecar file. Values may be strings, numbers, booleans or lists of strings; an
    ``access`` object beside ``metadataAttributes`` becomes ``ACCESS_KEY`` (a bad one fails the file)."""
    if len(data) > max_bytes:
        raise InvalidMetadata(f"sidecar is {len(data)} bytes, over the {max_bytes}-byte limit")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidMetadata(f"sidecar is not valid JSON: {str(exc)[:80]}") from exc
    if nesting_depth(text) > _MAX_SIDECAR_DEPTH:
        # checked before json.loads, whose recursion a few KB of brackets can exhaust
        raise InvalidMetadata(
            f"sidecar nests deeper than {_MAX_SIDECAR_DEPTH} levels (an object of fields, a list of strings)"
        )
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InvalidMetadata(f"sidecar is not valid JSON: {str(exc)[:80]}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("metadataAttributes", {}), dict):
        raise InvalidMetadata('sidecar must be an object with a "metadataAttributes" object')
    if "metadataAttributes" not in doc and "access" not in doc:
        raise InvalidMetadata('sidecar must be an object with a "metadataAttributes" object')
    out: dict[str, Any] = {}
    if "access" in doc:
        out[ACCESS_KEY] = parse_access(doc["access"]).as_json()
    for name, value in doc.get("metadataAttributes", {}).items():
        _check_field(str(name))
        if isinstance(value, bool | str):
            out[name] = value
        elif isinstance(value, int | float):
            if value != value or value in (float("inf"), float("-inf")):
                raise InvalidMetadata(f"metadata field {name!r} is not a finite number")
            out[name] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[name] = list(value)
        else:
            raise InvalidMetadata(
                f"metadata field {name!r} must be a string, number, boolean or list of strings"
            )
    return out


def from_user_metadata(user_metadata: dict[str, str]) -> dict[str, Any]:
    """S3 user metadata, keys lower-cased by S3. Invalid names are dropped rather than failing the
    document: the uploader may not control them. The access list an upload form pinned
    (``x-amz-meta-winnow-access``) is not a field: a bad one fails the document, never opens it."""
    out: dict[str, Any] = {
        k: v for k, v in user_metadata.items() if is_field_name(k) and k != UPLOAD_METADATA_NAME
    }
    pinned = user_metadata.get(UPLOAD_METADATA_NAME)
    if pinned is not None:
        out[ACCESS_KEY] = decode_access(pinned).as_json()
    return out


def merge(user: dict[str, Any], sidecar: dict[str, Any] | None) -> dict[str, Any]:
    """User metadata, then the sidecar's fields over it; the access list by the one rule."""
    merged: dict[str, Any] = dict(user)
    if sidecar:
        merged.update(sidecar)
        access = applicable_access(user.get(ACCESS_KEY), sidecar.get(ACCESS_KEY))
        merged.pop(ACCESS_KEY, None)
        if access is not None:
            merged[ACCESS_KEY] = access
    return merged


def metadata_hash(metadata: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(metadata, sort_keys=True, default=str).encode()).hexdigest()
