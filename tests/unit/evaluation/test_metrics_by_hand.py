"""The benchmark's ranking metrics against values worked out by hand from the trec_eval definitions."""

from __future__ import annotations

import math

import pytest

from winnow_local.evaluation.metrics import dcg, evaluate, mrr_at_k, ndcg_at_k, per_query, recall_at_k


def test_dcg_discounts_by_log2_of_rank_plus_one() -> None:
    # Given gains 3, 2, 0, 1 at ranks 1..4
    # Then DCG = 3/log2(2) + 2/log2(3) + 0 + 1/log2(5)
    assert dcg([3, 2, 0, 1]) == pytest.approx(3 + 2 / math.log2(3) + 1 / math.log2(5))


def test_ndcg_of_a_perfect_ranking_is_one_and_of_no_hit_is_zero() -> None:
    judgements = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "b", "x"], judgements) == pytest.approx(1.0)
    assert ndcg_at_k(["b", "a"], judgements) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y", "z"], judgements) == 0.0
    assert ndcg_at_k([], judgements) == 0.0


def test_ndcg_with_one_relevant_document_at_rank_three() -> None:
    # Given one relevant document, found third
    # Then nDCG = (1/log2(4)) / (1/log2(2)) = 0.5
    assert ndcg_at_k(["x", "y", "a"], {"a": 1}) == pytest.approx(0.5)


def test_ndcg_uses_graded_gains_and_the_ideal_order_of_all_judged_documents() -> None:
    # Given judgements a=2, b=1, c=1 and a ranking c, x, a (b missed)
    judgements = {"a": 2, "b": 1, "c": 1}
    got = ndcg_at_k(["c", "x", "a"], judgements)
    # DCG = 1/log2(2) + 0 + 2/log2(4) = 2; ideal = 2/1 + 1/log2(3) + 1/log2(4)
    expected = 2 / (2 + 1 / math.log2(3) + 0.5)
    assert got == pytest.approx(expected)


def test_ndcg_only_counts_the_top_k_and_ideal_is_cut_at_k_too() -> None:
    judgements = {d: 1 for d in "abc"}
    # Given k=2 and the relevant documents at ranks 1 and 3
    got = ndcg_at_k(["a", "x", "b"], judgements, k=2)
    # DCG@2 = 1, ideal DCG@2 = 1 + 1/log2(3)
    assert got == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_zero_or_negative_judgements_are_not_relevant() -> None:
    judgements = {"a": 0, "b": -1, "c": 1}
    assert ndcg_at_k(["a", "b", "c"], judgements) == pytest.approx(0.5)
    assert recall_at_k(["a", "b"], judgements) == 0.0
    assert mrr_at_k(["a", "b", "c"], judgements) == pytest.approx(1 / 3)


def test_recall_counts_relevant_documents_found_in_the_top_k() -> None:
    judgements = {"a": 1, "b": 1, "c": 2, "d": 1}
    assert recall_at_k(["a", "x", "c"], judgements) == pytest.approx(0.5)
    assert recall_at_k(["y", "a", "b"], judgements, k=2) == pytest.approx(0.25)


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_hit_within_k() -> None:
    assert mrr_at_k(["x", "a", "b"], {"a": 1, "b": 1}) == pytest.approx(0.5)
    assert mrr_at_k(["a"], {"a": 1}) == 1.0
    ranking = [f"x{i}" for i in range(10)] + ["a"]
    assert mrr_at_k(ranking, {"a": 1}, k=10) == 0.0


def test_a_document_listed_twice_counts_once_at_its_best_rank() -> None:
    # Given "a" twice (two chunks of one document) before "b"
    judgements = {"a": 1, "b": 1}
    # Then "b" sits at rank 2, not 3
    assert ndcg_at_k(["a", "a", "b"], judgements) == pytest.approx(1.0)
    assert mrr_at_k(["x", "x", "a"], judgements) == pytest.approx(0.5)


def test_evaluate_averages_over_judged_queries_and_scores_missing_runs_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    run = {"q1": ["a"], "q3": ["c"]}  # q2 has no results at all; q3 has no relevant judgement
    scores = evaluate(run, qrels)
    # Then q3 is not scored, q1 is perfect and q2 scores zero
    assert set(per_query(run, qrels)) == {"q1", "q2"}
    assert scores == {"ndcg@10": 0.5, "recall@10": 0.5, "mrr@10": 0.5}


def test_evaluate_of_nothing_is_zero() -> None:
    assert evaluate({}, {}) == {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0}
