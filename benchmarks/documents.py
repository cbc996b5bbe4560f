"""Documents as people have them: OCR accuracy and speed, and retrieval from scans and table cells.

``python -m benchmarks.documents [--pages N] [--services N] [--json]``

Built from files this machine ships, never from text written for the benchmark:
- **Scans**: paragraphs of licences (``/usr/share/common-licenses``) and plain-text manuals
  (``/usr/share/doc``: dpkg specs, gcc's bug guide, git-subtree) rendered to A4 pages at 200 dpi
  (``tests.support.scans``), clean and with 2 % speckle noise. OCR character error rate (CER) is the edit
  distance to the rendered text over its length; pages/s is the local engine's throughput.
- **Scanned-page questions**: the pages are bundled into image-only PDFs (no text layer), ingested by
  the real ingest handler (OCR through the local engine) beside other licences and dpkg specs as plain
  text. Each question is the middle 8 words of the middle sentence of one page, kept only when those
  words occur once in everything indexed (else the question has two right answers); a hit@3 is that
  PDF *and page* among the first three results. Measured on the clean scans, on the noisy scans (a
  separate index), and on the same pages stored as text (control: what perfect OCR would get). With
  a few dozen questions one question moves hit@3 by ~3 points, so the 95 % interval is printed too.
- **Table-cell questions**: ``/etc/services`` as a CSV, an XLSX sheet and a PDF table (text layer, grid
  lines, header repeated on every page), a third of the rows each (name, port/protocol, aliases,
  comment). Each question asks for one service's port ("Which port and protocol does <name> use?"); a
  hit@3 is a result among the first three holding that service's row with its column names.

Everything goes through the real handlers of a fresh embedded stack (local ONNX embedder, Qdrant local
mode) with ``relevance_threshold`` 0, so the ranking is measured, not the threshold; the scanned-page
questions are asked once more at the default threshold, as a client that sets none gets them.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from benchmarks.common import machine, positive_int, quiet_known_warnings, stdout_reserved_for_result, table
from benchmarks.stack import EmbeddedStack
from tests.support.scans import character_error_rate, png_bytes, render_page, scanned_pdf

LICENSES = Path("/usr/share/common-licenses")
DOCS = Path("/usr/share/doc")
SERVICES = Path("/etc/services")
# Texts the scanned pages are made of: licences and plain-text manuals this machine ships (a source
# that is missing on a machine is left out and the report says which were used).
SCAN_SOURCES = (
    LICENSES / "GPL-3",
    LICENSES / "Apache-2.0",
    LICENSES / "MPL-2.0",
    LICENSES / "LGPL-2.1",
    DOCS / "dpkg/spec/triggers.txt",
    DOCS / "dpkg/spec/rootless-builds.txt",
    DOCS / "gcc-12-base/README.Bugs",
    DOCS / "git/contrib/subtree/git-subtree.txt",
)
# Indexed beside the scans as plain text, smallest first (``--distractors`` takes the first N). No
# GPL-2: its sentences repeat GPL-3's.
DISTRACTORS = (
    DOCS / "dpkg/spec/frontend-api.txt",
    LICENSES / "BSD",
    DOCS / "dpkg/spec/protected-field.txt",
    LICENSES / "Artistic",
    LICENSES / "CC0-1.0",
    LICENSES / "GFDL-1.3",
)
PAGES_PER_PDF = 3
TOP = 3
NOISE = 0.02
QUESTION_WORDS = 8
GOALS = {"cer_clean": 0.02, "hit3_scans": 0.90, "hit3_tables": 0.90}


_BOX_DRAWING = re.compile("[\u2500-\u257f]")


def available(paths: tuple[Path, ...]) -> list[Path]:
    return [path for path in paths if path.is_file()]


def source_pages(count: int) -> list[tuple[str, str]]:
    """``count`` page texts (three paragraphs each) with the file each comes from, shuffled across the
    sources."""
    pages: list[tuple[str, str]] = []
    for path in available(SCAN_SOURCES):
        text = path.read_text(errors="replace")
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n[ \t]*\n", text)]
        # Pictures drawn with box-drawing characters (triggers.txt's state diagram) are not text: no
        # OCR engine reads them as characters, and a CER goal is about text.
        paragraphs = [p for p in paragraphs if len(p.split()) >= 25 and not _BOX_DRAWING.search(p)]
        for start in range(0, len(paragraphs) - 2, 3):
            pages.append((path.name, "\n\n".join(paragraphs[start : start + 3])))
    rng = random.Random(14)
    rng.shuffle(pages)
    return pages[:count]


def measure_ocr(pages: list[tuple[str, str]]) -> dict[str, Any]:
    from winnow.adapters.ocr import make_ocr
    from winnow.ports import OcrPage
    from winnow.settings import OcrSettings

    ocr = make_ocr(OcrSettings(engine="local"))
    assert ocr is not None
    figures: dict[str, Any] = {"engine": ocr.name}
    for label, noise in (("clean", 0.0), ("noisy", NOISE)):
        rendered = [render_page(text, seed=n, noise=noise) for n, (_, text) in enumerate(pages)]
        started = time.perf_counter()
        read = ocr.read([OcrPage(png_bytes(image), "image/png") for image, _ in rendered])
        elapsed = time.perf_counter() - started
        cers = [character_error_rate(drawn, got) for (_, drawn), got in zip(rendered, read, strict=True)]
        figures[f"cer_{label}"] = sum(cers) / len(cers)
        figures[f"cer_{label}_worst"] = max(cers)
        figures[f"pages_per_s_{label}"] = len(rendered) / elapsed
    return figures


def scan_questions(
    pages: list[tuple[str, str]], *, noise: float = 0.0, corpus: str = ""
) -> tuple[list[tuple[str, bytes]], list[tuple[str, str, int]]]:
    """Image-only PDFs of the pages (rendered with ``noise``) and (question, pdf name, page) triples.
    A question is the middle ``QUESTION_WORDS`` words of the middle sentence of a page, taken only
    when that stretch occurs once in ``corpus`` (everything indexed): a stretch that is also written
    elsewhere has more than one right answer, so it says nothing about this page."""
    files: list[tuple[str, bytes]] = []
    questions: list[tuple[str, str, int]] = []
    for start in range(0, len(pages), PAGES_PER_PDF):
        group = pages[start : start + PAGES_PER_PDF]
        rendered = [render_page(text, seed=start + n, noise=noise) for n, (_, text) in enumerate(group)]
        name = f"scans/scan-{start // PAGES_PER_PDF + 1:02d}.pdf"
        files.append((name, scanned_pdf([image for image, _ in rendered])))
        for page_number, (_, drawn) in enumerate(rendered, start=1):
            sentences = [
                s for s in re.split(r"(?<=[.;:])\s+", " ".join(drawn.split())) if len(s.split()) >= 14
            ]
            if sentences:
                words = sentences[len(sentences) // 2].split()
                middle = len(words) // 2
                half = QUESTION_WORDS // 2
                question = " ".join(words[middle - half : middle + half])
                if not corpus or corpus.count(question) == 1:
                    questions.append((question, name, page_number))
    return files, questions


def drawn_pages(pages: list[tuple[str, str]]) -> dict[str, str]:
    """The text that fits on each rendered page, by the name of its page in the control (one file
    per page)."""
    drawn: dict[str, str] = {}
    for start in range(0, len(pages), PAGES_PER_PDF):
        for n, (_, text) in enumerate(pages[start : start + PAGES_PER_PDF]):
            drawn[f"pages/scan-{start // PAGES_PER_PDF + 1:02d}-{n + 1}.txt"] = render_page(
                text, seed=start + n
            )[1]
    return drawn


def services_rows(limit: int) -> list[list[str]]:
    rows: list[list[str]] = []
    seen: set[str] = set()
    for line in SERVICES.read_text().splitlines():
        body, _, comment = line.partition("#")
        fields = body.split()
        if len(fields) < 2 or fields[0] in seen:
            continue
        seen.add(fields[0])
        rows.append([fields[0], fields[1], " ".join(fields[2:]), comment.strip()])
    return rows[:limit]


TABLE_HEADER = ["Service", "Port/protocol", "Aliases", "Comment"]
TABLE_FORMATS = ("csv", "xlsx", "pdf")


def table_files(rows: list[list[str]]) -> list[tuple[str, bytes]]:
    """The rows in three files, a third each: a CSV, an XLSX sheet and a PDF (a text layer laid out
    as a word processor prints a table: grid lines, the header repeated on every page)."""
    import csv
    import io

    import openpyxl

    third = len(rows) // 3
    parts = [rows[:third], rows[third : 2 * third], rows[2 * third :]]
    text = io.StringIO()
    csv.writer(text).writerows([TABLE_HEADER, *parts[0]])
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Network services"
    for row in [TABLE_HEADER, *parts[1]]:
        sheet.append(row)
    out = BytesIO()
    workbook.save(out)
    return [
        ("tables/services-a.csv", text.getvalue().encode()),
        ("tables/services-b.xlsx", out.getvalue()),
        ("tables/services-c.pdf", table_pdf([TABLE_HEADER, *parts[2]])),
    ]


def table_pdf(rows: list[list[str]]) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    cells = [[Paragraph(cell, styles["Normal"]) if len(cell) > 25 else cell for cell in row] for row in rows]
    table = Table(cells, repeatRows=1, colWidths=[90, 90, 110, 200])
    table.setStyle(
        TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("VALIGN", (0, 0), (-1, -1), "TOP")])
    )
    out = BytesIO()
    SimpleDocTemplate(out, pagesize=A4, invariant=True, title="Network services").build(
        [Paragraph("Network services", styles["Heading1"]), table]
    )
    return out.getvalue()


def hit_rate(
    stack: EmbeddedStack, questions: list[tuple[str, Any]], hit: Any, threshold: float = 0.0
) -> float:
    hits = 0
    for question, expected in questions:
        results = stack_search(stack, question, threshold)
        hits += any(hit(result, expected) for result in results[:TOP])
    return hits / len(questions) if questions else 0.0


def stack_search(stack: EmbeddedStack, query: str, threshold: float = 0.0) -> list[dict[str, Any]]:
    return stack.results(
        stack.search_event(query, "hybrid", top_k=TOP, candidates=None, relevance_threshold=threshold)
    )


def control_hit_rate(
    questions: list[tuple[str, str, int]], others: list[tuple[str, bytes]], drawn: dict[str, str]
) -> float:
    """The same questions against the same pages stored as text (one file per page, no OCR) beside the
    same distractors: retrieval when OCR is perfect, so OCR's own cost can be read off."""
    with (
        tempfile.TemporaryDirectory() as home,
        EmbeddedStack(Path(home), {"WINNOW_OCR_ENGINE": "none"}) as stack,
    ):
        stack.ingest([*others, *((name, text.encode()) for name, text in drawn.items())], per_event=200)
        wanted = [
            (q, stack.key_for(name.replace("scans/", "pages/").replace(".pdf", f"-{page}.txt")))
            for q, name, page in questions
        ]
        return hit_rate(stack, wanted, lambda r, key: r["key"] == key)


def on_scanned_page(result: dict[str, Any], want: tuple[str, int]) -> bool:
    """A hit for a scanned-page question: the right PDF and page, read by OCR."""
    return (result["key"], result["page"]) == want and bool(result["ocr"])


def scanned_pages_wanted(
    stack: EmbeddedStack, questions: list[tuple[str, str, int]]
) -> list[tuple[str, tuple[str, int]]]:
    """Each scanned-page question with the (key, page) that answers it in ``stack``."""
    return [(q, (stack.key_for(name), page)) for q, name, page in questions]


def scan_hit_rate(
    questions: list[tuple[str, str, int]], scans: list[tuple[str, bytes]], others: list[tuple[str, bytes]]
) -> float:
    """Questions against the scanned PDFs (read by the local OCR engine at ingest) beside the others."""
    with (
        tempfile.TemporaryDirectory() as home,
        EmbeddedStack(Path(home), {"WINNOW_OCR_ENGINE": "local"}) as stack,
    ):
        stack.ingest([*others, *scans], per_event=200)
        return hit_rate(stack, scanned_pages_wanted(stack, questions), on_scanned_page)


def wilson_interval(rate: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a rate measured on ``n`` questions."""
    if n == 0:
        return 0.0, 1.0
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def run(pages_count: int, services: int, distractor_files: int = len(DISTRACTORS)) -> dict[str, Any]:
    pages = source_pages(pages_count)
    figures: dict[str, Any] = {
        "pages": len(pages),
        "sources": sorted({name for name, _ in pages}),
        "machine": machine(),
    }
    distractors = [
        (f"docs/{path.name}.txt", path.read_bytes()) for path in available(DISTRACTORS)[:distractor_files]
    ]
    figures["distractors"] = [name for name, _ in distractors]
    figures["ocr"] = measure_ocr(pages)
    rows = services_rows(services)
    tables = table_files(rows)
    drawn = drawn_pages(pages)
    corpus = " ".join(
        " ".join(text.split())
        for text in [*drawn.values(), *(d.decode(errors="replace") for _, d in distractors)]
    )
    files, scan_qs = scan_questions(pages, corpus=corpus)
    files += tables + distractors
    figures["scan_questions"] = len(scan_qs)
    figures["hit3_scans_control"] = control_hit_rate(scan_qs, distractors, drawn)
    noisy, _ = scan_questions(pages, noise=NOISE)
    figures["hit3_scans_noisy"] = scan_hit_rate(scan_qs, noisy, distractors)
    with (
        tempfile.TemporaryDirectory() as home,
        EmbeddedStack(Path(home), {"WINNOW_OCR_ENGINE": "local"}) as stack,
    ):
        started = time.perf_counter()
        results = stack.ingest(files, per_event=len(files))
        figures["ingest_seconds"] = time.perf_counter() - started
        figures["ocr_pages_ingested"] = sum(
            (stack.container.ledger.get(stack.tenant, stack.key_for(name)).ocr_pages or 0)
            for name, _ in files
        )
        figures["chunks"] = sum(r.get("chunks", 0) for r in results)
        scan_wanted = scanned_pages_wanted(stack, scan_qs)
        figures["hit3_scans"] = hit_rate(stack, scan_wanted, on_scanned_page)
        # What a client gets without choosing a threshold: a refused question is a miss.
        figures["default_threshold"] = stack.container.search_service().threshold
        figures["hit3_scans_default"] = hit_rate(
            stack, scan_wanted, on_scanned_page, figures["default_threshold"]
        )
        third = len(rows) // 3
        rng = random.Random(6)
        figures["table_questions"] = 0
        hits = 0.0
        for number, fmt in enumerate(TABLE_FORMATS):
            part = rows[number * third : (number + 1) * third] if number < 2 else rows[2 * third :]
            asked = rng.sample(part, min(30, len(part)))
            rate = hit_rate(
                stack,
                [(f"Which port and protocol does the {row[0]} service use?", row) for row in asked],
                lambda r, row: (
                    r["kind"] == "table" and f"Service: {row[0]} | Port/protocol: {row[1]}" in r["text"]
                ),
            )
            figures[f"hit3_tables_{fmt}"] = rate
            figures[f"table_questions_{fmt}"] = len(asked)
            figures["table_questions"] += len(asked)
            hits += rate * len(asked)
        figures["hit3_tables"] = hits / figures["table_questions"] if figures["table_questions"] else 0.0
    return figures


def _rate_with_interval(rate: float, n: int) -> str:
    low, high = wilson_interval(rate, n)
    return f"{rate:.1%} (95 % CI {low:.0%}-{high:.0%})"


def report(figures: dict[str, Any]) -> str:
    ocr, scans, threshold = figures["ocr"], figures["scan_questions"], figures["default_threshold"]
    lines = [
        f"OCR engine {ocr['engine']}, {figures['pages']} generated 200-dpi pages from"
        f" {', '.join(figures['sources'])}",
        table(
            ["measure", "clean", f"noisy ({NOISE:.0%} speckle)", "goal"],
            [
                ["CER (mean)", f"{ocr['cer_clean']:.2%}", f"{ocr['cer_noisy']:.2%}", "≤ 2 % clean"],
                ["CER (worst page)", f"{ocr['cer_clean_worst']:.2%}", f"{ocr['cer_noisy_worst']:.2%}", ""],
                ["pages/s", f"{ocr['pages_per_s_clean']:.2f}", f"{ocr['pages_per_s_noisy']:.2f}", ""],
            ],
        ),
        table(
            ["retrieval (hybrid, local model)", "questions", "hit@3", "goal"],
            [
                *(
                    [label, str(scans), _rate_with_interval(figures[key], scans), goal]
                    for label, key, goal in (
                        ("scanned pages, clean (right PDF and page)", "hit3_scans", "≥ 90 %"),
                        (f"  the same, at the default threshold {threshold}", "hit3_scans_default", ""),
                        (f"scanned pages, {NOISE:.0%} speckle", "hit3_scans_noisy", ""),
                        ("  the same pages as text, no OCR (control)", "hit3_scans_control", ""),
                    )
                ),
                [
                    "table cells (row with its columns)",
                    str(figures["table_questions"]),
                    f"{figures['hit3_tables']:.1%}",
                    "≥ 90 %",
                ],
                *(
                    [
                        f"  of which in the {fmt.upper()}",
                        str(figures[f"table_questions_{fmt}"]),
                        f"{figures[f'hit3_tables_{fmt}']:.1%}",
                        "",
                    ]
                    for fmt in TABLE_FORMATS
                ),
            ],
        ),
        f"ingest: {figures['chunks']} chunks, {figures['ocr_pages_ingested']} OCR pages,"
        f" {figures['ingest_seconds']:.1f} s",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.documents", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--pages", type=positive_int, default=30, help="scanned pages to generate")
    parser.add_argument("--services", type=positive_int, default=400, help="rows of /etc/services")
    parser.add_argument(
        "--distractors", type=int, default=len(DISTRACTORS), help="plain-text files beside the scans"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_known_warnings()
    with stdout_reserved_for_result():
        figures = run(args.pages, args.services, args.distractors)
    print(json.dumps(figures, indent=2) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
