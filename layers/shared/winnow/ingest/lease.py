"""A document's lease and the ledger writes made under it. One worker at a time writes a document's
points and record; the last record written under the lease goes out with the release, so a document
costs one ledger request fewer than a write followed by a release."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from winnow.errors import DocumentBusy
from winnow.models import LedgerRecord
from winnow.observability import logger
from winnow.ports import Ledger


@dataclass
class _HeldLease:
    tenant: str
    key: str
    last_write: tuple[LedgerRecord, bool] | None = None  # the record and its ``same_event_ok``


class LeasedWrites:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._held = threading.local()  # the lease this thread holds, for ``put``

    @contextmanager
    def hold(self, tenant: str, key: str, lease_seconds: int) -> Iterator[LedgerRecord | None]:
        """Hold the document's lease; yields the document's record as read under the lease."""
        owner = uuid.uuid4().hex
        acquired, current = self.ledger.acquire_and_get(tenant, key, owner, lease_seconds)
        if not acquired:
            raise DocumentBusy(f"another worker is indexing {key}", retry_after=5)
        held = _HeldLease(tenant, key)
        self._held.lease = held
        try:
            yield current
        finally:
            self._held.lease = None
            if held.last_write is None:
                self.ledger.release(tenant, key, owner)
            else:
                record, same_event_ok = held.last_write
                _log_kept(record, self.ledger.put_and_release(record, owner, same_event_ok=same_event_ok))

    def put(self, record: LedgerRecord, same_event_ok: bool = False) -> None:
        held: _HeldLease | None = getattr(self._held, "lease", None)
        if held is not None and (held.tenant, held.key) == (record.tenant, record.key):
            # Under the document's lease, nothing follows a record write but the next write or the
            # release: the record waits for either (the lease's exit writes it, whatever happens).
            if held.last_write is not None:
                earlier, earlier_ok = held.last_write
                _log_kept(earlier, self.ledger.put(earlier, same_event_ok=earlier_ok))
            held.last_write = (record, same_event_ok)
            return
        _log_kept(record, self.ledger.put(record, same_event_ok=same_event_ok))


def _log_kept(record: LedgerRecord, applied: bool) -> None:
    if not applied:
        logger.info("ledger kept newer state", extra={"tenant": record.tenant, "key": record.key})
