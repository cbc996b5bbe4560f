"""What the parse budget costs: each document parsed in this process (the baseline) and through the
budgeted worker process (``winnow.parsing.budget``), same documents, same run.

``python -m benchmarks.parse_budget [--runs N] [--json]``

Documents are generated (no shared data needed): a short Markdown note, a 40-section Markdown guide, a
20-page PDF, a 30-section DOCX, an HTML page, and a 1 MB text file. Each is parsed ``--runs`` times both
ways after a warm-up (the worker is started once and reused, as in a warm Lambda), alternating, so
load on a shared machine hits both alike; the fastest and the median runs are printed with their
difference, which is what enforcement costs per document. The worker's start-up (paid once per
container) is timed separately.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from tests.support.documents import DocxHeading, DocxParagraph, make_docx, make_html, make_markdown, make_pdf
from winnow.parsing import parse_document
from winnow.parsing.budget import parse_within_budget, shutdown_workers

SENTENCE = "Budgets keep one hostile upload from stalling the documents queued behind it. "


def documents() -> dict[str, tuple[str, bytes]]:
    paragraphs = [SENTENCE * 6]
    report = [item for n in range(30) for item in (DocxHeading(f"Part {n}", 1), DocxParagraph(SENTENCE * 8))]
    page = make_html("Page", [(2, f"S{n}", paragraphs) for n in range(20)])
    return {
        "markdown, 1 KB": ("b/note.md", make_markdown([(1, "Note", [SENTENCE * 12])])),
        "markdown, 40 sections": (
            "b/guide.md",
            make_markdown([(2, f"Section {n}", paragraphs * 3) for n in range(40)]),
        ),
        "pdf, 20 pages": ("b/book.pdf", make_pdf([SENTENCE * 25 for _ in range(20)])),
        "docx, 30 sections": ("b/report.docx", make_docx(report)),
        "html, 20 sections": ("b/page.html", page),
        "text, 1 MB": ("b/big.txt", ((SENTENCE * 10 + "\n\n") * 1300).encode()),
    }


def _timings_ms(
    inline: Callable[[str, bytes], object],
    budgeted: Callable[[str, bytes], object],
    key: str,
    data: bytes,
    runs: int,
) -> tuple[list[float], list[float]]:
    inline(key, data)  # warm-up: imports, caches
    budgeted(key, data)
    timings: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for parse, into in ((inline, timings[0]), (budgeted, timings[1])):
            started = time.perf_counter()
            parse(key, data)
            into.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    shutdown_workers()
    started = time.perf_counter()
    parse_within_budget("b/start.txt", b"Start the worker.")
    startup_ms = (time.perf_counter() - started) * 1000

    rows = []
    for name, (key, data) in documents().items():
        inline, budgeted = _timings_ms(parse_document, parse_within_budget, key, data, args.runs)
        rows.append(
            {
                "document": name,
                "bytes": len(data),
                "in_process_min_ms": round(min(inline), 2),
                "budgeted_min_ms": round(min(budgeted), 2),
                "cost_min_ms": round(min(budgeted) - min(inline), 2),
                "in_process_median_ms": round(statistics.median(inline), 2),
                "budgeted_median_ms": round(statistics.median(budgeted), 2),
                "cost_median_ms": round(statistics.median(budgeted) - statistics.median(inline), 2),
            }
        )
    shutdown_workers()
    if args.json:
        print(json.dumps({"worker_startup_ms": round(startup_ms, 1), "documents": rows}, indent=2))
        return
    print(f"worker start-up (once per container): {startup_ms:.0f} ms")
    print(f"{'document':24} {'bytes':>9} {'in process':>19} {'budgeted':>19} {'cost':>17}")
    print(f"{'':24} {'':>9} {'min / median ms':>19} {'min / median ms':>19} {'min / median ms':>17}")
    for row in rows:
        print(
            f"{row['document']:24} {row['bytes']:>9}"
            f" {row['in_process_min_ms']:>9.2f} / {row['in_process_median_ms']:>7.2f}"
            f" {row['budgeted_min_ms']:>9.2f} / {row['budgeted_median_ms']:>7.2f}"
            f" {row['cost_min_ms']:>7.2f} / {row['cost_median_ms']:>7.2f}"
        )


if __name__ == "__main__":
    main()
