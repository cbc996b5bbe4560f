"""Choosing a deployment's threshold: the lowest that refuses the target share of off-topic questions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from winnow_local.evaluation import threshold

scores = st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=60)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(scores, st.sampled_from([0.5, 0.8, 0.9, 0.95, 1.0]))
def test_the_choice_refuses_the_target_and_one_step_lower_does_not(
    offtopic: list[float], target: float
) -> None:
    chosen = threshold.lowest_threshold(offtopic, target)
    refused = threshold.refused_share(offtopic, chosen)
    assert refused >= target - 1e-9 or chosen == 1.0
    if chosen > 0:
        assert threshold.refused_share(offtopic, round(chosen - 0.001, 3)) < target


def test_a_score_equal_to_the_threshold_is_kept_as_the_api_keeps_it() -> None:
    # The API keeps score >= threshold, so refusing a question that scored 0.4 needs more than 0.4.
    assert threshold.lowest_threshold([0.1, 0.4], 1.0) == 0.401
    assert threshold.refused_share([0.1, 0.4], 0.4) == 0.5


def test_cross_validation_reports_held_out_refusals_and_the_fold_thresholds() -> None:
    offtopic = [0.05 * i for i in range(20)]  # 0.0 .. 0.95
    answerable = [0.3, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99]
    choice = threshold.choose(answerable, offtopic, 0.9)
    assert choice is not None
    assert choice.threshold == threshold.lowest_threshold(offtopic, 0.9)
    assert choice.folds == 5 and len(choice.fold_thresholds) == 5
    assert 0 < choice.offtopic_refused_cv <= 1 and 0 <= choice.answerable_refused_cv <= 1
    low, high = choice.offtopic_refused_interval
    assert low <= choice.offtopic_refused_cv <= high
    assert choice.caveat() is None  # 20 off-topic questions: no warning


def test_few_offtopic_questions_come_with_their_uncertainty_and_none_with_no_recommendation() -> None:
    choice = threshold.choose([0.8, 0.9, 0.7], [0.1, 0.2, 0.15], 0.95)
    assert choice is not None and choice.caveat() is not None
    assert "only 3 off-topic questions" in (choice.caveat() or "")
    assert threshold.choose([0.8, 0.9], [0.1], 0.95) is None


def test_wilson_interval_is_wide_for_few_questions_and_narrow_for_many() -> None:
    few = threshold.wilson(3, 3)
    many = threshold.wilson(300, 300)
    assert few[0] < 0.5 < many[0] and few[1] == many[1] == 1.0
    assert threshold.wilson(0, 0) == (0.0, 1.0)
