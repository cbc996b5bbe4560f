"""Synthetic S3 notifications, shaped field for field like the ones S3 sends (event structure version 2.1),
so the ingest handler decodes reconcile's events exactly as the bucket's own. What differs is what S3
alone can supply: no ``sequencer`` (ingest then reads the object's current state and the ledger keeps
the newest sequencer it has seen) and ``winnow-reconcile`` as the principal and configuration id, which
tells an operator reading a message in the DLQ where it came from."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus

from winnow.ingest.events import ObjectEvent

PRINCIPAL = "winnow-reconcile"


def s3_notification(event: ObjectEvent, region: str = "us-east-1") -> dict[str, Any]:
    """One notification holding one record, as S3 puts one record in each message it sends."""
    obj: dict[str, Any] = {"key": quote_plus(event.key, safe="/")}
    if event.action == "created":
        if event.size is not None:
            obj["size"] = event.size
        if event.etag:
            obj["eTag"] = event.etag.strip('"')
    if event.version_id:
        obj["versionId"] = event.version_id
    if event.sequencer:
        obj["sequencer"] = event.sequencer
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    request_id = uuid.uuid4().hex[:16].upper()
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": region,
                "eventTime": now,
                "eventName": event.event_name,
                "userIdentity": {"principalId": PRINCIPAL},
                "requestParameters": {"sourceIPAddress": "127.0.0.1"},
                "responseElements": {"x-amz-request-id": request_id, "x-amz-id-2": request_id},
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": PRINCIPAL,
                    "bucket": {
                        "name": event.bucket,
                        "ownerIdentity": {"principalId": PRINCIPAL},
                        "arn": f"arn:aws:s3:::{event.bucket}",
                    },
                    "object": obj,
                },
            }
        ]
    }
