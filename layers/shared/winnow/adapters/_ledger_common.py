"""What the two ledgers (SQLite, DynamoDB) share, so they cannot drift: the acceptance rule of a write
and the opaque list cursor. The sequencer order and the timestamp format are winnow.rules'."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import fields

from winnow.errors import BadRequest
from winnow.models import LedgerRecord
from winnow.rules import UNASSIGNED_TENANT, is_tenant, sequencer_sort_key

TOMBSTONE_TTL_SECONDS = 30 * 24 * 3600  # longer than any SQS retention (14 days) a late event could wait
MAX_PAGE = 1000
RECORD_FIELDS = tuple(f.name for f in fields(LedgerRecord))
# The counts (chunks, embedded, ..., reader): stored as numbers, read back as 0 where a record written
# before the field existed has none.
INT_FIELDS = tuple(f.name for f in fields(LedgerRecord) if f.type in ("int", int))


def accepts(new: str | None, stored: str | None, same_event_ok: bool) -> bool:
    """Whether a write with sequencer ``new`` may replace a record whose normalised sequencer is
    ``stored``. The DynamoDB condition expression states the same rule."""
    if new is None or stored is None:
        return True
    candidate = sequencer_sort_key(new)
    return candidate > stored or (same_event_ok and candidate == stored)


def check_identity(record: LedgerRecord) -> None:
    """Every record belongs to a valid tenant, or to the unassigned rows of keys that name none."""
    if not (is_tenant(record.tenant) or record.tenant == UNASSIGNED_TENANT) or not record.key:
        raise ValueError("a ledger record needs a valid tenant and a key")


def encode_cursor(tenant: str, last_key: str) -> str:
    """Opaque: the last key returned, bound to the tenant (a cursor cannot be replayed by another one)."""
    body = json.dumps({"k": last_key, "t": _fingerprint(tenant)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(tenant: str, cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
        key, owner = data["k"], data["t"]
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error) as exc:
        raise BadRequest("invalid cursor") from exc
    if not isinstance(key, str) or owner != _fingerprint(tenant):
        raise BadRequest("invalid cursor")
    return key


def check_page_size(limit: int) -> int:
    if limit < 1:
        raise BadRequest("limit must be at least 1")
    return min(limit, MAX_PAGE)


def _fingerprint(tenant: str) -> str:
    return hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:16]
