"""The fusion study behind the default ordering (docs/benchmarks.md, issue 19): which way of ordering
hybrid candidates without a re-ranker holds up on held-out queries.

``python -m benchmarks.studies.study [--home DIR] [--depth N]``

Ingests SciFact once through the real ingest handler into ``--home`` (default ``.cache/scifact-home``,
kept between runs; embeddings come from the benchmark cache), collects every query's hybrid candidates
with their evidence through ``SearchService.candidates`` (the product path) at depth ``--depth`` per
retriever, then simulates each ordering on those candidates at the API's default depth and reports
5-fold cross-validated nDCG@10: every method's parameters are chosen on the training folds."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.baselines import bm25_rankings
from benchmarks.cv import bootstrap_se, fit_logistic, kfold, mean, train_ids
from benchmarks.data import REPO_ROOT, EvalSet, load_eval_set
from benchmarks.embedcache import DEFAULT_CACHE
from benchmarks.metrics import ndcg_at_k
from benchmarks.stack import EmbeddedStack, write_documents

Cand = dict[str, Any]  # key, doc, cos, bm25, dr, sr
DEFAULT_HOME = REPO_ROOT / ".cache" / "scifact-home"


def collect(eval_set: EvalSet, home: Path, depth: int, mode: str = "hybrid") -> dict[str, list[Cand]]:
    from winnow.search.schemas import SearchRequest

    out_path = home / f"candidates-{mode}-{depth}.json"
    if out_path.is_file():
        return dict(json.loads(out_path.read_text()))
    marker = home / "ingested"
    with EmbeddedStack(home / "stack", embed_cache=DEFAULT_CACHE) as stack:
        paths = write_documents(home / "documents", eval_set.documents)
        key_to_id = {stack.key_for(p.name): d for d, p in zip(eval_set.documents, paths, strict=True)}
        if not marker.is_file():
            files = [(p.name, p.read_bytes()) for p in paths]
            print(f"ingesting {len(files)} documents", file=sys.stderr)
            stack.ingest(files, per_event=50)
            marker.write_text("ok")
        from functions.search.app import service

        svc = service()
        result: dict[str, list[Cand]] = {}
        for qid, text in eval_set.judged_queries.items():
            request = SearchRequest(query=text, top_k=10, candidates=depth, mode=mode)  # type: ignore[arg-type]
            rows = []
            for hit, ev in svc.candidates(stack.tenant, request):
                rows.append(
                    {
                        "doc": key_to_id.get(hit.key, hit.key),
                        "chunk": hit.chunk_index,
                        "cos": ev.cosine,
                        "bm25": ev.bm25,
                        "dr": ev.dense_rank,
                        "sr": ev.sparse_rank,
                    }
                )
            result[qid] = rows
    out_path.write_text(json.dumps(result))
    return result


def at_depth(cands: list[Cand], n: int) -> list[Cand]:
    """What a search with ``candidates = n`` would have returned (each list is a top-n by its own score)."""
    out = []
    for c in cands:
        dr = c["dr"] if c["dr"] is not None and c["dr"] <= n else None
        sr = c["sr"] if c["sr"] is not None and c["sr"] <= n else None
        if dr is None and sr is None:
            continue
        out.append({**c, "dr": dr, "sr": sr, "bm25": c["bm25"] if sr is not None else None})
    return out


def ranking(cands: list[Cand], scores: Sequence[float], top_k: int = 10) -> list[str]:
    order = sorted(range(len(cands)), key=lambda i: -scores[i])[:top_k]
    docs: list[str] = []
    for i in order:
        if cands[i]["doc"] not in docs:
            docs.append(cands[i]["doc"])
    return docs


# --- orderings: each returns per-candidate scores ---------------------------------------------------
def rrf(cands: list[Cand], k: float, w: float) -> list[float]:
    return [
        (w / (k + c["dr"]) if c["dr"] else 0.0) + ((1 - w) / (k + c["sr"]) if c["sr"] else 0.0) for c in cands
    ]


def _dbsf_norm(values: list[float | None]) -> list[float]:
    present = [v for v in values if v is not None]
    if not present:
        return [0.0] * len(values)
    mu = mean(present)
    sd = math.sqrt(sum((v - mu) ** 2 for v in present) / len(present)) or 1.0
    lo, hi = mu - 3 * sd, mu + 3 * sd
    return [0.0 if v is None else min(1.0, max(0.0, (v - lo) / (hi - lo))) for v in values]


def dbsf(cands: list[Cand], w: float) -> list[float]:
    """Qdrant's distribution-based score fusion: each list's scores mapped by mean +- 3 sd to [0, 1]
    and summed (a chunk missing from a list adds 0); ``w`` weighs the dense side."""
    d = _dbsf_norm([c["cos"] if c["dr"] else None for c in cands])
    s = _dbsf_norm([c["bm25"] if c["sr"] else None for c in cands])
    return [w * a + (1 - w) * b for a, b in zip(d, s, strict=True)]


def minmax_blend(cands: list[Cand], w: float) -> list[float]:
    cos = [c["cos"] for c in cands]
    bm = [c["bm25"] or 0.0 for c in cands]

    def norm(v: list[float]) -> list[float]:
        lo, hi = min(v), max(v)
        return [(x - lo) / (hi - lo) if hi > lo else 0.0 for x in v]

    return [w * a + (1 - w) * b for a, b in zip(norm(cos), norm(bm), strict=True)]


def fused_top_by_cosine(cands: list[Cand], k: float = 60) -> list[float]:
    """The previous default: RRF picks the top 10, cosine orders them."""
    fused = rrf(cands, k, 0.5)
    top = set(sorted(range(len(cands)), key=lambda i: -fused[i])[:10])
    return [c["cos"] + (10.0 if i in top else 0.0) for i, c in enumerate(cands)]


def features(cands: list[Cand], names: Sequence[str]) -> list[list[float]]:
    from winnow.search.relevance import Evidence, feature_rows

    rows = feature_rows(
        [Evidence(cosine=c["cos"], bm25=c["bm25"], dense_rank=c["dr"], sparse_rank=c["sr"]) for c in cands]
    )
    return [[r[n] for n in names] for r in rows]


def labels(cands: list[Cand], judgements: dict[str, int]) -> list[int]:
    return [1 if judgements.get(c["doc"], 0) > 0 else 0 for c in cands]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.study")
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--collect-only", action="store_true")
    args = parser.parse_args(argv)
    eval_set = load_eval_set()
    queries = eval_set.judged_queries
    qrels = {q: eval_set.qrels[q] for q in queries}
    cands_all = collect(eval_set, args.home, args.depth)
    if args.collect_only:
        return 0
    folds = kfold(list(queries))
    bm25 = bm25_rankings(eval_set.documents, queries)
    bm25_q = {q: ndcg_at_k(bm25[q], qrels[q]) for q in queries}

    def per_query(
        score_fn: Callable[[list[Cand]], list[float]], depth: int, qids: Sequence[str]
    ) -> dict[str, float]:
        out = {}
        for q in qids:
            c = at_depth(cands_all[q], depth)
            out[q] = ndcg_at_k(ranking(c, score_fn(c)), qrels[q])
        return out

    # Each family: a grid of (label, score function, depth); CV picks the label on the training folds.
    depths = (30, 50, 100)
    families: dict[str, list[tuple[str, Callable[[list[Cand]], list[float]], int]]] = {
        "dense cosine": [(f"n={n}", lambda c: [x["cos"] for x in c], n) for n in depths],
        "fused top-10 by cosine (old)": [(f"n={n}", fused_top_by_cosine, n) for n in depths],
        "rrf": [
            (f"k={k} w={w} n={n}", lambda c, k=k, w=w: rrf(c, k, w), n)
            for k in (2, 10, 30, 60)
            for w in (0.3, 0.4, 0.5, 0.6, 0.7)
            for n in depths
        ],
        "dbsf": [
            (f"w={w} n={n}", lambda c, w=w: dbsf(c, w), n) for w in (0.3, 0.4, 0.5, 0.6, 0.7) for n in depths
        ],
        "minmax blend": [
            (f"w={w} n={n}", lambda c, w=w: minmax_blend(c, w), n)
            for w in (0.3, 0.4, 0.5, 0.6, 0.7)
            for n in depths
        ],
    }
    report: dict[str, Any] = {}
    cache: dict[tuple[str, str], dict[str, float]] = {}
    for family, grid in families.items():
        fold_scores, chosen = [], []
        for i, fold in enumerate(folds):
            train = train_ids(folds, i)

            def train_mean(
                g: tuple[str, Callable[[list[Cand]], list[float]], int],
                family: str = family,
                train: list[str] = train,
            ) -> float:
                scores = cache.get((family, g[0]))
                if scores is None:
                    scores = cache[(family, g[0])] = per_query(g[1], g[2], list(queries))
                return mean([scores[q] for q in train])

            best = max(grid, key=train_mean)
            chosen.append(best[0])
            fold_scores.append(mean([cache[(family, best[0])][q] for q in fold]))
        report[family] = {"folds": fold_scores, "mean": mean(fold_scores), "chosen": chosen}

    # The logistic relevance model (ordering by the calibrated probability), feature sets and L2 on train.
    from winnow.search.relevance import FEATURES

    feature_sets = {
        "all": FEATURES,
        "no-ranks": ("cosine", "cosine_gap", "bm25_log", "bm25_rel"),
        "abs-only": ("cosine", "bm25_log"),
    }
    for depth in depths:
        for set_name, names in feature_sets.items():
            fold_scores, chosen = [], []
            for i, fold in enumerate(folds):
                train = train_ids(folds, i)
                best_l2, best_score = 1.0, -1.0
                # inner 4-fold CV on the training queries chooses the L2 strength
                inner = kfold(train, 4, seed=7)
                for l2 in (0.1, 1.0, 10.0, 100.0, 1000.0):
                    inner_scores = []
                    for j, inner_fold in enumerate(inner):
                        fit_q = train_ids(inner, j)
                        w, b = _fit(cands_all, qrels, fit_q, names, depth, l2)
                        inner_scores += [
                            _ndcg_lr(cands_all[q], qrels[q], names, w, b, depth) for q in inner_fold
                        ]
                    if mean(inner_scores) > best_score:
                        best_l2, best_score = l2, mean(inner_scores)
                w, b = _fit(cands_all, qrels, train, names, depth, best_l2)
                chosen.append(best_l2)
                fold_scores.append(mean([_ndcg_lr(cands_all[q], qrels[q], names, w, b, depth) for q in fold]))
            report[f"logistic {set_name} n={depth}"] = {
                "folds": fold_scores,
                "mean": mean(fold_scores),
                "chosen": chosen,
            }

    bm25_folds = [mean([bm25_q[q] for q in fold]) for fold in folds]
    print(f"{'method':42} {'CV mean':>8}  folds (held-out nDCG@10)   margin vs BM25 per fold")
    print(
        f"{'baseline bm25 (bm25s, whole docs)':42} {mean(bm25_folds):8.4f}  "
        + " ".join(f"{v:.3f}" for v in bm25_folds)
    )
    for name, r in report.items():
        margins = [a - b for a, b in zip(r["folds"], bm25_folds, strict=True)]
        print(
            f"{name:42} {r['mean']:8.4f}  "
            + " ".join(f"{v:.3f}" for v in r["folds"])
            + "   "
            + " ".join(f"{m:+.3f}" for m in margins)
            + f"   chosen {r['chosen']}"
        )
    print(
        "fold noise (bootstrap SE of BM25 nDCG per fold): "
        + " ".join(f"{bootstrap_se([bm25_q[q] for q in f]):.3f}" for f in folds)
    )
    return 0


def _fit(
    cands_all: dict[str, list[Cand]],
    qrels: dict[str, dict[str, int]],
    qids: Sequence[str],
    names: Sequence[str],
    depth: int,
    l2: float,
) -> tuple[list[float], float]:
    rows: list[list[float]] = []
    ys: list[int] = []
    for q in qids:
        c = at_depth(cands_all[q], depth)
        rows += features(c, names)
        ys += labels(c, qrels[q])
    return fit_logistic(rows, ys, l2)


def _ndcg_lr(
    cands: list[Cand], judgements: dict[str, int], names: Sequence[str], w: list[float], b: float, depth: int
) -> float:
    c = at_depth(cands, depth)
    scores = [b + sum(wi * xi for wi, xi in zip(w, x, strict=True)) for x in features(c, names)]
    return ndcg_at_k(ranking(c, scores), judgements)


if __name__ == "__main__":
    raise SystemExit(main())
