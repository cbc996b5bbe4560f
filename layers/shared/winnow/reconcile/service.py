"""Reconcile: make the ledger and the vector store match the bucket again, cheaply, and say what was done.

Per tenant, three key-sorted streams are merged (bucket listing, ledger pages, point counts per document,
``winnow.reconcile.merge``) so memory does not grow with the bucket; each difference is repaired through
the ingest queue with a synthetic, sequencer-less S3 event, so ingest's own leases, retries and DLQ do the
work and a second run sends nothing. Orphan points are removed directly, under the document's lease. A run
pages with continuation tokens (``winnow.reconcile.tokens``) and, at its end, moves the active-index
pointer to the configured embedding profile once nothing indexed is left on another. With ``reread`` it
also sends the documents an older reader made (after an upgrade that improved parsing). The cases, the
statistics and the profile switch are described in docs/reconcile.md. The state of one invocation is
``winnow.reconcile.run``; sending is ``outbox``; orphan points are ``orphans``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby

from winnow.errors import BadRequest, InvalidKey, ObjectGone
from winnow.index import open_pointer, switch_when_rebuilt
from winnow.ingest.metadata import document_key_of, is_sidecar
from winnow.ingest.reading import READER_VERSION
from winnow.models import DocumentStatus, EmbeddingProfile, LedgerRecord, ObjectInfo
from winnow.observability import logger
from winnow.ports import ActiveIndex, EventQueue, Ledger, ObjectSource, VectorStore
from winnow.reconcile.compare import newer, same_version
from winnow.reconcile.merge import OutOfOrderListing, merge_by_key
from winnow.reconcile.orphans import OrphanRemover
from winnow.reconcile.outbox import Outbox
from winnow.reconcile.run import Category, Recent, Run
from winnow.reconcile.spill import DEFAULT_RUN_SIZE, sorted_counts
from winnow.reconcile.stats import ReconcileStats
from winnow.reconcile.tokens import Position, decode_token, encode_token
from winnow.rules import is_figure_key, is_tenant, object_key, split_key

SQS_BATCH = 10
LEDGER_PAGE = 1000


@dataclass
class ReconcileResult:
    """``totals`` over every invocation of the run so far; ``invocation`` for this one only (metrics);
    ``continuation`` to pass to the next invocation, or None when the run is complete."""

    totals: ReconcileStats
    invocation: ReconcileStats
    continuation: str | None


class Reconciler:
    """Compares bucket, ledger and vector store through the ports and repairs through the ingest queue."""

    def __init__(
        self,
        objects: ObjectSource,
        ledger: Ledger,
        store: VectorStore,
        queue: EventQueue,
        profile: EmbeddingProfile,
        *,
        bucket: str = "local",
        active_index: ActiveIndex | None = None,
        batch_size: int = SQS_BATCH,
        ledger_page_size: int = LEDGER_PAGE,
        lease_seconds: int = 120,
        count_run_size: int = DEFAULT_RUN_SIZE,
    ) -> None:
        self.objects = objects
        self.ledger = ledger
        self.store = store
        self.queue = queue
        self.profile = profile
        self.bucket = bucket
        self.active_index = active_index
        self.batch_size = max(1, batch_size)
        self.ledger_page_size = ledger_page_size
        self.lease_seconds = lease_seconds
        self.count_run_size = count_run_size
        self.outbox = Outbox(queue, bucket, batch_size)
        self.orphans = OrphanRemover(objects, ledger, store, lease_seconds)

    # --- entry point -----------------------------------------------------------------------------------
    def run(
        self,
        tenant: str | None = None,
        *,
        dry_run: bool = False,
        reread: bool = False,
        continuation: str | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> ReconcileResult:
        """Reconcile one tenant (``tenant``) or the whole bucket. ``reread``: also send the documents an
        older reader made (``READER_VERSION``), opt-in since reading again runs OCR and vision again.
        With ``continuation``, resume the run that returned it (its tenant and flags win over the
        arguments)."""
        started = time.perf_counter()
        totals: ReconcileStats | None = None
        position = Position()
        if continuation:
            resumed = decode_token(continuation)
            tenant, dry_run, reread = resumed.scope, resumed.dry_run, resumed.reread
            position, totals = resumed.position, resumed.totals
        if tenant is not None:
            _check_tenant(tenant)
        run = Run(
            scope=tenant,
            dry_run=dry_run,
            should_stop=should_stop or (lambda: False),
            stats=ReconcileStats(dry_run=dry_run, tenant=tenant),
            position=position,
            run_id=uuid.uuid4().hex[:12],
            reread=reread,
        )
        active = self._active_profile(run, first=continuation is None)
        stopped = False
        if position.phase == "objects":
            stopped = not self._objects_phase(run)
            if not stopped:
                run.position = Position(phase="leftover" if tenant is None else "finish")
        if not stopped and run.position.phase == "leftover":
            stopped = not self._leftover_phase(run)
            if not stopped:
                run.position = Position(phase="finish")
        self.outbox.flush(run)
        if not stopped:
            active = self._finish(run, active)
        run.stats.complete = not stopped
        run.stats.configured_profile = self.profile.slug
        run.stats.active_profile = active.slug if active else None
        run.stats.rebuilding = active is not None and active != self.profile
        run.stats.duration_ms = (time.perf_counter() - started) * 1000
        invocation = run.stats
        if totals is None:
            totals = ReconcileStats.from_dict(invocation.to_dict())
        else:
            totals.add(invocation)
        totals.duration_ms = round(totals.duration_ms, 1)
        token = encode_token(tenant, dry_run, run.position, totals, reread=reread) if stopped else None
        logger.info(
            "reconcile invocation",
            extra={
                "tenant": tenant,
                "dry_run": dry_run,
                "reread": reread,
                "complete": not stopped,
                **invocation.counters(),
            },
        )
        return ReconcileResult(totals=totals, invocation=invocation, continuation=token)

    # --- phases ----------------------------------------------------------------------------------------
    def _objects_phase(self, run: Run) -> bool:
        """The bucket listing (one tenant's prefix, or everything), tenant by tenant. False when stopped."""
        pos = run.position
        prefix = f"{run.scope}/" if run.scope else ""
        resume_tenant, after, ledger_page = pos.tenant, pos.after, pos.ledger_page
        listing = self.objects.list_after(prefix, after)
        # folder placeholders are not objects, and stored figure images are not documents
        listing = (o for o in listing if not o.key.endswith("/") and not is_figure_key(o.key))
        scope_visited = False
        for tenant, group in groupby(listing, key=lambda o: _tenant_of(o.key)):
            scope_visited = scope_visited or tenant == run.scope
            # The resumed tenant has no objects after ``after``: finish its records and points first.
            if (
                resume_tenant is not None
                and tenant != resume_tenant
                and not self._tenant(run, resume_tenant, iter(()), after, ledger_page)
            ):
                return False
            if tenant == resume_tenant:
                group_after, group_page = after, ledger_page
            else:
                group_after, group_page = None, None
            resume_tenant = None
            if tenant is None:
                if not self._unassigned(run, group):
                    return False
                continue
            if not self._tenant(run, tenant, group, group_after, group_page):
                return False
        if resume_tenant is not None:
            return self._tenant(run, resume_tenant, iter(()), after, ledger_page)
        if run.scope and not scope_visited:
            # A one-tenant run over an emptied prefix: every record and point of the tenant is left over
            # (whole-bucket runs find such tenants in the leftover phase).
            return self._tenant(run, run.scope, iter(()), None, None)
        return True

    def _leftover_phase(self, run: Run) -> bool:
        """Tenants with records or points but no objects left (a whole prefix deleted while events were
        lost). Tenants that still have objects were handled by the listing."""
        pos = run.position
        candidates = {t for t in self.ledger.tenants() | self.store.tenants() if is_tenant(t)}
        for tenant in sorted(candidates):
            if pos.tenant is not None and tenant < pos.tenant:
                continue
            resuming = tenant == pos.tenant
            if not resuming and next(iter(self.objects.list(object_key(tenant, ""))), None) is not None:
                continue
            after = pos.after if resuming else None
            page = pos.ledger_page if resuming else None
            listing = self.objects.list_after(object_key(tenant, ""), after)
            if not self._tenant(run, tenant, listing, after, page):
                return False
        return True

    def _finish(self, run: Run, active: EmbeddingProfile | None) -> EmbeddingProfile | None:
        """Move searches to the configured profile once no indexed document is left on another one."""
        if self.active_index is None or active is None or active == self.profile or run.dry_run:
            return active
        if not switch_when_rebuilt(self.active_index, self.ledger, self.profile, active):
            return active
        run.stats.switched = True
        return self.profile

    def _active_profile(self, run: Run, first: bool) -> EmbeddingProfile | None:
        if self.active_index is None:
            return None
        active = self.active_index.active()
        if active is not None or not first:
            return active
        return open_pointer(self.active_index, self.ledger, self.profile, dry_run=run.dry_run)

    # --- one tenant --------------------------------------------------------------------------------------
    def _tenant(
        self,
        run: Run,
        tenant: str,
        listing: Iterator[ObjectInfo],
        after: str | None,
        ledger_page: str | None,
    ) -> bool:
        # The tenant's point counts per key, sorted by an external merge sort: bounded memory however
        # many documents the tenant has (a continuation skips what was handled already).
        point_keys = (
            k for t, k in self.store.document_keys(tenant) if t == tenant and (after is None or k > after)
        )
        counted = sorted_counts(point_keys, run_size=self.count_run_size)
        page = [ledger_page]  # the cursor of the ledger page fetched last: it holds the next record
        records = self._records(tenant, after, page)
        run.recent.clear()
        for key, info, record, count in merge_by_key(listing, records, counted):
            if run.should_stop():
                return False
            self._one(run, tenant, key, info, record, count)
            run.position = Position(run.position.phase, tenant, key, page[0])
        return True

    def _records(self, tenant: str, after: str | None, page: list[str | None]) -> Iterator[LedgerRecord]:
        """The tenant's ledger records after ``after``, page by page from the cursor in ``page[0]``,
        which is kept pointing at the page being read so that a continuation can fetch it again."""
        cursor = page[0]
        while True:
            page[0] = cursor
            records, next_cursor = self.ledger.list(tenant, limit=self.ledger_page_size, cursor=cursor)
            for record in records:
                if after is None or record.key > after:
                    yield record
            if not next_cursor:
                return
            cursor = next_cursor

    def _unassigned(self, run: Run, group: Iterator[ObjectInfo]) -> bool:
        """Keys outside any tenant prefix: ingest could only record them as failed, so count, never send."""
        for info in group:
            if run.should_stop():
                return False
            run.stats.scanned += 1
            run.stats.failed += 1
            run.position = Position(run.position.phase, None, info.key, None)
        return True

    def _one(
        self,
        run: Run,
        tenant: str,
        key: str,
        info: ObjectInfo | None,
        record: LedgerRecord | None,
        count: int,
    ) -> None:
        if is_sidecar(key):
            if info is not None:
                self._sidecar(run, tenant, info)
            elif count:
                self.orphans.remove(run, tenant, key, count)
            return
        status = record.status if record is not None else None
        if info is None:
            if status in (DocumentStatus.INDEXED, DocumentStatus.FAILED):
                self.outbox.send(run, self.outbox.removed(key), "deleted")
            elif count:
                self.orphans.remove(run, tenant, key, count)
            return
        run.stats.scanned += 1
        category = self._classify(info, record, count, run.reread)
        if category == "failed" and count:
            self.orphans.remove(run, tenant, key, count)  # a failed document keeps no points
        if category in ("unchanged", "failed"):
            run.count(category)
        else:
            self.outbox.send(run, self.outbox.created(info), category)
        run.remember(key, Recent(info, record, sent=category not in ("unchanged", "failed")))

    def _classify(self, info: ObjectInfo, record: LedgerRecord | None, count: int, reread: bool) -> Category:
        if record is None or record.status == DocumentStatus.DELETED:
            return "new"
        if record.status == DocumentStatus.FAILED:
            return "failed" if same_version(info, record) else "modified"
        if record.profile != self.profile.slug or not same_version(info, record):
            return "modified"
        if count != record.chunks:
            return "repaired"
        if newer(info.last_modified, record.updated_at):
            return "metadata_modified"
        if reread and record.reader != READER_VERSION:
            return "reread"  # ingest reads it again: an older reader made its passages
        return "unchanged"

    def _sidecar(self, run: Run, tenant: str, sidecar: ObjectInfo) -> None:
        """A sidecar newer than its document's record: re-send the document, whose unchanged path
        re-applies metadata without embedding."""
        run.stats.metadata_scanned += 1
        doc_key = document_key_of(sidecar.key)
        recent = run.recent.get(doc_key)
        if recent is not None and recent.sent:
            return  # the document is on its way already; ingest reads the sidecar with it
        record = recent.record if recent is not None else self.ledger.get(tenant, doc_key)
        if record is None or record.status != DocumentStatus.INDEXED or record.profile != self.profile.slug:
            return
        if not newer(sidecar.last_modified, record.updated_at):
            return
        info = recent.info if recent is not None else None
        if info is None:
            try:
                info = self.objects.head(doc_key)
            except ObjectGone:
                return
        self.outbox.send(run, self.outbox.created(info), "metadata_modified")
        run.remember(doc_key, Recent(info, record, sent=True))


# --- helpers -------------------------------------------------------------------------------------------
def _tenant_of(key: str) -> str | None:
    try:
        return split_key(key)[0]
    except InvalidKey:
        return None


def _check_tenant(tenant: str) -> None:
    if not is_tenant(tenant):
        raise BadRequest(f"{tenant[:80]!r} is not a tenant name")


__all__ = [
    "OutOfOrderListing",
    "ReconcileResult",
    "Reconciler",
    "decode_token",
    "encode_token",
    "merge_by_key",
]
