"""Speed of the real handlers on this machine, each figure next to a baseline measured in the same run.

``python -m benchmarks.speed [--json] [--limit-docs N] [--search-queries N]``

1. Ingest throughput (documents/s, chunks/s) of the real ingest handler with the local ONNX embedder
   (S3 notifications of 50 records, folder bucket, SQLite ledger, Qdrant Edge on disk), against
   a naive pipeline built from the same components: one document at a time, parse + chunk + embed in
   batches of 32 chunks in arrival order + BM25 + upsert, nothing batched across documents, one model run
   at a time, no ledger.
   Both embedders are warmed up before timing.
2. Warm search latency through the search handler per mode (API defaults: top_k 5, no re-ranker with
   the local model), after a warm-up, with the query-embedding cache off so every query is embedded.
3. Peak resident memory of this process and the built bundle sizes (``.aws-sam/build``, when
   ``sam build`` has run). The search handler's cold start is ``benchmarks.coldstart``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO_ROOT,
    Progress,
    machine,
    percentile,
    positive_int,
    quiet_known_warnings,
    stdout_reserved_for_result,
    table,
)
from benchmarks.stack import EmbeddedStack, write_documents
from training.data import EvalSet, load_eval_set

EVENT_RECORDS = 50
NAIVE_BATCH = 32
MODES = ("sparse", "dense", "hybrid")
GOALS = {"ingest_speedup": 2.0, "hybrid_p50_ms": 25.0}


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
def run(
    eval_set: EvalSet, workdir: Path, search_queries: int = 100, progress: Progress | None = None
) -> dict[str, Any]:
    note = progress or Progress(quiet=True)
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
    speedup = winnow["docs_per_s"] / naive["docs_per_s"] if naive["docs_per_s"] else 0.0
    return {
        "documents": len(files),
        "ingest": {"winnow": winnow, "naive": naive, "speedup": round(speedup, 2)},
        "search": latency,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "bundle_mb": bundle_sizes(),
        "goals": GOALS,
        "engine": "edge",
        "machine": machine(),
    }


def render(result: dict[str, Any]) -> str:
    ing, search = result["ingest"], result["search"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    ingest_rows = [
        [name, f"{r['docs_per_s']:.1f}", f"{r['chunks_per_s']:.1f}", f"{r['seconds']:.1f}"]
        for name, r in (("winnow handler", ing["winnow"]), ("naive baseline", ing["naive"]))
    ]
    search_rows = [
        [m, f"{s['p50_ms']:.1f}", f"{s['p95_ms']:.1f}", str(s["queries"])] for m, s in search.items()
    ]
    hybrid_p50 = search["hybrid"]["p50_ms"]
    bundles = ", ".join(f"{k} {v:.1f}" for k, v in (result["bundle_mb"] or {}).items())
    return "\n".join(
        [
            f"{result['documents']} documents; Qdrant engine: {result['engine']}; "
            f"machine: {result['machine']['cpus']} CPUs, {result['machine']['cpu']}",
            "",
            table(["ingest", "docs/s", "chunks/s", "seconds"], ingest_rows),
            f"goal: ingest >= {GOALS['ingest_speedup']:.0f}x naive: {ing['speedup']:.2f}x -> "
            f"{verdict(ing['speedup'] >= GOALS['ingest_speedup'])}",
            "",
            table(["warm search", "p50 ms", "p95 ms", "queries"], search_rows),
            f"goal: hybrid p50 <= {GOALS['hybrid_p50_ms']:.0f} ms: {hybrid_p50:.1f} ms -> "
            f"{verdict(hybrid_p50 <= GOALS['hybrid_p50_ms'])}",
            "",
            f"peak RSS: this process {result['peak_rss_mb']:.0f} MB",
            f"bundles (unzipped MB): {bundles}" if bundles else "bundles: not built (run `sam build` first)",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    parser.add_argument("--limit-docs", type=positive_int, help="use at most N documents")
    parser.add_argument(
        "--eval-dir", type=Path, help="folder of corpus.jsonl, queries.jsonl, qrels.tsv; default SciFact"
    )
    parser.add_argument("--search-queries", type=positive_int, default=100, help="measured queries per mode")
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
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
        result = run(eval_set, Path(tmp), search_queries=args.search_queries, progress=Progress(args.quiet))
    print(json.dumps(result) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
