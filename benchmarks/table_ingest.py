"""What a table costs ingest (issue 44, item 13): a 1 MB CSV of long cells became 7,429 chunks, 277 s
and 451 MB of resident memory in the ingest process. For CSV files of a given size (paragraphs in
cells; a numeric export of many short cells), the chunks the chunker makes, then ``winnow ingest`` on
the file in a child process of its own: its seconds, chunks and peak RSS (its ``VmHWM``).
``--baseline`` runs the same children on another checkout (e.g. main) in the same run.

Run: ``.venv/bin/python -m benchmarks.table_ingest [--kb 1000] [--baseline /path/to/main]``."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchmarks.common import (
    AS_THE_COMMAND,
    CHILD_PEAK_RSS,
    REPO_ROOT,
    child_env,
    machine,
    positive_int,
    run_child,
    table,
)
from tests.support.tables import table_csv

_INGEST = (
    AS_THE_COMMAND
    + CHILD_PEAK_RSS
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
print(json.dumps({"seconds": seconds, "statuses": statuses, "chunks": chunks, "peak_rss_mb": _peak_rss_mb()}))
"""
)


def ingest_row(code: str, label: str, name: str, root: Path, folder: Path, home: Path) -> list[str]:
    """``winnow ingest`` of ``folder`` in a child process on ``root``'s code: a row of the table below."""
    env = child_env(root, drop=("WINNOW_BUCKET",)) | {"WINNOW_HOME": str(home)}
    result = run_child(code, [str(folder)], env, cwd=root)
    size = sum(f.stat().st_size for f in folder.iterdir())
    chunks, statuses = str(result["chunks"]), str(result["statuses"])
    seconds, peak = f"{result['seconds']:.0f}", f"{result['peak_rss_mb']:.0f}"
    return [label, name, f"{size / 1e6:.2f}", chunks, statuses, seconds, peak]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=positive_int, default=1000, help="size of each CSV (default 1000)")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare with")
    args = parser.parse_args(argv)
    print(machine())
    roots = {"this": REPO_ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    rows = []
    with tempfile.TemporaryDirectory(prefix="winnow-table-ingest-") as work:
        for kind in ("long cells", "short cells"):
            data = table_csv(kind == "long cells", args.kb * 1000).encode()
            folder = Path(work) / kind.replace(" ", "-")
            folder.mkdir()
            (folder / "table.csv").write_bytes(data)
            for name, root in roots.items():
                home = Path(work) / f"home-{name}-{folder.name}"
                rows.append(ingest_row(_INGEST, kind, name, root, folder, home))
                print(rows[-1], flush=True)
    os.environ.pop("WINNOW_HOME", None)
    print(table(["table", "code", "MB", "chunks", "result", "ingest s", "peak RSS MB"], rows))


if __name__ == "__main__":
    main()
