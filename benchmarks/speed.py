"""Speed of the real handlers on this machine, each figure next to a baseline measured in the same run.

``python -m benchmarks.speed [--json] [--limit-docs N] [--search-queries N] [--cold-runs N] [--only cold]
``

``--only cold`` runs section 3 alone (same JSON object, with ``ingest`` and ``search`` null): the quick
loop while working on start-up time.

1. Ingest throughput (documents/s, chunks/s) of the real ingest handler with the local ONNX embedder
   (S3 notifications of 50 records, folder bucket, SQLite ledger, Qdrant Edge on disk), against
   a naive pipeline built from the same components: one document at a time, parse + chunk + embed in
   batches of 32 chunks in arrival order + BM25 + upsert, nothing batched across documents, one model run
   at a time, no ledger.
   Both embedders are warmed up before timing.
2. Warm search latency through the search handler per mode (API defaults: top_k 5, no re-ranker with
   the local model), after a warm-up, with the query-embedding cache off so every query is embedded.
3. Cold init of the search handler in a fresh process: import ``functions.search.app`` + the first
   ``POST /search`` (hybrid, re-ranked), with Voyage played by the loopback ``FakeVoyageServer`` (so the
   real REST adapters and httpx run, as in Lambda) and Qdrant in local mode on a small index (in AWS it
   is Qdrant Cloud over HTTP; local mode loads its collection from disk, so this is if anything
   pessimistic) — against a fresh process that only imports ``qdrant_client``. Medians of several runs,
   timed inside each process (the interpreter's own start-up is the same for both and left out).
4. Peak resident memory of this process and of the cold-start process, and the built bundle sizes
   (``.aws-sam/build``, when ``sam build`` has run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    Progress,
    machine,
    positive_int,
    quiet_known_warnings,
    stdout_reserved_for_result,
    table,
)
from benchmarks.stack import EmbeddedStack, write_documents
from training.data import REPO_ROOT, EvalSet, load_eval_set

EVENT_RECORDS = 50
NAIVE_BATCH = 32
MODES = ("sparse", "dense", "hybrid")
GOALS = {"ingest_speedup": 2.0, "hybrid_p50_ms": 25.0, "init_ratio": 1.3}
COLD_INDEX_DOCUMENTS = 20


# --- ingest --------------------------------------------------------------------------------------------
def naive_ingest(files: Sequence[tuple[str, bytes]], home: Path) -> dict[str, float]:
    """The pipeline a first version would have: every document on its own, straight through."""
    from winnow.adapters.qdrant_store import make_qdrant_client, store_on
    from winnow.models import ChunkPoint
    from winnow.parsing import parse_document
    from winnow.settings import ChunkingSettings, IngestSettings, ProviderSettings, QdrantSettings
    from winnow.text.chunking import chunk_document
    from winnow.text.sparse import Bm25Encoder
    from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder

    providers = ProviderSettings()
    # One model run at a time, as a first version would (Winnow's embedder runs several side by side).
    embedder = LocalOnnxEmbedder(
        batch_size=NAIVE_BATCH, max_tokens=providers.local_max_tokens, parallel_runs=1
    )
    embedder.embed(["warm-up"], "document")
    qdrant_settings = QdrantSettings(path=str(home / "qdrant"))
    client = make_qdrant_client(qdrant_settings, None, home / "qdrant")
    store = store_on(client, embedder.profile, qdrant_settings, collection_name="naive")
    store.ensure_collection()
    sparse = Bm25Encoder()
    chunking, ingest_settings = ChunkingSettings(), IngestSettings()
    chunks_total = 0
    started = time.perf_counter()
    try:
        for name, data in files:
            key = f"naive/{name}"
            parsed = parse_document(key, data, ingest_settings)
            chunks = chunk_document(parsed, chunking)
            texts = [c.embed_text for c in chunks]
            vectors: list[list[float]] = []
            for start in range(0, len(texts), NAIVE_BATCH):
                vectors.extend(embedder.embed(texts[start : start + NAIVE_BATCH], "document"))
            points = [
                ChunkPoint(
                    point_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}#{c.index}")),
                    tenant="naive",
                    key=key,
                    chunk=c,
                    dense=v,
                    sparse=sparse.encode_document(c.embed_text),
                    metadata={},
                    source_type=parsed.source_type,
                    doc_version="1",
                )
                for c, v in zip(chunks, vectors, strict=True)
            ]
            store.upsert(points)
            chunks_total += len(points)
        seconds = time.perf_counter() - started
    finally:
        client.close()
    return _rates(len(files), chunks_total, seconds)


def _rates(documents: int, chunks: int, seconds: float) -> dict[str, float]:
    return {
        "documents": documents,
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "docs_per_s": round(documents / seconds, 2) if seconds else 0.0,
        "chunks_per_s": round(chunks / seconds, 2) if seconds else 0.0,
    }


def winnow_ingest(stack: EmbeddedStack, files: Sequence[tuple[str, bytes]]) -> dict[str, float]:
    stack.container.embedder.embed(["warm-up"], "document")
    started = time.perf_counter()
    results = stack.ingest(files, per_event=EVENT_RECORDS)
    seconds = time.perf_counter() - started
    return _rates(len(results), sum(int(r.get("chunks") or 0) for r in results), seconds)


# --- warm search ---------------------------------------------------------------------------------------
def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (share in (0, 1])."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), math.ceil(share * len(ordered) - 1e-9)))
    return ordered[rank - 1]


def warm_latency(
    stack: EmbeddedStack, queries: Sequence[str], warmup: int = 10
) -> dict[str, dict[str, float]]:
    from winnow_local.apigw import http_api_event

    claim = stack.container.settings.search.tenant_claim
    out: dict[str, dict[str, float]] = {}
    measured, warm = list(queries[warmup:]), list(queries[:warmup])
    for mode in MODES:
        events = [
            http_api_event(
                "POST", "/search", body={"query": q, "mode": mode}, tenant=stack.tenant, claim=claim
            )
            for q in measured
        ]
        for q in warm:
            stack.search(q, mode, top_k=5, candidates=15)
        timings = []
        for event in events:
            started = time.perf_counter()
            stack.call_search(event)
            timings.append((time.perf_counter() - started) * 1000)
        out[mode] = {
            "queries": len(timings),
            "p50_ms": round(percentile(timings, 0.50), 2),
            "p95_ms": round(percentile(timings, 0.95), 2),
            "mean_ms": round(statistics.fmean(timings), 2) if timings else 0.0,
        }
    return out


# --- cold init -----------------------------------------------------------------------------------------
# Packages this dev environment has but the Lambda bundle does not ship, which the handler would still
# import here because a library probes for them: httpcore imports ``trio`` whenever it is installed
# (~65-85 ms), and ``trio`` is only here as selenium's dependency (the e2e tests). Both child processes
# run with them unimportable, so the figure is the bundle's init, not the dev machine's.
NOT_IN_BUNDLE = ("trio",)
_BUNDLE_ONLY = (
    f"import sys\nfor _name in {NOT_IN_BUNDLE!r}:\n"
    "    sys.modules[_name] = None  # import raises ImportError\n"
)
# Peak memory of the child itself: ru_maxrss survives exec on Linux, so a child started by this
# (large) process would report this process's peak; VmHWM belongs to the new address space.
_PEAK_RSS = r"""
def _peak_rss_mb():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
_HANDLER_CHILD = (
    _BUNDLE_ONLY
    + _PEAK_RSS
    + r"""
import json, sys, time
started = time.perf_counter()
from functions.search.app import handler
imported = time.perf_counter()
from winnow_local.context import LocalLambdaContext
response = handler(json.loads(sys.argv[1]), LocalLambdaContext())
done = time.perf_counter()
body = json.loads(response["body"])
print(json.dumps({
    "import_ms": (imported - started) * 1000,
    "first_request_ms": (done - imported) * 1000,
    "init_ms": (done - started) * 1000,
    "status": response["statusCode"],
    "results": len(body.get("results", [])),
    "max_rss_mb": _peak_rss_mb(),
}))
"""
)
_QDRANT_CHILD = (
    _BUNDLE_ONLY
    + _PEAK_RSS
    + r"""
import json, time
started = time.perf_counter()
import qdrant_client
print(json.dumps({"import_ms": (time.perf_counter() - started) * 1000,
                  "max_rss_mb": _peak_rss_mb()}))
"""
)


def _child(code: str, env: dict[str, str], args: Sequence[str] = ()) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall_ms = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"child process failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall_ms


def cold_init(eval_set: EvalSet, workdir: Path, runs: int, note: Progress) -> dict[str, Any]:
    from winnow_fakes.fake_voyage import FakeVoyageServer
    from winnow_local.apigw import http_api_event

    home = workdir / "cold-home"
    docs = dict(list(eval_set.documents.items())[:COLD_INDEX_DOCUMENTS])
    query = next(iter(eval_set.judged_queries.values()), "what is known about this topic?")
    with FakeVoyageServer() as fake:
        voyage_env: dict[str, str | None] = {
            "WINNOW_EMBEDDER": "voyage",
            "WINNOW_RERANKER": "voyage",
            "VOYAGE_API_KEY": fake.api_key,
            "VOYAGE_API_KEY_SECRET_ARN": None,
            "VOYAGE_BASE_URL": fake.base_url,
        }
        with EmbeddedStack(home, env=voyage_env) as stack:
            stack.ingest([(f"{d}.txt", t.encode("utf-8")) for d, t in docs.items()])
            tenant, claim = stack.tenant, stack.container.settings.search.tenant_claim
        event = json.dumps(
            http_api_event("POST", "/search", body={"query": query}, tenant=tenant, claim=claim)
        )

        # PYTHONDONTWRITEBYTECODE is dropped, not set to "0": any non-empty value stops Python writing
        # .pyc files, and the untimed first run is there to fill the bytecode cache.
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("WINNOW_", "QDRANT_", "VOYAGE_")) and k != "PYTHONDONTWRITEBYTECODE"
        }
        base["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "layers" / "shared"), str(REPO_ROOT)])
        handler_env = {
            **base,
            "WINNOW_HOME": str(home),
            **{k: v for k, v in voyage_env.items() if v is not None},
        }
        if runs > 1:
            # One untimed run of each fills the OS page cache and the bytecode cache, as on a warm host.
            _child(_QDRANT_CHILD, base)
            _child(_HANDLER_CHILD, handler_env, [event])
        handler_runs, qdrant_runs = [], []
        for i in range(runs):
            note(f"cold init run {i + 1}/{runs}")
            qdrant_runs.append(_child(_QDRANT_CHILD, base))
            handler_runs.append(_child(_HANDLER_CHILD, handler_env, [event]))
    bad = [r for r, _ in handler_runs if r["status"] != 200 or r["results"] == 0]
    if bad:
        raise RuntimeError(f"the cold search request did not answer with results: {bad[0]}")

    def median(rows: list[tuple[dict[str, Any], float]], field: str) -> float:
        return round(statistics.median(r[field] for r, _ in rows), 1)

    handler_ms = median(handler_runs, "init_ms")
    qdrant_ms = median(qdrant_runs, "import_ms")
    return {
        "runs": runs,
        "handler_import_ms": median(handler_runs, "import_ms"),
        "handler_first_request_ms": median(handler_runs, "first_request_ms"),
        "handler_init_ms": handler_ms,
        "handler_process_wall_ms": round(statistics.median(w for _, w in handler_runs), 1),
        "handler_max_rss_mb": median(handler_runs, "max_rss_mb"),
        "qdrant_client_import_ms": qdrant_ms,
        "qdrant_client_process_wall_ms": round(statistics.median(w for _, w in qdrant_runs), 1),
        "ratio": round(handler_ms / qdrant_ms, 3) if qdrant_ms else 0.0,
    }


# --- bundle sizes --------------------------------------------------------------------------------------
def bundle_sizes(build_dir: Path | None = None) -> dict[str, float] | None:
    """Unzipped size in MB of each built function and layer, or None when nothing is built."""
    build_dir = build_dir or REPO_ROOT / ".aws-sam" / "build"
    if not build_dir.is_dir():
        return None
    sizes = {}
    for entry in sorted(build_dir.iterdir()):
        if entry.is_dir():
            total = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file() and not f.is_symlink())
            sizes[entry.name] = round(total / 1024 / 1024, 1)
    return sizes


# --- the run -------------------------------------------------------------------------------------------
def _run_context() -> dict[str, Any]:
    """What every result carries besides its figures: memory, bundles, goals, engine and machine."""

    return {
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "bundle_mb": bundle_sizes(),
        "goals": GOALS,
        "engine": "edge",
        "machine": machine(),
    }


def run(
    eval_set: EvalSet,
    workdir: Path,
    search_queries: int = 100,
    cold_runs: int = 5,
    progress: Progress | None = None,
    only_cold: bool = False,
) -> dict[str, Any]:
    note = progress or Progress(quiet=True)
    if only_cold:
        note("cold init of the search handler")
        return {
            "documents": len(eval_set.documents),
            "ingest": None,
            "search": None,
            "cold_init": cold_init(eval_set, workdir, cold_runs, note),
            **_run_context(),
        }
    paths = write_documents(workdir / "documents", eval_set.documents)
    files = [(p.name, p.read_bytes()) for p in paths]

    note(f"naive ingest of {len(files)} documents")
    naive = naive_ingest(files, workdir / "naive")
    note(f"naive: {naive['docs_per_s']} docs/s")

    warmup = max(1, min(10, search_queries // 5))
    queries = list(eval_set.judged_queries.values())[: search_queries + warmup]
    with EmbeddedStack(workdir / "home", env={"WINNOW_QUERY_CACHE_SIZE": "0"}) as stack:
        note(f"winnow ingest of {len(files)} documents through the handler")
        winnow = winnow_ingest(stack, files)
        note(f"winnow: {winnow['docs_per_s']} docs/s")
        note(f"warm search latency, {len(queries) - warmup} queries per mode")
        latency = warm_latency(stack, queries, warmup=warmup)

    note("cold init of the search handler")
    cold = cold_init(eval_set, workdir, cold_runs, note)
    speedup = winnow["docs_per_s"] / naive["docs_per_s"] if naive["docs_per_s"] else 0.0
    return {
        "documents": len(files),
        "ingest": {"winnow": winnow, "naive": naive, "speedup": round(speedup, 2)},
        "search": latency,
        "cold_init": cold,
        **_run_context(),
    }


def render(result: dict[str, Any]) -> str:
    ing, cold, search = result["ingest"], result["cold_init"], result["search"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    header = [
        f"{result['documents']} documents; Qdrant engine: {result['engine']}; "
        f"machine: {result['machine']['cpus']} CPUs, {result['machine']['cpu']}",
        "",
    ]
    cold_lines = [
        table(
            ["cold start (median of runs)", "ms"],
            [
                ["search handler: import", f"{cold['handler_import_ms']:.0f}"],
                ["search handler: first request", f"{cold['handler_first_request_ms']:.0f}"],
                ["search handler: init total", f"{cold['handler_init_ms']:.0f}"],
                ["import qdrant_client alone", f"{cold['qdrant_client_import_ms']:.0f}"],
            ],
        ),
        f"goal: init <= {GOALS['init_ratio']}x qdrant_client import: {cold['ratio']:.2f}x -> "
        f"{verdict(cold['ratio'] <= GOALS['init_ratio'])}",
        "",
    ]
    if ing is None or search is None:  # --only cold
        return "\n".join([*header, *cold_lines, f"cold search process {cold['handler_max_rss_mb']:.0f} MB"])
    ingest_rows = [
        [name, f"{r['docs_per_s']:.1f}", f"{r['chunks_per_s']:.1f}", f"{r['seconds']:.1f}"]
        for name, r in (("winnow handler", ing["winnow"]), ("naive baseline", ing["naive"]))
    ]
    search_rows = [
        [m, f"{s['p50_ms']:.1f}", f"{s['p95_ms']:.1f}", str(s["queries"])] for m, s in search.items()
    ]
    hybrid_p50 = search["hybrid"]["p50_ms"]
    lines = [
        *header,
        table(["ingest", "docs/s", "chunks/s", "seconds"], ingest_rows),
        f"goal: ingest >= {GOALS['ingest_speedup']:.0f}x naive: {ing['speedup']:.2f}x -> "
        f"{verdict(ing['speedup'] >= GOALS['ingest_speedup'])}",
        "",
        table(["warm search", "p50 ms", "p95 ms", "queries"], search_rows),
        f"goal: hybrid p50 <= {GOALS['hybrid_p50_ms']:.0f} ms: {hybrid_p50:.1f} ms -> "
        f"{verdict(hybrid_p50 <= GOALS['hybrid_p50_ms'])}",
        "",
        *cold_lines,
        f"peak RSS: this process {result['peak_rss_mb']:.0f} MB, "
        f"cold search process {cold['handler_max_rss_mb']:.0f} MB",
    ]
    if result["bundle_mb"]:
        lines.append(
            "bundles (unzipped MB): " + ", ".join(f"{k} {v:.1f}" for k, v in result["bundle_mb"].items())
        )
    else:
        lines.append("bundles: not built (run `sam build` first)")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    parser.add_argument("--limit-docs", type=positive_int, help="use at most N documents")
    parser.add_argument(
        "--eval-dir", type=Path, help="folder of corpus.jsonl, queries.jsonl, qrels.tsv; default SciFact"
    )
    parser.add_argument("--search-queries", type=positive_int, default=100, help="measured queries per mode")
    parser.add_argument("--cold-runs", type=positive_int, default=5, help="fresh processes per cold figure")
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
    parser.add_argument(
        "--only", choices=["cold"], help="run one section: cold = the search handler's cold init alone"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_known_warnings()
    try:
        eval_set = load_eval_set(eval_dir=args.eval_dir)
    except FileNotFoundError as exc:
        print(f"benchmarks.speed: {exc}", file=sys.stderr)
        return 2
    if args.limit_docs:
        eval_set = eval_set.limited(args.limit_docs)
    with stdout_reserved_for_result(), tempfile.TemporaryDirectory(prefix="winnow-speed-") as tmp:
        result = run(
            eval_set,
            Path(tmp),
            search_queries=args.search_queries,
            cold_runs=args.cold_runs,
            progress=Progress(quiet=args.quiet),
            only_cold=args.only == "cold",
        )
    print(json.dumps(result) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
