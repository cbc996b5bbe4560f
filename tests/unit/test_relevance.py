"""The relevance model the search Lambda evaluates in plain Python, and the cross-validation helpers the
quality benchmark fits it with (generated data only: no evaluation set in tests)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from training.cv import bootstrap_se, fit_logistic, fold_summary, kfold, train_ids
from training.quality import read_demo_questions, read_lines
from training.relevance_fit import (
    DEFAULT_MODE,
    JUDGED_WEIGHT,
    MAX_REFUSED,
    OFFTOPIC_FLOOR,
    PASSAGE_WEIGHT,
    THRESHOLD_GRID,
    OrderQueries,
    balanced_threshold,
    choose_threshold,
    fit_listwise,
    fit_models,
    fit_ranked,
    floor_threshold,
)
from winnow.adapters.qdrant_store import fuse_rrf
from winnow.models import StoredChunk
from winnow.search.relevance import DEFAULT_PROFILE as DEFAULT_PROFILE_SLUG
from winnow.search.relevance import (
    FEATURES,
    MODELS_DIR,
    Evidence,
    LogisticModel,
    RankedRelevance,
    RelevanceModels,
    feature_rows,
    load_models,
    reads_segments,
)


# --- features -----------------------------------------------------------------------------------------
def test_feature_rows_are_absolute_and_relative_to_the_best_candidate() -> None:
    # Given three candidates: one from both retrievers, one dense-only, one sparse-only
    evidence = [
        Evidence(cosine=0.6, bm25=8.0, dense_rank=1, sparse_rank=2),
        Evidence(cosine=0.4, bm25=None, dense_rank=2, sparse_rank=None),
        Evidence(cosine=0.3, bm25=10.0, dense_rank=None, sparse_rank=1),
    ]
    # When the model's inputs are computed
    rows = feature_rows(evidence)
    # Then each row has every feature, missing evidence counts as zero, gaps are to the best candidate
    assert all(set(r) == set(FEATURES) for r in rows)
    assert rows[0]["cosine_gap"] == 0 and rows[2]["cosine_gap"] == pytest.approx(-0.3)
    assert rows[0]["bm25_rel"] == pytest.approx(0.8) and rows[2]["bm25_rel"] == 1.0
    assert rows[1]["bm25_log"] == 0 and rows[1]["bm25_rel"] == 0 and rows[1]["sparse_rr"] == 0
    assert rows[0]["bm25_log"] == pytest.approx(math.log1p(8.0))
    assert rows[0]["sparse_rr"] == 0.5 and rows[2]["dense_rr"] == 0
    # And a passage the keyword side did not return is marked so: its BM25 is unknown, not zero
    assert [r["bm25_missing"] for r in rows] == [0.0, 1.0, 0.0]
    assert feature_rows([]) == []


def test_feature_rows_without_any_keyword_evidence() -> None:
    rows = feature_rows([Evidence(cosine=0.5, dense_rank=1), Evidence(cosine=0.2, dense_rank=2)])
    assert [r["bm25_rel"] for r in rows] == [0.0, 0.0]
    assert [r["dense_rr"] for r in rows] == [1.0, 0.5]
    assert [r["coverage"] for r in rows] == [0.0, 0.0]


def test_the_best_segment_is_a_feature_and_a_passage_not_read_falls_back_to_its_cosine() -> None:
    # Given one passage read (its best sentence scores above the passage) and one not read
    rows = feature_rows([Evidence(cosine=0.4, segment=0.7), Evidence(cosine=0.5)])
    # Then the segment feature is the best sentence's cosine, else the passage's own cosine
    assert [r["segment"] for r in rows] == [0.7, 0.5]
    assert [r["segment_gap"] for r in rows] == [0.0, pytest.approx(-0.2)]
    # And only a model that reads it makes the search read every candidate's segments
    assert reads_segments(LogisticModel(("cosine", "segment_gap"), (1.0, 1.0), 0.0))
    assert not reads_segments(LogisticModel(("cosine", "coverage"), (1.0, 1.0), 0.0))
    assert not reads_segments(None)


# --- the model ----------------------------------------------------------------------------------------
def test_probability_is_the_logistic_of_the_linear_score_and_stays_in_0_1() -> None:
    model = LogisticModel(features=("cosine", "bm25_log"), weights=(4.0, 0.5), intercept=-3.0)
    row = {"cosine": 0.5, "bm25_log": 2.0}
    assert model.probability(row) == pytest.approx(1 / (1 + math.exp(-(-3.0 + 2.0 + 1.0))))
    # far out on either side: no overflow, still a probability
    assert model.probability({"cosine": 1e6, "bm25_log": 0}) == 1.0
    assert 0.0 <= model.probability({"cosine": -1e6, "bm25_log": 0}) < 1e-300


def test_probabilities_rise_with_the_evidence_when_weights_are_positive() -> None:
    model = LogisticModel(features=("cosine", "sparse_rr"), weights=(6.0, 1.0), intercept=-3.0)
    scores = model.probabilities(
        [
            Evidence(cosine=0.2, sparse_rank=None),
            Evidence(cosine=0.5, sparse_rank=3),
            Evidence(0.5, sparse_rank=1),
        ]
    )
    assert scores == sorted(scores)
    assert all(0 < s < 1 for s in scores)


def test_a_model_rejects_unknown_features_and_missing_weights() -> None:
    with pytest.raises(ValueError, match="unknown relevance features: colour"):
        LogisticModel(features=("colour",), weights=(1.0,), intercept=0.0)
    with pytest.raises(ValueError, match="one weight per feature"):
        LogisticModel(features=("cosine", "bm25_log"), weights=(1.0,), intercept=0.0)


def test_models_round_trip_through_json_and_load_by_profile(tmp_path: Path) -> None:
    # Given models written as the benchmark writes them
    models = RelevanceModels(
        profile="local-x-8",
        modes={"hybrid": LogisticModel(("cosine",), (2.0,), -1.0)},
        threshold=0.3,
        version=2,
        provenance={"data": "generated", "folds": 5},
        floor=0.1,
    )
    (tmp_path / "local-x-8.json").write_text(json.dumps(models.to_json()))
    # When loaded for that profile
    loaded = load_models("local-x-8", tmp_path)
    # Then they are the same models, floor included; an unknown profile has none
    assert loaded == models and loaded is not None and loaded.lower_floor == 0.1
    assert loaded is not None and loaded.for_mode("dense") is None
    assert load_models("local-y-8", tmp_path) is None


def test_a_model_file_for_another_profile_is_refused(tmp_path: Path) -> None:
    other = RelevanceModels(profile="voyage-z-1024", modes={}, threshold=0.3)
    (tmp_path / "local-x-8.json").write_text(json.dumps(other.to_json()))
    with pytest.raises(ValueError, match="not local-x-8"):
        load_models("local-x-8", tmp_path)


def test_every_shipped_model_file_loads_for_its_profile() -> None:
    files = sorted(MODELS_DIR.glob("*.json"))
    assert files, "the local model's relevance models ship with the package"
    for path in files:
        data = json.loads(path.read_text())
        models = load_models(path.stem)
        assert models is not None and models.profile == path.stem
        assert {"hybrid", "dense", "sparse"} <= set(models.modes)
        assert 0 < data["threshold"] < 1
        # And its floor, fitted with it, is under its threshold
        assert 0 <= data["floor"] <= data["threshold"] and "floor_rule" in data["provenance"]
        # And it says where it came from: the data, the folds, the command that fits it, and when
        assert data["version"] >= 1
        assert {"data", "folds", "command", "date"} <= set(data["provenance"])
        assert data["provenance"]["command"].startswith("python -m training.fit")


def test_the_default_threshold_is_the_one_fitted_with_the_model_unless_a_deployment_sets_one() -> None:
    # Given the local embedder's shipped artifact, and a profile that has none
    from winnow.models import EmbeddingProfile
    from winnow.search.relevance import DEFAULT_PROFILE, default_threshold
    from winnow.settings import SearchSettings
    from winnow_local.adapters.onnx_embedder import DIMENSION, MODEL_NAME

    slug = EmbeddingProfile("local", MODEL_NAME, DIMENSION).slug
    models = load_models(slug)
    assert slug == DEFAULT_PROFILE and models is not None
    # Then no setting states a default of its own: the artifact's threshold is the default, also for a
    # profile with no fitted model (re-ranker or cosine scores)
    assert SearchSettings.model_fields["relevance_threshold"].default is None
    assert default_threshold(models) == models.threshold
    assert default_threshold(None) == models.threshold
    assert default_threshold(RelevanceModels(profile="voyage-z-1024", modes={}, threshold=0.4)) == 0.4


def test_an_artifact_threshold_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        RelevanceModels(profile="local-x-8", modes={}, threshold=1.5)


def test_an_artifact_floor_is_under_its_threshold_and_defaults_to_it() -> None:
    from winnow.search.relevance import default_floor

    # A floor above the threshold, or below 0, is refused
    for floor in (0.5, -0.1):
        with pytest.raises(ValueError, match="floor"):
            RelevanceModels(profile="local-x-8", modes={}, threshold=0.4, floor=floor)
    # An artifact fitted before the floor keeps every result to its threshold
    old = RelevanceModels.from_json({"profile": "local-x-8", "threshold": 0.4, "modes": {}})
    assert old.floor is None and old.lower_floor == 0.4 and "floor" not in old.to_json()
    assert default_floor(RelevanceModels(profile="local-x-8", modes={}, threshold=0.4, floor=0.05)) == 0.05
    # A profile with no artifact takes the default profile's floor, as it takes its threshold
    shipped = load_models(DEFAULT_PROFILE_SLUG)
    assert shipped is not None and default_floor(None) == shipped.lower_floor


# --- the ranked model: order within a query, answerability across queries ----------------------------
def _ranked(order_weights: tuple[float, float] = (0.0, 3.0)) -> RankedRelevance:
    return RankedRelevance(
        order=LogisticModel(("cosine", "bm25_rel"), order_weights, 0.0),
        answer=LogisticModel(("cosine",), (8.0,), -4.0),
        gap_weight=1.5,
        answer_weight=0.9,
        intercept=-0.2,
    )


def test_ranked_model_orders_by_the_order_model_and_scores_the_best_by_the_answer_model() -> None:
    # Given candidates where BM25 points at one passage and cosine at another
    evidence = [
        Evidence(cosine=0.55, bm25=2.0, dense_rank=1, sparse_rank=3),
        Evidence(cosine=0.35, bm25=12.0, dense_rank=4, sparse_rank=1),
        Evidence(cosine=0.20, bm25=None, dense_rank=9, sparse_rank=None),
    ]
    # When an order model that reads BM25 share scores them
    scores = _ranked().probabilities(evidence)
    # Then the order is the order model's (the keyword match first), every score is a probability
    assert max(range(3), key=lambda i: scores[i]) == 1
    assert scores[1] > scores[0] > scores[2] and all(0 < s < 1 for s in scores)
    # And the best passage's score comes from the answer model's best logit alone (cosine 0.55 here)
    expected = 1 / (1 + math.exp(-(0.9 * (8.0 * 0.55 - 4.0) - 0.2)))
    assert scores[1] == pytest.approx(expected)
    # And another order model moves the order but not the best score
    other = _ranked((5.0, 0.0)).probabilities(evidence)
    assert max(range(3), key=lambda i: other[i]) == 0 and max(other) == pytest.approx(expected)
    assert _ranked().probabilities([]) == []


@pytest.mark.parametrize("gap_weight", [0.0, -1.5, float("nan")])
def test_a_ranked_model_whose_gap_weight_would_tie_or_reverse_its_order_is_refused(
    tmp_path: Path, gap_weight: float
) -> None:
    # Given a ranked model file whose gap weight would tie every passage or reverse the order model's order
    data = _ranked().to_json() | {"gap_weight": gap_weight}
    artifact = {"profile": "local-w-8", "threshold": 0.3, "modes": {"hybrid": data}}
    (tmp_path / "local-w-8.json").write_text(json.dumps(artifact))
    # When it is loaded, then it is refused in one line
    with pytest.raises(ValueError, match="needs a gap weight above 0"):
        load_models("local-w-8", tmp_path)


def test_an_artifact_without_its_threshold_is_refused(tmp_path: Path) -> None:
    # Given an artifact that does not state the threshold fitted with its models
    (tmp_path / "local-t-8.json").write_text(json.dumps({"profile": "local-t-8", "modes": {}}))
    # When it is loaded, then it is refused in one line: nothing else would state the default
    with pytest.raises(ValueError, match="states its threshold"):
        load_models("local-t-8", tmp_path)


def test_the_shipped_hybrid_model_on_one_candidate_and_without_keyword_evidence() -> None:
    from winnow.models import EmbeddingProfile
    from winnow_local.adapters.onnx_embedder import DIMENSION, MODEL_NAME

    models = load_models(EmbeddingProfile("local", MODEL_NAME, DIMENSION).slug)
    assert models is not None
    model = models.modes["hybrid"]
    # Given a single candidate: its score is the best score, a probability that rises with its cosine
    (low,) = model.probabilities([Evidence(cosine=0.2, bm25=1.0, dense_rank=1, sparse_rank=1)])
    (high,) = model.probabilities([Evidence(cosine=0.7, bm25=1.0, dense_rank=1, sparse_rank=1)])
    assert 0 < low < high < 1
    # Given candidates with no BM25 evidence at all (a query of keyword stop-words, the dense side alone)
    cosines = [0.61, 0.35, 0.52, 0.18]
    scores = model.probabilities([Evidence(cosine=c, dense_rank=i + 1) for i, c in enumerate(cosines)])
    # Then they are ordered by cosine, each a probability
    assert sorted(range(4), key=lambda i: -scores[i]) == sorted(range(4), key=lambda i: -cosines[i])
    assert all(0 < p < 1 for p in scores)


def test_ranked_models_round_trip_through_json_beside_plain_ones(tmp_path: Path) -> None:
    # Given a profile whose hybrid mode is ranked and whose dense mode is a plain logistic model
    models = RelevanceModels(
        profile="local-r-8",
        modes={"hybrid": _ranked(), "dense": LogisticModel(("cosine",), (2.0,), -1.0)},
        threshold=0.25,
    )
    (tmp_path / "local-r-8.json").write_text(json.dumps(models.to_json()))
    # When loaded
    loaded = load_models("local-r-8", tmp_path)
    # Then each mode comes back as the shape it was written in
    assert loaded == models
    assert isinstance(loaded.for_mode("hybrid"), RankedRelevance)
    assert isinstance(loaded.for_mode("dense"), LogisticModel)


def test_a_model_says_which_features_it_reads_so_costly_ones_are_computed_only_when_read() -> None:
    # Given a ranked model whose answer model reads keyword coverage
    ranked = RankedRelevance(
        order=LogisticModel(("cosine", "bm25_rel"), (1.0, 1.0), 0.0),
        answer=LogisticModel(("cosine", "coverage"), (1.0, 2.0), 0.0),
        gap_weight=1.0,
        answer_weight=1.0,
        intercept=0.0,
    )
    # Then it reads the union of its two models' features, and coverage reaches the model's inputs
    assert ranked.reads == {"cosine", "bm25_rel", "coverage"}
    assert LogisticModel(("cosine",), (1.0,), 0.0).reads == {"cosine"}
    rows = feature_rows([Evidence(cosine=0.3, coverage=0.5), Evidence(cosine=0.2)])
    assert [r["coverage"] for r in rows] == [0.5, 0.0]
    # And with more coverage the best passage scores higher, the order staying the order model's
    low = ranked.probabilities([Evidence(cosine=0.3, coverage=0.0), Evidence(cosine=0.1, coverage=0.0)])
    high = ranked.probabilities([Evidence(cosine=0.3, coverage=1.0), Evidence(cosine=0.1, coverage=0.0)])
    assert high[0] > low[0] and high[0] > high[1] and low[0] > low[1]


def _generated_candidates(
    rng: random.Random, n: int, relevant_by: str
) -> tuple[list[tuple[str, Evidence]], dict[str, int]]:
    """One query's 10 candidates; the relevant one is the best by ``relevant_by`` (cosine or BM25)."""
    cands = []
    for i in range(10):
        cands.append((f"d{n}-{i}", Evidence(cosine=rng.uniform(0.2, 0.6), bm25=rng.uniform(0.5, 6.0))))
    key = (lambda c: c[1].cosine) if relevant_by == "cosine" else (lambda c: c[1].bm25 or 0.0)
    best = max(cands, key=key)[0]
    ranked = sorted(cands, key=lambda c: -c[1].cosine)
    out = []
    for rank, (doc, e) in enumerate(ranked, start=1):
        by_bm25 = sorted(cands, key=lambda c: -(c[1].bm25 or 0.0))
        sparse_rank = [d for d, _ in by_bm25].index(doc) + 1
        out.append((doc, Evidence(e.cosine, e.bm25, dense_rank=rank, sparse_rank=sparse_rank)))
    return out, {best: 1}


Queries = dict[str, list[tuple[str, Evidence]]]
Judged = dict[str, dict[str, int]]


def _judged_and_other(seed: int, judged_count: int, prefix: str) -> tuple[Queries, Judged, Queries, Judged]:
    """Judged queries answered by the best cosine, and as many queries of another set (``prefix``)
    answered by the best BM25 as the judged ones weigh in the fit (``JUDGED_WEIGHT`` each)."""
    rng = random.Random(seed)
    judged: Queries = {}
    other: Queries = {}
    qrels: Judged = {}
    other_qrels: Judged = {}
    for n in range(judged_count):
        judged[f"q{n}"], qrels[f"q{n}"] = _generated_candidates(rng, n, "cosine")
    for n in range(round(judged_count * JUDGED_WEIGHT)):
        other[f"{prefix}{n}"], other_qrels[f"{prefix}{n}"] = _generated_candidates(rng, 1000 + n, "bm25")
    return judged, qrels, other, other_qrels


def _hits(
    model: LogisticModel | RankedRelevance,
    queries: dict[str, list[tuple[str, Evidence]]],
    qrels: dict[str, dict[str, int]],
) -> int:
    """How many queries get a relevant candidate first under ``model``."""
    found = 0
    for q, cands in queries.items():
        scores = model.probabilities([e for _, e in cands])
        found += cands[max(range(len(cands)), key=lambda i: scores[i])][0] in qrels[q]
    return found


def test_known_item_queries_teach_the_order_model_what_the_judged_ones_cannot() -> None:
    # Given judged queries whose answer is the best cosine, and known-item queries whose answer is the
    # best BM25 match (the keyword and phrase styles the judged set lacks), as many of them as the
    # judged queries weigh in the fit
    judged, qrels, known, known_qrels = _judged_and_other(19, 40, "k")
    candidates = {DEFAULT_MODE: judged}
    # When fitted without and with the known-item queries
    plain = fit_models(candidates, qrels, list(judged), "local-t-8").for_mode(DEFAULT_MODE)
    ranked = fit_models(
        candidates, qrels, list(judged), "local-t-8", known=OrderQueries(known, known_qrels, list(known))
    ).for_mode(DEFAULT_MODE)
    # Then the default mode becomes a ranked model whose order model reads the keyword evidence
    assert isinstance(plain, LogisticModel) and isinstance(ranked, RankedRelevance)
    assert {"bm25_rel", "sparse_rr"} <= ranked.order.reads
    assert ranked.gap_weight > 0
    # And it puts the known item first far more often than the judged-only model does
    assert _hits(ranked, known, known_qrels) > _hits(plain, known, known_qrels) + 10


def test_passage_questions_alone_make_the_default_mode_a_ranked_model_that_learns_from_them() -> None:
    # Given judged queries answered by the best cosine, and passage questions answered by the best BM25,
    # as many as the judged queries weigh in the fit
    judged, qrels, passages, passage_qrels = _judged_and_other(23, 30, "p")
    candidates = {DEFAULT_MODE: judged}
    # When fitted with the passage questions and no known-item queries
    plain = fit_models(candidates, qrels, list(judged), "local-t-8").for_mode(DEFAULT_MODE)
    ranked = fit_models(
        candidates,
        qrels,
        list(judged),
        "local-t-8",
        known=OrderQueries({}, {}, []),
        passages=OrderQueries(passages, passage_qrels, list(passages)),
    ).for_mode(DEFAULT_MODE)
    # Then the order model learnt the passage questions' evidence
    assert isinstance(ranked, RankedRelevance)
    assert _hits(ranked, passages, passage_qrels) > _hits(plain, passages, passage_qrels) + 10


def test_listwise_fit_weighs_each_query_as_told() -> None:
    # Given two kinds of queries that disagree: one answered by the best cosine, one by the best BM25
    rng = random.Random(29)
    cands, qrels = {}, {}
    for n in range(40):
        cands[f"c{n}"], qrels[f"c{n}"] = _generated_candidates(rng, n, "cosine")
        cands[f"b{n}"], qrels[f"b{n}"] = _generated_candidates(rng, 100 + n, "bm25")
    cosine_ids = [q for q in cands if q.startswith("c")]
    bm25_ids = [q for q in cands if q.startswith("b")]
    features = ("cosine", "bm25_log")
    # When fitted on both, once with the cosine queries weighing four times and once the BM25 ones
    to_cosine = fit_listwise(cands, qrels, list(cands), features, 1.0, dict.fromkeys(cosine_ids, 4.0))
    to_bm25 = fit_listwise(cands, qrels, list(cands), features, 1.0, dict.fromkeys(bm25_ids, 4.0))

    def ratio(model: LogisticModel) -> float:
        return model.weights[0] / model.weights[1]

    # Then each fit leans to the queries it was told weigh more, and orders them better
    assert ratio(to_cosine) > 2 * ratio(to_bm25)
    cosine_q = {q: cands[q] for q in cosine_ids}
    bm25_q = {q: cands[q] for q in bm25_ids}
    assert _hits(to_cosine, cosine_q, qrels) > _hits(to_bm25, cosine_q, qrels)
    assert _hits(to_bm25, bm25_q, qrels) > _hits(to_cosine, bm25_q, qrels)
    # And a weight of 1 for every query is the unweighted fit
    plain = fit_listwise(cands, qrels, list(cands), features, 1.0)
    assert fit_listwise(cands, qrels, list(cands), features, 1.0, dict.fromkeys(cands, 1.0)) == plain
    # And a set of queries none of which has both kinds of candidate cannot be fitted
    none_relevant = {q: {} for q in cands}
    with pytest.raises(ValueError, match="both relevant and irrelevant"):
        fit_listwise(cands, none_relevant, list(cands), features, 1.0)
    assert JUDGED_WEIGHT > 1


def test_a_fitting_set_weighs_each_of_its_queries_as_its_weight_says() -> None:
    # Given judged queries answered by the best cosine and a set answered by the best BM25, as few
    # of them as a quarter of what the judged queries weigh
    judged, qrels, passages, passage_qrels = _judged_and_other(37, 40, "p")
    few = dict(list(passages.items())[:40])
    answer = LogisticModel(("cosine",), (5.0,), -2.0)

    def fitted(weight: float) -> RankedRelevance:
        extra = [OrderQueries(few, passage_qrels, list(few), weight)]
        model = fit_ranked(judged, qrels, list(judged), answer, extra)
        assert isinstance(model, RankedRelevance)
        return model

    # When the set is fitted on with weight 1 (the default) and with the passage questions' weight
    plain, weighed = fitted(1.0), fitted(PASSAGE_WEIGHT)
    # Then the weighed set pulls the order toward its evidence, and its questions are answered first
    # more often
    assert OrderQueries(few, passage_qrels, list(few)).weight == 1.0 and PASSAGE_WEIGHT > 1
    assert _hits(weighed.order, few, passage_qrels) > _hits(plain.order, few, passage_qrels)
    assert _hits(weighed.order, judged, qrels) < _hits(plain.order, judged, qrels)


def test_a_query_in_two_fitting_sets_is_refused() -> None:
    # Given a passage question whose id is also a judged query's (it would count twice)
    rng = random.Random(31)
    cands, qrels = {}, {}
    for n in range(10):
        cands[f"q{n}"], qrels[f"q{n}"] = _generated_candidates(rng, n, "cosine")
    answer = LogisticModel(("cosine",), (5.0,), -2.0)
    # When the order model is fitted, then it says which ids clash
    with pytest.raises(RuntimeError, match="query ids used twice: q3"):
        fit_ranked(cands, qrels, list(cands), answer, [OrderQueries(cands, qrels, ["q3"])])


# --- fitting --------------------------------------------------------------------------------------------
def test_fit_logistic_recovers_the_generating_model() -> None:
    # Given labels drawn from a known logistic model over two features
    rng = random.Random(3)
    true_w, true_b = (3.0, -2.0), 0.5
    rows, labels = [], []
    for _ in range(6000):
        x = [rng.gauss(0, 1), rng.gauss(0, 1)]
        p = 1 / (1 + math.exp(-(true_b + true_w[0] * x[0] + true_w[1] * x[1])))
        rows.append(x)
        labels.append(1 if rng.random() < p else 0)
    # When fitted with a weak penalty
    weights, intercept = fit_logistic(rows, labels, l2=0.01)
    # Then the coefficients come back within sampling error
    assert weights == pytest.approx(true_w, abs=0.25)
    assert intercept == pytest.approx(true_b, abs=0.15)


def test_fit_logistic_maps_standardised_weights_back_to_raw_features() -> None:
    # A feature on a large scale gets a proportionally small raw weight
    rng = random.Random(5)
    rows, labels = [], []
    for _ in range(3000):
        x = rng.gauss(0, 1)
        rows.append([x * 1000.0])
        labels.append(1 if rng.random() < 1 / (1 + math.exp(-2 * x)) else 0)
    (w,), _ = fit_logistic(rows, labels, l2=0.01)
    assert w == pytest.approx(2.0 / 1000.0, rel=0.15)


def test_fit_logistic_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both relevant and irrelevant"):
        fit_logistic([[0.1], [0.2]], [1, 1])


# --- cross-validation -------------------------------------------------------------------------------------
def test_kfold_is_a_deterministic_balanced_partition_independent_of_order() -> None:
    ids = [f"q{i}" for i in range(23)]
    folds = kfold(ids, 5, seed=1)
    assert len(folds) == 5
    assert sorted(q for f in folds for q in f) == sorted(ids)  # covers, disjoint
    assert {len(f) for f in folds} <= {4, 5}
    assert kfold(list(reversed(ids)), 5, seed=1) == folds
    assert kfold(ids, 5, seed=2) != folds
    assert sorted(train_ids(folds, 0) + folds[0]) == sorted(ids)
    assert not set(train_ids(folds, 0)) & set(folds[0])


def test_kfold_refuses_impossible_splits() -> None:
    with pytest.raises(ValueError, match="at least 2 folds"):
        kfold(["a", "b"], 1)
    with pytest.raises(ValueError, match="cannot fill"):
        kfold(["a", "b"], 3)


def test_fold_summary_means_per_fold() -> None:
    summary = fold_summary({"a": 1.0, "b": 0.0, "c": 0.5}, [["a", "b"], ["c"]])
    assert summary == {"folds": [0.5, 0.5], "mean": 0.5}


def test_bootstrap_se_matches_the_analytic_standard_error() -> None:
    rng = random.Random(11)
    values = [rng.gauss(0, 1) for _ in range(200)]
    mu = sum(values) / len(values)
    sd = math.sqrt(sum((v - mu) ** 2 for v in values) / len(values))
    assert bootstrap_se(values, draws=3000) == pytest.approx(sd / math.sqrt(len(values)), rel=0.1)
    assert bootstrap_se([0.3]) == 0.0


def test_threshold_rule_takes_the_highest_threshold_that_refuses_few_enough() -> None:
    # Given the best scores of 100 answerable queries: 0.01, 0.02, ..., 1.00
    tops = [i / 100 for i in range(1, 101)]
    # When the rule picks the default threshold
    chosen = choose_threshold(tops)
    # Then at most MAX_REFUSED of them fall below it, and the next grid step would refuse more
    assert sum(t < chosen for t in tops) / len(tops) <= MAX_REFUSED
    following = [t for t in THRESHOLD_GRID if t > chosen]
    assert not following or sum(t < following[0] for t in tops) / len(tops) > MAX_REFUSED


def test_balanced_rule_separates_answerable_from_offtopic_in_the_middle_of_the_gap() -> None:
    # Given answerable queries whose best scores are 0.30-0.79 and off-topic ones at 0.05-0.14
    answerable = [0.30 + i / 100 for i in range(50)]
    offtopic = [0.05 + i / 100 for i in range(10)]
    # When the rule picks the threshold with the off-topic questions to fit on
    chosen = balanced_threshold(answerable, offtopic)
    # Then every answerable query is answered and every off-topic one refused, from the middle of the gap
    assert all(s >= chosen for s in answerable) and all(s < chosen for s in offtopic)
    assert chosen == pytest.approx(0.22, abs=0.011)


def test_floor_rule_takes_the_lowest_threshold_that_refuses_enough_offtopic_questions() -> None:
    # Given 100 off-topic questions whose best scores are 0.005, 0.015, ..., 0.995
    offtopic = [(i + 0.5) / 100 for i in range(100)]
    # When the rule picks the threshold
    chosen = floor_threshold(offtopic)
    # Then at least OFFTOPIC_FLOOR of them fall below it, and the grid step below refuses fewer
    assert sum(s < chosen for s in offtopic) / 100 >= OFFTOPIC_FLOOR
    lower = [t for t in THRESHOLD_GRID if t < chosen]
    assert lower and sum(s < lower[-1] for s in offtopic) / 100 < OFFTOPIC_FLOOR
    # And a set no grid threshold refuses enough of gets the top of the grid
    assert floor_threshold([1.0] * 10) == THRESHOLD_GRID[-1]
    # And a score on the threshold is answered, not refused: of 25 questions at 0.01, ..., 0.25 the
    # threshold 0.25 refuses 24 (96 %), 0.24 only 23
    assert floor_threshold([i / 100 for i in range(1, 26)]) == pytest.approx(0.25)


def test_the_threshold_rule_holds_the_floor_on_every_corpus_and_pools_nothing() -> None:
    # Given answerable questions, and off-topic ones asked of two corpora: easy to refuse on one, scoring
    # higher on the other
    answerable = [0.30 + i / 100 for i in range(50)]
    easy = [i / 1000 for i in range(100)]
    hard = [0.10 + i / 200 for i in range(100)]
    # When the rule picks the threshold from both
    chosen = choose_threshold(answerable, [easy, hard])
    # Then it is the stricter corpus's floor: enough of each is refused, though pooled a lower one would do
    assert chosen == floor_threshold(hard) > floor_threshold(easy)
    assert floor_threshold(easy + hard) < chosen
    # And without off-topic questions the answerable-only rule runs
    assert choose_threshold(answerable) != chosen
    # And the floor rule does not read the answerable questions
    assert choose_threshold([], [easy, hard]) == chosen
    assert choose_threshold(answerable, [[]]) == choose_threshold(answerable)
    # And the balanced rule, asked for, pools the corpora and reads the answerable questions
    balanced = choose_threshold(answerable, [easy, hard], rule="balanced")
    assert balanced == balanced_threshold(answerable, easy + hard) != chosen
    with pytest.raises(ValueError, match="unknown threshold rule"):
        choose_threshold(answerable, [easy], rule="median")


def test_balanced_rule_trades_both_errors_equally_when_the_sets_overlap() -> None:
    # Given overlapping best scores: moving the threshold past any score costs one error on one side
    answerable = [i / 100 for i in range(20, 100)]
    offtopic = [i / 100 for i in range(1, 41)]
    chosen = balanced_threshold(answerable, offtopic)
    answered = sum(s >= chosen for s in answerable) / len(answerable)
    refused = sum(s < chosen for s in offtopic) / len(offtopic)
    # Then no grid threshold does better on the two shares together
    for t in THRESHOLD_GRID:
        other = (sum(s >= t for s in answerable) / len(answerable) + sum(s < t for s in offtopic) / 40) / 2
        assert other <= (answered + refused) / 2 + 1e-12


# --- fusion in the store ------------------------------------------------------------------------------
def _chunk(pid: str, **evidence: float | int | None) -> StoredChunk:
    return StoredChunk(pid, "t/k", "", "", None, 0, "", pid, {}, **evidence)  # type: ignore[arg-type]


def test_fuse_rrf_merges_both_lists_and_keeps_each_retrievers_evidence() -> None:
    dense = [_chunk("a", dense_score=0.9, dense_rank=1), _chunk("b", dense_score=0.8, dense_rank=2)]
    sparse = [_chunk("b", sparse_score=7.0, sparse_rank=1), _chunk("c", sparse_score=3.0, sparse_rank=2)]
    fused = fuse_rrf(dense, sparse, k=60)
    assert [h.point_id for h in fused] == ["b", "a", "c"]
    b = fused[0]
    assert (b.dense_score, b.dense_rank, b.sparse_score, b.sparse_rank) == (0.8, 2, 7.0, 1)
    assert b.score == pytest.approx(1 / 61 + 1 / 60)  # Qdrant's RRF: ranks from 0
    assert fused[2].dense_score is None and fused[2].score == pytest.approx(1 / 61)


# --- shipped question sets -------------------------------------------------------------------------------
def test_shipped_offtopic_and_demo_question_sets_are_large_enough_and_well_formed() -> None:
    root = Path(__file__).resolve().parents[2] / "training" / "data"
    offtopic = read_lines(root / "offtopic.txt")
    assert len(offtopic) >= 100 and len(set(offtopic)) == len(offtopic)
    # The held-out off-topic set (reported, never fitted on) shares no question with the fitting set
    heldout = read_lines(root / "offtopic_heldout.txt")
    assert len(heldout) >= 100 and len(set(heldout)) == len(heldout)
    assert not {q.casefold() for q in heldout} & {q.casefold() for q in offtopic}
    demo = read_demo_questions(root / "demo_questions.tsv")
    assert len(demo) >= 24
    from winnow_local.cli.demo import GENERATED, SAMPLES_DIR

    existing = {str(p.relative_to(SAMPLES_DIR)) for p in SAMPLES_DIR.rglob("*") if p.is_file()}
    assert {expected for _, expected in demo} <= existing | set(GENERATED)


def test_calibration_table_compares_each_score_band_with_its_share_of_relevant_passages() -> None:
    from benchmarks.stack import Hit
    from training.quality import calibration_table

    # Given held-out passages: two relevant of four scored 0.1-0.2, two of three scored 0.8-0.9, one at 1.0
    def hit(doc: str, score: float) -> Hit:
        return Hit(key=f"t/{doc}", score=score, vector_score=0.0, text="")

    hits = {
        "q1": [hit("a", 0.12), hit("b", 0.14), hit("c", 0.85), hit("d", 1.0)],
        "q2": [hit("a", 0.16), hit("e", 0.18), hit("a", 0.82), hit("e", 0.88)],
    }
    qrels = {"q1": {"c": 1, "d": 1, "a": 1}, "q2": {"a": 1}}
    # When tabulated
    rows = calibration_table(hits, qrels, {f"t/{d}": d for d in "abcde"})
    # Then each band holds its passages (1.0 in the top band) with their mean score and relevant share
    assert rows == [
        {"band": 0.1, "passages": 4, "mean_score": 0.15, "relevant": 0.5},
        {"band": 0.8, "passages": 3, "mean_score": 0.85, "relevant": 0.6667},
        {"band": 0.9, "passages": 1, "mean_score": 1.0, "relevant": 1.0},
    ]


def test_held_out_passage_outcomes_read_the_order_the_threshold_and_each_group() -> None:
    from training.quality import passage_figures, passage_outcome

    # Given a model that orders by cosine, and a question whose answering chunk is third by cosine
    model = LogisticModel(("cosine",), (10.0,), -5.0)
    cands = [
        ("a#0", Evidence(cosine=0.9)),
        ("a#1", Evidence(cosine=0.6)),
        ("b#2", Evidence(cosine=0.45)),
        ("b#3", Evidence(cosine=0.1)),
    ]
    judged = {"b#2": 1}
    # Then it is in the top 3 but not first; shown only while it clears the threshold; refused only when
    # the best passage does not
    assert passage_outcome(model, cands, judged, 0.3) == (False, True, True, False)
    assert passage_outcome(model, cands, judged, 0.5) == (False, True, False, False)
    assert passage_outcome(model, cands, judged, 0.99) == (False, True, False, True)
    assert passage_outcome(model, cands, {"b#3": 1}, 0.0) == (False, False, False, False)
    # And with a floor, a third result under the threshold is shown while the first clears it
    assert passage_outcome(model, cands, judged, 0.5, floor=0.3) == (False, True, True, False)
    assert passage_outcome(model, cands, judged, 0.99, floor=0.0) == (False, True, False, True)
    # And the figures are shares overall, per source and per format
    figures = passage_figures(
        {"q1": (True, True, True, False), "q2": (False, False, False, True)},
        {"q1": ("man", "man"), "q2": ("manuals", "pdf")},
    )
    assert figures["all"] == {"questions": 2, "top1": 0.5, "top3": 0.5, "top3_shown": 0.5, "refused": 0.5}
    assert figures["source:man"]["top1"] == 1.0 and figures["format:pdf"]["refused"] == 1.0


def test_the_order_model_reads_the_best_segment_only_when_the_fit_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from training import relevance_fit

    rng = random.Random(5)
    cands: dict[str, list[tuple[str, Evidence]]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(12):
        # the answering passage has the best sentence, not the best passage cosine
        rows = [(f"q{q}-d{i}", Evidence(cosine=0.5 + rng.random() * 0.1, segment=0.4)) for i in range(5)]
        rows[q % 5] = (rows[q % 5][0], Evidence(cosine=0.45, segment=0.8))
        cands[f"q{q}"] = rows
        qrels[f"q{q}"] = {rows[q % 5][0]: 1}
    answer = LogisticModel(("cosine",), (1.0,), 0.0)
    judged, others = list(cands)[:6], list(cands)[6:]
    extra = [relevance_fit.OrderQueries(cands, qrels, others)]
    plain = relevance_fit.fit_ranked(cands, qrels, judged, answer, extra)
    assert not {"segment", "segment_gap"} & plain.reads
    monkeypatch.setattr(relevance_fit, "READ_SEGMENTS", True)
    read = relevance_fit.fit_ranked(cands, qrels, judged, answer, extra)
    assert {"segment", "segment_gap"} <= read.order.reads
    best = [max(range(5), key=lambda i: read.probabilities([e for _, e in c])[i]) for c in cands.values()]
    assert best == [q % 5 for q in range(12)]


# --- the floor rule (issue 46: the threshold gates, the floor keeps the results after the first) ------
def test_lower_results_are_ranks_two_to_top_k_of_queries_whose_best_clears_the_threshold() -> None:
    from training.relevance_fit import lower_results

    model = LogisticModel(("cosine",), (10.0,), -5.0)
    cands = {
        "q": [(f"d{i}", Evidence(cosine=c)) for i, c in enumerate((0.2, 0.9, 0.6, 0.5, 0.4, 0.3, 0.1))],
        "low": [("x", Evidence(cosine=0.3)), ("y", Evidence(cosine=0.2))],
    }
    qrels = {"q": {"d2": 1, "d5": 1}, "low": {"y": 1}}
    # When the best of "low" is under the threshold, only "q" counts, ranks 2 to 5 in the model's order
    lower = lower_results(model, cands, qrels, ["q", "low"], threshold=0.5, top_k=5)
    assert [relevant for _, relevant in lower] == [True, False, False, True]
    assert [round(s, 3) for s, _ in lower] == [
        round(model.probability({"cosine": c}), 3) for c in (0.6, 0.5, 0.4, 0.3)
    ]


def test_the_floor_rule_meets_its_target_and_never_exceeds_the_threshold() -> None:
    from training.relevance_fit import choose_floor, floor_curve, parse_floor_rule

    # Given lower results: the relevant ones score higher, as calibrated scores do
    lower = [
        (0.45, True),
        (0.35, True),
        (0.25, False),
        (0.15, True),
        (0.1, False),
        (0.05, False),
        (0.02, False),
    ]
    # Precision: the lowest floor at which the kept ones are relevant at least the target share
    assert choose_floor(lower, 0.5, "precision", 0.75) == 0.11  # keeps 0.45, 0.35, 0.25, 0.15: 3 of 4
    assert choose_floor(lower, 0.5, "precision", 1.0) == 0.26
    # Recall: the highest floor keeping at least the target share of the relevant ones
    assert choose_floor(lower, 0.5, "recall", 1.0) == 0.15
    assert choose_floor(lower, 0.5, "recall", 0.6) == 0.35
    # Never above the threshold; "threshold" is every result cut at it
    assert choose_floor(lower, 0.2, "precision", 1.0) == 0.2
    assert choose_floor(lower, 0.3, "threshold", 0.0) == 0.3
    # The curve says what each floor keeps
    assert floor_curve(lower, [0.0, 0.3]) == [
        {"floor": 0.0, "relevant_kept": 1.0, "precision": 0.4286, "kept": 7},
        {"floor": 0.3, "relevant_kept": 0.6667, "precision": 1.0, "kept": 2},
    ]
    assert (
        parse_floor_rule("recall:0.9") == ("recall", 0.9) and parse_floor_rule("threshold")[0] == "threshold"
    )
    for bad in ("recall", "precision:0", "precision:2", "median:0.5", "threshold:0.2"):
        with pytest.raises(ValueError, match="floor rule"):
            parse_floor_rule(bad)
