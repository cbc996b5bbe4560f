"""The ingest figures add up: every chunk is either embedded or reused (a stored vector, or the vector of
an identical passage in the same document), and an unchanged re-ingest keeps the figures of the indexing
that produced the vectors."""

from __future__ import annotations

from typing import Any

from tests.support.stack import EmbeddedStack

NOTE = "## Safety note\n\n" + " ".join(
    f"Sentence {i} says to unplug the base station before opening its case." for i in range(60)
)
REPEATED = "# Manual\n\n" + "\n\n".join([NOTE, "## Setup\n\nPlug it in and wait for the light.", NOTE])


def ledger_line(stack: EmbeddedStack, key: str) -> dict[str, Any]:
    status, _, document = stack.api("GET", f"/documents/{key}")
    assert status == 200, document
    return dict(document)


def test_chunks_are_embedded_or_reused_and_an_unchanged_reingest_keeps_the_figures(
    stack: EmbeddedStack,
) -> None:
    first = stack.upload("acme/manual.md", REPEATED.encode())
    assert first["status"] == "indexed", first
    # The same passage twice: one embedding input, the second chunk reuses its vector
    assert first["embedded"] < first["chunks"]
    assert first["embedded"] + first["reused"] == first["chunks"]
    assert stack.embedded_texts() == first["embedded"]
    before = ledger_line(stack, "acme/manual.md")
    assert (before["embedded"], before["reused"]) == (first["embedded"], first["reused"])

    again = stack.upload("acme/manual.md", REPEATED.encode())
    assert again["status"] == "unchanged" and (again["embedded"], again["reused"]) == (0, first["chunks"])
    after = ledger_line(stack, "acme/manual.md")
    assert (after["embedded"], after["reused"]) == (before["embedded"], before["reused"])
