"""The one implementation of the ranking metrics, held against trec_eval (pytrec_eval) on generated runs."""

from __future__ import annotations

import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from winnow_local.evaluation import metrics

DOCS = [f"d{i}" for i in range(14)]


@st.composite
def judged_runs(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for q in range(draw(st.integers(1, 6))):
        judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=6))
        if not any(judged.values()):
            judged[next(iter(judged))] = 1
        qrels[f"q{q}"] = judged
        run[f"q{q}"] = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=12))
    return qrels, run


def trec(qrels: dict[str, dict[str, int]], run: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    # trec_eval orders by score; distinct descending scores keep our order. A run cut at 10 makes its
    # uncut reciprocal rank MRR@10. Queries with an empty ranking are absent from trec_eval's output.
    scored = {q: {d: float(100 - i) for i, d in enumerate(docs[:10])} for q, docs in run.items() if docs}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recip_rank", "P_1"})
    return evaluator.evaluate(scored)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(judged_runs())
def test_each_metric_agrees_with_trec_eval(
    case: tuple[dict[str, dict[str, int]], dict[str, list[str]]],
) -> None:
    qrels, run = case
    ours = metrics.per_query(run, qrels, 10)
    reference = trec(qrels, run)
    for query in qrels:
        expected = reference.get(query, {"ndcg_cut_10": 0.0, "recall_10": 0.0, "recip_rank": 0.0, "P_1": 0.0})
        assert abs(ours[query]["ndcg@10"] - expected["ndcg_cut_10"]) < 1e-9
        assert abs(ours[query]["recall@10"] - expected["recall_10"]) < 1e-9
        assert abs(ours[query]["mrr@10"] - expected["recip_rank"]) < 1e-9
        assert ours[query]["hit@1"] == expected["P_1"]


def test_hit_at_three_counts_a_relevant_document_in_the_first_three_only() -> None:
    judgements = {"c": 1}
    assert metrics.hit_at_k(["a", "b", "c"], judgements, 3) == 1.0
    assert metrics.hit_at_k(["a", "b", "x", "c"], judgements, 3) == 0.0
    assert metrics.hit_at_k(["a", "a", "a", "c"], judgements, 3) == 1.0  # a repeat counts once


def test_a_query_without_a_relevant_judgement_is_not_scored() -> None:
    assert metrics.per_query({"q": ["a"]}, {"q": {"a": 0}}) == {}
