"""The quality benchmark's figures from its searches, and its printed report: the passages kept and
dropped per threshold, the calibration of ``score``, the known-item query figures, the tables."""

from __future__ import annotations

from typing import Any

from benchmarks.common import table
from benchmarks.stack import Hit
from training.cv import mean
from training.known_item import STYLES
from training.relevance_fit import TOP_K
from winnow_local.evaluation.metrics import METRIC_NAMES, ndcg_at_k

GOAL_MARGIN = 0.02
THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))


def passage_table(
    hits: dict[str, list[Hit]], qrels: dict[str, dict[str, int]], key_to_id: dict[str, str]
) -> list[dict[str, float]]:
    """For each threshold: the share of relevant passages (of the top ``TOP_K``) kept and of irrelevant
    ones dropped, and the share of answerable queries left with nothing."""
    relevant = [
        h.score for q, hs in hits.items() for h in hs if qrels[q].get(key_to_id.get(h.key, ""), 0) > 0
    ]
    irrelevant = [
        h.score for q, hs in hits.items() for h in hs if qrels[q].get(key_to_id.get(h.key, ""), 0) <= 0
    ]
    tops = [max((h.score for h in hs), default=0.0) for hs in hits.values()]
    rows = []
    for t in THRESHOLDS:
        rows.append(
            {
                "threshold": t,
                "relevant_kept": round(sum(s >= t for s in relevant) / max(1, len(relevant)), 4),
                "irrelevant_dropped": round(sum(s < t for s in irrelevant) / max(1, len(irrelevant)), 4),
                "queries_refused": round(sum(s < t for s in tops) / max(1, len(tops)), 4),
            }
        )
    return rows


def calibration_table(
    hits: dict[str, list[Hit]], qrels: dict[str, dict[str, int]], key_to_id: dict[str, str]
) -> list[dict[str, float]]:
    """Whether ``score`` means what it says: per score band of width 0.1, how many held-out passages
    (top ``TOP_K`` per query) fall in it, their mean score and the share of them that is relevant."""
    bands: list[list[tuple[float, int]]] = [[] for _ in range(10)]
    for q, hs in hits.items():
        for h in hs:
            relevant = 1 if qrels[q].get(key_to_id.get(h.key, ""), 0) > 0 else 0
            bands[min(9, int(h.score * 10))].append((h.score, relevant))
    return [
        {
            "band": round(i / 10, 1),
            "passages": len(band),
            "mean_score": round(mean([s for s, _ in band]), 4),
            "relevant": round(mean([r for _, r in band]), 4),
        }
        for i, band in enumerate(bands)
        if band
    ]


def known_item_figures(
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    held_out: dict[str, list[str]],
    bm25: dict[str, list[str]],
    refused: dict[str, bool] | None = None,
) -> dict[str, Any]:
    """Per query style: nDCG@10 and hit@3 of the default mode on held-out known-item queries (each fold's
    model fitted without them) against BM25 on the same queries, and the share refused at each fold's
    threshold."""
    out: dict[str, Any] = {"per_style": len(queries) // max(1, len(STYLES)), "styles": {}}
    for style in STYLES:
        ids = [q for q in queries if q.startswith(f"{style}-") and q in held_out]
        if not ids:
            continue

        def figures(run: dict[str, list[str]], ids: list[str] = ids) -> dict[str, float]:
            ndcg = mean([ndcg_at_k(run.get(q, []), qrels[q]) for q in ids])
            hit3 = mean([1.0 if set(run.get(q, [])[:3]) & set(qrels[q]) else 0.0 for q in ids])
            return {"ndcg@10": round(ndcg, 4), "hit@3": round(hit3, 4)}

        out["styles"][style] = {"queries": len(ids), "default_cv": figures(held_out), "bm25": figures(bm25)}
        if refused:
            out["styles"][style]["refused_cv"] = round(mean([1.0 if refused.get(q) else 0.0 for q in ids]), 4)
    return out


def render(result: dict[str, Any]) -> str:
    rows = []
    for name, scores in result["modes"].items():
        rows.append([f"winnow {name}", *(f"{scores[m]:.4f}" for m in METRIC_NAMES)])
    for name, scores in result["baselines"].items():
        rows.append([f"baseline {name} (whole documents)", *(f"{scores[m]:.4f}" for m in METRIC_NAMES)])
    cv = result["cv"]
    default_mode = cv["default_mode"]
    bm25_cv = cv["ndcg@10"]["baseline bm25"]["mean"]
    default_cv = cv["ndcg@10"][default_mode]["mean"]
    margin = default_cv - bm25_cv
    worst = min(
        (m["margin"] + m["se"] for m in cv["margin_vs_bm25"]), default=0.0
    )  # a fold below BM25 by more than its noise makes this negative
    verdict = "met" if margin >= GOAL_MARGIN and worst >= 0 else "NOT met"
    cv_rows = [
        [name, *(f"{v:.4f}" for v in s["folds"]), f"{s['mean']:.4f}"] for name, s in cv["ndcg@10"].items()
    ]
    cv_rows.append(
        [
            f"{default_mode} - bm25 (bootstrap SE)",
            *(f"{m['margin']:+.4f} ({m['se']:.3f})" for m in cv["margin_vs_bm25"]),
            f"{margin:+.4f}",
        ]
    )
    threshold = result["threshold"]
    t_rows = [
        [
            f"{r['threshold']:.1f}",
            f"{r['relevant_kept']:.1%}",
            f"{r['irrelevant_dropped']:.1%}",
            f"{r['queries_refused']:.1%}",
        ]
        for r in threshold["passages"]
    ]
    lines = [
        f"{result['documents']} documents ({result.get('chunks', '?')} chunks), {result['queries']} queries",
        "",
        "whole set (the shipped relevance model was fitted on these queries: in-sample)",
        table(["system", *METRIC_NAMES], rows),
        "",
        f"{cv['folds']}-fold cross-validated nDCG@10 (models fitted on the other folds, held-out queries "
        "through the search handler)",
        table(["system", *(f"fold {i + 1}" for i in range(cv["folds"])), "mean"], cv_rows),
        "",
        f"goal: winnow {default_mode} CV nDCG@10 >= BM25 + {GOAL_MARGIN:.2f} and no fold below BM25 by more "
        f"than its bootstrap SE: {default_cv:.4f} vs {bm25_cv:.4f} ({margin:+.4f}) -> {verdict}",
        "",
        f"threshold (held-out scores, top {TOP_K} passages per query); rule: {threshold['rule']}; chosen per "
        f"fold {threshold['per_fold']}; answerable queries refused at those: "
        f"{threshold['answerable_refused_cv']:.1%}",
        table(["threshold", "relevant kept", "irrelevant dropped", "queries refused"], t_rows),
    ]
    if threshold.get("offtopic_fitting_refused_cv") is not None:
        lines.append(
            "fitting off-topic questions refused at those (held-out folds): "
            f"{threshold['offtopic_fitting_refused_cv']:.1%}"
        )
    if threshold.get("passages_heldout"):
        p_rows = [
            [group, str(f["questions"])] + [f"{f[k]:.1%}" for k in ("top1", "top3", "top3_shown", "refused")]
            for group, f in threshold["passages_heldout"].items()
        ]
        lines += [
            "",
            "passage questions held out (training.passages; each fold's model and threshold, offline on "
            "the candidates as the search service orders and drops them)",
            table(["group", "n", "top 1", "top 3", "top 3 shown", "refused"], p_rows),
        ]
        if threshold.get("passages_offtopic_refused_cv") is not None:
            lines.append(
                "fitting off-topic questions asked of the passage corpus, refused (held-out folds): "
                f"{threshold['passages_offtopic_refused_cv']:.1%}"
            )
    if threshold.get("calibration"):
        c_rows = [
            [f"{r['band']:.1f}+", str(r["passages"]), f"{r['mean_score']:.3f}", f"{r['relevant']:.1%}"]
            for r in threshold["calibration"]
        ]
        lines += [
            "",
            "calibration (held-out passages by score band; mean |score - share relevant|: "
            f"{threshold['calibration_error']:.3f})",
        ]
        lines.append(table(["score", "passages", "mean score", "relevant"], c_rows))
    for name, off in (result.get("offtopic") or {}).items():
        label = "held-out set, reported" if name == "heldout" else "fitting set, in-sample"
        lines += [
            "",
            f"off-topic, {label} ({off['queries']} questions): {off['refused']:.1%} refused "
            f"at threshold {off['threshold']}",
        ]
        if off["answered"]:
            lines.append("  answered: " + "; ".join(off["answered"][:8]))
    demo = result.get("demo")
    if demo:
        lines += [
            "",
            f"demo corpus, threshold {demo['threshold']}: {demo['questions']} answerable questions, expected "
            f"document first {demo['top1_expected']:.1%}, refused {demo['answerable_refused']:.1%}; "
            + "; ".join(
                f"off-topic ({name}) refused {off['refused']:.1%}" for name, off in demo["offtopic"].items()
            )
            + f"; parental-leave question returns {demo['parental_leave_documents']}",
        ]
    known = (result.get("known_item") or {}).get("styles") or {}
    if known:
        lines += ["", "generated known-item queries (held-out folds), default mode against BM25:"]
        for style, figures in known.items():
            d, b = figures["default_cv"], figures["bm25"]
            lines.append(
                f"  {style} ({figures['queries']}): nDCG@10 {d['ndcg@10']:.4f} vs {b['ndcg@10']:.4f}, "
                f"hit@3 {d['hit@3']:.1%} vs {b['hit@3']:.1%}"
                + (f", refused {figures['refused_cv']:.1%}" if "refused_cv" in figures else "")
            )
    return "\n".join(lines)
