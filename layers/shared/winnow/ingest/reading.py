"""Reading a document: parse its bytes (one parse at a time, within its budget and the function's time
left), have a vision model describe its figures, then chunk it to fit the embedder's window."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from winnow.errors import (
    ConfigurationError,
    CorruptDocument,
    DocumentError,
    EmptyDocument,
    OversizedDocument,
    ParseBudgetExceeded,
    TransientError,
)
from winnow.ingest import deadline
from winnow.models import Chunk, ParsedDocument
from winnow.observability import logger
from winnow.settings import ChunkingSettings, FigureSettings, IngestSettings, OcrSettings

if TYPE_CHECKING:
    from winnow.ports import Embedder, Generator, Ocr

# Which reading made a document's passages, stored in its ledger record. Raise it when a change to parsing
# or chunking should reach documents already indexed (and say so in CHANGELOG): ingest then reads such a
# document again on its next event, and `reconcile --reread` sends them all (vectors of unchanged
# passages are reused).
READER_VERSION = 1

Parser = Callable[[str, bytes, IngestSettings], ParsedDocument]
Chunker = Callable[[ParsedDocument, ChunkingSettings], list[Chunk]]


class DocumentReader:
    """Bytes to chunks. ``parser`` and ``chunker`` replace the built-in ones (tests, custom formats)."""

    def __init__(
        self,
        embedder: Embedder,
        chunking: ChunkingSettings,
        settings: IngestSettings,
        parser: Parser | None = None,
        chunker: Chunker | None = None,
        ocr: Ocr | None = None,
        ocr_settings: OcrSettings | None = None,
        vision: Generator | None = None,
        figure_settings: FigureSettings | None = None,
    ) -> None:
        self.embedder = embedder
        self.chunking = chunking
        self.settings = settings
        self.parser = parser
        self.chunker = chunker
        self.ocr = ocr
        self.ocr_settings = ocr_settings or OcrSettings()
        self.vision = vision  # describes figures (winnow.ingest.figures); None: caption and OCR text
        self.figure_settings = figure_settings or FigureSettings()
        # One parse at a time however many documents a batch runs at once: parsing is CPU-bound, and the
        # parse budget's memory cap (WINNOW_INGEST_PARSE_MEMORY_MB) assumes one worker beside this process.
        self._parsing = threading.Lock()

    def read(self, key: str, data: bytes) -> tuple[ParsedDocument, list[Chunk]]:
        parsed = self.parse(key, data)
        if self.vision is not None and any(block.figure is not None for block in parsed.blocks):
            from winnow.ingest.figures import describe_figures

            parsed, use = describe_figures(parsed, self.vision, self.figure_settings)
            parsed = replace(parsed, vision_calls=use.calls, vision_tokens=use.tokens)
        chunks = self.chunk(parsed)
        if not chunks:
            raise EmptyDocument("no text to index")
        if len(chunks) > self.settings.max_chunks:  # a custom chunker is checked after it returns
            from winnow.text.chunking import too_many_chunks

            raise OversizedDocument(too_many_chunks(self.settings.max_chunks, len(chunks)))
        return parsed, chunks

    def parse(self, key: str, data: bytes) -> ParsedDocument:
        parser = self.parser
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

    def chunk(self, parsed: ParsedDocument) -> list[Chunk]:
        chunker = self.chunker
        if chunker is not None:
            return chunker(parsed, self.chunking)
        from winnow.text.chunking import chunk_document, chunk_to_fit

        window = self.embedder.max_input_tokens
        cap = self.settings.max_chunks  # enforced while chunking: a document over it stops early
        if window is None:
            return chunk_document(parsed, self.chunking, cap)
        # sized in the embedder's own tokens, so no chunk is cut before it is embedded
        return chunk_to_fit(parsed, self.chunking, self.embedder.count_tokens, window, cap)
