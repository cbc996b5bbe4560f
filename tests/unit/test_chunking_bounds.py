"""Chunking is linear in the text and stops at the chunk cap (issue 31, items 2 and 7).

Markdown alternating ``# a`` / ``w`` / ``# b`` / ``w`` parses in well under a second, but the merge of
tiny sections once rescanned the rest of the document for every fragment: 60 KB took 8.5 s, 240 KB
101 s. The growth test counts the lines of winnow's code run to chunk n and 4n sections, a measure of
work no clock or busy machine changes: linear work runs about 4x the lines (measured: 3.96x), the
quadratic merge 14x (measured on the code before the fix, f4fbb48^). The cap tests count the blocks read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

import pytest

import winnow
from winnow.errors import OversizedDocument
from winnow.models import Block, ParsedDocument
from winnow.parsing import parse_document
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document, chunk_to_fit


def _alternating_sections(sections: int) -> ParsedDocument:
    text = "".join(f"# {'ab'[i % 2]}\nw\n" for i in range(sections))
    return parse_document("t/alternating.md", text.encode("utf-8"))


_WINNOW = str(Path(winnow.__file__).parent)


def _lines_run_to_chunk(doc: ParsedDocument) -> int:
    """How many lines of winnow's code run while the document is chunked (line events of a tracer that
    follows winnow's frames only)."""
    lines = 0

    def count(frame: FrameType, event: str, arg: object) -> Callable[..., object] | None:
        nonlocal lines
        if event == "line":
            lines += 1
        return count

    def follow(frame: FrameType, event: str, arg: object) -> Callable[..., object] | None:
        return count if frame.f_code.co_filename.startswith(_WINNOW) else None

    sys.settrace(follow)
    try:
        chunk_document(doc)
    finally:
        sys.settrace(None)
    return lines


@pytest.mark.parametrize(
    "make",
    [
        _alternating_sections,
        # tiny fragments, each the end of a run of its section after a full chunk: the backward-fold check
        lambda n: ParsedDocument(
            title="t",
            blocks=[
                block
                for i in range(n // 4)
                for block in (Block("x " * 600, (f"s{i}",)), Block("tail", (f"s{i}",)), Block("y", ("z",)))
            ]
            + [Block("w", (f"t{i % 2}",)) for i in range(n)],
            source_type="text",
        ),
    ],
    ids=["alternating headings", "tiny tails"],
)
def test_chunking_time_grows_linearly_with_tiny_sections(make: object) -> None:
    # Given documents of n and 4n tiny sections (about 6 KB and 25 KB of markdown)
    assert callable(make)
    small, large = make(1_000), make(4_000)
    # When each is chunked
    small_lines, large_lines = _lines_run_to_chunk(small), _lines_run_to_chunk(large)
    # Then four times the sections take about four times the work, not sixteen
    assert large_lines <= 6 * small_lines, f"{small_lines:,} lines run -> {large_lines:,}"


class _CountedBlocks(Sequence[Block]):
    """A document's blocks that count how many the chunker has read."""

    def __init__(self, blocks: list[Block]) -> None:
        self._blocks = blocks
        self.read = 0

    def __iter__(self) -> Iterator[Block]:
        for block in self._blocks:
            self.read += 1
            yield block

    def __len__(self) -> int:
        return len(self._blocks)

    def __getitem__(self, index: int) -> Block:  # type: ignore[override]
        self.read += 1
        return self._blocks[index]


def _paragraph(n: int) -> str:
    return f"Section {n} explains one rule of the handbook in a sentence long enough to stand alone. " * 8


def test_chunking_stops_as_soon_as_the_cap_is_passed() -> None:
    # Given a document of 100,000 sections, each a passage of its own
    blocks = _CountedBlocks([Block(_paragraph(n), (f"Rule {n}",)) for n in range(100_000)])
    doc = ParsedDocument(title="Handbook", blocks=blocks, source_type="text")  # type: ignore[arg-type]
    # When it is chunked with a cap of 50 chunks
    with pytest.raises(OversizedDocument) as refused:
        chunk_document(doc, ChunkingSettings(), max_chunks=50)
    # Then it is refused with the one-line reason, having read only the first few sections
    assert str(refused.value) == "more than 50 chunks, over the 50 limit"
    assert blocks.read <= 60


def test_a_document_at_the_cap_is_chunked_whole() -> None:
    # Given a document of exactly 50 passages
    doc = ParsedDocument(
        title="Handbook", blocks=[Block(_paragraph(n), (f"Rule {n}",)) for n in range(50)], source_type="text"
    )
    # When it is chunked with a cap of 50 chunks, it keeps all 50
    assert len(chunk_document(doc, ChunkingSettings(), max_chunks=50)) == 50


def test_a_one_paragraph_text_over_the_cap_stops_inside_the_paragraph() -> None:
    # Given one paragraph of 2 MB (a long block is split into pieces as it goes)
    text = " ".join(f"Sentence {n} of a very long paragraph that never ends." for n in range(40_000))
    doc = ParsedDocument(title="Long", blocks=[Block(text, ())], source_type="text")
    # When it is chunked with a cap of 20 chunks, it is refused
    with pytest.raises(OversizedDocument, match="more than 20 chunks"):
        chunk_document(doc, ChunkingSettings(), max_chunks=20)


class _TokenCounter:
    """Counts tokens as whitespace-separated words, and records how many texts each call was given."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, texts: Sequence[str]) -> list[int]:
        self.calls.append(len(texts))
        return [len(text.split()) for text in texts]


def test_fitting_to_the_window_refuses_over_the_cap_before_counting_a_token() -> None:
    # Given a document of 5,000 passages, and a cap of 1,000 chunks
    doc = ParsedDocument(
        title="H", blocks=[Block(_paragraph(n), (f"R{n}",)) for n in range(5_000)], source_type="text"
    )
    counter = _TokenCounter()
    # When it is chunked to fit a window, it is refused and no token was counted
    with pytest.raises(OversizedDocument, match="more than 1000 chunks, over the 1000 limit"):
        chunk_to_fit(doc, ChunkingSettings(), counter, 256, max_chunks=1_000)
    assert counter.calls == []


def test_tokens_are_counted_a_bounded_batch_at_a_time() -> None:
    # Given a document of 3,000 passages under the cap
    doc = ParsedDocument(
        title="H", blocks=[Block(_paragraph(n), (f"R{n}",)) for n in range(3_000)], source_type="text"
    )
    counter = _TokenCounter()
    # When it is chunked to fit a window
    chunks = chunk_to_fit(doc, ChunkingSettings(), counter, 256, max_chunks=20_000)
    # Then every chunk was counted, never more than 256 at once
    assert len(chunks) == 3_000
    assert sum(counter.calls) == 3_000
    assert max(counter.calls) <= 256
