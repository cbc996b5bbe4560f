"""Scanned pages and images through the real ingest handler.

Real parts: the handler, the folder bucket, the SQLite ledger, Qdrant local mode, the fake Voyage
server, and ``TextractOcr`` over boto3 against the loopback fake Textract (tests.support.textract);
the local engine is Debian's tesseract itself."""

from __future__ import annotations

import time
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from tests.support.documents import make_pdf
from tests.support.scans import (
    character_error_rate,
    checkerboard_page,
    huge_png_header,
    png_bytes,
    render_page,
    scanned_pdf,
)
from tests.support.stack import EmbeddedStack
from tests.support.textract import FakeTextract
from winnow.adapters.ocr import TesseractOcr, TextractOcr, tesseract_installed
from winnow.errors import ParseBudgetExceeded, ProviderRateLimited
from winnow.parsing.budget import parse_within_budget
from winnow.ports import OcrPage
from winnow.settings import IngestSettings, OcrSettings

PAGE_TWO = (
    "Warranty claims for the Beacon sensor are accepted for thirty-six months after purchase.\n\n"
    "Send the claim form with the serial number to the service centre in Utrecht."
)
PAGE_THREE = (
    "Calibration must be repeated every nine weeks in humid climates.\n\n"
    "The calibration kit is sold separately under part number CK-2211."
)


def mixed_pdf(fake: FakeTextract | None = None) -> bytes:
    """Page 1 has a text layer; pages 2 and 3 are scans (images only)."""
    from pypdf import PdfReader, PdfWriter

    text_page = make_pdf(["The Beacon installation guide starts with unpacking the device and its mount."])
    scans = [render_page(text, seed=number) for number, text in enumerate((PAGE_TWO, PAGE_THREE))]
    if fake is not None:
        for image, drawn in scans:
            fake.register(image, drawn)
    writer = PdfWriter()
    for source in (text_page, scanned_pdf([image for image, _ in scans])):
        for page in PdfReader(BytesIO(source)).pages:
            writer.add_page(page)
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def use_textract(stack: EmbeddedStack, fake: FakeTextract, **settings: Any) -> None:
    ocr_settings = OcrSettings(engine="textract", **settings)
    stack.container.settings.ocr = ocr_settings
    stack.container.ocr = TextractOcr(ocr_settings, client=fake.client())  # type: ignore[misc]


def test_scanned_pages_are_read_by_textract_and_text_pages_never_are(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    # Given a PDF whose first page has a text layer and whose other two pages are scans
    use_textract(stack, fake_textract)
    data = mixed_pdf(fake_textract)
    # When it is uploaded
    result = stack.upload("acme/beacon.pdf", data)
    # Then it is indexed, Textract read exactly the two scanned pages, each sent as a one-page PDF
    assert result["status"] == "indexed", result
    assert fake_textract.calls == [{"kind": "pdf", "pages": 1}, {"kind": "pdf", "pages": 1}]
    # and the ledger counts the OCR pages
    record = stack.container.ledger.get("acme", "acme/beacon.pdf")
    assert record is not None and record.ocr_pages == 2
    # and a question answered on a scanned page finds it, with its page and the OCR mark
    status, body = stack.search("how many months are warranty claims accepted", relevance_threshold=0)
    assert status == 200
    top = body["results"][0]
    assert "thirty-six months" in top["text"]
    assert top["page"] == 2 and top["ocr"] is True and top["kind"] == "text"
    # and the text-layer page is not marked
    status, body = stack.search("unpacking the device and its mount", relevance_threshold=0)
    first = body["results"][0]
    assert first["page"] == 1 and first["ocr"] is False
    # and ocr is filterable like metadata
    status, body = stack.search("Beacon", relevance_threshold=0, filters={"ocr": True}, top_k=10)
    assert status == 200 and body["results"]
    assert {hit["page"] for hit in body["results"]} <= {2, 3}
    assert all(hit["ocr"] for hit in body["results"])


def test_the_page_cap_bounds_how_many_pages_go_to_ocr(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    # Given a page cap of one OCR page per document
    use_textract(stack, fake_textract, max_pages=1)
    # When a PDF with two scanned pages is uploaded
    result = stack.upload("acme/beacon.pdf", mixed_pdf(fake_textract))
    # Then only one page was sent, and the ledger says so
    assert result["status"] == "indexed", result
    assert len(fake_textract.calls) == 1
    record = stack.container.ledger.get("acme", "acme/beacon.pdf")
    assert record is not None and record.ocr_pages == 1


def test_throttling_past_the_retries_is_transient_and_nothing_is_recorded(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    # Given Textract throttling more often than the client retries
    use_textract(stack, fake_textract)
    data = mixed_pdf(fake_textract)
    fake_textract.fail_next(20, 400, "ProvisionedThroughputExceededException")  # > 2 pages x 4 attempts
    # When the document is uploaded
    result = stack.upload("acme/beacon.pdf", data)
    # Then ingest asks for a retry and records nothing
    assert result["status"] == "retry", result
    assert stack.container.ledger.get("acme", "acme/beacon.pdf") is None
    # When the throttling has passed and the event comes again
    fake_textract.faults.clear()
    result = stack.upload("acme/beacon.pdf", data)
    # Then it is indexed
    assert result["status"] == "indexed", result


def test_a_throttle_within_the_retries_is_absorbed(fake_textract: FakeTextract) -> None:
    # Given one throttled answer, then good ones
    image, text = render_page("Pallets ship on Tuesdays and Fridays only.")
    fake_textract.register(image, text)
    fake_textract.fail_next(1, 400, "ThrottlingException")
    ocr = TextractOcr(OcrSettings(), client=fake_textract.client())
    # When a page is read
    (read,) = ocr.read([OcrPage(png_bytes(image), "image/png")])
    # Then botocore's retry absorbed the throttle
    assert "Tuesdays and Fridays" in read
    assert len(fake_textract.calls) == 2


def test_textract_starts_no_page_after_the_deadline(fake_textract: FakeTextract) -> None:
    # Given two pages and a parse deadline that has passed
    image, text = render_page(PAGE_TWO)
    fake_textract.register(image, text)
    ocr = TextractOcr(OcrSettings(engine="textract"), client=fake_textract.client())
    pages = [OcrPage(png_bytes(image), "image/png")] * 2
    # When they are read, Then no page is sent and each gives no text
    assert ocr.read(pages, deadline=time.monotonic() - 1) == ["", ""]
    assert fake_textract.calls == []
    # while with time left both are read
    assert all("thirty-six months" in page for page in ocr.read(pages, deadline=time.monotonic() + 60))


def test_an_outage_surfaces_as_a_transient_error(fake_textract: FakeTextract) -> None:
    image, text = render_page("Pallets ship on Tuesdays and Fridays only.")
    fake_textract.register(image, text)
    fake_textract.fail_next(10, 400, "LimitExceededException")
    ocr = TextractOcr(OcrSettings(), client=fake_textract.client())
    with pytest.raises(ProviderRateLimited):
        ocr.read([OcrPage(png_bytes(image), "image/png")])


def test_a_page_textract_cannot_read_costs_that_page_only(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    # Given a scan Textract rejects as a bad document
    use_textract(stack, fake_textract)
    data = mixed_pdf(fake_textract)
    fake_textract.unreadable_pages.add(render_page(PAGE_THREE, seed=1)[1])
    # When the PDF is uploaded
    result = stack.upload("acme/beacon.pdf", data)
    # Then the other pages are indexed
    assert result["status"] == "indexed", result
    _, body = stack.search("warranty months", relevance_threshold=0)
    assert "thirty-six months" in body["results"][0]["text"]
    _, body = stack.search("calibration kit part number", relevance_threshold=0, top_k=10)
    assert not any("CK-2211" in hit["text"] for hit in body["results"])


@pytest.mark.parametrize("encode", [png_bytes, lambda image: _jpeg(image)])
def test_an_image_file_is_one_ocr_page(
    stack: EmbeddedStack, fake_textract: FakeTextract, encode: Any
) -> None:
    # Given a photographed notice as an image file
    use_textract(stack, fake_textract)
    image, text = render_page("The loading dock closes at six in the evening on weekdays.")
    fake_textract.register(image, text)
    # When it is uploaded
    key = "acme/notice.png" if encode is png_bytes else "acme/notice.jpg"
    result = stack.upload(key, encode(image))
    # Then it is indexed as one OCR page
    assert result["status"] == "indexed", result
    record = stack.container.ledger.get("acme", key)
    assert record is not None and record.source_type == "image" and record.ocr_pages == 1
    _, body = stack.search("when does the loading dock close", relevance_threshold=0)
    top = body["results"][0]
    assert "six in the evening" in top["text"] and top["ocr"] is True and top["page"] == 1


def _jpeg(image: Any) -> bytes:
    out = BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()


def test_an_image_of_fifty_thousand_pixels_a_side_is_refused_unread(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    use_textract(stack, fake_textract)
    # When a PNG declaring 50,000 x 50,000 pixels is uploaded
    result = stack.upload("acme/huge.png", huge_png_header(50_000, 50_000))
    # Then it fails with the reason, and Textract never saw it
    assert result["status"] == "failed"
    assert "50000 x 50000 pixels" in result["error"]
    assert fake_textract.calls == []


def test_without_ocr_a_scan_is_failed_with_a_reason(stack: EmbeddedStack) -> None:
    # Given OCR turned off
    stack.container.ocr = None  # type: ignore[misc]
    stack.container.settings.ocr = OcrSettings(engine="none")
    image, _ = render_page(PAGE_TWO)
    # When a scanned PDF and an image are uploaded
    pdf = stack.upload("acme/scan.pdf", scanned_pdf([image]))
    png = stack.upload("acme/scan.png", png_bytes(image))
    # Then both fail, saying why
    assert pdf["status"] == "failed" and "OCR is off" in pdf["error"]
    assert png["status"] == "failed" and "OCR" in png["error"]


needs_tesseract = pytest.mark.skipif(not tesseract_installed(), reason="make test installs tesseract-ocr")


@needs_tesseract
def test_tesseract_reads_a_clean_200_dpi_scan_within_two_percent_cer() -> None:
    # Given a clean 200-dpi scan of known text, as a PNG and inside a scanned PDF
    image, text = render_page(PAGE_TWO + "\n\n" + PAGE_THREE, seed=3)
    ocr = TesseractOcr(OcrSettings(max_concurrency=2))
    # When the local engine reads both
    from_png, from_pdf = ocr.read(
        [OcrPage(png_bytes(image), "image/png"), OcrPage(scanned_pdf([image]), "application/pdf")]
    )
    # Then each is within the 2 % character error goal
    assert character_error_rate(text, from_png) <= 0.02, from_png
    assert character_error_rate(text, from_pdf) <= 0.02, from_pdf


def counting_tesseract(folder: Path) -> tuple[str, Path]:
    """The real tesseract behind a script that notes each start in a file (the work done, counted)."""
    starts = folder / "starts"
    script = folder / "tesseract"
    script.write_text(f'#!/bin/sh\necho started >> "{starts}"\nexec tesseract "$@"\n')
    script.chmod(0o755)
    return str(script), starts


def repeated_page(pdf: bytes, times: int) -> bytes:
    """The PDF's one page ``times`` over, every page drawing the same image object (1.6 MB for 100)."""
    from pypdf import PdfReader, PdfWriter

    page = PdfReader(BytesIO(pdf)).pages[0]
    writer = PdfWriter()
    for _ in range(times):
        writer.add_page(page)
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def started(starts: Path) -> int:
    return len(starts.read_text().splitlines()) if starts.exists() else 0


@needs_tesseract
def test_a_scan_of_a_hundred_hostile_pages_fails_within_the_parse_budget(tmp_path: Path) -> None:
    # Given a PDF of 100 checkerboard scans (each costs tesseract seconds), a 5 s parse budget and a
    # worker that has read a PDF already (so the budget goes to the scan, not to importing the parser)
    pdf = repeated_page(scanned_pdf([checkerboard_page()]), 100)
    command, starts = counting_tesseract(tmp_path)
    ocr = TesseractOcr(OcrSettings(), command=command)
    assert parse_within_budget("acme/warm.pdf", make_pdf(["Warm up the worker."])).blocks
    # When it is parsed under the budget with the local engine
    with pytest.raises(ParseBudgetExceeded) as raised:
        parse_within_budget("acme/boards.pdf", pdf, IngestSettings(parse_timeout_seconds=5), ocr=ocr)
    # Then the document fails with a one-line reason naming the budget, OCR included
    assert str(raised.value) == "parsing took longer than the 5 s time budget (OCR included)"
    # and OCR stopped at the deadline: some pages were started, far from the hundred
    assert 1 <= started(starts) <= 50


@needs_tesseract
def test_local_ocr_runs_under_its_memory_cap(tmp_path: Path) -> None:
    # Given a 200 MB cap on each tesseract process
    settings = OcrSettings(local_memory_mb=200)
    ocr = TesseractOcr(settings)
    # When a page of text is read, it is read as before
    image, text = render_page(PAGE_TWO, seed=1)
    parsed = parse_within_budget("acme/notice.png", png_bytes(image), ocr=ocr, ocr_settings=settings)
    assert character_error_rate(text, " ".join(b.text for b in parsed.blocks)) <= 0.02
    # But a 12 KB checkerboard image that needs about 190 MB of tesseract's memory fails with the cap's
    # reason, on one line (without the cap it is read to no text at all, after seconds)
    with pytest.raises(ParseBudgetExceeded) as raised:
        parse_within_budget("acme/board.png", png_bytes(checkerboard_page()), ocr=ocr, ocr_settings=settings)
    assert str(raised.value) == (
        "OCR of a page needs more than the 200 MB memory budget of local OCR (WINNOW_OCR_LOCAL_MEMORY_MB)"
    )
