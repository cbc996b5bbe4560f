"""What the parse budget costs: each document parsed in this process (the baseline) and through the
budgeted worker process (``winnow.parsing.budget``), same documents, same run.

``python -m benchmarks.parse_budget [--runs N] [--json]``
``python -m benchmarks.parse_budget --hostile [--mb N]``: what an attacker's worst upload costs.

With ``--hostile``, documents built to be expensive (one long line of each syntax character and of the
shapes reported quadratic, as Markdown, text, reStructuredText and HTML) are parsed through the budgeted
worker at ``N`` and ``4 N`` MB: each shape's seconds per MB, the worst, and what the largest upload the
ingest function accepts would cost at that rate (Lambda seconds, capped by the parse budget).

Documents are generated (no shared data needed): a short Markdown note, a 40-section Markdown guide, a
20-page PDF, a 30-section DOCX, an HTML page, and a 1 MB text file. Each is parsed ``--runs`` times both
ways after a warm-up (the worker is started once and reused, as in a warm Lambda), alternating, so
load on a shared machine hits both alike; the fastest and the median runs are printed with their
difference, which is what enforcement costs per document. The worker's start-up (paid once per
container) is timed separately.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import table
from tests.support.documents import DocxHeading, DocxParagraph, make_docx, make_html, make_markdown, make_pdf
from winnow.errors import DocumentError
from winnow.parsing import parse_document
from winnow.parsing.budget import parse_within_budget, shutdown_workers
from winnow.settings import IngestSettings

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


# One-character units: the syntax every hand-written parser reads; then the shapes issues 29 and 31
# reported quadratic (whose patterns tests/unit/test_regex_linear.py now holds to linear time).
_SYNTAX_UNITS = [*"# \t|-:[]()!.?`~*_=>'\"a1+<;\\", "<!--", "-->", "4z", "+-", "1:", ". ", "[a]("]
_REPORTED = {
    "md: pipe header, spaces": ("md", "| a |\n", " "),
    "text: changelog 4z pairs": ("txt", "", "4z"),
    "text: man header +- runs": ("txt", "", "+-"),
    "rst: roles 1: x n": ("rst", "", "1:"),
    "rst: backtick, spaces": ("rst", "`", " "),
    "html: heading whitespace": ("html", "<html><body><h2>a", " "),
}
_FORMATS = ("md", "txt", "rst", "html")


def _hostile(prefix: str, unit: str, size: int, form: str) -> bytes:
    body = prefix + unit * (size // len(unit)) + "x\n"
    if form == "html" and not prefix:
        body = f"<html><body><p>{body}</p></body></html>"
    return body.encode()


def _parse_seconds(key: str, data: bytes) -> float:
    started = time.perf_counter()
    with contextlib.suppress(DocumentError):  # refused or over the budget: the time is the cost either way
        parse_within_budget(key, data)
    return time.perf_counter() - started


def hostile(megabytes: float, as_json: bool) -> None:
    """Screen every shape at ``megabytes`` through the worker, then time the slowest ones at 4x."""
    size = int(megabytes * 1_000_000)
    budget = IngestSettings().parse_timeout_seconds
    largest_mb = IngestSettings().max_object_bytes / 1_000_000
    shapes = {f"{form}: {unit!r} x n": (form, "", unit) for form in _FORMATS for unit in _SYNTAX_UNITS}
    shapes.update(_REPORTED)
    parse_within_budget("b/start.txt", b"Start the worker.")
    screened = {
        name: _parse_seconds(f"h/x.{form}", _hostile(prefix, unit, size, form))
        for name, (form, prefix, unit) in shapes.items()
    }
    slowest = sorted(screened, key=screened.__getitem__, reverse=True)[:6]
    rows: list[dict[str, Any]] = []
    for name in dict.fromkeys([*slowest, *_REPORTED]):
        form, prefix, unit = shapes[name]
        small = min(_parse_seconds(f"h/x.{form}", _hostile(prefix, unit, size, form)) for _ in range(2))
        large = min(_parse_seconds(f"h/x.{form}", _hostile(prefix, unit, 4 * size, form)) for _ in range(2))
        rows.append(
            {
                "shape": name,
                "seconds_at_n": round(small, 3),
                "seconds_at_4n": round(large, 3),
                "growth_4x": round(large / small, 2),
                "seconds_per_mb": round(large / (4 * megabytes), 3),
            }
        )
    shutdown_workers()
    worst = max(rows, key=lambda row: row["seconds_per_mb"])
    worst_upload = min(budget, worst["seconds_per_mb"] * largest_mb)
    summary = {
        "shapes_screened": len(shapes),
        "megabytes": megabytes,
        "worst_shape": worst["shape"],
        "worst_seconds_per_mb": worst["seconds_per_mb"],
        "largest_upload_mb": round(largest_mb, 1),
        "worst_upload_seconds": round(worst_upload, 1),
        "parse_budget_seconds": budget,
    }
    if as_json:
        print(json.dumps({"summary": summary, "shapes": rows}, indent=2))
        return
    print(f"{len(shapes)} shapes screened at {megabytes} MB; the slowest and the reported ones at n and 4 n:")
    cells = ("seconds_at_n", "seconds_at_4n", "growth_4x", "seconds_per_mb")
    print(
        table(
            ["shape", "s at n", "s at 4n", "growth", "s per MB"],
            [[r["shape"], *(f"{r[c]:.3f}" for c in cells)] for r in rows],
        )
    )
    print(
        f"worst: {worst['shape']}, {worst['seconds_per_mb']:.3f} s per MB; the largest upload "
        f"({largest_mb:.1f} MB) at that rate: {worst_upload:.1f} s of parsing (budget {budget:.0f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--hostile", action="store_true", help="time documents built to be expensive")
    parser.add_argument("--mb", type=float, default=1.0, help="size of each hostile document (and 4x)")
    args = parser.parse_args()
    if args.hostile:
        hostile(args.mb, args.json)
        return

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
    print(
        table(
            ["document", "bytes", "in process, min / median ms", "budgeted, min / median ms", "cost"],
            [
                [str(r["document"]), str(r["bytes"])]
                + [
                    f"{r[f'{c}_min_ms']:.2f} / {r[f'{c}_median_ms']:.2f}"
                    for c in ("in_process", "budgeted", "cost")
                ]
                for r in rows
            ],
        )
    )


if __name__ == "__main__":
    main()
