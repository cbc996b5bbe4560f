"""Ranking metrics as BEIR reports them (pytrec_eval / trec_eval definitions), written out so that the
benchmark depends on nothing but numpy-free Python and each formula can be checked by hand.

- nDCG@k: gains are the graded judgements themselves (trec_eval's ``ndcg_cut``: gain = rel, discount
  1/log2(rank + 1)), normalised by the ideal ordering of all judged-relevant documents of the query.
- Recall@k: judged-relevant documents (rel > 0) found in the top k, over all judged-relevant ones.
- MRR@k: 1/rank of the first relevant document within the top k, else 0.

Only queries that have at least one relevant judgement are scored; a query with no results scores 0.
Duplicate document ids in a ranking count once, at their first (best) position.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]  # query id -> document id -> graded relevance
Run = Mapping[str, Sequence[str]]  # query id -> document ids, best first
METRIC_NAMES = ("ndcg@10", "recall@10", "mrr@10")


def _unique(ranking: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for doc_id in ranking:
        if doc_id not in seen:
            seen.add(doc_id)
            out.append(doc_id)
    return out


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains listed by rank (rank 1 first)."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(ranking: Sequence[str], judgements: Mapping[str, int], k: int = 10) -> float:
    ideal = dcg(sorted((r for r in judgements.values() if r > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    gains = [max(0, judgements.get(doc_id, 0)) for doc_id in _unique(ranking)[:k]]
    return dcg(gains) / ideal


def recall_at_k(ranking: Sequence[str], judgements: Mapping[str, int], k: int = 10) -> float:
    relevant = {doc_id for doc_id, r in judgements.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_unique(ranking)[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], judgements: Mapping[str, int], k: int = 10) -> float:
    for rank, doc_id in enumerate(_unique(ranking)[:k], start=1):
        if judgements.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def per_query(run: Run, qrels: Qrels, k: int = 10) -> dict[str, dict[str, float]]:
    """Every scored query's metrics (queries without a relevant judgement are left out)."""
    out: dict[str, dict[str, float]] = {}
    for query_id, judgements in qrels.items():
        if not any(r > 0 for r in judgements.values()):
            continue
        ranking = run.get(query_id, ())
        out[query_id] = {
            f"ndcg@{k}": ndcg_at_k(ranking, judgements, k),
            f"recall@{k}": recall_at_k(ranking, judgements, k),
            f"mrr@{k}": mrr_at_k(ranking, judgements, k),
        }
    return out


def evaluate(run: Run, qrels: Qrels, k: int = 10) -> dict[str, float]:
    """Mean of each metric over the scored queries, rounded to 4 decimals."""
    scores = per_query(run, qrels, k)
    names = (f"ndcg@{k}", f"recall@{k}", f"mrr@{k}")
    if not scores:
        return dict.fromkeys(names, 0.0)
    return {name: round(sum(s[name] for s in scores.values()) / len(scores), 4) for name in names}
