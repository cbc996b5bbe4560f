"""Which relevance features and which threshold rule refuse off-topic questions without refusing
answerable ones (docs/benchmarks.md, issue 19). ``python -m benchmarks.study_refusal`` after
``python -m benchmarks.study`` (it reuses that study's SciFact index).

Discipline: every choice is made on data that is not reported. SciFact's judged queries (answerable) and
the *fitting* off-topic set (``benchmarks/data/offtopic.txt``) are split into the same 5 folds; for each
fold the model is fitted on the training folds' answerable queries and the threshold chosen by the rule
on the training folds of both sets; the held-out folds of both are measured. This prints only those
cross-validated figures: the held-out off-topic set (``offtopic_heldout.txt``) and the demo questions are
measured by ``benchmarks.quality`` for the adopted variant alone, never compared across variants."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.cv import kfold, mean, train_ids
from benchmarks.data import load_eval_set
from benchmarks.embedcache import DEFAULT_CACHE
from benchmarks.quality import (
    OFFTOPIC_FILE,
    THRESHOLD_GRID,
    choose_l2,
    choose_threshold,
    fit_mode,
    offline_ndcg,
    read_lines,
)
from benchmarks.stack import EmbeddedStack
from benchmarks.study import DEFAULT_HOME

FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "cosine, gap, log BM25 (shipped)": ("cosine", "cosine_gap", "bm25_log"),
    "cosine, gap, log BM25, coverage": ("cosine", "cosine_gap", "bm25_log", "coverage"),
    "cosine, gap, BM25 per term": ("cosine", "cosine_gap", "bm25_per_term"),
    "cosine, gap, log BM25, BM25 per term": ("cosine", "cosine_gap", "bm25_log", "bm25_per_term"),
    "cosine, gap, BM25 per term, coverage": ("cosine", "cosine_gap", "bm25_per_term", "coverage"),
    "cosine, gap, log BM25, BM25 per term, coverage": (
        "cosine",
        "cosine_gap",
        "bm25_log",
        "bm25_per_term",
        "coverage",
    ),
}


def collect(stack: EmbeddedStack, texts: dict[str, str], top_k: int, key_to_id: dict[str, str]) -> Any:
    from functions.search.app import service
    from winnow.search.schemas import SearchRequest

    svc = service()
    out = {}
    for qid, text in texts.items():
        request = SearchRequest(query=text, top_k=top_k, mode="hybrid")
        out[qid] = [
            {
                "doc": key_to_id.get(h.key, h.key),
                "cos": e.cosine,
                "bm25": e.bm25,
                "dr": e.dense_rank,
                "sr": e.sparse_rank,
                "qt": e.query_terms,
                "mt": e.matched_terms,
            }
            for h, e in svc.candidates(stack.tenant, request)
        ]
    return out


def cached(path: Path, make: Callable[[], Any]) -> Any:
    if not path.is_file():
        path.write_text(json.dumps(make()))
    return json.loads(path.read_text())


def main() -> int:
    from winnow.search.relevance import Evidence

    ev = load_eval_set()
    queries = ev.judged_queries
    qrels = {k: ev.qrels[k] for k in queries}
    fit_off = {f"off{i}": t for i, t in enumerate(read_lines(OFFTOPIC_FILE))}
    home = DEFAULT_HOME
    key_to_id = {f"bench/{d}.txt": d for d in ev.documents}

    def gather() -> Any:
        with EmbeddedStack(home / "stack", embed_cache=DEFAULT_CACHE) as stack:
            return {
                "answerable": collect(stack, queries, 10, key_to_id),
                "offtopic": collect(stack, fit_off, 10, key_to_id),
            }

    raw = cached(home / "refusal-candidates.json", gather)

    def convert(rows: list[dict[str, Any]]) -> list[tuple[str, Any]]:
        return [(r["doc"], Evidence(r["cos"], r["bm25"], r["dr"], r["sr"], r["qt"], r["mt"])) for r in rows]

    cands = {q: convert(v) for q, v in raw["answerable"].items()}
    off = {q: convert(v) for q, v in raw["offtopic"].items()}
    folds = kfold(list(queries))
    off_folds = kfold(list(off))

    def top(model: Any, c: list[tuple[str, Any]]) -> float:
        return max(model.probabilities([e for _, e in c]), default=0.0)

    rules: dict[str, Callable[[Sequence[float], Sequence[float]], float]] = {
        "answerable <= 5 % (shipped rule)": lambda ans, _off: choose_threshold(ans),
        "balanced accuracy, midpoint": balanced_midpoint,
    }
    print(f"{len(cands)} answerable, {len(off)} fitting off-topic; 5-fold CV on both")
    for name, features in FEATURE_SETS.items():
        ndcg: list[float] = []
        per_rule: dict[str, tuple[list[bool], list[bool], list[float]]] = {r: ([], [], []) for r in rules}
        for i, fold in enumerate(folds):
            train = train_ids(folds, i)
            model = fit_mode(cands, qrels, train, features, choose_l2(cands, qrels, train, features))
            ndcg += [offline_ndcg(model, cands[q], qrels[q]) for q in fold]
            train_ans = [top(model, cands[q]) for q in train]
            train_off = [top(model, off[q]) for q in train_ids(off_folds, i)]
            for rule_name, rule in rules.items():
                t = rule(train_ans, train_off)
                refused_ans, refused_off, ts = per_rule[rule_name]
                refused_ans += [top(model, cands[q]) < t for q in fold]
                refused_off += [top(model, off[q]) < t for q in off_folds[i]]
                ts.append(t)
        for rule_name, (ra, ro, ts) in per_rule.items():
            print(
                f"{name:48} CV nDCG@10 {mean(ndcg):.4f} | {rule_name:34} thresholds {ts} "
                f"answerable refused {mean([float(x) for x in ra]):.1%} "
                f"off-topic (fitting set) refused {mean([float(x) for x in ro]):.1%}"
            )
    return 0


def balanced_midpoint(answerable_tops: Sequence[float], offtopic_tops: Sequence[float]) -> float:
    """The threshold maximising (answerable answered + off-topic refused) / 2 on the training queries;
    the middle of the best plateau, so neither side sits on the edge."""
    scores = []
    for t in THRESHOLD_GRID:
        answered = sum(s >= t for s in answerable_tops) / max(1, len(answerable_tops))
        refused = sum(s < t for s in offtopic_tops) / max(1, len(offtopic_tops))
        scores.append((answered + refused) / 2)
    best = max(scores)
    plateau = [t for t, s in zip(THRESHOLD_GRID, scores, strict=True) if s >= best - 1e-12]
    return round(plateau[len(plateau) // 2], 2)


if __name__ == "__main__":
    raise SystemExit(main())
