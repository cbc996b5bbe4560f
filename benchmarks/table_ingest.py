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
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import AS_THE_COMMAND, machine, positive_int, table

ROOT = Path(__file__).resolve().parents[1]

_INGEST = (
    AS_THE_COMMAND
    + """
import io, json, sys, time
from winnow.factory import get_container
from winnow_local.cli.ingest import collect_files, ingest_files
from winnow_local.runtime import LocalRuntime
runtime = LocalRuntime()
get_container().embedder.embed(["warm up"], "document")
get_container().ingest_service()
files = collect_files([sys.argv[1]], "bench", "")
started = time.perf_counter()
results = ingest_files(runtime, files, as_json=True, out=io.StringIO())
seconds = time.perf_counter() - started
statuses = {}
for r in results:
    statuses[r["status"]] = statuses.get(r["status"], 0) + 1
chunks = sum(int(r.get("chunks") or 0) for r in results)
print(json.dumps({"seconds": seconds, "statuses": statuses, "chunks": chunks}))
"""
)


def child(code: str, args: list[str], root: Path, home: Path) -> dict[str, Any]:
    """Run ``code`` on ``root``'s packages with ``home`` as WINNOW_HOME; its JSON line plus peak RSS."""
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{root / 'layers' / 'shared'}{os.pathsep}{root}"
    env["WINNOW_HOME"] = str(home)
    env.pop("WINNOW_BUCKET", None)
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root
    )
    assert process.stdout is not None and process.stderr is not None
    out = process.stdout.read()
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"child failed ({process.returncode}): {err.decode(errors='replace')[-2000:]}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)  # kilobytes on Linux
    return result


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
