"""The caller's documents as the search API manages them: a signed form to upload one, deleting one,
and its status while ingest has not seen it yet. Domain code: the bucket and the ledger are ports, so
the same rules run on S3 and on the folder bucket of the embedded default."""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass

from winnow.errors import BadRequest, InvalidKey, NotFound, ObjectGone
from winnow.models import DocumentStatus, LedgerRecord
from winnow.ports import Ledger, ObjectSource, UploadForm, UploadPolicy
from winnow.rules import object_key, path_in_tenant, path_problem, upload_path_problem

MAX_METADATA_BYTES = 2048  # S3's limit on user metadata, names and values together
_CONTENT_TYPE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&^_.+-")


@dataclass(frozen=True)
class SignedUpload:
    key: str
    form: UploadForm
    expires_in: int


def _content_type(value: str | None, path: str) -> str:
    if value is None:
        return mimetypes.guess_type(path)[0] or "application/octet-stream"
    kind, slash, subtype = value.strip().partition("/")
    if not slash or not kind or not subtype or not set(kind + subtype) <= _CONTENT_TYPE_CHARS:
        raise BadRequest("content_type must be a media type such as 'application/pdf'")
    return value.strip().lower()


def sign_upload(
    objects: ObjectSource,
    tenant: str,
    path: str,
    *,
    content_type: str | None,
    metadata: dict[str, str],
    max_bytes: int,
    expires_in: int,
) -> SignedUpload:
    """A form that writes exactly ``<tenant>/<path>``: never a sidecar (``*.metadata.json``, whose
    metadata would override the document's), never more than ``max_bytes``. Field names and values were
    checked by the request schema; S3 stores names lowercased, so two names differing only in case clash."""
    problem = upload_path_problem(tenant, path)
    if problem is not None:
        raise BadRequest(problem)
    key = object_key(tenant, path)
    lowered: dict[str, str] = {}
    for name, value in metadata.items():
        if name.lower() in lowered:
            raise BadRequest(f"metadata field {name!r} is given twice (names are not case-sensitive)")
        lowered[name.lower()] = value
    size = sum(len(f"x-amz-meta-{k}".encode()) + len(v.encode()) for k, v in lowered.items())
    if size > MAX_METADATA_BYTES:
        raise BadRequest(f"metadata is {size} bytes with its x-amz-meta- prefixes: S3 allows 2 KB")
    policy = UploadPolicy(
        key=key,
        max_bytes=max_bytes,
        content_type=_content_type(content_type, path),
        metadata=lowered,
        expires_in=expires_in,
    )
    try:
        form = objects.upload_form(policy)
    except InvalidKey as exc:  # the folder bucket's own limits (a 250-byte file name, reserved names)
        raise BadRequest(f"the path cannot be stored: {exc}") from exc
    return SignedUpload(key=key, form=form, expires_in=expires_in)


def full_key(tenant: str, key: str) -> str:
    """A key as the routes take it: ``<tenant>/<path>`` or just ``<path>`` within the caller's tenant.
    A path that could not be one of the tenant's keys (``../other/x``) names no document of theirs:
    NotFound, as for any other key the tenant does not have."""
    path = path_in_tenant(tenant, key)
    if path_problem(tenant, path) is not None:
        raise NotFound(f"no document {key[:200]!r} for this tenant")
    return object_key(tenant, path)


def page(
    ledger: Ledger, tenant: str, limit: int, cursor: str | None
) -> tuple[list[LedgerRecord], str | None]:
    """One page of the tenant's records; a cursor this API did not return is a BadRequest."""
    try:
        if cursor is not None:
            base64.urlsafe_b64decode(cursor.encode() + b"=" * (-len(cursor) % 4))
        return ledger.list(tenant, limit=limit, cursor=cursor)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("cursor is not one this API returned") from exc


def _in_bucket(objects: ObjectSource, key: str) -> bool:
    try:
        objects.head(key)
    except (ObjectGone, InvalidKey):
        return False
    return True


def status(ledger: Ledger, objects: ObjectSource, tenant: str, key: str) -> LedgerRecord | None:
    """The ledger's record, or None (``pending``) for an object in the bucket that ingest has not
    recorded yet: just uploaded, or uploaded again after a delete. NotFound when neither knows the key."""
    record = ledger.get(tenant, key)
    if record is not None and record.status != DocumentStatus.DELETED:
        return record
    if _in_bucket(objects, key):
        return None
    if record is not None:
        return record
    raise NotFound(f"no document {key!r} for this tenant")


def delete(ledger: Ledger, objects: ObjectSource, tenant: str, key: str) -> None:
    """Remove the object; its removal event takes the points out of the index. Deleting again is
    accepted as long as the ledger remembers the key; a key neither the ledger nor the bucket knows is
    NotFound."""
    record = ledger.get(tenant, key)
    if record is None and not _in_bucket(objects, key):
        raise NotFound(f"no document {key!r} for this tenant")
    objects.delete(key)
