"""Walking the bucket listing, the ledger pages and the point counts together, key by key: one page of
each in memory, whatever the size of the bucket."""

from __future__ import annotations

from collections.abc import Iterator

from winnow.models import LedgerRecord, ObjectInfo


class OutOfOrderListing(RuntimeError):
    """A source yielded keys out of order: the merge would misjudge documents, so the run stops."""


def merge_by_key(
    objects: Iterator[ObjectInfo],
    records: Iterator[LedgerRecord],
    counts: Iterator[tuple[str, int]],
) -> Iterator[tuple[str, ObjectInfo | None, LedgerRecord | None, int]]:
    """Walk three key-sorted streams together: (key, object, record, point count) per distinct key.
    Python's string order is code-point order, which for UTF-8 is S3's (and the ledgers') byte order."""
    obj, rec, cnt = next(objects, None), next(records, None), next(counts, None)
    last: str | None = None
    while obj is not None or rec is not None or cnt is not None:
        heads = [
            h for h in (obj.key if obj else None, rec.key if rec else None, cnt[0] if cnt else None) if h
        ]
        key = min(heads)
        if last is not None and key <= last:
            raise OutOfOrderListing(f"keys out of order after {last!r}")
        last = key
        out_obj = out_rec = None
        out_cnt = 0
        if obj is not None and obj.key == key:
            out_obj, obj = obj, next(objects, None)
        if rec is not None and rec.key == key:
            out_rec, rec = rec, next(records, None)
        if cnt is not None and cnt[0] == key:
            out_cnt, cnt = cnt[1], next(counts, None)
        yield key, out_obj, out_rec, out_cnt


__all__ = ["OutOfOrderListing", "merge_by_key"]
