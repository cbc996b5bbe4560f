"""Which relevance features and which threshold rule refuse off-topic questions without refusing
answerable ones (docs/benchmarks.md, issue 19). ``python -m benchmarks.studies.study_refusal`` after
``python -m benchmarks.studies.study`` (it reuses that study's SciFact index).

Discipline: every choice is made on data that is not reported. SciFact's judged queries (answerable) and
the *fitting* off-topic set (``benchmarks/data/offtopic.txt``) are split into the same 5 folds; for each
fold the model is fitted on the training folds' answerable queries and the threshold chosen by the rule
on the training folds of both sets; the held-out folds of both are measured. This prints only those
cross-validated figures: the held-out off-topic set (``offtopic_heldout.txt``) and the demo questions are
measured by ``benchmarks.quality`` for the adopted variant alone, never compared across variants.

Two candidate features beyond what the product computes are tried here, offline: ``bm25_per_term`` (the
BM25 score over the query's distinct keyword terms, a stand-in for "over the query's maximum possible
score", which needs the terms' IDF that only Qdrant holds) and ``coverage`` (the share of the query's
terms found in the passage). Neither is in the product: they did not refuse better (docs/benchmarks.md)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cv import fit_logistic, kfold, mean, train_ids
from benchmarks.data import load_eval_set
from benchmarks.embedcache import DEFAULT_CACHE
from benchmarks.metrics import ndcg_at_k
from benchmarks.quality import OFFTOPIC_FILE, read_lines
from benchmarks.relevance_fit import L2_GRID, TOP_K, balanced_threshold, choose_threshold
from benchmarks.stack import EmbeddedStack
from benchmarks.studies.study import DEFAULT_HOME

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
RULES: dict[str, Callable[[Sequence[float], Sequence[float]], float]] = {
    "answerable <= 5 % (previous rule)": lambda answerable, _offtopic: choose_threshold(answerable),
    "balanced accuracy, midpoint": balanced_threshold,
}
Row = dict[str, Any]  # doc, cos, bm25, dr, sr, qt (query terms), mt (terms the passage holds)


def collect(stack: EmbeddedStack, texts: dict[str, str], key_to_id: dict[str, str]) -> dict[str, list[Row]]:
    """Each query's hybrid candidates at the API defaults (``top_k`` 10), with their evidence and term
    counts."""
    from functions.search.app import service
    from winnow.search.schemas import SearchRequest

    svc = service()
    encoder = stack.container.sparse
    out = {}
    for qid, text in texts.items():
        terms = set(encoder.encode_query(text).indices)
        out[qid] = [
            {
                "doc": key_to_id.get(h.key, h.key),
                "cos": e.cosine,
                "bm25": e.bm25,
                "dr": e.dense_rank,
                "sr": e.sparse_rank,
                "qt": len(terms),
                "mt": len(
                    terms.intersection(encoder.encode_query(f"{h.title}\n{h.section}\n{h.text}").indices)
                ),
            }
            for h, e in svc.candidates(stack.tenant, SearchRequest(query=text, top_k=TOP_K, mode="hybrid"))
        ]
    return out


def features(rows: list[Row]) -> list[dict[str, float]]:
    """The product's features (``winnow.search.relevance.feature_rows``) plus the two tried here."""
    from winnow.search.relevance import Evidence, feature_rows

    base = feature_rows([Evidence(r["cos"], r["bm25"], r["dr"], r["sr"]) for r in rows])
    for row, r in zip(base, rows, strict=True):
        bm25 = r["bm25"] if r["bm25"] and r["bm25"] > 0 else 0.0
        row["bm25_per_term"] = bm25 / r["qt"] if r["qt"] else 0.0
        row["coverage"] = r["mt"] / r["qt"] if r["qt"] else 0.0
    return base


@dataclass(frozen=True)
class Model:
    names: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float

    def probabilities(self, rows: list[dict[str, float]]) -> list[float]:
        out = []
        for row in rows:
            z = self.intercept + sum(w * row[f] for f, w in zip(self.names, self.weights, strict=True))
            out.append(1 / (1 + math.exp(-max(-40.0, min(40.0, z)))))
        return out


def fit(
    rows: dict[str, list[dict[str, float]]],
    labels: dict[str, list[int]],
    qids: Sequence[str],
    names: tuple[str, ...],
    l2: float,
) -> Model:
    x = [[r[f] for f in names] for q in qids for r in rows[q]]
    y = [label for q in qids for label in labels[q]]
    weights, intercept = fit_logistic(x, y, l2)
    return Model(names, tuple(weights), intercept)


def ndcg(model: Model, rows: list[dict[str, float]], docs: list[str], judgements: dict[str, int]) -> float:
    scores = model.probabilities(rows)
    order = sorted(range(len(rows)), key=lambda i: -scores[i])[:TOP_K]
    return ndcg_at_k(list(dict.fromkeys(docs[i] for i in order)), judgements)


def main() -> int:
    ev = load_eval_set()
    queries = ev.judged_queries
    qrels = {k: ev.qrels[k] for k in queries}
    fit_off = {f"off{i}": t for i, t in enumerate(read_lines(OFFTOPIC_FILE))}
    key_to_id = {f"bench/{d}.txt": d for d in ev.documents}
    path = DEFAULT_HOME / "refusal-candidates.json"
    if not path.is_file() and not (DEFAULT_HOME / "ingested").is_file():
        print(
            "benchmarks.studies.study_refusal: run python -m benchmarks.studies.study first", file=sys.stderr
        )
        return 2
    if not path.is_file():
        with EmbeddedStack(DEFAULT_HOME / "stack", embed_cache=DEFAULT_CACHE) as stack:
            found = {
                "answerable": collect(stack, queries, key_to_id),
                "offtopic": collect(stack, fit_off, key_to_id),
            }
        path.write_text(json.dumps(found))
    raw = json.loads(Path(path).read_text())
    rows = {q: features(v) for q, v in raw["answerable"].items()}
    docs = {q: [r["doc"] for r in v] for q, v in raw["answerable"].items()}
    labels = {q: [1 if qrels[q].get(d, 0) > 0 else 0 for d in docs[q]] for q in rows}
    off = {q: features(v) for q, v in raw["offtopic"].items()}
    folds, off_folds = kfold(list(queries)), kfold(list(off))

    def top(model: Model, r: list[dict[str, float]]) -> float:
        return max(model.probabilities(r), default=0.0)

    def choose_l2(train: list[str], names: tuple[str, ...]) -> float:
        inner = kfold(train, 4, seed=7)
        scores = {
            l2: mean(
                [
                    ndcg(fit(rows, labels, train_ids(inner, j), names, l2), rows[q], docs[q], qrels[q])
                    for j, held in enumerate(inner)
                    for q in held
                ]
            )
            for l2 in L2_GRID
        }
        return max(L2_GRID, key=lambda l2: scores[l2])

    print(f"{len(rows)} answerable, {len(off)} fitting off-topic; 5-fold CV on both")
    for name, names in FEATURE_SETS.items():
        held_ndcg: list[float] = []
        per_rule: dict[str, tuple[list[float], list[float], list[float]]] = {r: ([], [], []) for r in RULES}
        for i, fold in enumerate(folds):
            train = train_ids(folds, i)
            model = fit(rows, labels, train, names, choose_l2(train, names))
            held_ndcg += [ndcg(model, rows[q], docs[q], qrels[q]) for q in fold]
            train_ans = [top(model, rows[q]) for q in train]
            train_off = [top(model, off[q]) for q in train_ids(off_folds, i)]
            for rule_name, rule in RULES.items():
                t = rule(train_ans, train_off)
                refused_ans, refused_off, chosen = per_rule[rule_name]
                refused_ans += [float(top(model, rows[q]) < t) for q in fold]
                refused_off += [float(top(model, off[q]) < t) for q in off_folds[i]]
                chosen.append(t)
        for rule_name, (ra, ro, chosen) in per_rule.items():
            print(
                f"{name:48} CV nDCG@10 {mean(held_ndcg):.4f} | {rule_name:34} thresholds {chosen} "
                f"answerable refused {mean(ra):.1%} off-topic (fitting set) refused {mean(ro):.1%}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
