"""Tables of a known shape and size, for the table chunk bound's test and ``benchmarks.table_ingest``:
paragraphs in cells under long column names, or a numeric export of many short cells."""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Callable

WORDS: tuple[str, ...] = ("kettle", "descale", "water", "filter", "boiler", "pressure", "valve", "steam")
WORDS += ("milk", "coffee", "grinder", "espresso")


def table_rows(long_cells: bool, seed: int = 1) -> tuple[list[str], Callable[[], list[str]]]:
    """The header and a function that makes the next row."""
    rng = random.Random(seed)
    if long_cells:  # paragraphs in cells, long column names
        header = [f"column name number {i} " * 3 for i in range(5)]
        return header, lambda: [" ".join(rng.choice(WORDS) for _ in range(300)) for _ in range(5)]
    header = [f"c{i}" for i in range(20)]  # a numeric export: many short cells
    return header, lambda: [str(rng.randrange(1000)) for _ in range(20)]


def table_csv(long_cells: bool, size: int, seed: int = 1) -> str:
    """A CSV of at least ``size`` characters."""
    header, row = table_rows(long_cells, seed)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    while out.tell() < size:
        writer.writerow(row())
    return out.getvalue()
