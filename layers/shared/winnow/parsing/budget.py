"""Parse every document under a time budget and a memory budget, in a worker process.

A parser can spend unbounded time or memory on a hostile file (a backtracking pattern, a DOCX whose
XML inflates to gigabytes), and that work happens inside C code (lxml, ``re``) that neither a signal
nor a thread can interrupt, and inside ``winnow serve``'s worker thread, where signals are not even
delivered. So the parse runs in a child process that we can kill:

- **memory**: the worker lowers its own address-space limit (``RLIMIT_AS``) to
  ``parse_memory_mb`` at start; an allocation past it raises ``MemoryError`` there (or kills the
  worker), never in the ingest process;
- **time**: the ingest process waits ``parse_timeout_seconds`` for the answer, then kills the worker.

Either way the document fails with a one-line reason (``ParseBudgetExceeded``) and the next document
gets a fresh worker. The worker is a plain ``python -m winnow.parsing.worker`` talking over its stdin
and stdout pipes: it needs no ``/dev/shm`` (which Lambda lacks, so ``multiprocessing`` queues and
pools fail there) and no ``fork`` of a process that runs threads. It is started once and reused, so a
document pays only for the pipe round trip (see training/NOTEBOOK.md, "Parse budget"). Answers are
JSON, never pickle: the worker has read hostile bytes, so the ingest process trusts nothing it sends
beyond plain data.
"""

from __future__ import annotations

import atexit
import base64
import json
import math
import os
import select
import struct
import subprocess
import sys
import threading
import time
from contextlib import suppress
from typing import IO, TYPE_CHECKING, Any, TypedDict, cast

from winnow import errors
from winnow.errors import CorruptDocument, DocumentError, ParseBudgetExceeded
from winnow.models import Block, Figure, ParsedDocument, Table
from winnow.settings import IngestSettings, OcrSettings

if TYPE_CHECKING:
    from winnow.ports import Ocr, OcrPage

__all__ = ["WorkerAnswer", "decode_result", "encode_result", "parse_within_budget", "shutdown_workers"]

# request: (settings JSON length, key length, data length), then the three; answer: length, then JSON.
# While parsing, the worker may instead send an OCR request (JSON, then the pages' bytes) and wait for
# the texts (length, then JSON) before it answers.
REQUEST_HEADER = struct.Struct(">IIQ")
ANSWER_HEADER = struct.Struct(">Q")
_READ_SIZE = 1 << 20
_MAX_IDLE_WORKERS = 4


# The worker's answer on the wire (JSON): a parsed document, or the DocumentError it met.
class TableWire(TypedDict):
    header: list[str]
    rows: list[list[str]]
    caption: str


class DocumentWire(TypedDict):
    title: str
    source_type: str
    ocr_pages: int
    # [text, section path, page, ocr, table or None, figure or None, entry, head] per block
    blocks: list[list[Any]]


class ErrorWire(TypedDict):
    type: str  # a winnow.errors class name, or ImportError
    message: str


class WorkerAnswer(TypedDict, total=False):
    ok: DocumentWire
    error: ErrorWire
    retire: bool  # memory ran out: the pool does not reuse this worker


def parse_within_budget(
    key: str,
    data: bytes,
    settings: IngestSettings | None = None,
    *,
    ocr: Ocr | None = None,
    ocr_settings: OcrSettings | None = None,
) -> ParsedDocument:
    """``parse_document`` in a worker process under the settings' time and memory budgets. Raises only
    ``DocumentError`` subclasses (and ``ImportError`` for a broken deployment), like ``parse_document``,
    plus whatever ``ocr`` raises (a provider outage is retried, not a broken document).

    Pages that need OCR are sent back to this process, which reads them with ``ocr``: the provider's
    client, its retries and its error translation stay here, and the worker does only parsing. OCR
    runs inside the same time budget: a scan of many hostile pages cannot take longer than any other
    document."""
    settings = settings or IngestSettings()
    worker = _POOL.take(settings.parse_memory_mb)
    try:
        answer = worker.parse(key, data, settings, ocr, ocr_settings)
    except BaseException:
        worker.stop()
        raise
    if answer.get("retire"):
        worker.stop()
    else:
        _POOL.give_back(worker)
    return decode_result(answer)


def shutdown_workers() -> None:
    """Stop the idle workers (at exit; tests use it to start from a clean slate)."""
    _POOL.close()


def encode_result(document: ParsedDocument) -> WorkerAnswer:
    return {
        "ok": {
            "title": document.title,
            "source_type": document.source_type,
            "ocr_pages": document.ocr_pages,
            "blocks": [
                [
                    block.text,
                    list(block.section_path),
                    block.page,
                    block.ocr,
                    _encode_table(block.table),
                    _encode_figure(block.figure),
                    block.entry,
                    block.head,
                ]
                for block in document.blocks
            ],
        }
    }


def _encode_table(table: Table | None) -> TableWire | None:
    if table is None:
        return None
    return {"header": list(table.header), "rows": [list(row) for row in table.rows], "caption": table.caption}


def _encode_figure(figure: Figure | None) -> dict[str, Any] | None:
    if figure is None:
        return None
    return {
        "caption": figure.caption,
        "alt": figure.alt,
        "media_type": figure.media_type,
        "digest": figure.digest,
        "width": figure.width,
        "height": figure.height,
        "figure_text": figure.figure_text,
        # a kept figure's image, for ingest to store (plain base64: the worker's answer stays JSON)
        "data": base64.b64encode(figure.data).decode("ascii") if figure.data else "",
    }


def _decode_figure(value: Any) -> Figure | None:
    if value is None:
        return None
    return Figure(
        caption=str(value["caption"]),
        alt=str(value["alt"]),
        media_type=str(value["media_type"]),
        digest=str(value["digest"]),
        width=int(value["width"]),
        height=int(value["height"]),
        figure_text=str(value["figure_text"]),
        data=base64.b64decode(str(value.get("data") or "")),
    )


def _decode_table(value: Any) -> Table | None:
    if value is None:
        return None
    return Table(
        header=tuple(str(cell) for cell in value["header"]),
        rows=tuple(tuple(str(cell) for cell in row) for row in value["rows"]),
        caption=str(value["caption"]),
    )


def decode_result(answer: WorkerAnswer) -> ParsedDocument:
    """The worker's answer as a ParsedDocument, or the DocumentError it reported."""
    if "ok" in answer:
        body = answer["ok"]
        blocks = [
            Block(
                text=str(text),
                section_path=tuple(str(part) for part in path),
                page=page,
                table=_decode_table(table),
                ocr=bool(ocr),
                figure=_decode_figure(figure),
                entry=bool(entry),
                head=str(head),
            )
            for text, path, page, ocr, table, figure, entry, head in body["blocks"]
        ]
        return ParsedDocument(
            title=str(body["title"]),
            blocks=blocks,
            source_type=str(body["source_type"]),
            ocr_pages=int(body["ocr_pages"]),
        )
    error = answer.get("error") or ErrorWire(type="", message="")
    name, message = str(error.get("type", "")), str(error.get("message", "")) or "could not parse file"
    if name == "ImportError":
        raise ImportError(message)  # a broken deployment: loud, like an in-process parse
    error_class = getattr(errors, name, None)
    if isinstance(error_class, type) and issubclass(error_class, DocumentError):
        raise error_class(message)
    raise CorruptDocument(message)


class _Worker:
    """One parse worker process and its pipes; used by one thread at a time."""

    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        env = dict(os.environ)
        # The worker imports winnow from wherever this process did (a Lambda layer, a checkout).
        env["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
        self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
            [sys.executable, "-m", "winnow.parsing.worker", str(memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def parse(
        self,
        key: str,
        data: bytes,
        settings: IngestSettings,
        ocr: Ocr | None = None,
        ocr_settings: OcrSettings | None = None,
    ) -> WorkerAnswer:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        deadline = time.monotonic() + settings.parse_timeout_seconds
        settings_json = json.dumps(
            {
                "ingest": settings.model_dump(mode="json"),
                # None: OCR is off, and the parser refuses pages that need it
                "ocr": (ocr_settings or OcrSettings()).model_dump(mode="json") if ocr is not None else None,
            }
        ).encode()
        key_bytes = key.encode("utf-8", "surrogatepass")
        ocr_asked = False
        try:
            process.stdin.write(REQUEST_HEADER.pack(len(settings_json), len(key_bytes), len(data)))
            process.stdin.write(settings_json)
            process.stdin.write(key_bytes)
            process.stdin.write(data)
            process.stdin.flush()
            while True:
                message = _read_message(process.stdout, deadline)
                if message is None:
                    break
                if "ocr" not in message:
                    return cast(WorkerAnswer, message)
                # The worker asks for pages to be read; their bytes follow the message.
                assert ocr is not None  # the worker asks only when told OCR is on
                pages = _read_pages(process.stdout, message["ocr"], deadline)
                if pages is None:
                    break
                # raises on an outage (the caller stops this worker); no page is started past the deadline
                texts = _read_pages_with(ocr, pages, deadline)
                ocr_asked = True
                if time.monotonic() >= deadline:
                    break  # pages after the deadline were not read: the document is over its budget
                reply = json.dumps({"texts": list(texts)}).encode("utf-8", "surrogatepass")
                process.stdin.write(ANSWER_HEADER.pack(len(reply)))
                process.stdin.write(reply)
                process.stdin.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError, KeyError, TypeError):
            pass  # the worker died mid-request, or sent what it should not: judged below
        self.stop()
        if time.monotonic() >= deadline:
            with_ocr = " (OCR included)" if ocr_asked else ""
            raise ParseBudgetExceeded(
                f"parsing took longer than the {settings.parse_timeout_seconds:g} s time budget{with_ocr}"
            )
        raise ParseBudgetExceeded(
            f"parser process stopped (exit {process.returncode}): the file needs more than the"
            f" {self.memory_mb} MB memory budget or crashed the parser"
        )

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                with suppress(OSError):
                    pipe.close()


def _read_pages_with(ocr: Ocr, pages: list[OcrPage], deadline: float) -> list[str]:
    """The pages' texts. Figures (``OcrPage.figure``) a provider refuses for good, or that exceed local
    OCR's memory cap, give no text: the figure keeps its caption and the document is not failed for it.
    Outages raise, as for pages."""
    from winnow.errors import PermanentError

    try:
        return ocr.read(pages, deadline=deadline)
    except (PermanentError, ParseBudgetExceeded):
        if pages and all(page.figure for page in pages):
            return [""] * len(pages)
        raise


def _read_message(pipe: IO[bytes], deadline: float) -> dict[str, Any] | None:
    """One length-prefixed JSON object from the worker, or None (deadline passed, pipe closed)."""
    header = _read_exactly(pipe, ANSWER_HEADER.size, deadline)
    if header is None:
        return None
    (length,) = ANSWER_HEADER.unpack(header)
    body = _read_exactly(pipe, length, deadline)
    return None if body is None else dict(json.loads(body))


def _read_pages(pipe: IO[bytes], described: list[dict[str, Any]], deadline: float) -> list[OcrPage] | None:
    """The page bytes that follow an OCR request, one per ``{"media_type", "length"}`` entry."""
    from winnow.ports import OcrPage

    pages: list[OcrPage] = []
    for entry in described:
        data = _read_exactly(pipe, int(entry["length"]), deadline)
        if data is None:
            return None
        pages.append(OcrPage(data, str(entry["media_type"]), figure=bool(entry.get("figure"))))
    return pages


def _read_exactly(pipe: IO[bytes], size: int, deadline: float) -> bytes | None:
    """``size`` bytes from the worker, or None when the deadline passes or the worker closes the pipe."""
    fd = pipe.fileno()
    # poll, not select: select refuses descriptors past 1,024, which a busy `winnow serve` can reach
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    parts: list[bytes] = []
    remaining = size
    while remaining:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            return None
        if not poller.poll(max(1, math.ceil(timeout * 1000))):
            continue  # the deadline check above decides
        chunk = os.read(fd, min(remaining, _READ_SIZE))
        if not chunk:
            return None
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


class _Pool:
    """Idle workers kept for reuse; a worker that failed a budget is never reused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def take(self, memory_mb: int) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive and worker.memory_mb == memory_mb:
                    return worker
                worker.stop()
        return _Worker(memory_mb)

    def give_back(self, worker: _Worker) -> None:
        with self._lock:
            if worker.alive and len(self._idle) < _MAX_IDLE_WORKERS:
                self._idle.append(worker)
                return
        worker.stop()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()


_POOL = _Pool()
atexit.register(shutdown_workers)
