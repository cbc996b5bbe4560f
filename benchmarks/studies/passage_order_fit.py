"""Cross-validated comparison of relevance-model designs over every query set at once (issue 24 item 6);
the data comes from ``benchmarks.studies.study_passage_order collect``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks import relevance_fit
from benchmarks.cv import DEFAULT_FOLDS, bootstrap_se, kfold, mean, train_ids
from benchmarks.relevance_fit import (
    MODE_FEATURES,
    calibrate,
    choose_l2,
    choose_threshold,
    fit_mode,
    offline_ndcg,
    top_probability,
)

Cands = dict[str, list[tuple[str, Any]]]
# The order model's features before issue 24's refit (pointwise, on the claims and known items); the
# design shipped since is the last "listwise ... claims x4" row (``benchmarks.relevance_fit``).
ORDER_FEATURES = ("cosine", "cosine_gap", "bm25_log", "bm25_rel")
Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Design:
    name: str
    order_features: tuple[str, ...] = ORDER_FEATURES
    order_sets: tuple[str, ...] = ("claims", "known")  # whose training folds the order model reads
    answer_features: tuple[str, ...] = MODE_FEATURES["hybrid"]
    answer_sets: tuple[str, ...] = ("claims",)
    threshold_sets: tuple[str, ...] = ("claims",)  # answerable tops the threshold rule reads
    threshold_off: tuple[str, ...] = ("offtopic",)  # off-topic tops it reads
    extra: dict[str, Any] = field(default_factory=dict)


def _as_sets(data: dict[str, Any]) -> tuple[dict[str, Cands], dict[str, Qrels]]:
    """Every set as (candidate id, evidence) lists and graded judgements; a passage candidate's id is
    unique per chunk, so nDCG and top-k count passages, not documents."""
    cands: dict[str, Cands] = {}
    qrels: dict[str, Qrels] = {}
    p_c: Cands = {}
    p_q: Qrels = {}
    for qid, rows in data["passages"].items():
        p_c[qid] = [(f"{doc}#{i}", e) for i, (doc, _, e, _) in enumerate(rows)]
        p_q[qid] = {f"{doc}#{i}": 1 for i, (doc, ok, _, _) in enumerate(rows) if ok}
    cands["passages"], qrels["passages"] = p_c, p_q
    for rows in data["passages"].values():
        for doc, _, e, _ in rows:
            object.__setattr__(e, "doc", doc)
    for name in ("claims", "known"):
        for rows in data[name].values():
            for doc, _, e, _ in rows:
                object.__setattr__(e, "doc", doc)
    for name in ("offtopic", "offtopic_heldout"):
        for rows in data[name]:
            for doc, _, e, _ in rows:
                object.__setattr__(e, "doc", doc)
    for rows in data["passage_offtopic"]:
        for h, e in rows:
            object.__setattr__(e, "doc", h.key)
    for name, judged in (("claims", data["claims_qrels"]), ("known", data["known_qrels"])):
        cands[name] = {qid: [(doc, e) for doc, _, e, _ in rows] for qid, rows in data[name].items()}
        qrels[name] = {qid: judged.get(qid, {}) for qid in data[name]}
    for name in ("offtopic", "offtopic_heldout", "passage_offtopic"):
        cands[name] = {
            f"{name}-{i}": [
                (r[0] if isinstance(r, tuple) and len(r) == 4 else "x", _evidence(r)) for r in rows
            ]
            for i, rows in enumerate(data[name])
        }
        qrels[name] = {qid: {} for qid in cands[name]}
    return cands, qrels


def _evidence(row: Any) -> Any:
    """An off-topic candidate: (doc, label, evidence, text) from SciFact, (hit, evidence) from passages."""
    return row[2] if len(row) == 4 else row[1]


def _merge(cands: dict[str, Cands], qrels: dict[str, Qrels], sets: Sequence[str]) -> tuple[Cands, Qrels]:
    c: Cands = {}
    q: Qrels = {}
    for name in sets:
        c.update(cands[name])
        q.update(qrels[name])
    return c, q


def _rank_hits(
    model: Any, cands: list[tuple[str, Any]], judged: dict[str, int], top: int, threshold: float = 0.0
) -> bool:
    """Whether a relevant passage is among the first ``top`` and clears ``threshold`` (the handler drops
    every passage under it, not only a query's best)."""
    scores = model.probabilities([e for _, e in cands])
    order = sorted(range(len(cands)), key=lambda i: -scores[i])[:top]
    return any(judged.get(cands[i][0], 0) > 0 and scores[i] >= threshold for i in order)


def run_design(
    design: Design, cands: dict[str, Cands], qrels: dict[str, Qrels], folds: int = DEFAULT_FOLDS
) -> dict[str, Any]:
    splits = {name: kfold(list(cands[name]), folds) for name in cands}
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "passage_top1",
            "passage_top3",
            "passage_top3_shown",
            "passage_refused",
            "claims_ndcg",
            "claims_refused",
            "known_ndcg",
            "offtopic_refused",
            "offtopic_heldout_refused",
            "passage_offtopic_refused",
        )
    }
    by_kind: dict[str, list[float]] = {}
    thresholds = []
    per_query: dict[str, float] = {}
    for i in range(folds):
        train = {name: train_ids(splits[name], i) for name in cands}
        held = {name: splits[name][i] for name in cands}
        oc, oq = _merge(cands, qrels, design.order_sets)
        order_ids = [q for name in design.order_sets for q in train[name]]
        if design.extra.get("listwise"):
            order = fit_listwise(
                oc,
                oq,
                order_ids,
                design.order_features,
                design.extra.get("l2", 1.0),
                design.extra.get("set_weight"),
            )
        else:
            l2 = choose_l2(oc, oq, order_ids, design.order_features)
            order = fit_mode(oc, oq, order_ids, design.order_features, l2)
        ac, aq = _merge(cands, qrels, design.answer_sets)
        answer_ids = [q for name in design.answer_sets for q in train[name]]
        al2 = choose_l2(ac, aq, answer_ids, design.answer_features)
        answer = fit_mode(ac, aq, answer_ids, design.answer_features, al2)
        cal_sets = design.extra.get("calibrate_sets", design.answer_sets)
        cc, cq = _merge(cands, qrels, cal_sets)
        model = calibrate(cc, cq, [q for name in cal_sets for q in train[name]], order, answer)
        tops = [top_probability(model, cands[n][q]) for n in design.threshold_sets for q in train[n]]
        off = [top_probability(model, cands[n][q]) for n in design.threshold_off for q in train[n]]
        threshold = choose_threshold(tops, [off], rule="balanced")  # as recorded
        thresholds.append(threshold)
        for q in held["passages"]:
            c, j = cands["passages"][q], qrels["passages"][q]
            refused = top_probability(model, c) < threshold
            out["passage_top1"].append(float(_rank_hits(model, c, j, 1)))
            top3 = float(_rank_hits(model, c, j, 3))
            out["passage_top3"].append(top3)
            out["passage_top3_shown"].append(float(_rank_hits(model, c, j, 3, threshold)))
            per_query[q] = top3
            out["passage_refused"].append(float(refused))
            kind = _KINDS.get(q, "?")
            by_kind.setdefault(kind, []).append(top3)
        for q in held["claims"]:
            c = cands["claims"][q]
            per_query[q] = offline_ndcg(model, c, qrels["claims"][q])
            out["claims_ndcg"].append(per_query[q])
            out["claims_refused"].append(float(top_probability(model, c) < threshold))
        for q in held["known"]:
            per_query[q] = offline_ndcg(model, cands["known"][q], qrels["known"][q])
            out["known_ndcg"].append(per_query[q])
        for name in ("offtopic", "offtopic_heldout", "passage_offtopic"):
            out[f"{name}_refused"] += [
                float(top_probability(model, cands[name][q]) < threshold) for q in held[name]
            ]
    result = {k: round(mean(v), 4) for k, v in out.items()}
    result["thresholds"] = thresholds
    result["passage_top3_by_kind"] = {k: round(mean(v), 4) for k, v in sorted(by_kind.items())}
    result["per_query"] = per_query
    return result


_KINDS: dict[str, str] = {}


def fit_listwise(
    cands: Cands, qrels: Qrels, ids: Sequence[str], features: Sequence[str], l2: float, set_weight: Any = None
) -> Any:
    """``benchmarks.relevance_fit.fit_listwise``, each query weighted ``set_weight(qid)`` (1 without)."""
    weight = {q: float(set_weight(q)) for q in ids} if set_weight is not None else None
    return relevance_fit.fit_listwise(cands, qrels, ids, features, l2, weight)


ALL = (*ORDER_FEATURES, "coverage", "dense_rr", "sparse_rr")
EVERY_SET = ("claims", "known", "passages")
WITH_PASSAGES = {
    "answer_sets": ("claims", "passages"),
    "threshold_sets": ("claims", "passages"),
    "threshold_off": ("offtopic", "passage_offtopic"),
}
LISTWISE = {"listwise": True}


def _claims_times(weight: float) -> Any:
    """A query weight: ``weight`` for a SciFact claim (ids are numbers), 1 for the others."""
    return lambda qid: weight if qid.isdigit() else 1.0


DESIGNS = (
    Design("today"),  # before the refit: the shipped design of 2026-11-27
    Design("pointwise, + passages", order_sets=EVERY_SET),
    Design(
        "pointwise, + passages, + coverage",
        order_features=(*ORDER_FEATURES, "coverage"),
        order_sets=EVERY_SET,
    ),
    Design("pointwise, + passages, + coverage, ranks", order_features=ALL, order_sets=EVERY_SET),
    Design(
        "pointwise, + passages, + coverage, ranks, missing",
        order_features=(*ALL, "bm25_missing"),
        order_sets=EVERY_SET,
    ),
    Design(
        "pointwise, + passages, + coverage, ranks, missing, document",
        order_features=(*ALL, "bm25_missing", "doc_share", "doc_cos_gap", "doc_bm25_rel", "doc_order"),
        order_sets=EVERY_SET,
    ),
    Design("listwise, + passages", order_sets=EVERY_SET, extra=LISTWISE),
    Design(
        "listwise, + passages, + coverage, ranks, missing",
        order_features=(*ALL, "bm25_missing"),
        order_sets=EVERY_SET,
        extra=LISTWISE,
    ),
    Design(
        "listwise, + passages, + coverage, ranks, missing, claims x4",
        order_features=(*ALL, "bm25_missing"),
        order_sets=EVERY_SET,
        extra={**LISTWISE, "set_weight": _claims_times(4.0)},
    ),
    Design("today's order, answer and threshold + passages", **WITH_PASSAGES),  # type: ignore[arg-type]
    Design(
        "listwise + coverage, ranks, missing; answer and threshold + passages",
        order_features=(*ALL, "bm25_missing"),
        order_sets=EVERY_SET,
        extra=LISTWISE,
        **WITH_PASSAGES,  # type: ignore[arg-type]
    ),
    # The design shipped on 2026-11-28, and variants of its combining step (issue 24: the per-passage
    # threshold hides answering passages at ranks 2-3, whose scores the claims-only step sets).
    Design(
        "shipped: listwise x4; threshold + passages",
        order_features=(*ALL, "bm25_missing"),
        order_sets=EVERY_SET,
        threshold_sets=("claims", "passages"),
        threshold_off=("offtopic", "passage_offtopic"),
        extra={**LISTWISE, "set_weight": _claims_times(4.0)},
    ),
    Design(
        "shipped, combining step also on passages",
        order_features=(*ALL, "bm25_missing"),
        order_sets=EVERY_SET,
        threshold_sets=("claims", "passages"),
        threshold_off=("offtopic", "passage_offtopic"),
        extra={**LISTWISE, "set_weight": _claims_times(4.0), "calibrate_sets": ("claims", "passages")},
    ),
    Design(
        "shipped, answer model and combining step also on passages",
        order_features=(*ALL, "bm25_missing"),
        order_sets=EVERY_SET,
        answer_sets=("claims", "passages"),
        threshold_sets=("claims", "passages"),
        threshold_off=("offtopic", "passage_offtopic"),
        extra={**LISTWISE, "set_weight": _claims_times(4.0)},
    ),
)


def compare(data: dict[str, Any], designs: Sequence[Design] = DESIGNS) -> dict[str, Any]:
    cands, qrels = _as_sets(data)
    _KINDS.update({q: f"{s}/{f}" for q, (s, f) in data["passage_kinds"].items()})
    ceiling = mean([float(any(ok for _, ok, _, _ in rows)) for rows in data["passages"].values()])
    results: dict[str, Any] = {"passage_in_candidates": round(ceiling, 4)}
    import os
    import re

    only = os.environ.get("STUDY_ONLY")
    baseline: dict[str, float] | None = None
    for design in designs:
        if only and not re.search(only, design.name):
            continue
        result = run_design(design, cands, qrels)
        per_query = result.pop("per_query")
        baseline = baseline or per_query
        for name, ids in (
            ("claims", cands["claims"]),
            ("known", cands["known"]),
            ("passages", cands["passages"]),
        ):
            deltas = [per_query[q] - baseline[q] for q in ids]
            result[f"{name}_delta_vs_today"] = [round(mean(deltas), 4), round(bootstrap_se(deltas), 4)]
        results[design.name] = result
        print(design.name, result, file=sys.stderr, flush=True)
    return results


def _extend_features() -> None:
    """Candidate features beyond the product's: whether the dense side returned the passage, and how its
    document fares among the candidates."""
    import winnow.search.relevance as rel

    if "doc_share" in rel.FEATURES:
        return
    rel.FEATURES = (
        *rel.FEATURES,
        "dense_missing",
        "doc_share",
        "doc_cos_gap",
        "doc_bm25_rel",
        "doc_order",
    )
    base = rel.feature_rows

    def rows(evidence: Any) -> list[dict[str, float]]:
        from collections import Counter

        out = base(evidence)
        docs = [getattr(e, "doc", None) for e in evidence]
        counts = Counter(docs)
        best_cos: dict[Any, float] = {}
        best_bm: dict[Any, float] = {}
        for row, d in zip(out, docs, strict=True):
            best_cos[d] = max(best_cos.get(d, -1.0), row["cosine_gap"])
            best_bm[d] = max(best_bm.get(d, 0.0), row["bm25_rel"])
        ranked = sorted(best_cos, key=lambda d: -(best_cos[d] + best_bm[d]))
        place = {d: i + 1 for i, d in enumerate(ranked)}
        for row, e, d in zip(out, evidence, docs, strict=True):
            row["dense_missing"] = 1.0 if not e.dense_rank else 0.0
            row["doc_share"] = counts[d] / len(evidence) if d is not None else 0.0
            row["doc_cos_gap"] = best_cos[d]
            row["doc_bm25_rel"] = best_bm[d]
            row["doc_order"] = 1.0 / place[d]
        return out

    rel.feature_rows = rows


_extend_features()
