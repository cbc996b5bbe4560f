"""Local ingest against its own embedder, with peak memory: docs/s of the embedder alone (texts already
chunked, embedded in the groups the adapter names) beside docs/s of ``winnow ingest`` on a folder of the
same files, and the ratio, for short and long documents; then the peak RSS of one search process.

``python -m benchmarks.ingest_speed [--short 300] [--long 30] [--baseline /path/to/other/checkout]``

Short documents are SciFact abstracts written as text files; long ones are Markdown files of 40
abstracts each (about 60 KB), both from ``benchmarks.ingest_scale.load_documents``. Every measurement runs
in a child process of its own, so its peak RSS (``os.wait4``) is that work's alone: the embedder-only
child loads the model, embeds one warm-up text, then embeds the texts; the ingest child builds the local
runtime, embeds one warm-up text, then runs the ``winnow ingest`` code (``ingest_files``) on the folder
into a fresh home; the search child runs one query through the search handler on the home the short
documents were ingested into. Timings exclude process start and model load (the same for both sides);
peak RSS includes them. ``--baseline`` runs the ingest and search children again on another checkout's
code (e.g. the main branch) in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import AS_THE_COMMAND, machine, positive_int, table
from benchmarks.ingest_scale import BUNDLED_SCIFACT, DEFAULT_SCIFACT, load_documents

ROOT = Path(__file__).resolve().parents[1]

_EMBED_ONLY = """
import json, sys, time
from winnow.factory import get_container
texts = json.load(open(sys.argv[1]))
embedder = get_container().embedder
embedder.embed(["warm up"], "document")
started = time.perf_counter()
count = 0
for group in embedder.request_groups(texts):
    count += len(embedder.embed([texts[i] for i in group], "document"))
print(json.dumps({"seconds": time.perf_counter() - started, "vectors": count}))
"""

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

_SEARCH = (
    AS_THE_COMMAND
    + """
import json, time
from winnow_local.runtime import LocalRuntime
runtime = LocalRuntime()
started = time.perf_counter()
response = runtime.call_api("POST", "/search", body={"query": "vitamin D and bone density"}, tenant="bench")
print(json.dumps({"status": response.status, "seconds": time.perf_counter() - started,
                  "results": len(response.json().get("results") or [])}))
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


def chunk_texts(folder: Path) -> list[str]:
    """The texts ingest would embed for every file of ``folder``, chunked as ingest chunks them."""
    from winnow.factory import get_container
    from winnow.ingest.service import IngestService

    service: IngestService = get_container().ingest_service()
    texts: list[str] = []
    for path in sorted(folder.iterdir()):
        parsed = service._parse(f"bench/{path.name}", path.read_bytes())
        texts.extend(dict.fromkeys(c.embed_text for c in service._chunk(parsed)))
    return texts


def write_folder(folder: Path, docs: list[tuple[str, bytes]]) -> None:
    folder.mkdir(parents=True)
    for key, data in docs:
        (folder / key.rsplit("/", 1)[-1]).write_bytes(data)


def run(args: argparse.Namespace) -> dict[str, Any]:
    eval_dir: Path = args.eval_dir
    if not (eval_dir / "corpus.jsonl").is_file():
        print(f"no SciFact corpus in {eval_dir}: using the bundled excerpt", file=sys.stderr)
        eval_dir = BUNDLED_SCIFACT
    work = Path(tempfile.mkdtemp(prefix="winnow-ingest-speed-"))
    os.environ["WINNOW_HOME"] = str(work / "chunking-home")
    docs = load_documents(eval_dir, args.short, args.long)
    sets = {"short": docs[: args.short], "long": docs[args.short :]}
    roots = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    out: dict[str, Any] = {"machine": machine(), "short_docs": args.short, "long_docs": args.long, "sets": {}}
    for name, subset in sets.items():
        if not subset:
            continue
        folder = work / name
        write_folder(folder, subset)
        texts = chunk_texts(folder)
        texts_file = work / f"{name}.json"
        texts_file.write_text(json.dumps(texts))
        print(f"{name}: {len(subset)} documents, {len(texts)} texts", file=sys.stderr)
        embed = child(_EMBED_ONLY, [str(texts_file)], ROOT, work / f"embed-{name}")
        row: dict[str, Any] = {
            "documents": len(subset),
            "texts": len(texts),
            "embedder_docs_per_s": round(len(subset) / embed["seconds"], 4),
            "embedder_peak_rss_mb": embed["peak_rss_mb"],
        }
        for label, root in roots.items():
            home = work / f"home-{label}-{name}"
            ingest = child(_INGEST, [str(folder)], root, home)
            row[label] = {
                "ingest_docs_per_s": round(len(subset) / ingest["seconds"], 4),
                "ratio": round(embed["seconds"] / ingest["seconds"], 3),
                "peak_rss_mb": ingest["peak_rss_mb"],
                "statuses": ingest["statuses"],
                "chunks": ingest["chunks"],
            }
            if name == "short":
                search = child(_SEARCH, [], root, home)
                row[label]["search_peak_rss_mb"] = search["peak_rss_mb"]
                row[label]["search_status"] = search["status"]
        out["sets"][name] = row
    return out


def render(result: dict[str, Any]) -> str:
    headers = ["set", "code", "docs", "texts", "embedder docs/s", "ingest docs/s", "ratio", "ingest RSS MB"]
    headers += ["search RSS MB"]
    rows = []
    for name, row in result["sets"].items():
        for label in ("this", "baseline"):
            if label not in row:
                continue
            side = row[label]
            rows.append(
                [
                    name,
                    label,
                    str(row["documents"]),
                    str(row["texts"]),
                    f"{row['embedder_docs_per_s']:.1f}",
                    f"{side['ingest_docs_per_s']:.1f}",
                    f"{side['ratio']:.0%}",
                    f"{side['peak_rss_mb']:.0f}",
                    f"{side['search_peak_rss_mb']:.0f}" if "search_peak_rss_mb" in side else "",
                ]
            )
    return table(headers, rows)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ingest_speed", description=__doc__)
    parser.add_argument("--short", type=positive_int, default=300, help="short documents (abstracts)")
    parser.add_argument("--long", type=int, default=30, help="long documents (40 abstracts each)")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_SCIFACT, help="SciFact folder")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare with")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = run(args)
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
