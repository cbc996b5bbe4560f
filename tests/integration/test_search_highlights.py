"""Highlights (issue 46, item 4): each result marks the sentences of its passage that best answer the
question, as offsets into its text, best first. Through the real ingest and search handlers: with the
local ONNX model (the embedded default), and with Voyage's loopback stand-in, where the query's keywords
pick the highlight and it costs no embeddings request (docs/api.md)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.support.stack import EmbeddedStack
from winnow.settings import SearchSettings
from winnow.text.segments import segments
from winnow_fakes.fake_voyage import FakeVoyageServer

MANUAL = """# Wget

## Retrying

Wget keeps trying when a download fails on the network. The tries option sets how many times a
download is retried; the default is twenty attempts. Connection refused and not found errors are not
retried. The waitretry option spaces the retries out, waiting one more second after each failure.

## Proxies

Wget reads its proxy from the http_proxy and https_proxy environment variables. The no_proxy variable
lists the domains reached without a proxy. Proxy credentials are given with the proxy-user option.

## Cookies

Cookies are kept in memory during one run. The save-cookies option writes them to a file at exit, and
load-cookies reads such a file at the next start. Session cookies are dropped unless asked for.
"""

# The answer is highlighted: first, or second within the margin of the best (all-MiniLM-L6-v2 ranks
# "Wget reads its proxy from http_proxy" a hair below "Proxy credentials are given with proxy-user").
QUESTIONS = {
    "what is the default number of tries?": "default is twenty attempts",
    "which environment variable names the proxy?": "http_proxy and https_proxy",
    "how do I save cookies to a file?": "save-cookies option writes them",
}


def assert_highlights_inside(result: dict[str, Any]) -> list[str]:
    """The result's highlighted sentences: inside its text, on segment bounds, never overlapping."""
    text = result["text"]
    bounds = {(s.start, s.end) for s in segments(text)}
    spans = [(h["start"], h["end"]) for h in result["highlight"]]
    assert spans, f"no highlight on {text[:60]!r}"
    for start, end in spans:
        assert 0 <= start < end <= len(text)
        assert (start, end) in bounds
    ordered = sorted(spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ordered))
    return [text[start:end] for start, end in spans]


def test_the_answering_sentence_is_highlighted_with_the_local_model(onnx_stack: EmbeddedStack) -> None:
    assert onnx_stack.upload("acme/wget.md", MANUAL.encode())["status"] == "indexed"
    for question, answer in QUESTIONS.items():
        status, body = onnx_stack.search(question, top_k=3, relevance_threshold=0)
        assert status == 200 and body["results"]
        for result in body["results"]:
            assert_highlights_inside(result)
        holding = [r for r in body["results"] if answer in r["text"]]
        assert holding, question
        assert any(answer in marked for marked in assert_highlights_inside(holding[0])), question


def test_with_voyage_highlights_cost_no_embeddings_request(stack: EmbeddedStack) -> None:
    assert stack.upload("acme/wget.md", MANUAL.encode())["status"] == "indexed"
    before = len(stack.fake.requests_to("embeddings"))  # type: ignore[union-attr]
    status, body = stack.search("how many times does wget retry?", top_k=2, relevance_threshold=0)
    assert status == 200 and body["results"]
    requests = stack.fake.requests_to("embeddings")[before:]  # type: ignore[union-attr]
    assert [r.body["input_type"] for r in requests] == ["query"]  # the keywords pick the highlight
    for result in body["results"]:
        assert_highlights_inside(result)
    holding = [r for r in body["results"] if "tries option" in r["text"]]
    assert any("tries option" in marked for marked in assert_highlights_inside(holding[0]))


def test_re_ranked_results_carry_highlights_too(rerank_stack: EmbeddedStack) -> None:
    assert rerank_stack.upload("acme/wget.md", MANUAL.encode())["status"] == "indexed"
    status, body = rerank_stack.search("proxy environment variable", top_k=3, relevance_threshold=0)
    assert status == 200 and body["results"]
    for result in body["results"]:
        assert_highlights_inside(result)


def test_a_model_that_orders_by_the_best_sentence_reads_every_candidate_once(stack: EmbeddedStack) -> None:
    from functions.search.app import service
    from winnow.search.relevance import LogisticModel, RelevanceModels

    assert stack.upload("acme/wget.md", MANUAL.encode())["status"] == "indexed"
    assert stack.upload("acme/other.md", MANUAL.replace("Wget", "Curl").encode())["status"] == "indexed"
    svc = service()
    profile = svc.embedder.profile.slug
    order = LogisticModel(("cosine", "segment", "segment_gap"), (1.0, 4.0, 4.0), 0.0)
    svc.models = RelevanceModels(profile=profile, modes={"hybrid": order}, threshold=0.0)
    before = len(stack.fake.requests_to("embeddings"))  # type: ignore[union-attr]
    status, body = stack.search("proxy environment variable", top_k=1, candidates=6)
    assert status == 200 and len(body["results"]) == 1
    requests = stack.fake.requests_to("embeddings")[before:]  # type: ignore[union-attr]
    assert [r.body["input_type"] for r in requests] == ["query", "document"]
    # every candidate's segments in the one call (more than the one result's), and nothing read again
    assert len(requests[1].body["input"]) > len(segments(body["results"][0]["text"]))
    assert_highlights_inside(body["results"][0])
    # the same search again: its segments' vectors come from the container's cache, for this tenant
    before = len(stack.fake.requests_to("embeddings"))  # type: ignore[union-attr]
    again_body = stack.search("proxy environment variable", top_k=1, candidates=6)[1]
    assert again_body["results"] == body["results"]
    again = stack.fake.requests_to("embeddings")[before:]  # type: ignore[union-attr]
    assert "document" not in [r.body["input_type"] for r in again]


def test_highlights_off_cost_no_embed_call(tmp_path: Path, fake_voyage: FakeVoyageServer) -> None:
    off = EmbeddedStack(tmp_path / "home", fake_voyage, search=SearchSettings(highlights=False))
    try:
        assert off.upload("acme/wget.md", MANUAL.encode())["status"] == "indexed"
        before = len(fake_voyage.requests_to("embeddings"))
        status, body = off.search("how many times does wget retry?", top_k=2, relevance_threshold=0)
        assert status == 200 and body["results"]
        requests = fake_voyage.requests_to("embeddings")[before:]
        assert [r.body["input_type"] for r in requests] == ["query"]
        assert all(r["highlight"] == [] for r in body["results"])
    finally:
        off.close()
