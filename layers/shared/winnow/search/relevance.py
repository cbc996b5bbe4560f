"""The relevance model: a calibrated probability that a passage is relevant, from the evidence the
retrievers already returned (cosine, BM25 score, each retriever's rank), when no re-ranker runs.

Per embedding profile and search mode, fitted offline by the training package (``python -m
training.fit``, training/README.md) and shipped as an artifact beside this module
(``models/<profile slug>.json``): the models, the default threshold and floor chosen with them, a
version and their provenance (data, folds, command, date). The artifact is the one place the default
threshold and floor are stated: the threshold is the gate (a search whose best passage scores under it
finds nothing relevant), the floor is what the results after the first must score. Evaluated in plain
Python: the search Lambda imports no numpy. Results are ordered by this probability, so it is also the
fusion: a weighted blend of the signals whose weights were chosen by cross-validation, not by hand
(docs/quality.md).

Two shapes: a ``LogisticModel`` (one linear score does both jobs), or a ``RankedRelevance``, which
splits them. Ordering passages *within* a query and telling whether a query has an answer *at all* want
different evidence: a keyword or quoted phrase that BM25 finds is strong evidence for the ordering,
but every off-topic question also has a best BM25 match. So the order comes from one model, fitted on
several query styles, and how high the best passage scores comes from another, fitted on answerable
questions only; a last logistic step combines them, so results ordered by ``score`` keep the order."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

MODELS_DIR = Path(__file__).resolve().parent / "models"
FEATURES = (
    "cosine",  # cosine similarity of the query and the chunk
    "cosine_gap",  # cosine minus the best cosine among the candidates (<= 0)
    "bm25_log",  # log(1 + BM25 score); 0 when the keyword side did not return the chunk
    "bm25_rel",  # BM25 score over the best BM25 score among the candidates; 0 when absent
    "dense_rr",  # 1 / rank among the dense candidates; 0 when absent
    "sparse_rr",  # 1 / rank among the sparse candidates; 0 when absent
    "coverage",  # share of the query's keyword terms the passage holds; 0 when not measured
    "bm25_missing",  # 1 when the keyword side did not return the chunk: its BM25 is unknown, not 0
    "segment",  # best cosine of the query and one of the chunk's segments (winnow.search.reader)
    "segment_gap",  # segment minus the best segment among the candidates (<= 0)
)
# The features measured by reading each candidate's text for the query's keywords.
KEYWORD_FEATURES = frozenset({"coverage"})
# The features measured by embedding each candidate's segments (one extra embed call per search).
SEGMENT_FEATURES = frozenset({"segment", "segment_gap"})
# The profile whose fitted threshold also applies to a profile with no artifact of its own (its scores
# are the re-ranker's or the cosine similarity): the embedded default's local model.
DEFAULT_PROFILE = "local-all-minilm-l6-v2-int8-384"


@dataclass(frozen=True)
class Evidence:
    """What the pipeline knows about one candidate, before any model."""

    cosine: float
    bm25: float | None = None
    dense_rank: int | None = None
    sparse_rank: int | None = None
    coverage: float | None = None
    # Best segment cosine (None: not measured, or one segment: the passage's cosine stands for it).
    segment: float | None = None


def feature_rows(evidence: Sequence[Evidence]) -> list[dict[str, float]]:
    """The model's inputs for each candidate of one query (some are relative to the other candidates)."""
    if not evidence:
        return []
    best_cosine = max(e.cosine for e in evidence)
    best_bm25 = max((e.bm25 for e in evidence if e.bm25 is not None), default=0.0)
    segment = [e.segment if e.segment is not None else e.cosine for e in evidence]
    best_segment = max(segment)
    rows = []
    for e, seg in zip(evidence, segment, strict=True):
        bm25 = e.bm25 if e.bm25 is not None and e.bm25 > 0 else 0.0
        rows.append(
            {
                "cosine": e.cosine,
                "cosine_gap": e.cosine - best_cosine,
                "bm25_log": math.log1p(bm25),
                "bm25_rel": bm25 / best_bm25 if best_bm25 > 0 else 0.0,
                "dense_rr": 1.0 / e.dense_rank if e.dense_rank else 0.0,
                "sparse_rr": 1.0 / e.sparse_rank if e.sparse_rank else 0.0,
                "coverage": e.coverage or 0.0,
                "bm25_missing": 0.0 if e.sparse_rank else 1.0,
                "segment": seg,
                "segment_gap": seg - best_segment,
            }
        )
    return rows


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)  # no overflow for very negative z
    return ez / (1.0 + ez)


@dataclass(frozen=True)
class LogisticModel:
    """``p = 1 / (1 + exp(-(intercept + sum(weight * feature))))``."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float

    def __post_init__(self) -> None:
        if len(self.features) != len(self.weights):
            raise ValueError("a relevance model needs one weight per feature")
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown relevance features: {', '.join(sorted(unknown))}")

    def logit(self, row: Mapping[str, float]) -> float:
        return self.intercept + sum(w * row[f] for f, w in zip(self.features, self.weights, strict=True))

    def probability(self, row: Mapping[str, float]) -> float:
        return sigmoid(self.logit(row))

    def probabilities(self, evidence: Sequence[Evidence]) -> list[float]:
        return [self.probability(row) for row in feature_rows(evidence)]

    @property
    def reads(self) -> frozenset[str]:
        """The features this model reads (the search computes the costly ones only when read)."""
        return frozenset(self.features)

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "weights": list(self.weights), "intercept": self.intercept}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LogisticModel:
        return cls(
            features=tuple(str(f) for f in data["features"]),
            weights=tuple(float(w) for w in data["weights"]),
            intercept=float(data["intercept"]),
        )


@dataclass(frozen=True)
class RankedRelevance:
    """``p_i = sigmoid(gap_weight * (order_i - max order) + answer_weight * max answer + intercept)``.

    ``order`` ranks the candidates of one query; ``answer`` says how well the query is answered by its
    best candidate. Within a query only the order term varies, so ordering by ``p`` is ordering by
    ``order``; across queries the best passage's ``p`` moves with ``answer`` alone, which is what the
    threshold reads."""

    order: LogisticModel
    answer: LogisticModel
    gap_weight: float
    answer_weight: float
    intercept: float

    def __post_init__(self) -> None:
        # Ordering by ``p`` is ordering by ``order`` only for a positive gap weight: 0 would tie every
        # passage, a negative weight would reverse the order.
        if not self.gap_weight > 0:
            raise ValueError(f"a ranked relevance model needs a gap weight above 0 (got {self.gap_weight:g})")

    def probabilities(self, evidence: Sequence[Evidence]) -> list[float]:
        rows = feature_rows(evidence)
        if not rows:
            return []
        order = [self.order.logit(r) for r in rows]
        best_order = max(order)
        answered = self.answer_weight * max(self.answer.logit(r) for r in rows) + self.intercept
        return [sigmoid(self.gap_weight * (o - best_order) + answered) for o in order]

    @property
    def reads(self) -> frozenset[str]:
        return self.order.reads | self.answer.reads

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order.to_json(),
            "answer": self.answer.to_json(),
            "gap_weight": self.gap_weight,
            "answer_weight": self.answer_weight,
            "intercept": self.intercept,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RankedRelevance:
        return cls(
            order=LogisticModel.from_json(data["order"]),
            answer=LogisticModel.from_json(data["answer"]),
            gap_weight=float(data["gap_weight"]),
            answer_weight=float(data["answer_weight"]),
            intercept=float(data["intercept"]),
        )


RelevanceModel = LogisticModel | RankedRelevance


def reads_keywords(model: RelevanceModel | None) -> bool:
    """Whether ``model`` reads a feature measured over the candidates' text for the query's keywords:
    the search then encodes the query's keywords, in dense mode too, and passes them to the evidence."""
    return model is not None and bool(KEYWORD_FEATURES & model.reads)


def reads_segments(model: RelevanceModel | None) -> bool:
    """Whether ``model`` reads the candidates' segments: the search then reads every candidate before
    ordering them (``winnow.search.reader``), not only the results it returns."""
    return model is not None and bool(SEGMENT_FEATURES & model.reads)


def model_from_json(data: Mapping[str, Any]) -> RelevanceModel:
    return RankedRelevance.from_json(data) if "order" in data else LogisticModel.from_json(data)


@dataclass(frozen=True)
class RelevanceModels:
    """The artifact of one embedding profile: a model per search mode, the default threshold (the gate:
    is anything relevant) and floor (which results after the first to keep) chosen with them, its
    version, and where it came from (``provenance``: data, folds, command, date). ``floor`` None: the
    threshold (an artifact fitted before the floor keeps every result to its threshold)."""

    profile: str
    modes: Mapping[str, RelevanceModel]
    threshold: float
    version: int = 1
    provenance: Mapping[str, Any] = field(default_factory=dict)
    floor: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= 1:
            raise ValueError(f"a relevance threshold is in [0, 1] (got {self.threshold:g})")
        if self.floor is not None and not 0 <= self.floor <= self.threshold:
            raise ValueError(f"a floor is in [0, threshold {self.threshold:g}] (got {self.floor:g})")

    @property
    def lower_floor(self) -> float:
        """What a result after the first must score by default."""
        return self.threshold if self.floor is None else self.floor

    def for_mode(self, mode: str) -> RelevanceModel | None:
        return self.modes.get(mode)

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "version": self.version,
            "threshold": self.threshold,
            **({"floor": self.floor} if self.floor is not None else {}),
            "provenance": dict(self.provenance),
            "modes": {mode: model.to_json() for mode, model in self.modes.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RelevanceModels:
        if data.get("threshold") is None:
            raise ValueError("a relevance artifact states its threshold (fitted with its models)")
        return cls(
            profile=str(data["profile"]),
            version=int(data.get("version", 1)),
            threshold=float(data["threshold"]),
            floor=float(data["floor"]) if data.get("floor") is not None else None,
            provenance=dict(data.get("provenance") or {}),
            modes={str(m): model_from_json(v) for m, v in dict(data["modes"]).items()},
        )


def model_path(profile_slug: str, directory: Path = MODELS_DIR) -> Path:
    return directory / f"{profile_slug}.json"


@lru_cache(maxsize=8)
def load_models(profile_slug: str, directory: Path = MODELS_DIR) -> RelevanceModels | None:
    """The shipped artifact of a profile, or None when none was fitted for it."""
    path = model_path(profile_slug, directory)
    if not path.is_file():
        return None
    models = RelevanceModels.from_json(json.loads(path.read_text(encoding="utf-8")))
    if models.profile != profile_slug:
        raise ValueError(f"{path.name} holds the relevance models of {models.profile}, not {profile_slug}")
    return models


def fitted(models: RelevanceModels | None) -> RelevanceModels:
    """The artifact whose threshold and floor a search applies by default: the profile's own, else (no
    artifact for the profile) the default profile's."""
    if models is not None:
        return models
    shipped = load_models(DEFAULT_PROFILE)
    if shipped is None:
        raise RuntimeError(f"the relevance artifact of {DEFAULT_PROFILE} is missing from the package")
    return shipped


def default_threshold(models: RelevanceModels | None) -> float:
    """The gate a search applies unless the deployment or the request sets one (``fitted``)."""
    return fitted(models).threshold


def default_floor(models: RelevanceModels | None) -> float:
    """What a result after the first must score unless the request sets a threshold (``fitted``)."""
    return fitted(models).lower_floor
