"""Passage shape per format: chunk length (p10, median, p90) and the share of passages that start or
end mid-sentence, over the long documents ``training.passage_corpus`` names (read from ``/usr/share``)
and a PDF without an outline generated here. Chunked exactly as the local default ingests them: the
shipped parser, the default chunking settings, fitted to the local model's 256-token window (its own
tokenizer when the model is installed, else the port's never-under-counting byte count).

**Starts mid-sentence**, precisely: a text passage (tables and figures are rows and captions, not
prose) whose first character is a lowercase letter, and whose preceding text in the document does not
end a sentence. The preceding text is what comes before the passage in the previous passage of the same
section (up to where this one begins inside it, when they overlap); it ends a sentence when, without
trailing whitespace and closing quotes or brackets, it ends in ``. ! ? … : ;`` (a colon or semicolon
ends what leads into a list or a sample). A passage that opens a section (another section path than the
passage before it) never starts mid-sentence: a heading ended what came before. Nor does a passage that
starts where the author started a paragraph, list item or definition-list entry: where one of the
parsed blocks starts, in every format whose paragraph breaks are in the source (blank lines, tags);
not in a PDF, whose paragraph breaks the parser infers from the lines' layout (a tar warning keyword
such as "xdev" starts an item, not a sentence; a PDF line after a page break may go on with one).
**Ends mid-sentence**: a text passage whose text, so stripped, does not end in one of those marks, a
closing bracket or a line of preformatted text, and whose next passage in the same section starts mid-
sentence by the rule above (so a list item or a heading line at the end of a passage does not count).

    python -m training.chunk_report [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from training.passage_corpus import render, sources, upload_name

_ENDS = (".", "!", "?", "\u2026", ":", ";")
_CLOSERS = "\"')]}\u201d\u2019\u00bb*"
_OVERLAP_PROBE = 60  # characters of a passage's start looked for inside the passage before it
_WINDOW = 256  # the local model's input window in tokens
_START_PROBE = 40  # characters of a passage's start compared with the blocks' starts


def ends_sentence(text: str) -> bool:
    """Whether ``text`` (what precedes a passage) ends a sentence."""
    stripped = text.rstrip().rstrip(_CLOSERS).rstrip()
    return not stripped or stripped.endswith(_ENDS)


def preceding_text(previous: str, current: str) -> str:
    """What precedes ``current`` in the document, read from the passage before it: up to where
    ``current`` begins inside ``previous`` when the two overlap, else all of ``previous``."""
    probe = current[:_OVERLAP_PROBE]
    at = previous.find(probe) if len(probe) >= 20 else -1  # a shorter probe matches anywhere
    return previous[:at] if at > 0 else previous


def starts_mid_sentence(previous: Any | None, chunk: Any, starts: frozenset[str] = frozenset()) -> bool:
    """The rule in the module docstring; ``previous`` is the passage before ``chunk`` (None: the first),
    ``starts`` the author's paragraph starts (``block_starts``)."""
    text = chunk.text.lstrip()
    if chunk.kind != "text" or not text or not text[0].islower() or text[:_START_PROBE] in starts:
        return False
    if previous is None or previous.section_path != chunk.section_path or previous.kind != "text":
        return False
    return not ends_sentence(preceding_text(previous.text, chunk.text))


def block_starts(parsed: Any) -> frozenset[str]:
    """The first characters of each block of a parsed document whose paragraph breaks are the author's
    (every format but PDF): a passage starting with them starts a paragraph, an item or an entry."""
    if parsed.source_type == "pdf":
        return frozenset()
    return frozenset(block.text.strip()[:_START_PROBE] for block in parsed.blocks)


def ends_mid_sentence(chunk: Any, following: Any | None, starts: frozenset[str] = frozenset()) -> bool:
    return (
        following is not None
        and starts_mid_sentence(chunk, following, starts)
        and not chunk.text.rstrip().rstrip(_CLOSERS).endswith(_ENDS)
    )


def percentile(ordered: Sequence[int], share: float) -> int:
    """Nearest-rank percentile of sorted values."""
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def shape(documents: Sequence[tuple[Sequence[Any], frozenset[str]]]) -> dict[str, float]:
    """Counts and lengths of one format's passages (text passages only for the mid-sentence shares):
    each document's chunks with its paragraph starts."""
    chunks = [chunk for document, _ in documents for chunk in document]
    lengths = sorted(len(chunk.text) for chunk in chunks)
    text_count = starts = ends = 0
    for document, paragraph_starts in documents:
        for index, chunk in enumerate(document):
            if chunk.kind != "text":
                continue
            text_count += 1
            previous = document[index - 1] if index else None
            following = document[index + 1] if index + 1 < len(document) else None
            starts += starts_mid_sentence(previous, chunk, paragraph_starts)
            ends += ends_mid_sentence(chunk, following, paragraph_starts)
    return {
        "chunks": len(chunks),
        "p10": percentile(lengths, 0.1) if lengths else 0,
        "median": statistics.median(lengths) if lengths else 0,
        "p90": percentile(lengths, 0.9) if lengths else 0,
        "starts_mid_sentence": round(100 * starts / text_count, 1) if text_count else 0.0,
        "ends_mid_sentence": round(100 * ends / text_count, 1) if text_count else 0.0,
    }


def token_counter() -> tuple[Callable[[Sequence[str]], list[int]], str]:
    """The local model's own token count when it is installed, else the port's byte count."""
    try:
        from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder

        embedder = LocalOnnxEmbedder()
        embedder.count_tokens(["probe"])
        return embedder.count_tokens, "the local model's tokenizer"
    except Exception:  # no model on this machine: the port's upper bound
        from winnow.ports import Embedder

        return lambda texts: Embedder.count_tokens(None, texts), "bytes + 4 (no local model)"  # type: ignore[arg-type]


def generated_documents() -> list[tuple[str, str, bytes]]:
    """(name, format, bytes) of the documents this report makes itself: the corpus's PDFs with their
    outline (bookmarks) taken out, as a PDF exported without bookmarks is, so their sections can only
    come from their layout."""
    from pypdf import PdfReader, PdfWriter

    made = []
    for source in sources():
        data = render(source) if source.format == "pdf" else None
        if data is None:
            continue
        writer = PdfWriter()
        for page in PdfReader(io.BytesIO(data)).pages:
            writer.add_page(page)
        out = io.BytesIO()
        writer.write(out)
        made.append((source.name.replace(".pdf", "-no-outline.pdf"), "pdf without outline", out.getvalue()))
    return made


def measure() -> dict[str, Any]:
    from winnow.parsing import parse_document
    from winnow.settings import ChunkingSettings
    from winnow.text.chunking import chunk_to_fit

    count, counter_name = token_counter()
    settings = ChunkingSettings()
    by_format: dict[str, list[tuple[list[Any], frozenset[str]]]] = defaultdict(list)
    used: list[str] = []
    documents = [(upload_name(s), s.format, render(s)) for s in sources()]
    for name, fmt, data in [*documents, *generated_documents()]:
        if data is None:
            continue
        parsed = parse_document(f"report/{name}", data)
        by_format[fmt].append((chunk_to_fit(parsed, settings, count, _WINDOW), block_starts(parsed)))
        used.append(name)
    return {
        "documents": used,
        "tokens": counter_name,
        "formats": {fmt: shape(documents) for fmt, documents in sorted(by_format.items())},
    }


def table(result: dict[str, Any]) -> str:
    head = ["format", "passages", "p10", "median", "p90", "start mid-sentence %", "end mid-sentence %"]
    rows = [
        [fmt, s["chunks"], s["p10"], s["median"], s["p90"], s["starts_mid_sentence"], s["ends_mid_sentence"]]
        for fmt, s in result["formats"].items()
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = measure()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{len(result['documents'])} documents; tokens counted with {result['tokens']}")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
