"""Turn whatever invoked the ingest function into a flat list of object events.

Accepted shapes: an SQS batch whose bodies are S3 notifications (the deployed path), a direct S3
notification (``sam local invoke`` and the CLI), and ``s3:TestEvent`` messages, which S3 sends once when
notifications are configured and which carry nothing to do.

Read from the plain dict rather than Powertools' ``S3Event``: its accessors raise on the fields S3 leaves
out (``size`` on deletes, ``sequencer`` on reconcile's events), which this parser must tolerate."""

from __future__ import annotations

import json
from typing import Any

# ObjectEvent lives with the models so that the ports need nothing else; the ingest code imports it here.
from winnow.models import Action, ObjectEvent
from winnow.rules import decode_event_key, s3_notification, s3_record


def _action(event_name: str) -> Action | None:
    if event_name.startswith("ObjectCreated:"):
        return "created"
    if event_name.startswith("ObjectRemoved:"):
        return "removed"
    return None


def parse_s3_notification(notification: dict[str, Any]) -> list[ObjectEvent]:
    """Object events of one S3 notification; empty for test events and event types we ignore.

    Keys arrive URL-encoded with ``+`` for spaces (``a+b%2Bc.pdf`` is ``a b+c.pdf``). Delete events carry
    no ``size`` or ``eTag``, so every field but the key is optional."""
    if notification.get("Event") == "s3:TestEvent":
        return []
    events: list[ObjectEvent] = []
    for record in notification.get("Records") or []:
        event_name = str(record.get("eventName", ""))
        action = _action(event_name)
        s3 = record.get("s3") or {}
        obj = s3.get("object") or {}
        if action is None or "key" not in obj:
            continue
        size = obj.get("size")
        events.append(
            ObjectEvent(
                action=action,
                bucket=str((s3.get("bucket") or {}).get("name", "")),
                key=decode_event_key(str(obj["key"])),
                sequencer=obj.get("sequencer"),
                etag=(str(obj["eTag"]).strip('"') if obj.get("eTag") else None),
                version_id=obj.get("versionId"),
                size=int(size) if size is not None else None,
                event_name=event_name,
            )
        )
    return events


def parse_sqs_body(body: str) -> list[ObjectEvent]:
    """Object events in one SQS message body. A body that is not JSON is a permanent error for that
    message only (raised as ValueError for the batch processor to report)."""
    payload = json.loads(body)
    if not isinstance(payload, dict):
        raise ValueError("SQS message body is not a JSON object")
    # S3 → SNS → SQS wraps the notification once more.
    if "Message" in payload and isinstance(payload["Message"], str) and "Records" not in payload:
        payload = json.loads(payload["Message"])
    return parse_s3_notification(payload)


def is_sqs_batch(event: dict[str, Any]) -> bool:
    records = event.get("Records") or []
    return bool(records) and all(r.get("eventSource") == "aws:sqs" for r in records)


def s3_event(
    records: list[tuple[str, str, int | None, str | None, str | None]], bucket: str = "local"
) -> dict[str, Any]:
    """An S3 notification for the CLI and tests, in winnow.rules' one shape.

    Each record is ``(event_name, key, size, etag, sequencer)``."""
    return s3_notification(
        s3_record(event_name, bucket, key, size=size, etag=etag, sequencer=sequencer)
        for event_name, key, size, etag, sequencer in records
    )
