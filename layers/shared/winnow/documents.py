"""The caller's documents as the search API manages them: a signed form to upload one, deleting one,
and its status while ingest has not seen it yet. Domain code: the bucket and the ledger are ports, so
the same rules run on S3 and on the folder bucket of the embedded default."""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass
from typing import NoReturn

from winnow.access import (
    UPLOAD_METADATA_NAME,
    AccessList,
    Caller,
    ReadScope,
    access_in,
    applicable_access,
    decode_access,
    list_to_pin,
)
from winnow.errors import BadRequest, Forbidden, InvalidKey, InvalidMetadata, NotFound, ObjectGone
from winnow.ingest import metadata as meta
from winnow.ingest.metadata import is_sidecar
from winnow.models import DocumentStatus, LedgerRecord
from winnow.ports import Ledger, ObjectSource, UploadForm, UploadPolicy, VectorStore
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
    rights: Rights,
    caller: Caller,
    path: str,
    *,
    content_type: str | None,
    metadata: dict[str, str],
    max_bytes: int,
    expires_in: int,
    access: AccessList | None = None,
) -> SignedUpload:
    """A form that writes exactly ``<tenant>/<path>``: never a sidecar (``*.metadata.json``, whose
    metadata would override the document's), never more than ``max_bytes``. Field names and values were
    checked by the request schema; S3 stores names lowercased, so two names differing only in case clash.
    ``access`` is pinned in the form (``x-amz-meta-winnow-access``); ``rights`` checks that the caller may
    replace what is there and grant what they ask (403 saying what is missing). Without ``access`` the
    form pins the document's current list (``list_to_pin``): leaving it out never opens a document."""
    problem = upload_path_problem(caller.tenant, path)
    if problem is not None:
        raise BadRequest(problem)
    key = object_key(caller.tenant, path)
    problem = caller.grant_problem(access) or rights.write_problem(caller, key)
    if problem is not None:
        raise Forbidden(problem)
    _, current = rights.access(caller.tenant, key)
    from_sidecar = rights.sidecar_access(key) if access is None and current is not None else None
    access = list_to_pin(access, current, from_sidecar)
    lowered: dict[str, str] = {}
    for name, value in metadata.items():
        if name.lower() in lowered:
            raise BadRequest(f"metadata field {name!r} is given twice (names are not case-sensitive)")
        lowered[name.lower()] = value
    if access is not None:
        lowered[UPLOAD_METADATA_NAME] = access.encoded()
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
        form = rights.objects.upload_form(policy)
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


@dataclass(frozen=True)
class Rights:
    """Who may see and change which of a tenant's documents, asked of the vector store (where access
    lists live, on every point) and, for documents with no points yet, the ledger and the bucket.

    An indexed document is visible when its points are (the same read condition as every search). One
    with no points (pending, failed) carries the list its object and sidecar give, read as ingest reads
    them (one that cannot be read: admins only); one gone from the bucket (deleted) carries the list its
    ledger record kept, and a record written before records kept lists is visible to those who read
    documents without a list (every member, or only the admins with ``DefaultAccess=deny``)."""

    store: VectorStore
    ledger: Ledger
    objects: ObjectSource
    default_deny: bool
    max_sidecar_bytes: int = 10 * 1024

    def scope(self, caller: Caller) -> ReadScope:
        return caller.scope(self.default_deny)

    def visible(self, caller: Caller, records: list[LedgerRecord]) -> list[LedgerRecord]:
        if caller.is_admin:
            return records
        indexed = [r.key for r in records if r.status == DocumentStatus.INDEXED]
        readable = self.store.readable_keys(caller.tenant, self.scope(caller), indexed) if indexed else set()
        return [
            r
            for r in records
            if r.key in readable or (r.status != DocumentStatus.INDEXED and self._sees(caller, r.key, r))
        ]

    def can_see(self, caller: Caller, key: str) -> bool:
        if caller.is_admin:
            return True
        return self._sees(caller, key, None)

    def _sees(self, caller: Caller, key: str, record: LedgerRecord | None) -> bool:
        indexed, access = self.access(caller.tenant, key, record)
        if indexed:  # what ``access`` costs a key with no points (head, ledger): a 404 takes the same work
            _in_bucket(self.objects, key)
            if record is None:
                self.ledger.get(caller.tenant, key)
        return caller.can_read(access, self.default_deny)

    def access(
        self, tenant: str, key: str, record: LedgerRecord | None = None
    ) -> tuple[bool, AccessList | None]:
        """(whether the document has points, its access list): from its points, else from the bucket,
        else from its ledger record (``record`` when the caller holds it). A sidecar's own record (one
        that failed, its reason quoting the list) is its document's."""
        if is_sidecar(key):
            key, record = meta.document_key_of(key), None
        indexed, access = self.store.document_access(tenant, key)
        return (True, access) if indexed else (False, self._unindexed_access(tenant, key, record))

    def _unindexed_access(self, tenant: str, key: str, record: LedgerRecord | None) -> AccessList | None:
        """The list a document with no points will be indexed with (pinned by its upload form, or in its
        sidecar); a list that cannot be read closes it, as ingest does, never opens it. Gone from the
        bucket: the list its record kept (None for a record from before records kept one)."""
        try:
            info = self.objects.head(key)
        except (ObjectGone, InvalidKey):
            if record is None or record.key != key:
                record = self.ledger.get(tenant, key)
            return _record_access(record)
        try:
            pinned = access_in(meta.from_user_metadata(info.metadata))
        except InvalidMetadata:
            return AccessList()
        return applicable_access(pinned, self.sidecar_access(key))

    def sidecar_access(self, key: str) -> AccessList | None:
        """The list ``key``'s sidecar gives (None: no sidecar, or one without a list); a sidecar that
        cannot be read closes the document, as ingest does."""
        if not meta.can_have_sidecar(key):
            return None
        try:
            sidecar_info = self.objects.head(meta.sidecar_key(key))
            data = self.objects.get(meta.sidecar_key(key), sidecar_info)
            return access_in(meta.parse_sidecar(data, self.max_sidecar_bytes))
        except ObjectGone:
            return None
        except InvalidMetadata:
            return AccessList()

    def hidden(self, caller: Caller, key: str) -> NoReturn:
        """NotFound for a key the caller may not read, exactly as for one that does not exist: the same
        answer after the same lookups (ledger, bucket), so neither body nor timing tells them apart."""
        self.ledger.get(caller.tenant, key)
        _in_bucket(self.objects, key)
        raise NotFound(f"no document {key!r} for this tenant")

    def write_problem(self, caller: Caller, key: str) -> str | None:
        """Why ``caller`` may not replace or delete ``key`` (None: they may, or it does not exist)."""
        indexed, access = self.access(caller.tenant, key)
        exists = indexed or self.ledger.get(caller.tenant, key) is not None or _in_bucket(self.objects, key)
        return caller.write_problem(exists, access, self.default_deny, sidecar=is_sidecar(key))


# The most records one listing request reads and checks (issue 44: a caller who reads nothing made
# ``limit=1`` read the whole ledger, one record and one store scroll at a time: 3.97 s at 8,000 documents).
SCAN_BUDGET = 1000


def page(
    rights: Rights, caller: Caller, limit: int, cursor: str | None
) -> tuple[list[LedgerRecord], str | None]:
    """One page of the tenant's records that ``caller`` may see, reading at most ``SCAN_BUDGET`` records
    after the cursor, in batches that start at ``limit`` and double (a page filled early reads little).

    The page is full (``limit``) unless the listing ends or the budget runs out first; then it may be
    short, even empty, and its cursor continues the scan. A cursor names only a record shown to the
    caller (or the start) and how many hidden records after it were read already, never a hidden key:
    a short page says only that the budget was spent. A cursor this API did not return is a BadRequest."""
    anchor, skip = _read_cursor(cursor)
    shown: list[LedgerRecord] = []
    position = _skipped(rights.ledger, caller.tenant, anchor, skip)
    if skip and position is None:
        return [], None
    read = 0
    batch = limit
    while True:
        records, position = rights.ledger.list(
            caller.tenant, limit=min(batch, SCAN_BUDGET - read), cursor=position
        )
        read += len(records)
        seen = rights.visible(caller, records)
        shown += seen
        if seen:
            anchor, skip = None, len(records) - 1 - _index_of(records, seen[-1].key)
        else:
            skip += len(records)
        if len(shown) >= limit or position is None or read >= SCAN_BUDGET:
            break
        batch *= 2
    if len(shown) > limit or (len(shown) == limit and skip and position is not None):
        shown = shown[:limit]  # the next page starts after the last record shown, never a hidden one
        return shown, rights.ledger.cursor_after(caller.tenant, shown[-1].key)
    if position is None:
        return shown, None
    if shown and anchor is None:
        anchor = rights.ledger.cursor_after(caller.tenant, shown[-1].key)
    return shown, position if not skip else f"{anchor or ''}.{skip}"


def _read_cursor(cursor: str | None) -> tuple[str | None, int]:
    """(the ledger cursor of the last record shown, or None for the start; hidden records read after it)."""
    if cursor is None:
        return None, 0
    anchor, dot, count = cursor.rpartition(".")
    if not dot:
        anchor, count = cursor, "0"
    try:
        if anchor:
            base64.urlsafe_b64decode(anchor.encode() + b"=" * (-len(anchor) % 4))
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("cursor is not one this API returned") from exc
    if not (count.isascii() and count.isdigit() and len(count) <= 9) or (dot and not int(count)):
        raise BadRequest("cursor is not one this API returned")
    return anchor or None, int(count)


def _skipped(ledger: Ledger, tenant: str, anchor: str | None, skip: int) -> str | None:
    """The ledger cursor ``skip`` records after ``anchor``: records read already, not checked again."""
    position = anchor
    while skip > 0:
        records, position = ledger.list(tenant, limit=min(skip, SCAN_BUDGET), cursor=position)
        skip -= len(records)
        if position is None:
            return None
    return position


def _index_of(records: list[LedgerRecord], key: str) -> int:
    return next(i for i in range(len(records) - 1, -1, -1) if records[i].key == key)


def _record_access(record: LedgerRecord | None) -> AccessList | None:
    if record is None or record.access is None:
        return None
    try:
        return decode_access(record.access)
    except InvalidMetadata:  # never written so; closed rather than open, as everywhere else
        return AccessList()


def _in_bucket(objects: ObjectSource, key: str) -> bool:
    try:
        objects.head(key)
    except (ObjectGone, InvalidKey):
        return False
    return True


def status(rights: Rights, caller: Caller, key: str) -> LedgerRecord | None:
    """The ledger's record, or None (``pending``) for an object in the bucket that ingest has not
    recorded yet: just uploaded, or uploaded again after a delete. NotFound when neither knows the key,
    and exactly the same NotFound when the caller may not read it."""
    if not rights.can_see(caller, key):
        rights.hidden(caller, key)
    ledger, objects, tenant = rights.ledger, rights.objects, caller.tenant
    record = ledger.get(tenant, key)
    if record is not None and record.status != DocumentStatus.DELETED:
        return record
    if _in_bucket(objects, key):
        return None
    if record is not None:
        return record
    raise NotFound(f"no document {key!r} for this tenant")


def delete(rights: Rights, caller: Caller, key: str) -> None:
    """Remove the object; its removal event takes the points out of the index. Deleting again is
    accepted as long as the ledger remembers the key; a key neither the ledger nor the bucket knows is
    NotFound, as is one the caller may not read; one they may read but not change is Forbidden."""
    if not rights.can_see(caller, key):
        rights.hidden(caller, key)
    problem = rights.write_problem(caller, key)
    if problem is not None:
        raise Forbidden(problem)
    ledger, objects, tenant = rights.ledger, rights.objects, caller.tenant
    record = ledger.get(tenant, key)
    if record is None and not _in_bucket(objects, key):
        raise NotFound(f"no document {key!r} for this tenant")
    objects.delete(key)
