"""Retrieval quality of Winnow's real pipeline against the baselines a user would pick instead.

``python -m benchmarks.quality [--corpus F] [--queries F] [--qrels F] [--json] [--limit-docs N]
[--limit-queries N]``

Every document is written as ``<_id>.txt``, put into the bucket of a fresh embedded stack (temporary
WINNOW_HOME: folder bucket, SQLite ledger, Qdrant local mode, local ONNX embedder) and ingested by the
real ingest handler from S3 notifications of 50 records each. Every query then goes through the real
search handler as an API Gateway event (tenant from the JWT claim) with ``top_k`` 10, the API's default
``candidates`` (30) and ``relevance_threshold`` 0, so the ranking is measured rather than the threshold:
what a client asking for ten passages gets. Documents are ranked by their best chunk, so a query whose ten
passages come from eight documents is scored on those eight. Modes: ``sparse``, ``dense``, ``hybrid``
(the API default), and ``hybrid+rerank`` when a re-ranker is configured (``VOYAGE_API_KEY``).
Baselines on the same whole documents: BM25 (``bm25s``) and brute-force dense cosine with the same
local model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.baselines import bm25_rankings, dense_rankings
from benchmarks.common import (
    Progress,
    existing_file,
    positive_int,
    quiet_known_warnings,
    stdout_reserved_for_result,
    table,
)
from benchmarks.data import EvalSet, load_eval_set
from benchmarks.metrics import METRIC_NAMES, evaluate
from benchmarks.stack import EmbeddedStack, documents_by_best_chunk, write_documents

MODES = ("sparse", "dense", "hybrid")
RERANK_MODE = "hybrid+rerank"
DEFAULT_MODE = "hybrid"
TOP_K = 10
CANDIDATES: int | None = None  # the API default, max(15, 3 x top_k)
EVENT_RECORDS = 50
GOAL_MARGIN = 0.02


def winnow_rankings(
    stack: EmbeddedStack, queries: dict[str, str], mode: str, key_to_id: dict[str, str]
) -> dict[str, list[str]]:
    rerank = mode == RERANK_MODE
    api_mode = DEFAULT_MODE if rerank else mode
    rankings = {}
    for qid, text in queries.items():
        hits = stack.search(text, api_mode, top_k=TOP_K, candidates=CANDIDATES, rerank=rerank)
        rankings[qid] = documents_by_best_chunk(hits, key_to_id)
    return rankings


def run(
    eval_set: EvalSet,
    workdir: Path,
    progress: Progress | None = None,
    env: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Ingest, search every mode, run the baselines; return the JSON-shaped result (plus timings under
    ``seconds``, which ``main`` leaves out of ``--json``)."""
    note = progress or Progress(quiet=True)
    queries = eval_set.judged_queries
    qrels = {qid: eval_set.qrels[qid] for qid in queries}
    folder = workdir / "documents"
    paths = write_documents(folder, eval_set.documents)
    key_to_id: dict[str, str] = {}
    seconds: dict[str, float] = {}
    with EmbeddedStack(workdir / "home", env=env) as stack:
        files = []
        for doc_id, path in zip(eval_set.documents, paths, strict=True):
            files.append((path.name, path.read_bytes()))
            key_to_id[stack.key_for(path.name)] = doc_id
        note(f"ingesting {len(files)} documents through the ingest handler")
        started = time.perf_counter()
        results = stack.ingest(files, per_event=EVENT_RECORDS)
        seconds["ingest"] = time.perf_counter() - started
        chunks = sum(int(r.get("chunks") or 0) for r in results)
        note(f"ingested {len(results)} documents, {chunks} chunks in {seconds['ingest']:.1f}s")

        modes = list(MODES) + ([RERANK_MODE] if stack.has_reranker else [])
        scored: dict[str, dict[str, float]] = {}
        for mode in modes:
            started = time.perf_counter()
            scored[mode] = evaluate(winnow_rankings(stack, queries, mode, key_to_id), qrels)
            seconds[f"search {mode}"] = time.perf_counter() - started
            note(f"{mode}: nDCG@10 {scored[mode]['ndcg@10']:.4f} ({len(queries)} queries)")

        started = time.perf_counter()
        bm25 = evaluate(bm25_rankings(eval_set.documents, queries), qrels)
        seconds["baseline bm25"] = time.perf_counter() - started
        note(f"baseline bm25: nDCG@10 {bm25['ndcg@10']:.4f}")
        started = time.perf_counter()
        dense = evaluate(dense_rankings(eval_set.documents, queries, stack.container.embedder), qrels)
        seconds["baseline dense"] = time.perf_counter() - started
        note(f"baseline dense: nDCG@10 {dense['ndcg@10']:.4f}")

    return {
        "modes": scored,
        "baselines": {"bm25": bm25, "dense": dense},
        "queries": len(queries),
        "documents": len(eval_set.documents),
        "chunks": chunks,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
    }


def render(result: dict[str, Any]) -> str:
    rows = []
    for name, scores in result["modes"].items():
        rows.append([f"winnow {name}", *(f"{scores[m]:.4f}" for m in METRIC_NAMES)])
    for name, scores in result["baselines"].items():
        rows.append([f"baseline {name} (whole documents)", *(f"{scores[m]:.4f}" for m in METRIC_NAMES)])
    best_name, best = max(result["baselines"].items(), key=lambda item: item[1]["ndcg@10"])
    default = result["modes"][DEFAULT_MODE]["ndcg@10"]
    margin = default - best["ndcg@10"]
    verdict = "met" if margin >= GOAL_MARGIN else "NOT met"
    lines = [
        f"{result['documents']} documents ({result.get('chunks', '?')} chunks), {result['queries']} queries",
        "",
        table(["system", *METRIC_NAMES], rows),
        "",
        f"goal: winnow {DEFAULT_MODE} nDCG@10 >= best baseline ({best_name}, {best['ndcg@10']:.4f}) "
        f"+ {GOAL_MARGIN:.2f}: {default:.4f} ({margin:+.4f}) -> {verdict}",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.quality", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--eval-dir", type=Path, help="folder of corpus.jsonl, queries.jsonl, qrels.tsv; default SciFact"
    )
    parser.add_argument("--corpus", type=existing_file, help="corpus.jsonl ({_id, text}); default SciFact")
    parser.add_argument("--queries", type=existing_file, help="queries.jsonl ({_id, text})")
    parser.add_argument("--qrels", type=existing_file, help="qrels.tsv (query-id, corpus-id, score)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument(
        "--limit-docs", type=positive_int, help="use at most N documents (relevant ones first)"
    )
    parser.add_argument("--limit-queries", type=positive_int, help="use at most N judged queries")
    parser.add_argument(
        "--workdir", type=Path, help="keep documents and the index here instead of a temp dir"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_known_warnings()
    try:
        eval_set = load_eval_set(args.corpus, args.queries, args.qrels, eval_dir=args.eval_dir)
    except FileNotFoundError as exc:
        print(f"benchmarks.quality: {exc}", file=sys.stderr)
        return 2
    if args.limit_docs or args.limit_queries:
        eval_set = eval_set.limited(args.limit_docs, args.limit_queries)
    progress = Progress(quiet=args.quiet)
    with stdout_reserved_for_result():
        if args.workdir:
            result = run(eval_set, args.workdir, progress)
        else:
            with tempfile.TemporaryDirectory(prefix="winnow-quality-") as tmp:
                result = run(eval_set, Path(tmp), progress)
    if args.json:
        print(json.dumps({k: result[k] for k in ("modes", "baselines", "queries", "documents")}))
    else:
        print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
