"""Warm hybrid search through the search handler on the embedded default at a given index size, this
checkout against another in the same run, with each search process's peak RSS.

``python -m benchmarks.search_scale [--chunks 5000 50000] [--pairs 3] [--queries 100] [--baseline PATH]
[--candidates N]``

For each size, each checkout builds its own home (its own collection settings) in a child process:
``benchmarks.scale``'s synthetic chunks (384-d vectors around 200 topics, ~100-term BM25 vectors, ~1,000
characters of text, one tenant) loaded through the embedded default's store. Then search children
alternate between the checkouts (``--pairs`` pairs, the order swapped every pair so neither always runs
first): each runs SciFact questions through ``LocalRuntime.call_api("POST", "/search")`` — the whole
handler: validation, the local model's query embedding, hybrid search, threshold, answer — with 20
warm-up questions before ``--queries`` timed ones. Reported per checkout: the median over pairs of the
p50 and of queries/s, the peak RSS right after the first query (``VmHWM``) and at the end of the
process (``os.wait4``), and where the resident memory was right after the first query (``/proc/self/smaps``
by mapping, summed into the parts of ``PARTS``: the Edge shard's files by kind, heap and anonymous
memory, the rest). The question texts do not match the synthetic chunks; the engine's work does not
depend on that, and most answers are "nothing relevant" after the threshold. ``--candidates N`` asks for N
candidates per retriever in every request, so two checkouts whose defaults differ do the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import AS_THE_COMMAND, machine, positive_int, table
from benchmarks.ingest_scale import BUNDLED_SCIFACT, DEFAULT_SCIFACT

ROOT = Path(__file__).resolve().parents[1]
TENANT = "tenant-000"
WARMUP = 20

_LOAD = """
import json, sys, time
from benchmarks.scale import Corpus, load
from winnow.factory import get_container
store = get_container().store
seconds = load(store, Corpus(int(sys.argv[1]), 1), lambda message: None)
print(json.dumps({"seconds": seconds}))
"""

_SEARCH = (
    AS_THE_COMMAND
    + """
import json, sys, time
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
def resident():
    kb, mapping = {}, ""
    for line in open("/proc/self/smaps"):
        fields = line.split()
        if fields[0].endswith(":"):
            if fields[0] == "Rss:":
                kb[mapping] = kb.get(mapping, 0) + int(fields[1])
        else:
            mapping = fields[5] if len(fields) > 5 else ""
    return kb
from winnow_local.runtime import LocalRuntime
questions = json.load(open(sys.argv[1]))
timed, warmup, tenant = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
extra = {"candidates": int(sys.argv[5])} if len(sys.argv) > 5 else {}
runtime = LocalRuntime()
def ask(text):
    response = runtime.call_api("POST", "/search", body={"query": text, **extra}, tenant=tenant)
    if response.status != 200:
        raise SystemExit(f"search answered {response.status}: {response.body}")
    return len(response.json().get("results") or [])
ask(questions[0])
first_peak = hwm()
first_resident = resident()
for text in questions[1 : warmup + 1]:
    ask(text)
times, answered = [], 0
started = time.perf_counter()
for text in questions[warmup + 1 : warmup + 1 + timed]:
    t = time.perf_counter()
    answered += ask(text) > 0
    times.append(time.perf_counter() - t)
elapsed = time.perf_counter() - started
times.sort()
print(json.dumps({"p50_ms": times[len(times) // 2] * 1000, "p95_ms": times[int(len(times) * 0.95)] * 1000,
                  "queries_per_s": len(times) / elapsed, "answered": answered, "timed": len(times),
                  "first_query_peak_mb": first_peak, "first_query_resident_kb": first_resident}))
"""
)

# Where a search process's resident memory is, by mapping: the Edge shard's files by kind (the path part
# that names them), then heap and anonymous memory; everything else (libraries, the model) is "other".
PARTS = (
    ("write-ahead log", "/wal/"),
    ("dense vectors", "/vector_storage-dense/"),
    ("dense index", "/vector_index-dense/"),
    ("sparse vectors", "/vector_storage-bm25/"),
    ("payload indexes", "/payload_index/"),
    ("payloads", "/payload_storage/"),
)


def resident_parts(resident_kb: dict[str, int], home: str) -> dict[str, float]:
    """MB per part of ``PARTS`` for the mappings under ``home``, plus "other store files", "heap and
    anonymous" (no file: ``[heap]``, unnamed, ``[anon:...]``) and "other" (libraries, the model)."""
    parts = dict.fromkeys(
        [name for name, _ in PARTS] + ["other store files", "heap and anonymous", "other"], 0
    )
    for mapping, kb in resident_kb.items():
        if mapping.startswith(home.rstrip("/") + "/"):
            part = next((name for name, marker in PARTS if marker in mapping), "other store files")
        elif not mapping or mapping == "[heap]" or mapping.startswith("[anon"):
            part = "heap and anonymous"
        else:
            part = "other"
        parts[part] += kb
    return {name: round(kb / 1024, 1) for name, kb in parts.items()}


def run_child(code: str, args: list[str], root: Path, home: Path) -> dict[str, Any]:
    """Run ``code`` on ``root``'s packages with ``home`` as WINNOW_HOME; its JSON line plus its peak RSS."""
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{root / 'layers' / 'shared'}{os.pathsep}{root}"
    env["WINNOW_HOME"] = str(home)
    env.pop("WINNOW_BUCKET", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            [sys.executable, "-c", code, *args], env=env, stdout=out, stderr=err, cwd=root
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(
                f"child failed ({process.returncode}): {err.read().decode(errors='replace')[-2000:]}"
            )
        result: dict[str, Any] = json.loads(out.read().decode().strip().splitlines()[-1])
    result["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)  # kilobytes on Linux
    return result


def questions(eval_dir: Path, count: int) -> list[str]:
    path = eval_dir / "queries.jsonl"
    if not path.is_file():
        path = BUNDLED_SCIFACT / "queries.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]
    return (texts * (count // len(texts) + 1))[:count]


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="winnow-search-scale-"))
    roots = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    texts_file = work / "questions.json"
    texts_file.write_text(json.dumps(questions(args.eval_dir, 1 + WARMUP + args.queries)))
    out: dict[str, Any] = {"machine": machine(), "candidates": args.candidates, "sizes": {}}
    for chunks in args.chunks:
        size: dict[str, Any] = {}
        for label, root in roots.items():
            home = work / f"{label}-{chunks}"
            loaded = run_child(_LOAD, [str(chunks)], root, home)
            size[label] = {"load_seconds": round(loaded["seconds"], 1), "runs": []}
            print(f"{chunks:,} chunks: {label} loaded in {loaded['seconds']:.0f} s", file=sys.stderr)
        for pair in range(args.pairs):
            order = list(roots) if pair % 2 == 0 else list(reversed(roots))
            for label in order:
                home = work / f"{label}-{chunks}"
                result = run_child(
                    _SEARCH,
                    [str(texts_file), str(args.queries), str(WARMUP), TENANT]
                    + ([str(args.candidates)] if args.candidates else []),
                    roots[label],
                    home,
                )
                result["load_average"] = os.getloadavg()[0]
                result["first_query_parts_mb"] = resident_parts(
                    result.pop("first_query_resident_kb", {}), str(home)
                )
                size[label]["runs"].append(result)
                print(
                    f"{chunks:,} chunks, pair {pair + 1}, {label}: p50 {result['p50_ms']:.1f} ms, "
                    f"peak {result['peak_rss_mb']:.0f} MB",
                    file=sys.stderr,
                )
        for side in size.values():
            runs = side["runs"]
            side["p50_ms"] = round(statistics.median(r["p50_ms"] for r in runs), 2)
            side["queries_per_s"] = round(statistics.median(r["queries_per_s"] for r in runs), 1)
            side["first_query_peak_mb"] = round(statistics.median(r["first_query_peak_mb"] for r in runs), 1)
            side["peak_rss_mb"] = round(statistics.median(r["peak_rss_mb"] for r in runs), 1)
            side["first_query_parts_mb"] = {
                part: round(statistics.median(r["first_query_parts_mb"][part] for r in runs), 1)
                for part in runs[0]["first_query_parts_mb"]
            }
        out["sizes"][str(chunks)] = size
    return out


def render(result: dict[str, Any]) -> str:
    headers = [
        "chunks",
        "code",
        "p50 ms (each pair)",
        "median p50 ms",
        "queries/s",
        "RSS after 1st MB",
        "peak MB",
    ]
    rows = []
    for chunks, size in result["sizes"].items():
        for label, side in size.items():
            rows.append(
                [
                    f"{int(chunks):,}",
                    label,
                    ", ".join(f"{r['p50_ms']:.1f}" for r in side["runs"]),
                    f"{side['p50_ms']:.1f}",
                    f"{side['queries_per_s']:.1f}",
                    f"{side['first_query_peak_mb']:.0f}",
                    f"{side['peak_rss_mb']:.0f}",
                ]
            )
    parts = next(iter(next(iter(result["sizes"].values())).values()))["first_query_parts_mb"]
    breakdown = [
        [f"{int(chunks):,}", label, *(f"{side['first_query_parts_mb'][p]:.1f}" for p in parts)]
        for chunks, size in result["sizes"].items()
        for label, side in size.items()
    ]
    resident = "Resident MB after the first query, by part (median over the pairs):"
    return f"{table(headers, rows)}\n\n{resident}\n{table(['chunks', 'code', *parts], breakdown)}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_scale", description=__doc__)
    parser.add_argument("--chunks", type=positive_int, nargs="+", default=[5000, 50000], help="index sizes")
    parser.add_argument("--pairs", type=positive_int, default=3, help="alternating pairs of search processes")
    parser.add_argument("--queries", type=positive_int, default=100, help="timed questions per process")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_SCIFACT, help="SciFact folder (questions)")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare with")
    parser.add_argument(
        "--candidates",
        type=positive_int,
        default=None,
        help="candidates per retriever sent in every request (default: each checkout's own default)",
    )
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
