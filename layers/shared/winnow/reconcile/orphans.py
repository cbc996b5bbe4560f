"""Points no ledger record owns are deleted directly (not through the queue), under the document's
lease and after looking again: an ingest writing the document at that moment must win."""

from __future__ import annotations

from winnow.errors import ObjectGone, TransientError
from winnow.models import DocumentStatus
from winnow.observability import logger
from winnow.ports import Ledger, ObjectSource, VectorStore
from winnow.reconcile.run import Run


class OrphanRemover:
    def __init__(self, objects: ObjectSource, ledger: Ledger, store: VectorStore, lease_seconds: int) -> None:
        self.objects = objects
        self.ledger = ledger
        self.store = store
        self.lease_seconds = lease_seconds

    def remove(self, run: Run, tenant: str, key: str, count: int) -> None:
        """Delete the ``count`` points of ``key`` unless a record or the object owns them (again)."""
        if run.dry_run:
            run.stats.orphans_removed += count
            return
        owner = f"reconcile-{run.run_id}"
        try:
            if not self.ledger.acquire(tenant, key, owner, self.lease_seconds):
                return  # someone is indexing it: these points are about to be owned
            try:
                record = self.ledger.get(tenant, key)
                if record is not None and record.status == DocumentStatus.INDEXED:
                    return
                if record is None or record.status == DocumentStatus.DELETED:
                    try:
                        self.objects.head(key)
                        return  # the object exists (again): its create event will own the points
                    except ObjectGone:
                        pass
                run.stats.orphans_removed += self.store.delete_document(tenant, key)
            finally:
                self.ledger.release(tenant, key, owner)
        except TransientError as exc:
            logger.warning("orphan removal failed", extra={"tenant": tenant, "key": key, "error": str(exc)})
            run.stats.failed += 1
