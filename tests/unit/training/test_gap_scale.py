"""The default mode's gap scale (training.relevance_fit.GAP_SCALE): the threshold cuts fewer lower
results, while each query's order and best score, so its refusal, stay (generated data only)."""

from __future__ import annotations

import random

import pytest

from training import relevance_fit
from training.relevance_fit import DEFAULT_MODE, OrderQueries, fit_models
from winnow.search.relevance import Evidence, RankedRelevance

Queries = dict[str, list[tuple[str, Evidence]]]


def _queries(seed: int, count: int, prefix: str) -> tuple[Queries, dict[str, dict[str, int]]]:
    """Queries of 10 candidates each; the one with the best cosine plus BM25 is relevant."""
    rng = random.Random(seed)
    cands: Queries = {}
    qrels: dict[str, dict[str, int]] = {}
    for n in range(count):
        rows = [(f"{prefix}{n}-{i}", rng.uniform(0.2, 0.6), rng.uniform(0.5, 6.0)) for i in range(10)]
        best = max(rows, key=lambda r: r[1] + r[2] / 10)[0]
        by_cos = sorted(rows, key=lambda r: -r[1])
        by_bm25 = [r[0] for r in sorted(rows, key=lambda r: -r[2])]
        cands[f"{prefix}{n}"] = [
            (d, Evidence(c, b, dense_rank=rank, sparse_rank=by_bm25.index(d) + 1))
            for rank, (d, c, b) in enumerate(by_cos, start=1)
        ]
        qrels[f"{prefix}{n}"] = {best: 1}
    return cands, qrels


def _fit(monkeypatch: pytest.MonkeyPatch, scale: float) -> RankedRelevance:
    judged, qrels = _queries(5, 30, "q")
    known, known_qrels = _queries(6, 60, "k")
    monkeypatch.setattr(relevance_fit, "GAP_SCALE", scale)
    model = fit_models(
        {DEFAULT_MODE: judged},
        qrels,
        list(judged),
        "local-t-8",
        known=OrderQueries(known, known_qrels, list(known)),
    ).for_mode(DEFAULT_MODE)
    assert isinstance(model, RankedRelevance)
    return model


def test_a_smaller_gap_scale_keeps_order_and_best_score_and_lifts_the_lower_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the same data fitted with the gap weight as fitted and with a tenth of it
    fitted, scaled = _fit(monkeypatch, 1.0), _fit(monkeypatch, 0.1)
    # Then only the gap weight differs, by that factor
    assert scaled.gap_weight == pytest.approx(fitted.gap_weight * 0.1)
    assert (scaled.order, scaled.answer, scaled.intercept) == (fitted.order, fitted.answer, fitted.intercept)
    probe, _ = _queries(7, 20, "p")
    for cands in probe.values():
        evidence = [e for _, e in cands]
        before, after = fitted.probabilities(evidence), scaled.probabilities(evidence)
        # And each query keeps its order and its best score (what the threshold refuses on)
        assert sorted(range(10), key=lambda i: -before[i]) == sorted(range(10), key=lambda i: -after[i])
        assert max(after) == pytest.approx(max(before))
        # And every lower result scores at least as high, most of them higher
        assert all(a >= b - 1e-12 for a, b in zip(after, before, strict=True))
        assert sum(a > b + 1e-9 for a, b in zip(after, before, strict=True)) >= 5


def test_quality_takes_a_gap_scale_above_0_only(capsys: pytest.CaptureFixture[str]) -> None:
    from training import quality

    # Given a scale of 0, which would tie every result of a query, then the command refuses it
    with pytest.raises(SystemExit):
        quality.parse_args(["--gap-scale", "0"])
    assert "--gap-scale must be above 0" in capsys.readouterr().err
    # And a scale above 0 is taken as given
    assert quality.parse_args(["--gap-scale", "0.5"]).gap_scale == 0.5
