"""How reconcile tells whether an object differs from its ledger record: its version, and whether it
changed after the record was written."""

from __future__ import annotations

from datetime import UTC, datetime

from winnow.models import LedgerRecord, ObjectInfo


def norm_etag(etag: str | None) -> str | None:
    return etag.strip('"') if etag else None


def same_version(info: ObjectInfo, record: LedgerRecord) -> bool:
    if norm_etag(info.etag) != norm_etag(record.etag):
        return False
    return info.version_id is None or record.version_id is None or info.version_id == record.version_id


def _instant(value: str | None) -> datetime | None:
    """An ISO timestamp to whole seconds (S3 and the ledger differ in precision), naive = UTC."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).replace(microsecond=0)


def newer(object_time: str | None, record_time: str | None) -> bool:
    """Whether the object changed after the record was written (a metadata change whose event was lost)."""
    changed, recorded = _instant(object_time), _instant(record_time)
    return changed is not None and recorded is not None and changed > recorded
