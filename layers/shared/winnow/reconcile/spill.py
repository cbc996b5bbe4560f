"""Counting keys in key order in bounded memory: an external merge sort.

Reconcile merges the bucket listing, the ledger and the point counts per document by key. Qdrant scrolls
points in id order, not key order, so the counts must be sorted; holding a counter of every document is
O(documents) memory (a tenant of a million chunks). Instead, keys are counted in runs of at most
``run_size`` distinct keys; a full run is written, sorted, to a temporary file (``/tmp`` in Lambda), and
the runs are merged lazily with ``heapq.merge``. Memory: one run plus one line per spilled file.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import IO

DEFAULT_RUN_SIZE = 50_000


def sorted_counts(
    keys: Iterable[str], *, run_size: int = DEFAULT_RUN_SIZE, directory: str | None = None
) -> Iterator[tuple[str, int]]:
    """(key, occurrences) for each distinct key, in code-point order (S3's byte order for UTF-8)."""
    if run_size < 1:
        raise ValueError("run_size must be at least 1")
    spilled: list[IO[str]] = []
    run: Counter[str] = Counter()
    with contextlib.ExitStack() as files:  # closing a temporary file deletes it
        for key in keys:
            run[key] += 1
            if len(run) >= run_size:
                spilled.append(_spill(run, files.enter_context(_temporary(directory))))
                run = Counter()
        if not spilled:
            yield from sorted(run.items())
            return
        if run:
            spilled.append(_spill(run, files.enter_context(_temporary(directory))))
            run = Counter()
        merged = heapq.merge(*(_read(f) for f in spilled))
        current: str | None = None
        total = 0
        for key, count in merged:
            if key == current:
                total += count
                continue
            if current is not None:
                yield current, total
            current, total = key, count
        if current is not None:
            yield current, total


def _temporary(directory: str | None) -> IO[str]:
    return tempfile.TemporaryFile(mode="w+", encoding="utf-8", dir=directory, prefix="winnow-counts-")


def _spill(run: Counter[str], f: IO[str]) -> IO[str]:
    # JSON-quoted keys: an S3 key may hold a tab or a newline.
    for key, count in sorted(run.items()):
        f.write(f"{json.dumps(key)}\t{count}\n")
    f.seek(0)
    return f


def _read(f: IO[str]) -> Iterator[tuple[str, int]]:
    for line in f:
        quoted, _, count = line.rstrip("\n").rpartition("\t")
        yield json.loads(quoted), int(count)
