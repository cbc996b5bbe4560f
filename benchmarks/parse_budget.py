"""What the parse budget costs: each document parsed in this process (the baseline) and through the
budgeted worker process (``winnow.parsing.budget``), same documents, same run.

``python -m benchmarks.parse_budget [--runs N] [--json]``

Documents are generated (no shared data needed): a short Markdown note, a 40-section Markdown guide, a
20-page PDF, a 30-section DOCX, an HTML page, and a 1 MB text file. Each is parsed ``--runs`` times both
ways after a warm-up (the worker is started once and reused, as in a warm Lambda); the medians are
printed with the difference, which is what enforcement costs per document. The worker's start-up (paid
once per container) is timed separately.
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


def _median_ms(parse: Callable[[str, bytes], object], key: str, data: bytes, runs: int) -> float:
    parse(key, data)  # warm-up: imports, caches
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        parse(key, data)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


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
        inline = _median_ms(lambda k, d: parse_document(k, d), key, data, args.runs)
        budgeted = _median_ms(lambda k, d: parse_within_budget(k, d), key, data, args.runs)
        rows.append(
            {
                "document": name,
                "bytes": len(data),
                "in_process_ms": round(inline, 2),
                "budgeted_ms": round(budgeted, 2),
                "cost_ms": round(budgeted - inline, 2),
            }
        )
    shutdown_workers()
    if args.json:
        print(json.dumps({"worker_startup_ms": round(startup_ms, 1), "documents": rows}, indent=2))
        return
    print(f"worker start-up (once per container): {startup_ms:.0f} ms")
    print(f"{'document':24} {'bytes':>9} {'in process':>11} {'budgeted':>9} {'cost':>8}")
    for row in rows:
        print(
            f"{row['document']:24} {row['bytes']:>9} {row['in_process_ms']:>9.2f}ms"
            f" {row['budgeted_ms']:>7.2f}ms {row['cost_ms']:>6.2f}ms"
        )


if __name__ == "__main__":
    main()
