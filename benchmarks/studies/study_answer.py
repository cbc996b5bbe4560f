"""The study behind the hybrid answer model's features (docs/benchmarks.md, issue 19): which evidence
tells an answerable question from an off-topic one, with the order model fixed.

``python -m benchmarks.studies.study_answer [--home DIR]``

Ingests SciFact once into ``--home`` (default ``.cache/scifact-home``, shared with
``benchmarks.studies.study``), collects the hybrid candidates of the judged claims, the generated
known-item queries and the fitting off-topic set through ``SearchService.candidates`` (the product path,
keyword coverage included), then, for each answer-feature set: 5-fold cross-validation in which the order
model, the answer model, the combining step and the threshold (balanced rule) are fitted on the training
folds, and the held-out claims refused and held-out off-topic questions refused are counted. The choice
criterion, fixed before looking: the best mean of "answered" and "refused". Neither the demo nor the
held-out off-topic set is read."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
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
    OrderQueries,
    balanced_threshold,
    best_scores,
    choose_l2,
    fit_mode,
    fit_ranked,
)
from benchmarks.stack import EmbeddedStack, write_documents
from benchmarks.studies.study import DEFAULT_HOME

BASE = ("cosine", "cosine_gap")
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "cosine, gap, log BM25 (the claims-only model's)": (*BASE, "bm25_log"),
    "cosine, gap, log BM25, coverage": (*BASE, "bm25_log", "coverage"),
    "cosine, gap, coverage": (*BASE, "coverage"),
}


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.study_answer")
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    args = parser.parse_args(argv)
    candidates, qrels, claims, known, offtopic = collect(args.home)
    claim_folds, known_folds, off_folds = kfold(claims), kfold(known), kfold(offtopic)
    print(f"{'answer model features':52} {'answerable refused':>18} {'off-topic refused':>18} {'mean':>6}")
    for label, features in FEATURE_SETS.items():
        refused: list[bool] = []
        off_refused: list[bool] = []
        for i, fold in enumerate(claim_folds):
            train = train_ids(claim_folds, i)
            answer = fit_mode(
                candidates, qrels, train, features, choose_l2(candidates, qrels, train, features)
            )
            model = fit_ranked(
                candidates, qrels, train, answer, [OrderQueries(candidates, qrels, train_ids(known_folds, i))]
            )
            threshold = balanced_threshold(
                best_scores(model, candidates, train), best_scores(model, candidates, train_ids(off_folds, i))
            )
            refused += [s < threshold for s in best_scores(model, candidates, fold)]
            off_refused += [s < threshold for s in best_scores(model, candidates, off_folds[i])]
        answered, rejected = 1 - mean(refused), mean(off_refused)
        print(f"{label:52} {1 - answered:18.1%} {rejected:18.1%} {(answered + rejected) / 2:6.1%}")
    print(f"(shipped: {', '.join(MODE_FEATURES[DEFAULT_MODE])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
