"""The ``EventQueue`` of the embedded default: no queue service, so the events are handed straight to the
ingest service after a round trip through the S3 notification format (the ingest handler decodes exactly
what the SQS queue would carry), as one batch: one document's events in order, the documents' texts
embedded together (``winnow.ingest.gather``). Transient ingest failures, which SQS would retry, are
reported as ``EnqueueFailed`` once the other events are done; the next reconcile picks them up."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from winnow.errors import EnqueueFailed, TransientError
from winnow.ingest.events import ObjectEvent, parse_s3_notification
from winnow.ingest.gather import run_lanes
from winnow.ingest.schedule import event_lanes
from winnow.observability import logger
from winnow.ports import Embedder, EventQueue
from winnow.reconcile.notifications import s3_notification


class InProcessEventQueue(EventQueue):
    """``handle`` is ``IngestService.handle`` (or the ingest handler's per-event function); with
    ``embedder`` (the service's), up to ``width`` documents of one ``send`` run at once."""

    def __init__(
        self, handle: Callable[[ObjectEvent], Any], embedder: Embedder | None = None, width: int = 1
    ) -> None:
        self._handle = handle
        self._embedder = embedder
        self._width = width
        self._lock = threading.Lock()
        self.delivered = 0

    def send(self, events: Sequence[ObjectEvent]) -> None:
        decoded = [found for event in events for found in parse_s3_notification(s3_notification(event))]
        failed: list[str] = []

        def deliver(index: int) -> None:
            event = decoded[index]
            try:
                self._handle(event)
            except TransientError as exc:
                logger.warning("in-process ingest failed", extra={"key": event.key, "error": str(exc)})
                with self._lock:
                    failed.append(event.key)
                return
            with self._lock:
                self.delivered += 1

        if self._embedder is None:
            for index in range(len(decoded)):
                deliver(index)
        else:
            run_lanes(self._embedder, event_lanes(decoded), deliver, self._width)
        if failed:
            raise EnqueueFailed(f"{len(failed)} document(s) could not be ingested now", keys=failed)
