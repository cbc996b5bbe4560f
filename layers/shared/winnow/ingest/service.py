"""Ingest: make Qdrant and the ledger agree with one object in the bucket.

The event only says *that* something changed; the object's current state is read from the bucket (HEAD,
then GET of exactly that version), so a late or duplicated event can never resurrect old content. Per-key
ordering comes from the S3 ``sequencer`` stored in the ledger; a per-document lease keeps two workers
from interleaving writes to one document.

Replacing a document writes the new version's points first and then deletes the old version's leftovers,
so a search during re-indexing never sees the document vanish. Chunks whose content hash is unchanged
reuse their stored vectors: editing one section embeds only that section.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from winnow.access import ACCESS_KEY, AccessList, access_in
from winnow.errors import (
    ConfigurationError,
    CorruptDocument,
    DocumentError,
    EmptyDocument,
    InvalidKey,
    InvalidMetadata,
    ObjectGone,
    OversizedDocument,
    ParseBudgetExceeded,
    TransientError,
)
from winnow.ingest import deadline, gather
from winnow.ingest import metadata as meta
from winnow.ingest.checkpoint import embed_checkpointed, needs_checkpoints
from winnow.ingest.events import ObjectEvent
from winnow.ingest.lease import LeasedWrites
from winnow.ingest.results import IngestOutcome, IngestResult
from winnow.models import (
    Chunk,
    ChunkPoint,
    DocumentStatus,
    LedgerRecord,
    ObjectInfo,
    ParsedDocument,
)
from winnow.observability import logger
from winnow.ports import Embedder, Ledger, ObjectSource, Ocr, VectorCheckpoint, VectorStore
from winnow.rules import (
    UNASSIGNED_TENANT,
    is_figure_key,
    is_sequencer,
    now_iso,
    sequencer_is_newer,
    split_key,
)
from winnow.settings import ChunkingSettings, FigureSettings, IngestSettings, OcrSettings

if TYPE_CHECKING:
    from winnow.ports import Generator
    from winnow.text.sparse import Bm25Encoder

POINT_NAMESPACE = uuid.UUID("6f0b1d55-7c1e-4f43-9b7e-1f5f0c3a9e21")
# What one document holds at once past chunking (issue 44: a 1 MB CSV's 7,429 chunks took the ingest
# process to 451 MB): texts per embedding call, points per upsert. A document of fewer unique chunks
# embeds in one call, as before; the vectors wait as float32 arrays.
EMBED_BATCH = 1024
WRITE_BATCH = 256


def point_id(tenant: str, key: str, content_hash: str, occurrence: int) -> str:
    """Deterministic: the same chunk content of the same document always lands on the same point."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{tenant}\n{key}\n{content_hash}\n{occurrence}"))


Parser = Callable[[str, bytes, IngestSettings], ParsedDocument]
Chunker = Callable[[ParsedDocument, ChunkingSettings], list[Chunk]]


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
        self.checkpoint = checkpoint  # a large document's finished embedding groups survive a retry
        self.vision = vision  # describes figures (winnow.ingest.figures); None: caption and OCR text
        self.figure_settings = figure_settings or FigureSettings()
        self.ledger = ledger
        self.store = store
        self.embedder = embedder
        self.sparse = sparse
        self.chunking = chunking
        self.settings = settings
        self._parser = parser
        self._chunker = chunker
        self.ocr = ocr
        self.ocr_settings = ocr_settings or OcrSettings()
        # One parse at a time however many documents a batch runs at once: parsing is CPU-bound, and the
        # parse budget's memory cap (WINNOW_INGEST_PARSE_MEMORY_MB) assumes one worker beside this process.
        self._parsing = threading.Lock()
        self._leases = LeasedWrites(ledger)

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
            self._record_failure(UNASSIGNED_TENANT, event, str(exc))
            return IngestResult(event.key, IngestOutcome.FAILED, error=str(exc), duration_ms=_ms(started))
        if event.sequencer is not None and not is_sequencer(event.sequencer):
            # S3 sequencers are hex; anything else is not an S3 event, and no retry can make it one.
            result = IngestResult(event.key, IngestOutcome.FAILED, error="malformed S3 event sequencer")
        else:
            try:
                if meta.is_sidecar(event.key):
                    result = self._handle_sidecar(tenant, event)
                else:
                    result = self._with_lease(tenant, event)
            except DocumentError as exc:
                # Permanent, and raised before a record was written: the object source refuses the key
                # (the local bucket cannot hold '..' or NUL). Acknowledge it as failed; never retry it.
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                with suppress(DocumentError):
                    self._record_failure(tenant, event, reason)
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

    def _lease(self, tenant: str, key: str) -> AbstractContextManager[LedgerRecord | None]:
        return self._leases.hold(tenant, key, self.settings.lease_seconds)

    def _with_lease(self, tenant: str, event: ObjectEvent) -> IngestResult:
        with self._lease(tenant, event.key) as current:
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
            self._prune_figures(event.key, set())
        self._put(
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
            self._prune_figures(event.key, set())  # a failure may come after this version's images
            access = self._access_of(event.key, info)
            self._record_failure(tenant, event, reason, info=info, current=current, access=access)
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
        metadata = self._metadata_for(event.key, info)
        indexed = self._indexed_as_is(tenant, event, current)
        if indexed and current is not None and current.etag == info.etag:
            return self._unchanged(tenant, event, current, info, metadata)
        if data is None:
            data = self.objects.get(event.key, info)
        sha = hashlib.sha256(data).hexdigest()
        if indexed and current is not None and current.content_sha256 == sha:
            return self._unchanged(tenant, event, current, info, metadata, sha=sha)

        parsed, chunks = self._parse_and_chunk(event.key, data)
        figures = self._store_figures(event.key, parsed, chunks)
        # The parsed text is not needed past chunking: let it go before waiting for vectors.
        parsed = replace(parsed, blocks=[])
        # A key the ledger has never seen has no points to reuse or replace: skip the two per-document
        # scans (in Qdrant local mode each is a pass over every point in Python, which made bulk ingest
        # quadratic). Should a crash between upsert and ledger write leave points behind and the object
        # then change, the ledger's chunk count disagrees with the points and reconcile re-indexes it.
        known = current is not None
        vectors, embedded, reused = self._vectors(tenant, event.key, chunks, known)
        points = self._points(tenant, event.key, chunks, vectors, metadata, parsed.source_type, info)
        self._write(tenant, event.key, points, known)
        del vectors
        if current is not None and current.figures:
            self._prune_figures(event.key, figures)  # the replaced version's images, now unreferenced
        self._put(
            LedgerRecord(
                tenant=tenant,
                key=event.key,
                status=DocumentStatus.INDEXED,
                content_sha256=sha,
                etag=info.etag,
                version_id=info.version_id,
                sequencer=event.sequencer,
                chunks=len(chunks),
                embedded=embedded,
                reused=reused,
                title=parsed.title,
                source_type=parsed.source_type,
                metadata_sha256=meta.metadata_hash(metadata),
                profile=self.embedder.profile.slug,
                ocr_pages=parsed.ocr_pages,
                vision_calls=parsed.vision_calls,
                vision_tokens=parsed.vision_tokens,
                figures=len(figures),
                created_at=current.created_at if current and current.created_at else now_iso(),
                updated_at=now_iso(),
                access=_encoded(access_in(metadata)),
            )
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
        """Whether the record says this document is indexed, with this profile, completely."""
        profile = self.embedder.profile.slug
        if current is None or current.status != DocumentStatus.INDEXED or current.profile != profile:
            return False
        if event.sequencer is None:
            # A synthetic event (reconcile) may come because points went missing: "unchanged" then also
            # requires the store to hold every chunk. If it does not, index again; the vectors that
            # remain are reused, so only the lost chunks are embedded.
            return len(self.store.point_ids(tenant, event.key)) == current.chunks
        return True

    def _store_figures(self, key: str, parsed: ParsedDocument, chunks: list[Chunk]) -> set[str]:
        """Store each figure image a chunk shows, once, before any point names it (a result never links
        to an image not yet there); returns their names."""
        from winnow.rules import FIGURE_CONTENT_TYPES, figure_key, figure_name

        wanted = {chunk.image for chunk in chunks if chunk.image}
        stored: set[str] = set()
        for block in parsed.blocks:
            figure = block.figure
            if figure is None or not figure.data:
                continue
            name = figure_name(figure.digest, figure.media_type)
            target = figure_key(key, name)
            if name in wanted and name not in stored and target is not None:
                self.objects.put_figure(target, figure.data, FIGURE_CONTENT_TYPES[name.rsplit(".", 1)[1]])
                stored.add(name)
        return stored

    def _prune_figures(self, key: str, keep: set[str]) -> None:
        """Delete the document's figure images other than ``keep`` (all of them when it is removed or
        failed). A bucket that stores no figures has none to delete."""
        from winnow.errors import FeatureDisabled
        from winnow.rules import figure_folder

        folder = figure_folder(key)
        with suppress(FeatureDisabled):
            for info in list(self.objects.list(folder)):
                if info.key[len(folder) :] not in keep:
                    self.objects.delete(info.key)

    def _parse_and_chunk(self, key: str, data: bytes) -> tuple[ParsedDocument, list[Chunk]]:
        parsed = self._parse(key, data)
        if self.vision is not None and any(block.figure is not None for block in parsed.blocks):
            from winnow.ingest.figures import describe_figures

            parsed, use = describe_figures(parsed, self.vision, self.figure_settings)
            parsed = replace(parsed, vision_calls=use.calls, vision_tokens=use.tokens)
        chunks = self._chunk(parsed)
        if not chunks:
            raise EmptyDocument("no text to index")
        if len(chunks) > self.settings.max_chunks:  # a custom chunker is checked after it returns
            from winnow.text.chunking import too_many_chunks

            raise OversizedDocument(too_many_chunks(self.settings.max_chunks, len(chunks)))
        return parsed, chunks

    def _vectors(
        self, tenant: str, key: str, chunks: list[Chunk], known: bool
    ) -> tuple[dict[str, array[float]], int, int]:
        """A dense vector per content hash: the stored ones reused, the rest embedded, ``EMBED_BATCH``
        texts a call. Kept as float32 arrays (1.5 KB each for 384 dimensions, against 12 KB as a list of
        Python floats: issue 44, a 1 MB CSV's 7,429 chunks took the ingest process to 451 MB).
        Returns (vectors, how many were embedded, how many chunks reuse a vector: a stored one, or the
        one just embedded for an identical passage of the same document), so the two add up to the
        chunks."""
        existing = self.store.existing_vectors(tenant, key) if known else {}
        vectors: dict[str, array[float]] = {h: array("f", v) for h, v in existing.items()}
        del existing
        missing: dict[str, str] = {}
        for chunk in chunks:
            if chunk.content_hash not in vectors:
                missing.setdefault(chunk.content_hash, chunk.embed_text)
        hashes = list(missing)
        for start in range(0, len(hashes), EMBED_BATCH):
            batch = hashes[start : start + EMBED_BATCH]
            fresh = self._embed([missing[h] for h in batch])
            vectors.update((h, array("f", v)) for h, v in zip(batch, fresh, strict=True))
        return vectors, len(missing), len(chunks) - len(missing)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        """Through the batch's gather when this document is one of several (``gather.run_lanes``): its
        texts then share provider requests and model runs with its neighbours'. A document that needs
        several requests embeds alone, each finished request checkpointed (``winnow.ingest.checkpoint``)."""
        if self.checkpoint is not None and needs_checkpoints(self.embedder, texts):
            return embed_checkpointed(self.embedder, self.checkpoint, texts)
        together = gather.current(self.embedder)
        return together.embed(texts) if together is not None else self.embedder.embed(texts, "document")

    def _points(
        self,
        tenant: str,
        key: str,
        chunks: list[Chunk],
        vectors: dict[str, array[float]],
        metadata: dict[str, Any],
        source_type: str,
        info: ObjectInfo,
    ) -> Iterator[ChunkPoint]:
        """The document's points, built as they are written (a point's vector as a list, its sparse
        vector: a few KB each, held ``WRITE_BATCH`` at a time)."""
        doc_version = info.version_id or info.etag
        occurrences: dict[str, int] = {}
        for chunk in chunks:
            n = occurrences.get(chunk.content_hash, 0)
            occurrences[chunk.content_hash] = n + 1
            yield ChunkPoint(
                point_id=point_id(tenant, key, chunk.content_hash, n),
                tenant=tenant,
                key=key,
                chunk=chunk,
                dense=vectors[chunk.content_hash].tolist(),
                sparse=self.sparse.encode_document(chunk.embed_text),
                metadata=metadata,
                source_type=source_type,
                doc_version=doc_version,
            )

    def _write(self, tenant: str, key: str, points: Iterable[ChunkPoint], known: bool) -> None:
        """The new version's points first, ``WRITE_BATCH`` an upsert, then the old version's leftovers
        (see the module's note)."""
        old_ids = self.store.point_ids(tenant, key) if known else set()
        written: set[str] = set()
        points = iter(points)
        while batch := list(itertools.islice(points, WRITE_BATCH)):
            self.store.upsert(batch)
            written.update(p.point_id for p in batch)
        leftovers = old_ids - written
        if leftovers:
            self.store.delete_points(sorted(leftovers))

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
        record = replace(current)
        record.status = DocumentStatus.INDEXED
        record.sequencer = event.sequencer  # None (synthetic event): the ledger keeps the stored one
        record.etag = info.etag
        record.version_id = info.version_id
        record.content_sha256 = sha or current.content_sha256
        record.metadata_sha256 = digest
        record.access = _encoded(access_in(metadata))
        # embedded/reused stay those of the indexing that made the vectors; this result says what this
        # event cost (nothing). updated_at moves on: reconcile compares the object's time with it.
        record.error = None
        record.updated_at = now_iso()
        self._put(record)
        return IngestResult(event.key, IngestOutcome.UNCHANGED, chunks=current.chunks, reused=current.chunks)

    # --- sidecars --------------------------------------------------------------------------------------
    def _handle_sidecar(self, tenant: str, event: ObjectEvent) -> IngestResult:
        """A sidecar changed or vanished: re-apply metadata to the document's points, no embedding."""
        doc_key = meta.document_key_of(event.key)
        if event.action == "created":
            try:
                info = self.objects.head(event.key)
                data = self.objects.get(event.key, info)
                meta.parse_sidecar(data, self.settings.max_sidecar_bytes)
            except ObjectGone:
                pass
            except InvalidMetadata as exc:
                self._record_failure(tenant, event, str(exc))
                with self._lease(tenant, doc_key):
                    self._close_document(tenant, doc_key)
                return IngestResult(event.key, IngestOutcome.FAILED, error=str(exc))
        # Under the document's lease: a re-index in flight read the sidecar before this change, and would
        # otherwise write its points with the old metadata after this one applied the new.
        with self._lease(tenant, doc_key):
            return self._apply_sidecar(tenant, event, doc_key)

    def _close_document(self, tenant: str, doc_key: str) -> None:
        """A sidecar that cannot be read may have meant to restrict the document: until it is fixed,
        only the tenant's admins read it (an unreadable access list never leaves a document open)."""
        record = self.ledger.get(tenant, doc_key)
        if record is None or record.status != DocumentStatus.INDEXED:
            return
        closed = {ACCESS_KEY: AccessList().as_json()}
        self.store.set_metadata(tenant, doc_key, closed)
        record.metadata_sha256 = meta.metadata_hash(closed)
        record.access = AccessList().encoded()
        record.updated_at = now_iso()
        self._put(record, same_event_ok=True)

    def _apply_sidecar(self, tenant: str, event: ObjectEvent, doc_key: str) -> IngestResult:
        record = self.ledger.get(tenant, doc_key)
        if record is not None and record.status == DocumentStatus.FAILED and event.action == "created":
            # Failed, perhaps because of the sidecar this event fixes: index it again (vectors reused).
            again = ObjectEvent("created", event.bucket, doc_key, None, None, None, None, event.event_name)
            result = self._index(tenant, again, record)
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
            metadata = self._metadata_for(doc_key, info)
        except InvalidMetadata as exc:
            self._close_document(tenant, doc_key)
            return IngestResult(event.key, IngestOutcome.FAILED, error=str(exc))
        digest = meta.metadata_hash(metadata)
        updated = 0
        if digest != record.metadata_sha256:
            updated = self.store.set_metadata(tenant, doc_key, metadata)
            record.metadata_sha256 = digest
            record.access = _encoded(access_in(metadata))
            record.updated_at = now_iso()
            self._put(record, same_event_ok=True)
        outcome = IngestOutcome.INDEXED if event.action == "created" else IngestOutcome.DELETED
        return IngestResult(event.key, outcome, chunks=updated)

    def _access_of(self, key: str, info: ObjectInfo) -> str | None:
        """The list a failed document's record keeps for after its deletion: read as indexing reads it,
        an unreadable one admits only admins."""
        try:
            return _encoded(access_in(self._metadata_for(key, info)))
        except InvalidMetadata:
            return AccessList().encoded()

    def _metadata_for(self, key: str, info: ObjectInfo) -> dict[str, Any]:
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
            sidecar = meta.parse_sidecar(data, self.settings.max_sidecar_bytes)
        except ObjectGone:
            return meta.merge(user, None)
        except InvalidMetadata as exc:
            raise InvalidMetadata(f"its sidecar is invalid: {exc}") from exc
        return meta.merge(user, sidecar)

    # --- helpers ---------------------------------------------------------------------------------------
    def _parse(self, key: str, data: bytes) -> ParsedDocument:
        parser = self._parser
        if parser is None:
            from functools import partial

            from winnow.parsing.budget import parse_within_budget

            parser = partial(parse_within_budget, ocr=self.ocr, ocr_settings=self.ocr_settings)
        try:
            with self._parsing:
                # Taken once the parse lock is held: time spent waiting for it is time no longer left.
                seconds, cut = deadline.parse_budget(self.settings.parse_timeout_seconds)
                settings = self.settings
                if cut:
                    settings = settings.model_copy(update={"parse_timeout_seconds": seconds})
                try:
                    return parser(key, data, settings)
                except ParseBudgetExceeded as exc:
                    if cut and deadline.ran_out():
                        # stopped by the function's time, not its own budget: another delivery finishes it
                        raise deadline.OutOfTime(
                            "the function's time ran out while this document was parsed; handed back"
                        ) from exc
                    raise
        except (DocumentError, TransientError, ConfigurationError):
            raise  # an OCR outage is retried; a missing OCR engine is a deployment problem
        except Exception as exc:  # a parser bug on hostile input must not crash the batch
            logger.warning("parser raised", extra={"key": key, "error_type": type(exc).__name__})
            raise CorruptDocument(f"could not parse file ({type(exc).__name__})") from exc

    def _chunk(self, parsed: ParsedDocument) -> list[Chunk]:
        chunker = self._chunker
        if chunker is not None:
            return chunker(parsed, self.chunking)
        from winnow.text.chunking import chunk_document, chunk_to_fit

        window = self.embedder.max_input_tokens
        cap = self.settings.max_chunks  # enforced while chunking: a document over it stops early
        if window is None:
            return chunk_document(parsed, self.chunking, cap)
        # sized in the embedder's own tokens, so no chunk is cut before it is embedded
        return chunk_to_fit(parsed, self.chunking, self.embedder.count_tokens, window, cap)

    def _put(self, record: LedgerRecord, same_event_ok: bool = False) -> None:
        self._leases.put(record, same_event_ok=same_event_ok)

    def _record_failure(
        self,
        tenant: str,
        event: ObjectEvent,
        reason: str,
        info: ObjectInfo | None = None,
        current: LedgerRecord | None = None,
        access: str | None = None,
    ) -> None:
        self._put(
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


def _encoded(access: AccessList | None) -> str | None:
    return access.encoded() if access is not None else None


def _check_size(info: ObjectInfo, limit: int) -> None:
    if info.size > limit:
        raise OversizedDocument(f"object is {info.size} bytes, over the {limit}-byte limit")
    if info.size == 0:
        raise EmptyDocument("file is empty (0 bytes)")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
