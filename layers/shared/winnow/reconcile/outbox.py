"""Reconcile's repairs as synthetic, sequencer-less S3 events on the ingest queue, sent in batches; an
event the queue refused is counted as failed, never lost silently."""

from __future__ import annotations

from winnow.errors import EnqueueFailed, TransientError
from winnow.ingest.events import ObjectEvent
from winnow.models import ObjectInfo
from winnow.observability import logger
from winnow.ports import EventQueue
from winnow.reconcile.compare import norm_etag
from winnow.reconcile.run import Category, Run


class Outbox:
    def __init__(self, queue: EventQueue, bucket: str, batch_size: int) -> None:
        self.queue = queue
        self.bucket = bucket
        self.batch_size = max(1, batch_size)

    def created(self, info: ObjectInfo) -> ObjectEvent:
        return ObjectEvent(
            action="created",
            bucket=self.bucket,
            key=info.key,
            sequencer=None,  # ingest reads the current state; the ledger keeps the newest S3 sequencer
            etag=norm_etag(info.etag),
            version_id=info.version_id,
            size=info.size,
            event_name="ObjectCreated:Put",
        )

    def removed(self, key: str) -> ObjectEvent:
        return ObjectEvent(
            action="removed",
            bucket=self.bucket,
            key=key,
            sequencer=None,
            etag=None,
            version_id=None,
            size=None,
            event_name="ObjectRemoved:Delete",
        )

    def send(self, run: Run, event: ObjectEvent, category: Category) -> None:
        if run.dry_run:
            run.count(category)
            return
        run.pending.append((event, category))
        if len(run.pending) >= self.batch_size:
            self.flush(run)

    def flush(self, run: Run) -> None:
        if not run.pending:
            return
        batch, run.pending = run.pending, []
        failed: set[str] = set()
        try:
            self.queue.send([event for event, _ in batch])
        except EnqueueFailed as exc:
            failed = set(exc.keys)
            logger.warning("some reconcile events were not queued", extra={"count": len(failed)})
        except TransientError as exc:
            failed = {event.key for event, _ in batch}
            logger.warning(
                "reconcile events were not queued", extra={"count": len(failed), "error": str(exc)}
            )
        for event, category in batch:
            run.count("failed" if event.key in failed else category)
