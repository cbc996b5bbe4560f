"""The ``EventQueue`` on SQS: reconcile's synthetic S3 notifications go onto the queue the bucket feeds, so
the ingest function's concurrency limit, SQS retries and the DLQ apply to them unchanged.

``send_message_batch`` takes at most 10 entries; entries SQS reports as failed for a server-side reason
are retried a bounded number of times, the rest surface as ``EnqueueFailed`` naming their keys."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from winnow.adapters import _aws
from winnow.adapters._retry import Backoff, Retryable, call_with_retries
from winnow.errors import EnqueueFailed, TransientError
from winnow.observability import logger
from winnow.ports import EventQueue
from winnow.reconcile.notifications import s3_notification

if TYPE_CHECKING:
    from winnow.ingest.events import ObjectEvent

MAX_BATCH = 10  # SQS SendMessageBatch limit


class SqsEventQueue(EventQueue):
    def __init__(
        self,
        queue_url: str,
        client: Any = None,
        *,
        region: str | None = None,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._url = queue_url
        self._client = client
        self._region = (
            region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        )
        self._attempts = max(1, attempts)
        self._sleep = sleep

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _aws.make_client("sqs")
        return self._client

    def send(self, events: Sequence[ObjectEvent]) -> None:
        failed: list[str] = []
        for start in range(0, len(events), MAX_BATCH):
            failed += self._send_batch(list(events[start : start + MAX_BATCH]))
        if failed:
            raise EnqueueFailed(f"{len(failed)} reconcile event(s) could not be queued", keys=failed)

    def _send_batch(self, events: list[ObjectEvent]) -> list[str]:
        """Keys still unsent after the retries of server-side failures (the one policy of ``_retry``)."""
        pending = {str(i): event for i, event in enumerate(events)}
        permanent: list[str] = []

        def attempt(_seconds_left: float | None) -> None:
            nonlocal pending
            entries = [
                {"Id": entry_id, "MessageBody": json.dumps(s3_notification(event, self._region))}
                for entry_id, event in pending.items()
            ]
            response = self._call("send_message_batch", QueueUrl=self._url, Entries=entries)
            retry: dict[str, ObjectEvent] = {}
            refused: list[str] = []
            for failure in response.get("Failed") or []:
                event = pending[str(failure.get("Id"))]
                if failure.get("SenderFault"):
                    refused.append(event.key)
                else:
                    retry[str(failure.get("Id"))] = event
            if refused:
                logger.warning("SQS refused reconcile events", extra={"count": len(refused)})
                permanent.extend(refused)
            pending = retry
            if retry:
                raise Retryable("unavailable", f"SQS failed {len(retry)} entries server-side")

        def give_up(_failure: Retryable | None, _made: int) -> TransientError:
            return EnqueueFailed("unsent", keys=[e.key for e in pending.values()])

        try:
            call_with_retries(
                attempt,
                provider="SQS",
                backoff=Backoff(self._attempts, 0.2, 2.0),
                give_up=give_up,
                sleep=self._sleep,
                rng=random.random,
            )
        except EnqueueFailed as unsent:
            return permanent + unsent.keys
        return permanent

    def _call(self, operation: str, **kwargs: Any) -> Any:
        try:
            return getattr(self.client, operation)(**kwargs)
        except Exception as exc:
            error = _aws.translate(exc, f"sqs {operation}")
            if error is None:
                raise
            raise error from exc
