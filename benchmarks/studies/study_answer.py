"""The study behind the hybrid answer model (docs/benchmarks.md, issues 19 and 24): which evidence
tells an answerable question from an off-topic one, and what the answer model is fitted on.

``python -m benchmarks.studies.study_answer [--home DIR] [--passages] [--rule balanced|floor]``

Ingests SciFact once into ``--home`` (default ``.cache/scifact-home``, shared with
``benchmarks.studies.study``), collects the hybrid candidates of the judged claims, the generated
known-item queries and the fitting off-topic set through ``SearchService.candidates`` (the product path,
keyword coverage included). With ``--passages`` also the passage questions (benchmarks.passages) and the
fitting off-topic set asked of their corpus. Then, for each answer model: 5-fold cross-validation in
which the order model (also on the passage questions), the answer model, the combining step and the
threshold (``--rule``, the shipped one by default: the floor of ``OFFTOPIC_FLOOR`` off-topic questions
refused on each corpus, or balanced, which also reads the answerable ones) are fitted on the
training folds, and the held-out answerable questions refused and held-out off-topic questions refused
are counted. The choice criterion, fixed before looking: the best mean of "answered" and "refused",
each pooled over the corpora. Neither the demo nor the held-out off-topic set is read."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.cv import kfold, mean, train_ids
from benchmarks.data import load_eval_set
from benchmarks.embedcache import DEFAULT_CACHE
from benchmarks.known_item import known_item_queries
from benchmarks.quality import OFFTOPIC_FILE, collect_candidates, read_lines
from benchmarks.relevance_fit import (
    DEFAULT_MODE,
    MODE_FEATURES,
    THRESHOLD_RULE,
    Candidate,
    OrderQueries,
    best_scores,
    choose_l2,
    choose_threshold,
    fit_mode,
    fit_ranked,
    refuse_reused_ids,
)
from benchmarks.stack import EmbeddedStack, write_documents
from benchmarks.studies.study import DEFAULT_HOME

BASE = ("cosine", "cosine_gap")
# label -> (features, whether the training off-topic questions' candidates are negatives of the fit)
FEATURE_SETS: dict[str, tuple[tuple[str, ...], bool]] = {
    "cosine, gap, log BM25 (the claims-only model's)": ((*BASE, "bm25_log"), False),
    "cosine, gap, log BM25, coverage": ((*BASE, "bm25_log", "coverage"), False),
    "cosine, gap, coverage": ((*BASE, "coverage"), False),
    "cosine, gap, coverage, pool coverage": ((*BASE, "coverage", "pool_coverage"), False),
    "cosine, gap, coverage; + off-topic negatives": ((*BASE, "coverage"), True),
    "cosine, gap, coverage, sparse rr": ((*BASE, "coverage", "sparse_rr"), False),
    "cosine, gap, coverage, dense rr": ((*BASE, "coverage", "dense_rr"), False),
    "cosine, gap, coverage, bm25 missing": ((*BASE, "coverage", "bm25_missing"), False),
    "cosine, gap, coverage, bm25 rel": ((*BASE, "coverage", "bm25_rel"), False),
    "cosine, gap, coverage, pool coverage; + off-topic negatives": (
        (*BASE, "coverage", "pool_coverage"),
        True,
    ),
}


def fit_answer(
    candidates: Mapping[str, list[Candidate]],
    qrels: Mapping[str, dict[str, int]],
    qids: Sequence[str],
    features: Sequence[str],
    l2: float,
    offtopic: Mapping[str, list[Candidate]],
) -> Any:
    """``fit_mode`` on the judged queries' candidates and the ``offtopic`` questions' (none of them
    relevant): with them, evidence about the question as a whole (``pool_coverage``) gets its weight.
    Measured, not adopted (docs/benchmarks.md)."""
    refuse_reused_ids(offtopic, qids)
    merged = {**candidates, **offtopic}
    judged = {**qrels, **{q: {} for q in offtopic}}
    return fit_mode(merged, judged, [*qids, *offtopic], features, l2)


def collect(
    home: Path,
) -> tuple[dict[str, list[Any]], dict[str, dict[str, int]], list[str], list[str], list[str]]:
    """Candidates (document id, Evidence) of every query, the judgements, and the three id lists."""
    eval_set = load_eval_set()
    claims = eval_set.judged_queries
    known, known_qrels = known_item_queries(eval_set.documents)
    offtopic = {f"offtopic-{i}": text for i, text in enumerate(read_lines(OFFTOPIC_FILE))}
    with EmbeddedStack(home / "stack", embed_cache=DEFAULT_CACHE) as stack:
        paths = write_documents(home / "documents", eval_set.documents)
        key_to_id = {stack.key_for(p.name): d for d, p in zip(eval_set.documents, paths, strict=True)}
        marker = home / "ingested"
        if not marker.is_file():
            print(f"ingesting {len(paths)} documents", file=sys.stderr)
            stack.ingest([(p.name, p.read_bytes()) for p in paths], per_event=50)
            marker.write_text("ok")
        candidates = collect_candidates(stack, {**claims, **known, **offtopic}, DEFAULT_MODE, key_to_id)
    qrels = {q: eval_set.qrels[q] for q in claims} | known_qrels
    return candidates, qrels, list(claims), list(known), list(offtopic)


def collect_passages(
    offtopic: dict[str, str],
) -> tuple[dict[str, list[Any]], dict[str, dict[str, int]], list[str], dict[str, list[Any]]]:
    """The passage questions' candidates and judgements, and the off-topic questions' candidates on
    their corpus (ids prefixed ``passages:``)."""
    from benchmarks.common import Progress
    from benchmarks.passages import fitting_set

    fitting = fitting_set({}, Progress(quiet=False), offtopic)
    off = {f"passages:{q}": c for q, c in fitting.offtopic.items()}
    return fitting.candidates, fitting.qrels, sorted(fitting.candidates), off


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.study_answer")
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--passages", action="store_true", help="also the passage questions and their corpus")
    parser.add_argument(
        "--rule", choices=("balanced", "floor"), default=THRESHOLD_RULE, help="the threshold rule"
    )
    args = parser.parse_args(argv)
    candidates, qrels, claims, known, offtopic = collect(args.home)
    passage_ids: list[str] = []
    passage_off: dict[str, list[Any]] = {}
    if args.passages:
        texts = {f"offtopic-{i}": text for i, text in enumerate(read_lines(OFFTOPIC_FILE))}
        pc, pq, passage_ids, passage_off = collect_passages(texts)
        candidates = {**candidates, **pc, **passage_off}
        qrels = {**qrels, **pq, **{q: {} for q in passage_off}}
    claim_folds, known_folds, off_folds = kfold(claims), kfold(known), kfold(offtopic)
    passage_folds = kfold(passage_ids) if passage_ids else [[] for _ in claim_folds]

    def off_ids(ids: Sequence[str]) -> list[str]:  # an off-topic question on each corpus it was asked of
        return [*ids, *(f"passages:{q}" for q in ids if f"passages:{q}" in passage_off)]

    columns = ("claims refused", "passages refused", "off-topic refused")
    print(f"{'answer model':62} {columns[0]:>14} {columns[1]:>16} {columns[2]:>18} {'mean':>6}")
    for label, (features, negatives) in FEATURE_SETS.items():
        refused: list[bool] = []
        passage_refused: list[bool] = []
        off_refused: list[bool] = []
        for i, fold in enumerate(claim_folds):
            train = train_ids(claim_folds, i)
            off_train = off_ids(train_ids(off_folds, i))
            answer = fit_answer(
                candidates,
                qrels,
                train,
                features,
                choose_l2(candidates, qrels, train, features),
                {q: candidates[q] for q in off_train} if negatives else {},
            )
            extra = [OrderQueries(candidates, qrels, train_ids(known_folds, i))]
            if passage_ids:
                extra.append(OrderQueries(candidates, qrels, train_ids(passage_folds, i)))
            model = fit_ranked(candidates, qrels, train, answer, extra)
            threshold = choose_threshold(
                best_scores(model, candidates, [*train, *train_ids(passage_folds, i)]),
                [
                    best_scores(model, candidates, [q for q in off_train if not q.startswith("passages:")]),
                    best_scores(model, candidates, [q for q in off_train if q.startswith("passages:")]),
                ],
                rule=args.rule,
            )
            refused += [s < threshold for s in best_scores(model, candidates, fold)]
            passage_refused += [s < threshold for s in best_scores(model, candidates, passage_folds[i])]
            off_refused += [s < threshold for s in best_scores(model, candidates, off_ids(off_folds[i]))]
        answered, rejected = 1 - mean(refused + passage_refused), mean(off_refused)
        shown = f"{mean(passage_refused):16.1%}" if passage_refused else f"{'-':>16}"
        print(f"{label:62} {mean(refused):14.1%} {shown} {rejected:18.1%} {(answered + rejected) / 2:6.1%}")
    print(f"(shipped: {', '.join(MODE_FEATURES[DEFAULT_MODE])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
