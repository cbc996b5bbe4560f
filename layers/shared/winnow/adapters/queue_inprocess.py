"""The ``EventQueue`` of the embedded default: no queue service, so each event is handed straight to the
ingest service, in order, after a round trip through the S3 notification format (the ingest handler
decodes exactly what the SQS queue would carry). Transient ingest failures, which SQS would retry, are
reported as ``EnqueueFailed`` once the other events are done; the next reconcile picks them up."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from winnow.errors import EnqueueFailed, TransientError
from winnow.ingest.events import ObjectEvent, parse_s3_notification
from winnow.observability import logger
from winnow.ports import EventQueue
from winnow.reconcile.notifications import s3_notification


class InProcessEventQueue(EventQueue):
    """``handle`` is ``IngestService.handle`` (or the ingest handler's per-event function)."""

    def __init__(self, handle: Callable[[ObjectEvent], Any]) -> None:
        self._handle = handle
        self.delivered = 0

    def send(self, events: Sequence[ObjectEvent]) -> None:
        failed: list[str] = []
        for event in events:
            for decoded in parse_s3_notification(s3_notification(event)):
                try:
                    self._handle(decoded)
                    self.delivered += 1
                except TransientError as exc:
                    logger.warning("in-process ingest failed", extra={"key": decoded.key, "error": str(exc)})
                    failed.append(decoded.key)
        if failed:
            raise EnqueueFailed(f"{len(failed)} document(s) could not be ingested now", keys=failed)
