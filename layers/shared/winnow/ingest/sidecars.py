"""A document's metadata as ingest reads it (S3 user metadata, then its sidecar), and sidecar events:
a sidecar that changed or vanished re-applies metadata to the document's points, with no embedding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from winnow.access import ACCESS_KEY, AccessList, access_in
from winnow.errors import InvalidMetadata, ObjectGone
from winnow.ingest import metadata as meta
from winnow.ingest.events import ObjectEvent
from winnow.ingest.records import LedgerTransitions, encoded
from winnow.ingest.results import IngestOutcome, IngestResult
from winnow.models import DocumentStatus, LedgerRecord, ObjectInfo
from winnow.ports import ObjectSource, VectorStore
from winnow.rules import now_iso
from winnow.settings import IngestSettings

# Index a document again: (tenant, event, its current record) → result; the ingest service's own path.
Reindex = Callable[[str, ObjectEvent, LedgerRecord | None], IngestResult]


class DocumentMetadata:
    def __init__(self, objects: ObjectSource, settings: IngestSettings) -> None:
        self.objects = objects
        self.settings = settings

    @property
    def max_sidecar_bytes(self) -> int:
        return self.settings.max_sidecar_bytes

    def of(self, key: str, info: ObjectInfo) -> dict[str, Any]:
        """The document's metadata: S3 user metadata, then its sidecar. A sidecar that is too large or
        unreadable fails the document (``InvalidMetadata``): it may carry an access list, and a document
        is never indexed readable by all because its access list could not be read."""
        user = meta.from_user_metadata(info.metadata)
        if not meta.can_have_sidecar(key):
            return meta.merge(user, None)
        try:
            sidecar_info = self.objects.head(meta.sidecar_key(key))
        except ObjectGone:
            return meta.merge(user, None)
        try:
            data = self.objects.get(meta.sidecar_key(key), sidecar_info)
            sidecar = meta.parse_sidecar(data, self.max_sidecar_bytes)
        except ObjectGone:
            return meta.merge(user, None)
        except InvalidMetadata as exc:
            raise InvalidMetadata(f"its sidecar is invalid: {exc}") from exc
        return meta.merge(user, sidecar)

    def access_of(self, key: str, info: ObjectInfo) -> str | None:
        """The list a failed document's record keeps for after its deletion: read as indexing reads it,
        an unreadable one admits only admins."""
        try:
            return encoded(access_in(self.of(key, info)))
        except InvalidMetadata:
            return AccessList().encoded()


class SidecarEvents:
    def __init__(
        self,
        objects: ObjectSource,
        store: VectorStore,
        records: LedgerTransitions,
        metadata: DocumentMetadata,
        reindex: Reindex,
    ) -> None:
        self.objects = objects
        self.store = store
        self.records = records
        self.metadata = metadata
        self.reindex = reindex

    def handle(self, tenant: str, event: ObjectEvent) -> IngestResult:
        """A sidecar changed or vanished: re-apply metadata to the document's points, no embedding."""
        doc_key = meta.document_key_of(event.key)
        if event.action == "created":
            try:
                info = self.objects.head(event.key)
                data = self.objects.get(event.key, info)
                meta.parse_sidecar(data, self.metadata.max_sidecar_bytes)
            except ObjectGone:
                pass
            except InvalidMetadata as exc:
                self.records.failed(tenant, event, str(exc))
                with self.records.lease(tenant, doc_key):
                    self._close_document(tenant, doc_key)
                return IngestResult(event.key, IngestOutcome.FAILED, error=str(exc))
        # Under the document's lease: a re-index in flight read the sidecar before this change, and would
        # otherwise write its points with the old metadata after this one applied the new.
        with self.records.lease(tenant, doc_key):
            return self._apply(tenant, event, doc_key)

    def _close_document(self, tenant: str, doc_key: str) -> None:
        """A sidecar that cannot be read may have meant to restrict the document: until it is fixed,
        only the tenant's admins read it (an unreadable access list never leaves a document open)."""
        record = self.records.ledger.get(tenant, doc_key)
        if record is None or record.status != DocumentStatus.INDEXED:
            return
        closed = {ACCESS_KEY: AccessList().as_json()}
        self.store.set_metadata(tenant, doc_key, closed)
        record.metadata_sha256 = meta.metadata_hash(closed)
        record.access = AccessList().encoded()
        record.updated_at = now_iso()
        self.records.put(record, same_event_ok=True)

    def _apply(self, tenant: str, event: ObjectEvent, doc_key: str) -> IngestResult:
        record = self.records.ledger.get(tenant, doc_key)
        if record is not None and record.status == DocumentStatus.FAILED and event.action == "created":
            # Failed, perhaps because of the sidecar this event fixes: index it again (vectors reused).
            again = ObjectEvent("created", event.bucket, doc_key, None, None, None, None, event.event_name)
            result = self.reindex(tenant, again, record)
            return IngestResult(event.key, result.status, chunks=result.chunks, error=result.error)
        if record is None or record.status != DocumentStatus.INDEXED:
            return IngestResult(
                event.key, IngestOutcome.SKIPPED, error="no indexed document for this sidecar yet"
            )
        try:
            info = self.objects.head(doc_key)
        except ObjectGone:
            return IngestResult(event.key, IngestOutcome.SKIPPED, error="document no longer exists")
        try:
            metadata = self.metadata.of(doc_key, info)
        except InvalidMetadata as exc:
            self._close_document(tenant, doc_key)
            return IngestResult(event.key, IngestOutcome.FAILED, error=str(exc))
        digest = meta.metadata_hash(metadata)
        updated = 0
        if digest != record.metadata_sha256:
            updated = self.store.set_metadata(tenant, doc_key, metadata)
            record.metadata_sha256 = digest
            record.access = encoded(access_in(metadata))
            record.updated_at = now_iso()
            self.records.put(record, same_event_ok=True)
        outcome = IngestOutcome.INDEXED if event.action == "created" else IngestOutcome.DELETED
        return IngestResult(event.key, outcome, chunks=updated)
