"""What an edit costs in Voyage tokens: change one section of a 100-page document, re-upload it, and
compare the tokens the re-index sent to Voyage with what embedding the whole document costs.

``python -m benchmarks.cost [--json] [--pages N] [--format markdown|pdf]``

The document is generated (deterministic, distinct text on every page: one section per page, ~350
words each) and ingested through the real ingest handler with the real ``VoyageEmbedder`` pointed at the
loopback ``FakeVoyageServer``, which counts tokens as Voyage bills them (successful requests only; the
fake counts whitespace-separated words as tokens, so the ratio, not the absolute number, is the figure).
Then one sentence of the middle section is reworded and a sentence added, the file is re-uploaded
under the same key, and the tokens of that re-index are counted. The whole-document figure is measured
in the same run: the edited file ingested under a new key, where nothing can be reused.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import Progress, positive_int, quiet_known_warnings, stdout_reserved_for_result, table
from benchmarks.stack import EmbeddedStack

GOAL_RATIO = 0.05
WORDS_PER_PAGE = 350
_SYLLABLES = tuple(
    [
        "ka",
        "ro",
        "mi",
        "ten",
        "sa",
        "lu",
        "vor",
        "el",
        "an",
        "is",
        "tra",
        "pel",
        "dor",
        "qui",
        "na",
        "bel",
        "ost",
        "fen",
        "gar",
        "hul",
        "im",
        "jo",
        "ket",
        "lam",
        "mor",
        "nis",
        "pra",
        "ru",
        "sel",
        "tor",
        "ul",
        "ven",
        "wes",
        "xa",
        "yor",
        "zel",
    ]
)
_EDIT = "This sentence was reworded in the second revision, and the policy now applies to everyone."
_ADDED = "A new requirement was added: every report must be reviewed by two people before release."


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3)))


def _sentence(rng: random.Random) -> str:
    words = [_word(rng) for _ in range(rng.randint(8, 18))]
    return " ".join(words).capitalize() + "."


def generate_sections(pages: int, seed: int = 20240601) -> list[tuple[str, list[str]]]:
    """``pages`` sections of distinct pseudo-text: (heading, paragraphs), about one page each."""
    rng = random.Random(seed)
    sections = []
    for number in range(1, pages + 1):
        heading = f"Section {number}: {_word(rng).capitalize()} {_word(rng)}"
        paragraphs, words = [], 0
        while words < WORDS_PER_PAGE:
            paragraph = " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))
            words += len(paragraph.split())
            paragraphs.append(paragraph)
        sections.append((heading, paragraphs))
    return sections


def edit_sections(sections: list[tuple[str, list[str]]], index: int) -> list[tuple[str, list[str]]]:
    """Reword the first sentence of section ``index``'s second paragraph and add one sentence to it."""
    edited = [(h, list(p)) for h, p in sections]
    heading, paragraphs = edited[index]
    target = 1 if len(paragraphs) > 1 else 0
    rest = paragraphs[target].split(". ", 1)
    paragraphs[target] = f"{_EDIT} {rest[1] if len(rest) > 1 else ''} {_ADDED}".strip()
    edited[index] = (heading, paragraphs)
    return edited


def to_markdown(title: str, sections: list[tuple[str, list[str]]]) -> bytes:
    parts = [f"# {title}"]
    for heading, paragraphs in sections:
        parts.append(f"## {heading}")
        parts.extend(paragraphs)
    return ("\n\n".join(parts) + "\n").encode("utf-8")


def to_pdf(title: str, sections: list[tuple[str, list[str]]]) -> bytes:
    """One section per page, with a bookmark per section (the parser takes sections from the outline)."""
    from io import BytesIO

    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Flowable, PageBreak, Paragraph, SimpleDocTemplate

    class Bookmark(Flowable):
        def __init__(self, key: str, text: str) -> None:
            super().__init__()
            self.key, self.text = key, text

        def wrap(self, *args: Any) -> tuple[float, float]:
            return (0, 0)

        def draw(self) -> None:
            self.canv.bookmarkPage(self.key)
            self.canv.addOutlineEntry(self.text, self.key, level=0)

    styles = getSampleStyleSheet()
    story: list[Any] = []
    for number, (heading, paragraphs) in enumerate(sections):
        story.append(Bookmark(f"s{number}", heading))
        story.append(Paragraph(heading, styles["Heading2"]))
        story.extend(Paragraph(p, styles["BodyText"]) for p in paragraphs)
        story.append(PageBreak())
    buffer = BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4, title=title).build(story)
    return buffer.getvalue()


def run(
    workdir: Path, pages: int = 100, fmt: str = "markdown", progress: Progress | None = None
) -> dict[str, Any]:
    from winnow_fakes.fake_voyage import FakeVoyageServer

    note = progress or Progress(quiet=True)
    title = "Operations manual"
    sections = generate_sections(pages)
    edited_sections = edit_sections(sections, len(sections) // 2)
    render = to_pdf if fmt == "pdf" else to_markdown
    suffix = ".pdf" if fmt == "pdf" else ".md"
    original, edited = render(title, sections), render(title, edited_sections)

    with FakeVoyageServer() as fake:
        env: dict[str, str | None] = {
            "WINNOW_EMBEDDER": "voyage",
            "WINNOW_RERANKER": "none",
            "VOYAGE_API_KEY": fake.api_key,
            "VOYAGE_API_KEY_SECRET_ARN": None,
            "VOYAGE_BASE_URL": fake.base_url,
        }
        with EmbeddedStack(workdir / "home", env=env) as stack:
            note(f"ingesting a {pages}-section {fmt} document, Voyage played by the fake")
            (first,) = stack.ingest([(f"manual{suffix}", original)])
            first_usage = fake.usage["embeddings"]
            fake.reset()
            (edit,) = stack.ingest([(f"manual{suffix}", edited)])
            edit_usage = fake.usage["embeddings"]
            fake.reset()
            (whole,) = stack.ingest([(f"manual-edited-fresh{suffix}", edited)])
            whole_usage = fake.usage["embeddings"]

    if edit["status"] != "indexed":
        raise RuntimeError(f"the edited upload was not re-indexed: {edit}")
    ratio = edit_usage.tokens / whole_usage.tokens if whole_usage.tokens else 0.0
    return {
        "format": fmt,
        "pages": pages,
        "document": {
            "bytes": len(edited),
            "chunks": int(whole["chunks"]),
            "tokens": whole_usage.tokens,
            "requests": whole_usage.requests,
        },
        "first_ingest": {"chunks_embedded": int(first["embedded"]), "tokens": first_usage.tokens},
        "edit": {
            "chunks_embedded": int(edit["embedded"]),
            "chunks_reused": int(edit["reused"]),
            "tokens": edit_usage.tokens,
            "requests": edit_usage.requests,
        },
        "ratio": round(ratio, 4),
        "goal": GOAL_RATIO,
        "goal_met": ratio <= GOAL_RATIO,
    }


def render_result(result: dict[str, Any]) -> str:
    doc, edit = result["document"], result["edit"]
    rows = [
        ["re-embed the whole document", str(doc["chunks"]), str(doc["tokens"]), "100.00%"],
        [
            "edit one section (Winnow re-index)",
            f"{edit['chunks_embedded']} (reused {edit['chunks_reused']})",
            str(edit["tokens"]),
            f"{100 * result['ratio']:.2f}%",
        ],
    ]
    verdict = "met" if result["goal_met"] else "NOT met"
    return "\n".join(
        [
            f"{result['pages']}-page {result['format']} document: {doc['bytes']} bytes, "
            f"{doc['chunks']} chunks",
            "",
            table(["what", "chunks embedded", "voyage tokens", "share"], rows),
            "",
            f"goal: an edit costs <= {100 * GOAL_RATIO:.0f}% of a full re-embed: "
            f"{100 * result['ratio']:.2f}% -> {verdict}",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--pages", type=positive_int, default=100, help="sections (pages) in the document")
    parser.add_argument("--format", choices=("markdown", "pdf"), default="markdown", help="document format")
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_known_warnings()
    with stdout_reserved_for_result(), tempfile.TemporaryDirectory(prefix="winnow-cost-") as tmp:
        result = run(Path(tmp), pages=args.pages, fmt=args.format, progress=Progress(quiet=args.quiet))
    print(json.dumps(result) if args.json else render_result(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
