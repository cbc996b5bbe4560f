"""Figures as passages (issue 27): can a question answered only by a figure find it, how many false figures
do real files give, and what does reading figures cost at ingest?

``python -m benchmarks.figures [--documents N] [--json]``

- **Corpus** (generated, content known): N documents per format (PDF, DOCX, PPTX, HTML), each with a bar
  chart, a labelled diagram and a captioned photo (``tests.support.figure_docs``) beside a logo, a bullet
  and a rule, every label and caption drawn from word lists so that each figure's words occur in no
  other figure and never in the documents' running text.
- **Questions**: per chart two of its bar labels and its title's first word; per diagram two of its box
  labels; per photo the caption's distinctive words. A hit is the figure's own passage (``kind:
  "figure"`` of that document, starting with that caption) in the top 3 (hybrid, threshold 0), through
  the real ingest and search handlers on the embedded default (ONNX MiniLM, Qdrant Edge).
- **Modes**: OCR + caption (tesseract) and caption only (OCR off). That a vision model's descriptions
  reach the index is a test's business (``tests/integration/test_figure_vision.py``), not a figure.
- **False figures**: figures found in the PDF, HTML, DOCX, PPTX and EPUB files under /usr/share (this
  machine's packages), with local OCR: each is listed, so the count can be judged.
- **Ingest time**: the same corpus with figures off (``WINNOW_INGEST_MAX_FIGURES=0``) and on (OCR), in
  the same run.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import stdout_reserved_for_result
from tests.support.figure_docs import (
    INTRO,
    FigureSpec,
    figure_docx,
    figure_html,
    figure_pdf,
    figure_pptx,
)

TOP = 3
_WORD_TEXT = (
    "amber basalt cedar dahlia ember fjord garnet harbor indigo juniper kestrel lagoon magnet nectar "
    "onyx pylon quartz raven saffron tundra umber velvet walnut xenon yarrow zephyr anvil bramble "
    "cobalt dune falcon glacier hazel iris jasper kelp lotus marble nimbus orchid pebble quill rustic "
    "sequoia thistle umbra vortex willow yucca alder birch cypress drift elm fennel ginger heron ivy "
    "jade kiwi larch mango nutmeg olive plume quince reed sage tulip urchin violet wren yew acorn bison "
    "canyon delta egret fig gull hemlock ibis jackal koala lynx moose newt otter panda quail robin seal "
    "tapir viper walrus zebra"
)
_WORDS = tuple(_WORD_TEXT.split())
FORMATS = {"pdf": "pdf", "docx": "docx", "pptx": "pptx", "html": "html"}


def corpus(documents: int, seed: int = 27) -> tuple[list[tuple[str, bytes]], list[dict[str, Any]]]:
    """(files, questions): ``documents`` files per format, three figures each, and one question per
    figure with the document and caption that answer it. Labels are capitalised words, unique per run."""
    rng = random.Random(seed)
    pool = [word.capitalize() for word in _WORDS]
    rng.shuffle(pool)
    used: set[str] = set()

    def fresh() -> str:
        """A word of the list not used yet, then made-up words of three syllables (Kavoren)."""
        while pool:
            word = pool.pop()
            used.add(word)
            return word
        while True:
            word = "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(3)).capitalize()
            if word not in used:
                used.add(word)
                return word

    files: list[tuple[str, bytes]] = []
    questions: list[dict[str, Any]] = []
    number = 0
    for extension in FORMATS:
        for index in range(documents):
            number += 1
            chart_labels = tuple(fresh() for _ in range(4))
            chart = FigureSpec(
                "chart",
                f"{fresh()} shipments by port",
                chart_labels,
                caption=f"Figure 1: Shipments in report {number}",
                values=tuple(rng.randint(10, 90) for _ in range(4)),
            )
            diagram = FigureSpec(
                "diagram",
                f"Process {number}",
                tuple(fresh() for _ in range(3)),
                caption=f"Figure 2: Process of report {number}",
            )
            photo_words = (fresh(), fresh())
            photo = FigureSpec(
                "photo",
                f"photo {number}",
                (),
                caption=f"Figure 3: {photo_words[0]} moored beside {photo_words[1]} at dawn",
            )
            specs = (chart, diagram, photo)
            name = f"report-{number:03d}.{extension}"
            files.append((name, _build(extension, specs, number)))
            questions += [
                {"query": f"{chart.title.split()[0]} {chart_labels[0]} {chart_labels[2]}", "spec": chart},
                {"query": f"{diagram.labels[0]} {diagram.labels[2]}", "spec": diagram},
                {"query": f"{photo_words[0]} {photo_words[1]}", "spec": photo},
            ]
            for question in questions[-3:]:
                question.update(name=name, caption=question["spec"].caption, kind=question["spec"].kind)
            del index
    return files, questions


def _build(extension: str, specs: tuple[FigureSpec, ...], number: int) -> bytes:
    title = f"Regional report {number}"
    if extension == "pdf":
        return figure_pdf(specs, intro=INTRO, title=title)
    if extension == "docx":
        return figure_docx(specs, intro=INTRO, title=title)
    if extension == "pptx":
        return figure_pptx(specs, title=title)
    return figure_html(specs, intro=INTRO, title=title)


def ingest_and_ask(
    files: list[tuple[str, bytes]],
    questions: list[dict[str, Any]],
    env: dict[str, str | None],
) -> dict[str, Any]:
    """Ingest the corpus on a fresh embedded stack, then ask every question; hit@3 per kind and time."""
    from benchmarks.stack import EmbeddedStack

    with tempfile.TemporaryDirectory() as home, EmbeddedStack(Path(home), env=env) as stack:
        started = time.perf_counter()
        for name, data in files:  # one at a time, in document order
            stack.ingest([(name, data)])
        ingest_seconds = time.perf_counter() - started
        by_kind: dict[str, list[bool]] = {}
        for question in questions:
            results = stack.results(
                stack.search_event(question["query"], "hybrid", top_k=TOP, candidates=None)
            )
            hit = any(
                result["kind"] == "figure"
                and result["key"] == stack.key_for(question["name"])
                and result["text"].startswith(question["caption"])
                for result in results[:TOP]
            )
            by_kind.setdefault(question["kind"], []).append(hit)
    rates = {kind: sum(hits) / len(hits) for kind, hits in by_kind.items()}
    every = [hit for hits in by_kind.values() for hit in hits]
    return {
        "hit_at_3": sum(every) / len(every),
        "hit_at_3_by_kind": rates,
        "questions": len(every),
        "ingest_seconds": round(ingest_seconds, 2),
    }


def shipped_figures(root: Path = Path("/usr/share"), limit: int = 400) -> dict[str, Any]:
    """Figures found in the documents this machine's packages ship, read with local OCR."""
    from winnow.adapters.ocr import TesseractOcr, tesseract_installed
    from winnow.errors import DocumentError
    from winnow.parsing import parse_document
    from winnow.settings import OcrSettings

    suffixes = {".pdf", ".html", ".htm", ".docx", ".pptx", ".epub"}
    paths = sorted(p for p in root.rglob("*") if p.suffix.lower() in suffixes and p.is_file())[:limit]
    ocr = TesseractOcr(OcrSettings()) if tesseract_installed() else None
    found: list[dict[str, Any]] = []
    parsed = 0
    for path in paths:
        try:
            document = parse_document(path.name, path.read_bytes(), ocr=ocr, ocr_settings=OcrSettings())
        except DocumentError:
            continue
        parsed += 1
        for block in document.blocks:
            if block.figure is not None:
                found.append(
                    {
                        "file": str(path),
                        "page": block.page,
                        "size": f"{block.figure.width}x{block.figure.height}",
                        "text": block.text[:80],
                    }
                )
    return {
        "documents": parsed,
        "figures": len(found),
        "per_document": len(found) / max(parsed, 1),
        "found": found,
    }


def run(documents: int) -> dict[str, Any]:
    files, questions = corpus(documents)
    base: dict[str, str | None] = {"WINNOW_OCR_ENGINE": "local"}
    # warm-up: the first stack pays for loading the model; no mode should carry that
    ingest_and_ask(files[:1], questions[:3], {**base, "WINNOW_INGEST_MAX_FIGURES": "0"})
    off = ingest_and_ask(files, questions, {**base, "WINNOW_INGEST_MAX_FIGURES": "0"})
    ocr = ingest_and_ask(files, questions, base)
    caption = ingest_and_ask(files, questions, {"WINNOW_OCR_ENGINE": "none"})
    return {
        "documents": len(files),
        "figures_off": off,
        "ocr_and_caption": ocr,
        "caption_only": caption,
        "ingest_time_ratio_on_off": round(ocr["ingest_seconds"] / max(off["ingest_seconds"], 1e-9), 2),
        "shipped": shipped_figures(),
    }


def report(figures: dict[str, Any]) -> str:
    lines = [f"Figures benchmark: {figures['documents']} generated documents, 3 figures each"]
    for mode in ("figures_off", "caption_only", "ocr_and_caption"):
        row = figures[mode]
        kinds = ", ".join(f"{kind} {rate:.0%}" for kind, rate in sorted(row["hit_at_3_by_kind"].items()))
        lines.append(
            f"  {mode:22s} hit@3 {row['hit_at_3']:.1%} of {row['questions']} ({kinds}); "
            f"ingest {row['ingest_seconds']:.1f} s"
        )
    lines.append(f"  ingest time, figures on (OCR) / off: {figures['ingest_time_ratio_on_off']:.2f}x")
    shipped = figures["shipped"]
    lines.append(
        f"  shipped files under /usr/share: {shipped['documents']} parsed, {shipped['figures']} figures "
        f"({shipped['per_document']:.2f} per document)"
    )
    lines += [
        f"    {item['file']} p.{item['page']} {item['size']}: {item['text']!r}" for item in shipped["found"]
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--documents", type=int, default=5, help="documents per format")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with stdout_reserved_for_result():  # Powertools' metric blobs, not results
        figures = run(args.documents)
    print(json.dumps(figures, default=str, indent=1) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
