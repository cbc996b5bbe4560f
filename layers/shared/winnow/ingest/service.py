"""Ingest: make Qdrant and the ledger agree with one object in the bucket.

The event only says *that* something changed; the object's current state is read from the bucket (HEAD,
then GET of exactly that version), so a late or duplicated event can never resurrect old content. Per-key
ordering comes from the S3 ``sequencer`` stored in the ledger; a per-document lease keeps two workers
from interleaving writes to one document.

Replacing a document writes the new version's points first and then deletes the old version's leftovers,
so a search during re-indexing never sees the document vanish. Chunks whose content hash is unchanged
reuse their stored vectors: editing one section embeds only that section.

This module decides what an event means; each step is a component of its own: reading a document
(``reading``), its vectors (``vectors``), its points (``points``), its figure images (``figure_images``),
its metadata and sidecar events (``sidecars``) and its ledger records (``records``).
"""

from __future__ import annotations

import hashlib
import time
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from winnow.access import access_in
from winnow.errors import DocumentError, EmptyDocument, InvalidKey, ObjectGone, OversizedDocument
from winnow.ingest import metadata as meta
from winnow.ingest.events import ObjectEvent
from winnow.ingest.figure_images import FigureImages
from winnow.ingest.points import PointWriter, point_id
from winnow.ingest.reading import READER_VERSION, Chunker, DocumentReader, Parser
from winnow.ingest.records import LedgerTransitions
from winnow.ingest.results import IngestOutcome, IngestResult
from winnow.ingest.sidecars import DocumentMetadata, SidecarEvents
from winnow.ingest.vectors import DocumentVectors
from winnow.models import DocumentStatus, LedgerRecord, ObjectInfo
from winnow.observability import logger
from winnow.ports import Embedder, Ledger, ObjectSource, Ocr, VectorCheckpoint, VectorStore
from winnow.rules import UNASSIGNED_TENANT, is_figure_key, is_sequencer, sequencer_is_newer, split_key
from winnow.settings import ChunkingSettings, FigureSettings, IngestSettings, OcrSettings

if TYPE_CHECKING:
    from winnow.ports import Generator
    from winnow.text.sparse import Bm25Encoder


class IngestService:
    def __init__(
        self,
        objects: ObjectSource,
        ledger: Ledger,
        store: VectorStore,
        embedder: Embedder,
        sparse: Bm25Encoder,
        chunking: ChunkingSettings,
        settings: IngestSettings,
        parser: Parser | None = None,
        chunker: Chunker | None = None,
        ocr: Ocr | None = None,
        ocr_settings: OcrSettings | None = None,
        vision: Generator | None = None,
        figure_settings: FigureSettings | None = None,
        checkpoint: VectorCheckpoint | None = None,
    ) -> None:
        self.objects = objects
        self.ledger = ledger
        self.store = store
        self.embedder = embedder
        self.sparse = sparse
        self.chunking = chunking
        self.settings = settings
        self.reader = DocumentReader(
            embedder, chunking, settings, parser, chunker, ocr, ocr_settings, vision, figure_settings
        )
        self.vectors = DocumentVectors(store, embedder, checkpoint)
        self.points = PointWriter(store, sparse)
        self.figures = FigureImages(objects)
        self.records = LedgerTransitions(ledger, settings)
        self.metadata = DocumentMetadata(objects, settings)
        self.sidecars = SidecarEvents(objects, store, self.records, self.metadata, self._index)

    # --- entry point -----------------------------------------------------------------------------------
    def handle(self, event: ObjectEvent) -> IngestResult:
        """Apply one object event. Permanent problems are recorded and returned as ``failed``;
        transient ones propagate (``TransientError``) so the caller can retry the message."""
        started = time.perf_counter()
        if is_figure_key(event.key):  # our own figure images (S3 notifies them too): never documents
            return IngestResult(event.key, IngestOutcome.SKIPPED, error="a figure image, not a document")
        try:
            tenant, _ = split_key(event.key)
        except InvalidKey as exc:
            self.records.failed(UNASSIGNED_TENANT, event, str(exc))
            return IngestResult(event.key, IngestOutcome.FAILED, error=str(exc), duration_ms=_ms(started))
        if event.sequencer is not None and not is_sequencer(event.sequencer):
            # S3 sequencers are hex; anything else is not an S3 event, and no retry can make it one.
            result = IngestResult(event.key, IngestOutcome.FAILED, error="malformed S3 event sequencer")
        else:
            try:
                if meta.is_sidecar(event.key):
                    result = self.sidecars.handle(tenant, event)
                else:
                    result = self._with_lease(tenant, event)
            except DocumentError as exc:
                # Permanent, and raised before a record was written: the object source refuses the key
                # (the local bucket cannot hold '..' or NUL). Acknowledge it as failed; never retry it.
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                with suppress(DocumentError):
                    self.records.failed(tenant, event, reason)
                result = IngestResult(event.key, IngestOutcome.FAILED, error=reason)
        result.tenant = tenant
        result.duration_ms = _ms(started)
        logger.info(
            "ingest result",
            extra={
                "tenant": tenant,
                "key": event.key,
                "action": event.action,
                "status": result.status,
                "chunks": result.chunks,
                "embedded": result.embedded,
                "reused": result.reused,
                "ocr_pages": result.ocr_pages,
                "vision_calls": result.vision_calls,
                "vision_tokens": result.vision_tokens,
                "duration_ms": round(result.duration_ms, 1),
                "reason": result.error,
            },
        )
        return result

    def _with_lease(self, tenant: str, event: ObjectEvent) -> IngestResult:
        with self.records.lease(tenant, event.key) as current:
            if current is not None and not sequencer_is_newer(event.sequencer, current.sequencer):
                return IngestResult(event.key, IngestOutcome.SKIPPED, error="stale or duplicate event")
            if event.action == "removed":
                return self._remove(tenant, event, current)
            return self._index(tenant, event, current)

    # --- removal ---------------------------------------------------------------------------------------
    def _remove(self, tenant: str, event: ObjectEvent, current: LedgerRecord | None) -> IngestResult:
        try:
            self.objects.head(event.key)
        except ObjectGone:
            pass
        else:
            # The key exists again (a newer upload): its own create event indexes it.
            return IngestResult(
                event.key, IngestOutcome.SKIPPED, error="object exists again; nothing removed"
            )
        removed = self.store.delete_document(tenant, event.key)
        if current is not None and current.figures:
            self.figures.prune(event.key, set())
        self.records.deleted(tenant, event, current)
        return IngestResult(event.key, IngestOutcome.DELETED, chunks=removed)

    # --- indexing --------------------------------------------------------------------------------------
    def _index(self, tenant: str, event: ObjectEvent, current: LedgerRecord | None) -> IngestResult:
        data: bytes | None = None
        try:
            if current is None or current.status != DocumentStatus.INDEXED:
                # Nothing indexed to compare with: the bytes are needed anyway, so one read gives both.
                info, data = self.objects.read(event.key, self.settings.max_object_bytes)
            else:
                info = self.objects.head(event.key)
        except ObjectGone:
            # Created, then deleted before we got here: index nothing, and clear anything left over.
            return self._remove(tenant, event, current)
        try:
            return self._index_object(tenant, event, current, info, data)
        except ObjectGone:
            # Deleted or replaced between HEAD and GET: the announced bytes are no longer the object.
            # Apply what the bucket holds now: a deleted key is removed here; a replaced one is left to
            # its own, newer event. Never a crash of a direct invoke, never a needless SQS retry.
            return self._remove(tenant, event, current)
        except DocumentError as exc:
            reason = str(exc) or type(exc).__name__
            self.store.delete_document(tenant, event.key)
            self.figures.prune(event.key, set())  # a failure may come after this version's images
            access = self.metadata.access_of(event.key, info)
            self.records.failed(tenant, event, reason, info=info, current=current, access=access)
            return IngestResult(event.key, IngestOutcome.FAILED, error=reason)

    def _index_object(
        self,
        tenant: str,
        event: ObjectEvent,
        current: LedgerRecord | None,
        info: ObjectInfo,
        data: bytes | None = None,
    ) -> IngestResult:
        """Plan (what the record says is already indexed), then points (parse, chunk, embed what is new),
        then write (points, leftovers, record)."""
        _check_size(info, self.settings.max_object_bytes)
        metadata = self.metadata.of(event.key, info)
        indexed = self._indexed_as_is(tenant, event, current)
        if indexed and current is not None and current.etag == info.etag:
            return self._unchanged(tenant, event, current, info, metadata)
        if data is None:
            data = self.objects.get(event.key, info)
        sha = hashlib.sha256(data).hexdigest()
        if indexed and current is not None and current.content_sha256 == sha:
            return self._unchanged(tenant, event, current, info, metadata, sha=sha)

        parsed, chunks = self.reader.read(event.key, data)
        figures = self.figures.store(event.key, parsed, chunks)
        # The parsed text is not needed past chunking: let it go before waiting for vectors.
        parsed = replace(parsed, blocks=[])
        # A key the ledger has never seen has no points to reuse or replace: skip the two per-document
        # scans (in Qdrant local mode each is a pass over every point in Python, which made bulk ingest
        # quadratic). Should a crash between upsert and ledger write leave points behind and the object
        # then change, the ledger's chunk count disagrees with the points and reconcile re-indexes it.
        known = current is not None
        vectors, embedded, reused = self.vectors.of(tenant, event.key, chunks, known)
        points = self.points.points(tenant, event.key, chunks, vectors, metadata, parsed.source_type, info)
        self.points.write(tenant, event.key, points, known)
        del vectors
        if current is not None and current.figures:
            self.figures.prune(event.key, figures)  # the replaced version's images, now unreferenced
        self.records.indexed(
            tenant,
            event,
            current,
            info,
            parsed,
            sha=sha,
            chunks=len(chunks),
            embedded=embedded,
            reused=reused,
            metadata_sha256=meta.metadata_hash(metadata),
            profile=self.embedder.profile.slug,
            figures=len(figures),
            access=access_in(metadata),
        )
        return IngestResult(
            event.key,
            IngestOutcome.INDEXED,
            chunks=len(chunks),
            embedded=embedded,
            reused=reused,
            ocr_pages=parsed.ocr_pages,
            vision_calls=parsed.vision_calls,
            vision_tokens=parsed.vision_tokens,
        )

    def _indexed_as_is(self, tenant: str, event: ObjectEvent, current: LedgerRecord | None) -> bool:
        """Whether the record says this document is indexed, with this profile, by this reader,
        completely. One an older reader made is read again (after a release improved parsing or
        chunking): the passages whose text did not change reuse their vectors."""
        profile = self.embedder.profile.slug
        if current is None or current.status != DocumentStatus.INDEXED or current.profile != profile:
            return False
        if current.reader != READER_VERSION:
            return False
        if event.sequencer is None:
            # A synthetic event (reconcile) may come because points went missing: "unchanged" then also
            # requires the store to hold every chunk. If it does not, index again; the vectors that
            # remain are reused, so only the lost chunks are embedded.
            return len(self.store.point_ids(tenant, event.key)) == current.chunks
        return True

    def _unchanged(
        self,
        tenant: str,
        event: ObjectEvent,
        current: LedgerRecord,
        info: ObjectInfo,
        metadata: dict[str, Any],
        sha: str | None = None,
    ) -> IngestResult:
        """Same bytes as indexed: zero embedding calls. Metadata may still have changed."""
        digest = meta.metadata_hash(metadata)
        if digest != current.metadata_sha256:
            self.store.set_metadata(tenant, event.key, metadata)
        self.records.unchanged(event, current, info, sha, digest, access_in(metadata))
        return IngestResult(event.key, IngestOutcome.UNCHANGED, chunks=current.chunks, reused=current.chunks)


def _check_size(info: ObjectInfo, limit: int) -> None:
    if info.size > limit:
        raise OversizedDocument(f"object is {info.size} bytes, over the {limit}-byte limit")
    if info.size == 0:
        raise EmptyDocument("file is empty (0 bytes)")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


__all__ = ["Chunker", "IngestService", "Parser", "point_id"]
