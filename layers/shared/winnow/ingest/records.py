"""The ledger records ingest writes, one function per transition (indexed, unchanged, deleted, failed),
and the lease they are written under (``winnow.ingest.lease``)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import replace

from winnow.access import AccessList
from winnow.ingest.events import ObjectEvent
from winnow.ingest.lease import LeasedWrites
from winnow.ingest.reading import READER_VERSION
from winnow.models import DocumentStatus, LedgerRecord, ObjectInfo, ParsedDocument
from winnow.ports import Ledger
from winnow.rules import now_iso
from winnow.settings import IngestSettings


def encoded(access: AccessList | None) -> str | None:
    return access.encoded() if access is not None else None


class LedgerTransitions:
    def __init__(self, ledger: Ledger, settings: IngestSettings) -> None:
        self.ledger = ledger
        self.settings = settings  # read on each lease: a test shortens the lease of a built service
        self._leases = LeasedWrites(ledger)

    def lease(self, tenant: str, key: str) -> AbstractContextManager[LedgerRecord | None]:
        """The document's lease; yields its record as read under the lease."""
        return self._leases.hold(tenant, key, self.settings.lease_seconds)

    def put(self, record: LedgerRecord, same_event_ok: bool = False) -> None:
        self._leases.put(record, same_event_ok=same_event_ok)

    def indexed(
        self,
        tenant: str,
        event: ObjectEvent,
        current: LedgerRecord | None,
        info: ObjectInfo,
        parsed: ParsedDocument,
        *,
        sha: str,
        chunks: int,
        embedded: int,
        reused: int,
        metadata_sha256: str,
        profile: str,
        figures: int,
        access: AccessList | None,
    ) -> None:
        self.put(
            LedgerRecord(
                tenant=tenant,
                key=event.key,
                status=DocumentStatus.INDEXED,
                content_sha256=sha,
                etag=info.etag,
                version_id=info.version_id,
                sequencer=event.sequencer,
                chunks=chunks,
                embedded=embedded,
                reused=reused,
                title=parsed.title,
                source_type=parsed.source_type,
                metadata_sha256=metadata_sha256,
                profile=profile,
                ocr_pages=parsed.ocr_pages,
                vision_calls=parsed.vision_calls,
                vision_tokens=parsed.vision_tokens,
                figures=figures,
                reader=READER_VERSION,
                created_at=current.created_at if current and current.created_at else now_iso(),
                updated_at=now_iso(),
                access=encoded(access),
            )
        )

    def unchanged(
        self,
        event: ObjectEvent,
        current: LedgerRecord,
        info: ObjectInfo,
        sha: str | None,
        metadata_sha256: str,
        access: AccessList | None,
    ) -> None:
        record = replace(current)
        record.status = DocumentStatus.INDEXED
        record.sequencer = event.sequencer  # None (synthetic event): the ledger keeps the stored one
        record.etag = info.etag
        record.version_id = info.version_id
        record.content_sha256 = sha or current.content_sha256
        record.metadata_sha256 = metadata_sha256
        record.access = encoded(access)
        # embedded/reused stay those of the indexing that made the vectors; this result says what this
        # event cost (nothing). updated_at moves on: reconcile compares the object's time with it.
        record.error = None
        record.updated_at = now_iso()
        self.put(record)

    def deleted(self, tenant: str, event: ObjectEvent, current: LedgerRecord | None) -> None:
        self.put(
            LedgerRecord(
                tenant=tenant,
                key=event.key,
                status=DocumentStatus.DELETED,
                sequencer=event.sequencer,
                title=current.title if current else None,
                created_at=current.created_at if current else None,
                access=current.access if current else None,  # who may still see this record
            )
        )

    def failed(
        self,
        tenant: str,
        event: ObjectEvent,
        reason: str,
        info: ObjectInfo | None = None,
        current: LedgerRecord | None = None,
        access: str | None = None,
    ) -> None:
        self.put(
            LedgerRecord(
                tenant=tenant,
                key=event.key,
                status=DocumentStatus.FAILED,
                etag=info.etag if info else event.etag,
                version_id=info.version_id if info else event.version_id,
                sequencer=event.sequencer,
                error=reason.splitlines()[0][:300] if reason else "failed",
                created_at=current.created_at if current and current.created_at else now_iso(),
                updated_at=now_iso(),
                access=access,
            )
        )
