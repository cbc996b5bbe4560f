"""What a table costs ingest (issue 44, item 13): a 1 MB CSV of long cells became 7,429 chunks, 277 s
and 451 MB of resident memory in the ingest process. For CSV files of a given size (paragraphs in
cells; a numeric export of many short cells), the chunks the chunker makes, then ``winnow ingest`` on
the file in a child process of its own: its seconds, chunks and peak RSS (``os.wait4``).
``--baseline`` runs the same children on another checkout (e.g. main) in the same run.

Run: ``.venv/bin/python -m benchmarks.table_ingest [--kb 1000] [--baseline /path/to/main]``."""

from __future__ import annotations

import argparse
import csv
import io
import os
import random
import tempfile
from pathlib import Path

from benchmarks.common import machine, positive_int, table
from benchmarks.ingest_speed import _INGEST, ROOT, child

WORDS = [
    "kettle",
    "descale",
    "water",
    "filter",
    "boiler",
    "pressure",
    "valve",
    "steam",
    "milk",
    "coffee",
    "grinder",
    "espresso",
]


def table_csv(kind: str, size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out)
    if kind == "long cells":
        writer.writerow([f"column name number {i} " * 3 for i in range(5)])
        while out.tell() < size:
            writer.writerow([" ".join(rng.choice(WORDS) for _ in range(300)) for _ in range(5)])
    else:
        writer.writerow([f"c{i}" for i in range(20)])
        while out.tell() < size:
            writer.writerow([str(rng.randrange(1000)) for _ in range(20)])
    return out.getvalue().encode()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=positive_int, default=1000, help="size of each CSV (default 1000)")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare with")
    args = parser.parse_args(argv)
    print(machine())
    roots = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    rows = []
    with tempfile.TemporaryDirectory(prefix="winnow-table-ingest-") as work:
        for kind in ("long cells", "short cells"):
            data = table_csv(kind, args.kb * 1000)
            folder = Path(work) / kind.replace(" ", "-")
            folder.mkdir()
            (folder / "table.csv").write_bytes(data)
            for name, root in roots.items():
                home = Path(work) / f"home-{name}-{folder.name}"
                result = child(_INGEST, [str(folder)], root, home)
                rows.append(
                    [
                        kind,
                        name,
                        f"{len(data) / 1e6:.2f}",
                        str(result["chunks"]),
                        str(result["statuses"]),
                        f"{result['seconds']:.0f}",
                        f"{result['peak_rss_mb']:.0f}",
                    ]
                )
                print(rows[-1], flush=True)
    os.environ.pop("WINNOW_HOME", None)
    print(table(["table", "code", "MB", "chunks", "result", "ingest s", "peak RSS MB"], rows))


if __name__ == "__main__":
    main()
