"""Synthetic S3 notifications, shaped field for field like the ones S3 sends (event structure version 2.1),
so the ingest handler decodes reconcile's events exactly as the bucket's own. What differs is what S3
alone can supply: no ``sequencer`` (ingest then reads the object's current state and the ledger keeps
the newest sequencer it has seen) and ``winnow-reconcile`` as the principal and configuration id, which
tells an operator reading a message in the DLQ where it came from."""

from __future__ import annotations

from typing import Any

from winnow.ingest.events import ObjectEvent
from winnow.rules import s3_notification as notification
from winnow.rules import s3_record

PRINCIPAL = "winnow-reconcile"


def s3_notification(event: ObjectEvent, region: str = "us-east-1") -> dict[str, Any]:
    """One notification holding one record, as S3 puts one record in each message it sends."""
    created = event.action == "created"
    record = s3_record(
        event.event_name,
        event.bucket,
        event.key,
        size=event.size if created else None,
        etag=event.etag if created and event.etag else None,
        version_id=event.version_id or None,
        sequencer=event.sequencer or None,
        region=region,
        principal=PRINCIPAL,
    )
    return notification([record])
