"""Figures through the real ingest and search handlers.

Real parts: the handlers, the folder bucket, the SQLite ledger, the embedded index, the fake Voyage
server, the parse worker, and ``TextractOcr`` over boto3 against the loopback fake Textract, which
"reads" a figure by matching it to the images the test registered with their labels."""

from __future__ import annotations

from typing import Any

from tests.support.figure_docs import (
    CHART,
    DIAGRAM,
    INTRO,
    PHOTO,
    SAMPLE_FIGURES,
    draw_figure,
    figure_docx,
    figure_pdf,
)
from tests.support.stack import EmbeddedStack
from tests.support.textract import FakeTextract
from winnow.adapters.ocr import TextractOcr
from winnow.settings import OcrSettings


def use_textract(stack: EmbeddedStack, fake: FakeTextract) -> None:
    for spec in (CHART, DIAGRAM):
        fake.register(draw_figure(spec), "\n".join([spec.title, *spec.labels]))
    settings = OcrSettings(engine="textract")
    stack.container.settings.ocr = settings
    stack.container.ocr = TextractOcr(settings, client=fake.client())  # type: ignore[misc]


def figure_hits(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [hit for hit in body["results"] if hit["kind"] == "figure"]


def test_a_question_answered_only_by_a_chart_finds_the_figure(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    # Given a PDF whose chart labels (Lisbon, Porto, ...) appear nowhere in its text layer
    use_textract(stack, fake_textract)
    result = stack.upload("acme/report.pdf", figure_pdf(SAMPLE_FIGURES, intro=INTRO))
    assert result["status"] == "indexed", result
    # Then Textract read the two figures with words in them (the photo too: it gave no text), never the
    # text-layer pages themselves, and the ledger counts the figures read
    assert all(call.get("kind") == "image" for call in fake_textract.calls)
    assert len(fake_textract.calls) == 3
    record = stack.container.ledger.get("acme", "acme/report.pdf")
    assert record is not None and record.ocr_pages == 2
    # When a question only the chart's labels answer is asked
    status, body = stack.search("Lisbon Porto Braga Coimbra", relevance_threshold=0)
    # Then the figure is the first result, with its caption, page and where its text came from
    assert status == 200
    top = body["results"][0]
    assert top["kind"] == "figure" and top["figure_text"] == "ocr" and top["page"] == 1
    assert top["text"].startswith(CHART.caption)
    # and kind filters like table does
    status, body = stack.search("overview", relevance_threshold=0, filters={"kind": "figure"}, top_k=10)
    assert status == 200
    assert {hit["text"].split("\n")[0] for hit in body["results"]} == {
        spec.caption for spec in SAMPLE_FIGURES
    }
    assert {hit["figure_text"] for hit in body["results"]} == {"ocr", "caption"}
    # and a text passage says nothing of figures
    status, body = stack.search("regional services", relevance_threshold=0, filters={"kind": "text"})
    assert body["results"] and all(hit["figure_text"] is None for hit in body["results"])


def test_a_permanent_provider_refusal_keeps_the_captions(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    # Given Textract refusing every call for good (access denied)
    use_textract(stack, fake_textract)
    fake_textract.fail_next(50, 400, "AccessDeniedException")
    # When a DOCX with figures is uploaded
    result = stack.upload("acme/report.docx", figure_docx(SAMPLE_FIGURES, intro=INTRO))
    # Then it is indexed all the same, each figure with its caption and alt text
    assert result["status"] == "indexed", result
    status, body = stack.search("boats moored at Nazaré", relevance_threshold=0, filters={"kind": "figure"})
    assert status == 200
    assert body["results"][0]["text"].startswith(PHOTO.caption)
    assert {hit["figure_text"] for hit in figure_hits(body)} == {"caption"}


def test_a_provider_outage_retries_the_document_and_records_nothing(
    stack: EmbeddedStack, fake_textract: FakeTextract
) -> None:
    # Given Textract down for longer than the client retries
    use_textract(stack, fake_textract)
    fake_textract.fail_next(50, 500, "InternalServerError")
    data = figure_docx(SAMPLE_FIGURES, intro=INTRO)
    # When the document is uploaded, Then ingest asks for a retry and records nothing
    result = stack.upload("acme/report.docx", data)
    assert result["status"] == "retry", result
    assert stack.container.ledger.get("acme", "acme/report.docx") is None
    # and once Textract is back, the figures are read
    fake_textract.faults.clear()
    assert stack.upload("acme/report.docx", data)["status"] == "indexed"
    _status, body = stack.search("Drying Bisque Glazing kiln", relevance_threshold=0)
    assert body["results"][0]["kind"] == "figure" and body["results"][0]["figure_text"] == "ocr"
