"""The parse budget: documents parsed in a worker process that is killed past the time budget and
cannot allocate past the memory budget; the answer is the same as an in-process parse."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence

import pytest

from tests.support.documents import (
    DocxHeading,
    DocxParagraph,
    make_corrupt_pdf,
    make_docx,
    make_html,
    make_markdown,
    make_pdf,
)
from tests.support.office import make_xlsx
from tests.support.scans import render_page, scanned_pdf
from winnow.errors import CorruptDocument, EmptyDocument, ParseBudgetExceeded, ProviderUnavailable
from winnow.parsing import budget, parse_document
from winnow.parsing.budget import decode_result, parse_within_budget, shutdown_workers
from winnow.ports import Ocr, OcrPage
from winnow.settings import IngestSettings, OcrSettings

# Millions of one-letter paragraphs: each becomes a Block, so parsing needs several hundred MB.
MEMORY_HOG = b"a\n\n" * 8_000_000
# A 20 MB paragraph: linear, but no parse of it ends within 50 ms.
SLOW_TO_PARSE = b"word " * 4_000_000


@pytest.fixture(autouse=True, scope="module")
def _workers_of_this_module_only() -> Iterator[None]:
    """A worker is reused from document to document, as in ingest, so the tests that only parse share
    this module's workers (starting one imports the parsers); none is left to another module."""
    shutdown_workers()
    yield
    shutdown_workers()


@pytest.fixture
def fresh_workers() -> Iterator[None]:
    """No idle worker before and after the test: for tests that count, kill or follow workers."""
    shutdown_workers()
    yield
    shutdown_workers()


def _worker_pids() -> set[int]:
    return {worker._process.pid for worker in budget._POOL._idle}


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); the pool waits for its workers, so none should be left
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][0] != "Z"


@pytest.mark.parametrize(
    ("key", "data"),
    [
        ("acme/guide.md", make_markdown([(1, "Install", ["Run the installer."]), (2, "Use", ["Open it."])])),
        ("acme/page.html", make_html("Page", [(1, "Section", ["Visible text of the page."])])),
        ("acme/book.pdf", make_pdf(["First page text.", "Second page text."])),
        (
            "acme/report.docx",
            make_docx([DocxHeading("Results", 1), DocxParagraph("Revenue grew by twelve percent.")]),
        ),
    ],
)
def test_the_worker_gives_the_same_document_as_an_in_process_parse(key: str, data: bytes) -> None:
    # Given a real document of each format
    # When it is parsed under the budget and in this process
    # Then both give the same title, blocks, sections and pages
    assert parse_within_budget(key, data) == parse_document(key, data)


def test_tables_come_back_from_the_worker_as_tables() -> None:
    # Given a spreadsheet and a CSV, whose rows become table blocks
    sheet = make_xlsx({"Ports": [["service", "port"], ["ssh", 22], ["http", 80]]})
    csv = b"service,port\nssh,22\nhttp,80\n"
    for key, data in (("acme/ports.xlsx", sheet), ("acme/ports.csv", csv)):
        # When it is parsed under the budget
        parsed = parse_within_budget(key, data)
        # Then its table blocks keep their cells, header and caption, exactly as an in-process parse
        assert any(block.table is not None for block in parsed.blocks)
        assert parsed == parse_document(key, data)


def _scan(pages: int) -> bytes:
    """A PDF of ``pages`` page images (rendered text, no text layer)."""
    return scanned_pdf(
        [render_page(f"Page {number} of the scan.", seed=number)[0] for number in range(pages)]
    )


class CountingOcr(Ocr):
    """Reads every page as the same line, counting the pages it was given."""

    def __init__(self) -> None:
        self.pages: list[OcrPage] = []

    @property
    def name(self) -> str:
        return "counting"

    def read(self, pages: Sequence[OcrPage], *, deadline: float | None = None) -> list[str]:
        self.pages.extend(pages)
        return [f"Scanned words on a page of {len(page.data)} bytes." for page in pages]


def test_scanned_pages_are_read_by_the_ocr_of_the_ingest_process() -> None:
    # Given a two-page scan and an OCR engine in this process
    ocr = CountingOcr()
    # When the scan is parsed under the budget
    parsed = parse_within_budget("acme/scan.pdf", _scan(2), ocr=ocr, ocr_settings=OcrSettings())
    # Then the worker sent both pages here, and their text comes back marked as OCR with its page
    assert len(ocr.pages) == 2 and all(page.media_type == "application/pdf" for page in ocr.pages)
    assert parsed.ocr_pages == 2
    assert {block.page for block in parsed.blocks} == {1, 2}
    assert all(block.ocr and "Scanned words" in block.text for block in parsed.blocks)


@pytest.mark.usefixtures("fresh_workers")
def test_an_ocr_outage_reaches_the_caller_and_the_worker_is_not_reused() -> None:
    # Given an OCR engine that is unavailable
    class DownOcr(CountingOcr):
        def read(self, pages: Sequence[OcrPage], *, deadline: float | None = None) -> list[str]:
            raise ProviderUnavailable("ocr is down")

    # When a scan is parsed under the budget
    with pytest.raises(ProviderUnavailable):
        parse_within_budget("acme/scan.pdf", _scan(1), ocr=DownOcr(), ocr_settings=OcrSettings())
    # Then the outage is the caller's to retry, and no worker waiting for an answer is kept
    assert _worker_pids() == set()
    assert parse_within_budget("acme/a.md", b"# A\n\nText.") == parse_document("acme/a.md", b"# A\n\nText.")


@pytest.mark.usefixtures("fresh_workers")
def test_ocr_time_counts_against_the_parse_budget() -> None:
    # Given a warm worker and an OCR engine that takes 3.5 s for a page
    parse_within_budget("acme/warm.txt", b"Warm up the worker.")
    deadlines: list[float | None] = []
    reads: list[float] = []

    class SlowOcr(CountingOcr):
        def read(self, pages: Sequence[OcrPage], *, deadline: float | None = None) -> list[str]:
            deadlines.append(deadline)
            reads.append(time.monotonic())
            time.sleep(3.5)
            return super().read(pages, deadline=deadline)

    # When a one-page scan is parsed under a 3 s budget
    scan, settings = _scan(1), IngestSettings(parse_timeout_seconds=3)
    started = time.monotonic()
    with pytest.raises(ParseBudgetExceeded) as raised:
        parse_within_budget("acme/scan.pdf", scan, settings, ocr=SlowOcr(), ocr_settings=OcrSettings())
    # Then OCR spent the parse budget (it used to be added back): the document fails, saying so
    assert str(raised.value) == "parsing took longer than the 3 s time budget (OCR included)"
    # and the engine was told the budget's deadline, so it could stop there: 3 s after the budget started,
    # which was after this call began and before the engine was asked to read (an order, not a duration)
    (deadline,), (read,) = deadlines, reads
    assert deadline is not None and started + 3 <= deadline <= read + 3


def test_a_document_error_comes_back_with_its_class_and_reason() -> None:
    # Given a corrupt PDF
    # When it is parsed under the budget
    with pytest.raises(CorruptDocument) as raised:
        parse_within_budget("acme/broken.pdf", make_corrupt_pdf())
    # Then the worker's reason is the in-process one, on one line
    with pytest.raises(CorruptDocument) as in_process:
        parse_document("acme/broken.pdf", make_corrupt_pdf())
    assert str(raised.value) == str(in_process.value) and "\n" not in str(raised.value)


@pytest.mark.usefixtures("fresh_workers")
def test_a_parse_over_the_time_budget_is_stopped_and_the_next_document_gets_a_fresh_worker() -> None:
    # Given a worker that has parsed a document and is idle
    parse_within_budget("acme/warm.txt", b"Warm up the worker.")
    (first_worker,) = _worker_pids()
    # When a document takes longer than a 50 ms budget
    with pytest.raises(ParseBudgetExceeded) as raised:
        parse_within_budget("acme/slow.txt", SLOW_TO_PARSE, IngestSettings(parse_timeout_seconds=0.05))
    # Then it fails with a one-line reason naming the budget, and the worker is gone
    assert str(raised.value) == "parsing took longer than the 0.05 s time budget"
    assert not _process_exists(first_worker)
    # and the next document is parsed by a new worker
    assert parse_within_budget("acme/next.txt", b"The next document.").blocks[0].text == "The next document."
    assert _worker_pids() and first_worker not in _worker_pids()


def test_a_parse_over_the_memory_budget_fails_and_the_next_document_is_parsed() -> None:
    # Given a 128 MB memory budget and a text whose blocks need several hundred MB
    settings = IngestSettings(parse_memory_mb=128)
    # When it is parsed
    with pytest.raises(ParseBudgetExceeded) as raised:
        parse_within_budget("acme/hog.txt", MEMORY_HOG, settings)
    # Then it fails with a one-line reason naming the budget
    assert str(raised.value) == "parsing needs more than the 128 MB memory budget"
    # and the next document is parsed normally, within the same budget
    assert parse_within_budget("acme/next.txt", b"Small text.", settings).blocks[0].text == "Small text."


@pytest.mark.usefixtures("fresh_workers")
def test_a_worker_that_died_while_idle_is_replaced() -> None:
    # Given an idle worker that something killed
    parse_within_budget("acme/a.txt", b"First.")
    (pid,) = _worker_pids()
    budget._POOL._idle[0]._process.kill()
    budget._POOL._idle[0]._process.wait()
    # When the next document arrives
    document = parse_within_budget("acme/b.txt", b"Second.")
    # Then a new worker parses it
    assert document.blocks[0].text == "Second." and pid not in _worker_pids()


def test_an_answer_naming_an_unknown_error_is_a_corrupt_document_and_never_an_arbitrary_class() -> None:
    # Given answers a misbehaving worker could send
    # Then only DocumentError classes are raised; anything else is CorruptDocument
    with pytest.raises(EmptyDocument, match="no text"):
        decode_result({"error": {"type": "EmptyDocument", "message": "no text"}})
    with pytest.raises(CorruptDocument, match="odd"):
        decode_result({"error": {"type": "SystemExit", "message": "odd"}})
    with pytest.raises(CorruptDocument, match="could not parse file"):
        decode_result({"error": {"type": "Exception"}})


def test_a_definition_list_entry_keeps_its_mark_through_the_worker() -> None:
    # Given an HTML option list: each <dt> with its <dd> is one entry block
    page = b"<html><body><h1>Options</h1><dl><dt>-v</dt><dd>Say more.</dd></dl><p>Closing words.</p></body>"
    parsed = parse_within_budget("acme/opts.html", page)
    # Then the worker's answer still marks it, as an in-process parse does
    assert [(block.text, block.entry) for block in parsed.blocks] == [
        ("-v Say more.", True),
        ("Closing words.", False),
    ]
    assert parsed == parse_document("acme/opts.html", page)
