"""Documents as people have them: OCR accuracy and speed, and retrieval from scans and table cells.

``python -m benchmarks.documents [--pages N] [--services N] [--json]``

Built from files this machine ships, never from text written for the benchmark:
- **Scans**: paragraphs of the licence texts in ``/usr/share/common-licenses`` rendered to A4 pages at
  200 dpi (``benchmarks.scans``), clean and with 2 % speckle noise. OCR character error rate (CER) is the
  edit distance to the rendered text over its length; pages/s is the local engine's throughput.
- **Scanned-page questions**: the clean pages are bundled into image-only PDFs (no text layer), ingested
  by the real ingest handler (OCR through the configured engine) beside the other licences as plain
  text. Each question is an 8-word stretch from the middle of a sentence on one page; a hit@3 is that
  PDF *and page* among the first three results.
- **Table-cell questions**: ``/etc/services`` as a CSV and an XLSX table (name, port/protocol, aliases,
  comment). Each question asks for one service's port ("Which port and protocol does <name> use?"); a
  hit@3 is a result among the first three holding that service's row with its column names.

Everything goes through the real handlers of a fresh embedded stack (local ONNX embedder, Qdrant local
mode) with ``relevance_threshold`` 0, so the ranking is measured, not the threshold.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from benchmarks.common import machine, positive_int, quiet_known_warnings, stdout_reserved_for_result, table
from benchmarks.scans import character_error_rate, png_bytes, render_page, scanned_pdf
from benchmarks.stack import EmbeddedStack

LICENSES = Path("/usr/share/common-licenses")
SERVICES = Path("/etc/services")
SCAN_SOURCES = ("GPL-3", "Apache-2.0", "MPL-2.0", "LGPL-2.1")
# No GPL-2: its sentences repeat GPL-3's, so a question from a scanned GPL-3 page would have two answers.
DISTRACTORS = ("GFDL-1.3", "Artistic", "CC0-1.0", "BSD")
PAGES_PER_PDF = 3
TOP = 3
NOISE = 0.02
GOALS = {"cer_clean": 0.02, "hit3_scans": 0.90, "hit3_tables": 0.90}


def license_pages(count: int) -> list[tuple[str, str]]:
    """``count`` page texts (three paragraphs each) with the licence each comes from."""
    pages: list[tuple[str, str]] = []
    for name in SCAN_SOURCES:
        paragraphs = [" ".join(p.split()) for p in (LICENSES / name).read_text().split("\n\n")]
        paragraphs = [p for p in paragraphs if len(p.split()) >= 25]
        for start in range(0, len(paragraphs) - 2, 3):
            pages.append((name, "\n\n".join(paragraphs[start : start + 3])))
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
    pages: list[tuple[str, str]],
) -> tuple[list[tuple[str, bytes]], list[tuple[str, str, int]]]:
    """Image-only PDFs of the pages and (question, pdf name, page) triples."""
    files: list[tuple[str, bytes]] = []
    questions: list[tuple[str, str, int]] = []
    for start in range(0, len(pages), PAGES_PER_PDF):
        group = pages[start : start + PAGES_PER_PDF]
        rendered = [render_page(text, seed=start + n) for n, (_, text) in enumerate(group)]
        name = f"scans/scan-{start // PAGES_PER_PDF + 1:02d}.pdf"
        files.append((name, scanned_pdf([image for image, _ in rendered])))
        for page_number, (_, drawn) in enumerate(rendered, start=1):
            sentences = [
                s for s in re.split(r"(?<=[.;:])\s+", " ".join(drawn.split())) if len(s.split()) >= 14
            ]
            if sentences:
                words = sentences[len(sentences) // 2].split()
                middle = len(words) // 2
                questions.append((" ".join(words[middle - 4 : middle + 4]), name, page_number))
    return files, questions


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


def table_files(rows: list[list[str]]) -> list[tuple[str, bytes]]:
    import csv
    import io

    import openpyxl

    header = ["Service", "Port/protocol", "Aliases", "Comment"]
    half = len(rows) // 2
    text = io.StringIO()
    csv.writer(text).writerows([header, *rows[:half]])
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Network services"
    for row in [header, *rows[half:]]:
        sheet.append(row)
    out = BytesIO()
    workbook.save(out)
    return [("tables/services-a.csv", text.getvalue().encode()), ("tables/services-b.xlsx", out.getvalue())]


def hit_rate(stack: EmbeddedStack, questions: list[tuple[str, Any]], hit: Any) -> float:
    hits = 0
    for question, expected in questions:
        results = stack_search(stack, question)
        hits += any(hit(result, expected) for result in results[:TOP])
    return hits / len(questions) if questions else 0.0


def stack_search(stack: EmbeddedStack, query: str) -> list[dict[str, Any]]:
    from functions.search.app import handler
    from winnow_local.context import LocalLambdaContext

    event = stack.search_event(query, "hybrid", top_k=TOP, candidates=None)
    response = handler(event, LocalLambdaContext())
    if response.get("statusCode") != 200:
        raise RuntimeError(f"search answered {response.get('statusCode')}")
    return list(json.loads(response["body"])["results"])


def control_hit_rate(
    questions: list[tuple[str, str, int]], files: list[tuple[str, bytes]], pages: list[tuple[str, str]]
) -> float:
    """The same questions against the same pages stored as text (one file per page, no OCR) beside the
    same distractors: retrieval when OCR is perfect, so OCR's own cost can be read off."""
    drawn: dict[str, str] = {}
    for start in range(0, len(pages), PAGES_PER_PDF):
        for n, (_, text) in enumerate(pages[start : start + PAGES_PER_PDF]):
            name = f"pages/scan-{start // PAGES_PER_PDF + 1:02d}-{n + 1}.txt"
            drawn[name] = render_page(text, seed=start + n)[1]
    others = [(name, data) for name, data in files if not name.startswith("scans/")]
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


def run(pages_count: int, services: int) -> dict[str, Any]:
    pages = license_pages(pages_count)
    figures: dict[str, Any] = {"pages": len(pages), "machine": machine()}
    figures["ocr"] = measure_ocr(pages)
    files, scan_qs = scan_questions(pages)
    rows = services_rows(services)
    files += table_files(rows)
    files += [(f"licenses/{name}.txt", (LICENSES / name).read_bytes()) for name in DISTRACTORS]
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
        figures["scan_questions"] = len(scan_qs)
        figures["hit3_scans"] = hit_rate(
            stack,
            [(q, (stack.key_for(name), page)) for q, name, page in scan_qs],
            lambda r, want: (r["key"], r["page"]) == want and r["ocr"],
        )
        figures["hit3_scans_control"] = control_hit_rate(scan_qs, files, pages)
        rng = random.Random(6)
        asked = rng.sample(rows, min(60, len(rows)))
        figures["table_questions"] = len(asked)
        figures["hit3_tables"] = hit_rate(
            stack,
            [(f"Which port and protocol does the {row[0]} service use?", row) for row in asked],
            lambda r, row: (
                r["kind"] == "table" and f"Service: {row[0]} | Port/protocol: {row[1]}" in r["text"]
            ),
        )
    return figures


def report(figures: dict[str, Any]) -> str:
    ocr = figures["ocr"]
    lines = [
        f"OCR engine {ocr['engine']}, {figures['pages']} generated 200-dpi pages"
        " from /usr/share/common-licenses",
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
                [
                    "scanned pages (right PDF and page)",
                    str(figures["scan_questions"]),
                    f"{figures['hit3_scans']:.1%}",
                    "≥ 90 %",
                ],
                [
                    "  the same pages as text, no OCR (control)",
                    str(figures["scan_questions"]),
                    f"{figures['hit3_scans_control']:.1%}",
                    "",
                ],
                [
                    "table cells (row with its columns)",
                    str(figures["table_questions"]),
                    f"{figures['hit3_tables']:.1%}",
                    "≥ 90 %",
                ],
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
    parser.add_argument("--pages", type=positive_int, default=12, help="scanned pages to generate")
    parser.add_argument("--services", type=positive_int, default=400, help="rows of /etc/services")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_known_warnings()
    with stdout_reserved_for_result():
        figures = run(args.pages, args.services)
    print(json.dumps(figures, indent=2) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
