"""Cross-validation for the quality benchmark: every choice (fusion, weights, the relevance model, the
threshold) is made on the training folds and measured on the held-out fold, so the figures say how the
pipeline does on questions nobody tuned for.

- ``kfold``: k folds over query ids, shuffled with a fixed seed (the same split on every run).
- ``fit_logistic``: L2-regularised logistic regression by Newton's method (numpy only; the product
  evaluates the fitted model in plain Python, ``winnow.search.relevance``).
- ``bootstrap_se``: the standard error of a mean per-query difference, by resampling queries: the noise
  a fold's margin is judged against.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

DEFAULT_FOLDS = 5
DEFAULT_SEED = 20261123


def kfold(ids: Sequence[str], k: int = DEFAULT_FOLDS, seed: int = DEFAULT_SEED) -> list[list[str]]:
    """``k`` disjoint folds covering ``ids`` (sizes differ by at most one), independent of input order."""
    if k < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    unique = sorted(set(ids))
    if len(unique) < k:
        raise ValueError(f"{len(unique)} queries cannot fill {k} folds")
    random.Random(seed).shuffle(unique)
    return [sorted(unique[i::k]) for i in range(k)]


def train_ids(folds: Sequence[Sequence[str]], held_out: int) -> list[str]:
    return [qid for i, fold in enumerate(folds) if i != held_out for qid in fold]


def fit_logistic(
    rows: Sequence[Sequence[float]], labels: Sequence[int], l2: float = 1.0, iterations: int = 50
) -> tuple[list[float], float]:
    """Weights and intercept minimising the log loss plus ``l2/2 * |w|^2`` (the intercept is not
    penalised). Features are standardised for the fit and the result mapped back to raw features."""
    import numpy as np

    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 2 or len(x) != len(y) or len(y) == 0:
        raise ValueError("fit_logistic needs one label per row and at least one row")
    if y.min() == y.max():
        raise ValueError("fit_logistic needs both relevant and irrelevant examples")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ beta, -40, 40)))
        gradient = z.T @ (p - y) + penalty * beta
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    weights = beta[1:] / scale
    intercept = beta[0] - float(np.sum(beta[1:] * mean / scale))
    return [float(w) for w in weights], float(intercept)


def bootstrap_se(values: Sequence[float], draws: int = 2000, seed: int = DEFAULT_SEED) -> float:
    """Standard error of the mean of ``values`` by resampling them with replacement."""
    if len(values) < 2:
        return 0.0
    rng = random.Random(seed)
    n = len(values)
    means = []
    for _ in range(draws):
        means.append(sum(values[rng.randrange(n)] for _ in range(n)) / n)
    centre = sum(means) / draws
    return float((sum((m - centre) ** 2 for m in means) / (draws - 1)) ** 0.5)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def fold_summary(per_query: dict[str, float], folds: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Per-fold means of a per-query figure and the mean of the fold means."""
    per_fold = [mean([per_query[q] for q in fold if q in per_query]) for fold in folds]
    return {"folds": [round(v, 4) for v in per_fold], "mean": round(mean(per_fold), 4)}
