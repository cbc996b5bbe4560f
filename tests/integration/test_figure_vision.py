"""Figures described by a vision model through the real adapters: Bedrock Converse (boto3 against the
loopback fake runtime, SigV4 and all) and Ollama's chat (httpx against the loopback fake), driven by the
real ingest and search handlers. The fakes check the image blocks; the descriptions are scripted."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.answer import bedrock_settings, ollama_settings
from tests.support.figure_docs import (
    CHART,
    DIAGRAM,
    INTRO,
    PHOTO,
    SAMPLE_FIGURES,
    draw_figure,
    figure_docx,
    png,
)
from tests.support.stack import EmbeddedStack
from winnow.adapters.bedrock import BedrockGenerator
from winnow.adapters.ollama import OllamaGenerator
from winnow.models import ObjectEvent
from winnow.settings import FigureSettings, OcrSettings
from winnow_fakes.fake_bedrock import FakeBedrockServer
from winnow_fakes.fake_model import ModelFault
from winnow_fakes.fake_ollama import FakeOllamaServer
from winnow_fakes.fake_voyage import FakeVoyageServer

HARBOUR = "Seven blue trawlers named Gaivota, Estrela and Mar Alto tied to a stone quay under red cliffs."


@pytest.fixture
def vision_stack(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fake_bedrock: FakeBedrockServer
) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    stack.container.settings.ocr = OcrSettings(engine="none")
    stack.container.ocr = None  # type: ignore[misc]
    use_bedrock(stack, fake_bedrock)
    yield stack
    stack.close()


def use_bedrock(stack: EmbeddedStack, fake: FakeBedrockServer, **figures: int) -> None:
    settings = FigureSettings(vision="bedrock", bedrock_model_id="amazon.nova-lite-v1:0", **figures)
    stack.container.settings.figures = settings
    answer = bedrock_settings(fake, bedrock_model_id=settings.bedrock_model_id)
    stack.container.vision = BedrockGenerator(answer)  # type: ignore[misc]


def test_bedrock_describes_each_figure_and_the_description_is_searchable(
    vision_stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    # Given a vision model that describes the three figures, in order
    fake_bedrock.script("A bar chart of riders.", "A flow of three boxes.", HARBOUR)
    # When a DOCX with them is uploaded
    assert (
        vision_stack.upload("acme/report.docx", figure_docx(SAMPLE_FIGURES, intro=INTRO))["status"]
        == "indexed"
    )
    # Then each figure went to the model once, as a PNG image block beside its caption
    requests = fake_bedrock.converse_requests()
    assert len(requests) == 3
    content = requests[2].body["messages"][0]["content"]
    image = next(block["image"] for block in content if "image" in block)
    assert image["format"] == "png" and base64.b64decode(image["source"]["bytes"]) == png(draw_figure(PHOTO))
    assert PHOTO.caption in next(block["text"] for block in content if "text" in block)
    # and a question only the description answers finds the photo, marked as described by vision
    status, body = vision_stack.search("trawlers named Gaivota tied to a quay", relevance_threshold=0)
    top = body["results"][0]
    assert status == 200 and top["kind"] == "figure" and top["figure_text"] == "vision"
    assert top["text"].startswith(PHOTO.caption) and HARBOUR in top["text"]


def test_vision_calls_and_tokens_are_bounded_and_counted_per_document(
    vision_stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    # Given at most two vision calls per document
    use_bedrock(vision_stack, fake_bedrock, max_calls=2)
    fake_bedrock.script("A bar chart of riders.", "A flow of three boxes.", HARBOUR)
    # When three figures come
    result = vision_stack.container.ingest_service().handle(_event(vision_stack, "acme/report.docx"))
    # Then two were described and counted, and the third keeps its caption
    assert len(fake_bedrock.converse_requests()) == 2
    assert result.status == "indexed" and result.vision_calls == 2 and result.vision_tokens > 0
    record = vision_stack.container.ledger.get("acme", "acme/report.docx")
    assert record is not None and (record.vision_calls, record.vision_tokens) == (2, result.vision_tokens)
    _status, body = vision_stack.search("harbour", relevance_threshold=0, filters={"kind": "figure"}, top_k=9)
    kinds = {hit["text"].split("\n")[0]: hit["figure_text"] for hit in body["results"]}
    assert kinds == {CHART.caption: "vision", DIAGRAM.caption: "vision", PHOTO.caption: "caption"}


def test_a_permanent_refusal_keeps_the_caption_and_an_outage_retries_the_document(
    vision_stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    data = figure_docx([CHART], intro=INTRO)
    # Given the model refusing for good (access denied), When the document is uploaded
    fake_bedrock.inject(ModelFault("status", status=403, error_type="AccessDeniedException"))
    # Then it is indexed, the figure with its caption
    assert vision_stack.upload("acme/chart.docx", data)["status"] == "indexed"
    _status, body = vision_stack.search("tram ridership", relevance_threshold=0, filters={"kind": "figure"})
    assert body["results"][0]["figure_text"] == "caption"
    # Given the model down for longer than the adapter retries, When another document comes
    fake_bedrock.set_outage(ModelFault("status", status=503))
    # Then ingest asks for a retry and records nothing
    assert vision_stack.upload("acme/other.docx", data)["status"] == "retry"
    assert vision_stack.container.ledger.get("acme", "acme/other.docx") is None
    fake_bedrock.set_outage(None)
    fake_bedrock.script("A bar chart of riders per city.")
    assert vision_stack.upload("acme/other.docx", data)["status"] == "indexed"


def test_ollama_vision_model_gets_the_image(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fake_ollama: FakeOllamaServer
) -> None:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    try:
        stack.container.settings.ocr = OcrSettings(engine="none")
        stack.container.ocr = None  # type: ignore[misc]
        answer = ollama_settings(fake_ollama)
        figures = FigureSettings(ollama_model="llava")
        assert figures.chosen(answer) == "ollama"
        stack.container.settings.figures = figures
        stack.container.vision = OllamaGenerator(answer.model_copy(update={"ollama_model": "llava"}))  # type: ignore[misc]
        fake_ollama.models.add("llava")  # a vision model the fake server has "pulled"
        fake_ollama.script(HARBOUR)
        assert stack.upload("acme/photo.docx", figure_docx([PHOTO], intro=INTRO))["status"] == "indexed"
        (request,) = [r for r in fake_ollama.requests if r.path == "/api/chat"]
        user = next(m for m in request.body["messages"] if m["role"] == "user")
        assert request.body["model"] == "llava"
        assert base64.b64decode(user["images"][0]) == png(draw_figure(PHOTO))
        _status, body = stack.search("trawlers named Gaivota", relevance_threshold=0)
        assert body["results"][0]["figure_text"] == "vision", body["results"]
    finally:
        fake_ollama.models.discard("llava")
        stack.close()


def _event(stack: EmbeddedStack, key: str) -> ObjectEvent:
    stack.put_object(key, figure_docx(SAMPLE_FIGURES, intro=INTRO))
    _, _, size, etag, sequencer = stack.created_record(key)
    return ObjectEvent("created", stack.bucket, key, sequencer, etag, None, size, "ObjectCreated:Put")
