"""A result's context (``context`` in the request): the text before and after it in its document, through
the real search and answer handlers on the embedded Qdrant engines. What is expected is read off the
generated document itself (its sections, in order), never off the service."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_access import claims
from tests.support.answer import bedrock_settings
from tests.support.stack import EmbeddedStack
from winnow.access import Caller
from winnow.ports import ChunkPlace
from winnow.search.context import CONTEXT_CHARS
from winnow.settings import SearchSettings
from winnow_fakes.fake_bedrock import FakeBedrockServer
from winnow_fakes.fake_voyage import FakeVoyageServer

FILLER = "the committee reviewed each point of the procedure with the usual care and noted the outcome"


def paragraph(marker: str, words: int) -> str:
    """``words`` filler words with ``marker`` first and then every 12 words: a run of plain sentences."""
    out = []
    for i, word in zip(range(words), itertools.cycle(FILLER.split(" ")), strict=False):
        out.append(marker if i % 12 == 0 else word)
    return " ".join(out) + "."


# Sections in order; "Delta" is long enough to become several chunks, each with its own marker.
SECTIONS = [
    ("Alpha", paragraph("harbour", 40)),
    ("Beta", paragraph("glacier", 40)),
    ("Gamma", paragraph("orchard", 40)),
    ("Delta", " ".join(paragraph(m, 190) for m in ("turbine", "lantern", "meadow"))),
    ("Epsilon", paragraph("quarry", 40)),
]
MANUAL = ("# Manual\n\n" + "".join(f"## {name}\n\n{text}\n\n" for name, text in SECTIONS)).encode()
KEY = "acme/manual.md"


@pytest.fixture
def manual(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    assert stack.upload(KEY, MANUAL)["status"] == "indexed"
    yield stack
    stack.close()


def best(stack: EmbeddedStack, word: str, **fields: Any) -> dict[str, Any]:
    """The one result of a keyword search for ``word`` (threshold 0: this test is not about scores)."""
    status, body = stack.search(word, mode="sparse", top_k=1, relevance_threshold=0.0, **fields)
    assert status == 200, body
    (result,) = body["results"]
    assert word in result["text"]
    return dict(result)


def test_without_context_a_result_carries_none(manual: EmbeddedStack) -> None:
    assert best(manual, "glacier")["context"] is None
    assert best(manual, "glacier", context="none")["context"] is None


def test_neighbours_are_the_chunks_before_and_after_in_the_document(manual: EmbeddedStack) -> None:
    result = best(manual, "glacier", context="neighbours")
    assert result["section"] == "Beta"
    before, after = result["context"]["before"], result["context"]["after"]
    # The section before (Alpha) and the one after (Gamma), each whole: they are shorter than the bound
    assert "harbour" in before and "glacier" not in before and "orchard" not in before
    assert "orchard" in after and "glacier" not in after and "harbour" not in after
    assert SECTIONS[0][1] in before and SECTIONS[2][1] in after


def test_the_first_chunk_has_nothing_before_and_the_last_nothing_after(manual: EmbeddedStack) -> None:
    first = best(manual, "harbour", context="neighbours")
    assert first["context"]["before"] in ("", "Manual")  # at most the document's title heading
    assert "glacier" in first["context"]["after"]
    last = best(manual, "quarry", context="neighbours")
    assert last["context"]["after"] == ""
    assert "meadow" in last["context"]["before"]


def test_each_side_is_bounded_and_cut_at_a_word(manual: EmbeddedStack) -> None:
    # The Delta chunk after Gamma is longer than the bound: its head comes back, cut between words
    result = best(manual, "orchard", context="neighbours")
    after = result["context"]["after"]
    assert 0 < len(after) <= CONTEXT_CHARS
    delta = SECTIONS[3][1]
    assert delta.startswith(after) and delta[len(after)] == " "
    # The whole response stays bounded: every side of every result at most CONTEXT_CHARS
    status, body = manual.search("committee procedure", top_k=8, relevance_threshold=0.0, context="section")
    assert status == 200 and body["results"]
    for r in body["results"]:
        assert len(r["context"]["before"]) <= CONTEXT_CHARS and len(r["context"]["after"]) <= CONTEXT_CHARS


def test_section_context_stays_inside_the_results_section(manual: EmbeddedStack) -> None:
    # The middle chunk of Delta: its context is the rest of Delta, never Gamma or Epsilon
    result = best(manual, "lantern", context="section")
    assert result["section"] == "Delta"
    before, after = result["context"]["before"], result["context"]["after"]
    assert "orchard" not in before and "quarry" not in after
    assert ("turbine" in before) or ("turbine" in result["text"])
    assert ("meadow" in after) or ("meadow" in result["text"])
    # A one-chunk section has no context of its own
    alone = best(manual, "glacier", context="section")
    assert alone["context"] == {"before": "", "after": ""}


def test_context_follows_the_current_version_of_a_document(manual: EmbeddedStack) -> None:
    # Given the manual re-uploaded with Gamma rewritten
    rewritten = MANUAL.replace(SECTIONS[2][1].encode(), paragraph("saffron", 40).encode())
    assert manual.upload(KEY, rewritten)["status"] == "indexed"
    # Then Beta's neighbour after is the new Gamma, not the old one
    after = best(manual, "glacier", context="neighbours")["context"]["after"]
    assert "saffron" in after and "orchard" not in after


def test_neighbours_are_read_only_where_the_caller_may_read(manual: EmbeddedStack) -> None:
    # The store call behind context, asked by a caller outside the document's access list, finds nothing
    store = manual.container.store
    scope = Caller("acme", user="eve").scope(True)  # DefaultAccess=deny: eve reads no unlisted document
    everything = Caller("acme", is_admin=True).scope(True)
    places = [ChunkPlace(KEY, None, (0, 1, 2))]
    assert store.chunks_at("acme", scope, places) == []
    assert sorted(c.chunk_index for c in store.chunks_at("acme", everything, places)) == [0, 1, 2]
    # And never another tenant's chunks, whatever the key
    assert store.chunks_at("globex", everything, places) == []


def test_a_restricted_documents_context_reaches_only_its_readers(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, search=SearchSettings(default_access="deny"))
    try:
        assert stack.upload(KEY, MANUAL, {"winnow-access": '{"users":["ann"],"groups":[]}'})["status"] == (
            "indexed"
        )
        body = {"mode": "sparse", "top_k": 1, "relevance_threshold": 0.0, "context": "neighbours"}
        status, found = stack.search("glacier", claims=claims("ann"), **body)
        assert status == 200 and "orchard" in found["results"][0]["context"]["after"]
        status, found = stack.search("glacier", claims=claims("bob"), **body)
        assert status == 200 and found["results"] == []
    finally:
        stack.close()


def test_bad_context_is_a_422_naming_the_choices(manual: EmbeddedStack) -> None:
    status, body = manual.search("glacier", context="paragraph")
    assert status == 422
    assert "context" in body["error"]["message"] and "neighbours" in body["error"]["message"]


def test_the_answer_model_reads_the_context_by_default(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fake_bedrock: FakeBedrockServer
) -> None:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    stack.container.settings.answer = bedrock_settings(fake_bedrock)
    try:
        assert stack.upload(KEY, MANUAL)["status"] == "indexed"
        fields = {"query": "glacier", "mode": "sparse", "top_k": 1, "relevance_threshold": 0.0}
        status, _, body = stack.api("POST", "/answer", fields)
        assert status == 200, body
        (result,) = body["results"]
        assert "orchard" in result["context"]["after"]
        prompt = fake_bedrock.converse_requests()[-1].body
        user = "\n".join(b["text"] for b in prompt["messages"][0]["content"])
        assert "<after>" in user and SECTIONS[2][1] in user and SECTIONS[0][1] in user
        # Asked for none, the model reads the passage alone
        status, _, body = stack.api("POST", "/answer", {**fields, "context": "none"})
        assert status == 200 and body["results"][0]["context"] is None
        prompt = fake_bedrock.converse_requests()[-1].body
        user = "\n".join(b["text"] for b in prompt["messages"][0]["content"])
        assert "<after>" not in user and SECTIONS[2][1] not in user
    finally:
        stack.close()
