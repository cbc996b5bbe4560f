"""What the two ledgers (SQLite, DynamoDB) share, so they cannot drift: sequencer normalisation, the
acceptance rule of a write, the opaque list cursor, and timestamps."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import fields
from datetime import UTC, datetime

from winnow.errors import BadRequest, DocumentError
from winnow.models import LedgerRecord
from winnow.rules import UNASSIGNED_TENANT, is_tenant

# S3 sequencers are hex strings of varying length (16-18 characters today). Padded on the right to this
# width they compare as the S3 docs prescribe (pad the shorter one with zeros, compare as strings).
SEQUENCER_WIDTH = 64
_HEX = re.compile(r"[0-9A-Fa-f]+")
TOMBSTONE_TTL_SECONDS = 30 * 24 * 3600  # longer than any SQS retention (14 days) a late event could wait
MAX_PAGE = 1000
RECORD_FIELDS = tuple(f.name for f in fields(LedgerRecord))


def sequencer_sort_key(sequencer: str) -> str:
    """The sequencer uppercased and right-padded with zeros, so that plain string order is event order."""
    if not _HEX.fullmatch(sequencer) or len(sequencer) > SEQUENCER_WIDTH:
        raise DocumentError(f"malformed S3 event sequencer {sequencer[:80]!r}")
    return sequencer.upper().ljust(SEQUENCER_WIDTH, "0")


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


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fingerprint(tenant: str) -> str:
    return hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:16]
