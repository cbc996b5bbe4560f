"""A relevance threshold for one deployment: the lowest that refuses at least the target share of the
off-topic questions, which is also the one that refuses the fewest answerable ones (a question is refused
when its best passage scores under the threshold, so refusals only grow with it). Cross-validated, so
that the figures a team reads are those of questions the choice did not see."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_TARGET = 0.95
MAX_FOLDS = 5
_STEP = 0.001  # thresholds are reported and applied to three decimals


def refused_share(scores: Sequence[float], threshold: float) -> float:
    return sum(s < threshold for s in scores) / len(scores) if scores else 0.0


def lowest_threshold(offtopic: Sequence[float], target: float) -> float:
    """The lowest threshold on the 0.001 grid that refuses at least ``target`` of ``offtopic`` (their
    best scores). Scores are compared as the API compares them (``score >= threshold`` is kept)."""
    if not offtopic:
        return 0.0
    needed = math.ceil(target * len(offtopic) - 1e-9)
    if needed <= 0:
        return 0.0
    ordered = sorted(offtopic)
    bar = ordered[needed - 1]  # refusing this one refuses ``needed`` questions
    step = math.floor(bar / _STEP)  # the grid step at or below it, then the first strictly above it
    while round(step * _STEP, 3) <= bar:
        step += 1
    return round(min(step * _STEP, 1.0), 3)


def wilson(hits: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share; (0, 1) when nothing was measured."""
    if total == 0:
        return 0.0, 1.0
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


@dataclass(frozen=True)
class Choice:
    threshold: float
    target: float
    folds: int
    fold_thresholds: tuple[float, ...]
    offtopic_refused_cv: float  # held-out shares, pooled over the folds
    answerable_refused_cv: float
    offtopic_refused_interval: tuple[float, float]
    answerable: int
    offtopic: int

    def caveat(self) -> str | None:
        """What a reader must know when there are few questions."""
        if self.offtopic < 20:
            low, high = self.offtopic_refused_interval
            return (
                f"only {self.offtopic} off-topic questions: the share refused could be anywhere from "
                f"{low:.0%} to {high:.0%} (95 % interval); add off-topic questions for a surer choice"
            )
        return None

    def to_dict(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "target_offtopic_refused": self.target,
            "folds": self.folds,
            "fold_thresholds": list(self.fold_thresholds),
            "cross_validated": {
                "offtopic_refused": self.offtopic_refused_cv,
                "refused": self.answerable_refused_cv,
            },
            "offtopic_refused_95ci": list(self.offtopic_refused_interval),
            "caveat": self.caveat(),
        }


def _folds(count: int, folds: int, seed: int) -> list[int]:
    order = list(range(count))
    random.Random(seed).shuffle(order)
    assignment = [0] * count
    for position, index in enumerate(order):
        assignment[index] = position % folds
    return assignment


def choose(
    answerable: Sequence[float], offtopic: Sequence[float], target: float = DEFAULT_TARGET
) -> Choice | None:
    """The threshold for these best scores, with ``k``-fold cross-validated refusal shares; None without
    at least two off-topic and two answerable questions."""
    if len(offtopic) < 2 or len(answerable) < 2:
        return None
    folds = min(MAX_FOLDS, len(offtopic), len(answerable))
    off_fold, ans_fold = _folds(len(offtopic), folds, 1), _folds(len(answerable), folds, 2)
    thresholds = []
    off_refused = ans_refused = 0
    for fold in range(folds):
        train = [s for s, f in zip(offtopic, off_fold, strict=True) if f != fold]
        threshold = lowest_threshold(train, target)
        thresholds.append(threshold)
        off_refused += sum(s < threshold for s, f in zip(offtopic, off_fold, strict=True) if f == fold)
        ans_refused += sum(s < threshold for s, f in zip(answerable, ans_fold, strict=True) if f == fold)
    return Choice(
        threshold=lowest_threshold(offtopic, target),
        target=target,
        folds=folds,
        fold_thresholds=tuple(thresholds),
        offtopic_refused_cv=round(off_refused / len(offtopic), 4),
        answerable_refused_cv=round(ans_refused / len(answerable), 4),
        offtopic_refused_interval=wilson(off_refused, len(offtopic)),
        answerable=len(answerable),
        offtopic=len(offtopic),
    )


def curve(answerable: Sequence[float], offtopic: Sequence[float], steps: int = 100) -> list[dict[str, float]]:
    """The refusal trade-off: at each threshold of a 0.01 grid, the share of each kind refused."""
    return [
        {
            "threshold": round(i / steps, 2),
            "refused": round(refused_share(answerable, i / steps), 4),
            "offtopic_refused": round(refused_share(offtopic, i / steps), 4),
        }
        for i in range(steps + 1)
    ]
