"""Study (issue 46 items 3 and 6): what the shipped evidence can still give the order and the gate.

``gather`` asks the passage questions outside the lockbox (and the off-topic questions) on the passage
corpus and keeps each one's default-mode candidates with their evidence, three ways: as a search sees
them, with each candidate's 3 keyword-best segments embedded (``training.quality --segments``), and with
every segment embedded (the issue's design: the maximum cosine over a passage's segments, which a Qdrant
multivector at ingest would give). ``report`` reads them with the fold models of ``training.quality
--passages --lockbox out --fold-models F`` and prints, held out over the same folds:

- the order: the fold models as fitted; plus ``w`` times the best-segment cosine, ``w`` chosen on the
  other folds (the issue's measurement); models fitted on the passage questions alone with other
  features, with the segments, and with every pairwise product of the features (a non-linear order);
- the gate: answerable and off-topic questions refused at each threshold.

Offline, on the candidates: the ordered top 3, before any threshold or floor (what the floor can at best
keep). Commands: training/NOTEBOOK.md, "The order's ceiling with the shipped evidence"."""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

GRID = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
BASE = ("cosine", "cosine_gap", "bm25_log", "bm25_rel", "coverage", "dense_rr", "sparse_rr", "bm25_missing")
SETS = {
    "cosine only": ("cosine", "cosine_gap"),
    "cosine, coverage": ("cosine", "cosine_gap", "coverage"),
    "cosine, ranks": ("cosine", "cosine_gap", "dense_rr", "sparse_rr"),
    "shipped features": BASE,
    "+ segment": (*BASE, "segment", "segment_gap"),
}


def gather(out: Path) -> None:
    import winnow.search.reader as reader
    from benchmarks.common import Progress
    from training import passages, relevance_fit
    from training.data import OFFTOPIC_FILE, OFFTOPIC_HELDOUT_FILE, read_lines

    off = {f"fit-{i}": t for i, t in enumerate(read_lines(OFFTOPIC_FILE))}
    off |= {f"held-{i}": t for i, t in enumerate(read_lines(OFFTOPIC_HELDOUT_FILE))}
    progress = Progress(False)
    searched = passages.fitting_set({}, progress, off, lockbox="out")
    relevance_fit.READ_SEGMENTS = True
    keyword3 = passages.fitting_set({}, progress, {}, lockbox="out")

    def every_segment(svc: Any, tenant: str, request: Any, *, as_searched: bool = False) -> list[Any]:
        query = request.to_query()
        dense = svc.embedder.embed([query.query], "query")[0]
        sparse = svc.sparse.encode_query(query.query)
        hits = svc.retrieve(
            svc.caller(tenant), query, dense, sparse, query.candidate_count(False), with_dense=True
        )
        texts = [None if h.kind == "figure" else h.text for h in hits]
        readings = reader.read(svc.embedder, dense, texts, budget=10**6)
        return list(zip(hits, svc.evidence(dense, hits, sparse, readings), strict=True))

    passages.gather = every_segment
    every = passages.fitting_set({}, progress, {}, lockbox="out")
    out.write_bytes(pickle.dumps({"searched": searched, "keyword3": keyword3, "every": every, "off": off}))


def _top(fs: Any, q: str, score: Callable[[dict[str, float]], float]) -> tuple[bool, bool]:
    from winnow.search.relevance import feature_rows

    cands = fs.candidates[q]
    rows = feature_rows([e for _, e in cands])
    s = [score(r) for r in rows]
    order = sorted(range(len(s)), key=lambda k: -s[k])
    gold = [fs.qrels[q].get(cands[k][0], 0) > 0 for k in order]
    return any(gold[:3]), bool(gold[:1] and gold[0])


def _share(hits: Sequence[tuple[bool, bool]]) -> str:
    return (
        f"{100 * sum(h[0] for h in hits) / len(hits):.1f} / {100 * sum(h[1] for h in hits) / len(hits):.1f} %"
    )


def order_rows(fs: Any, folds: Sequence[Any]) -> list[tuple[str, str]]:
    from training.relevance_fit import fit_listwise

    fold_of = {q: i for i, f in enumerate(folds) for q in f.held_out}
    qids = [q for q in fs.candidates if q in fold_of]
    order = {i: f.models.for_mode("hybrid").order for i, f in enumerate(folds)}
    rows = [("fold models as fitted", _share([_top(fs, q, order[fold_of[q]].logit) for q in qids]))]

    def added(i: int, q: str, w: float) -> tuple[bool, bool]:
        return _top(fs, q, lambda r: order[i].logit(r) + w * r["segment"])

    held, chosen = [], []
    for i in range(len(folds)):
        train = [q for q in qids if fold_of[q] != i]
        w = max(GRID, key=lambda w: (sum(added(i, q, w)[0] for q in train), -w))
        chosen.append(w)
        held += [added(i, q, w) for q in qids if fold_of[q] == i]
    rows.append((f"+ w x best segment (w per fold {chosen})", _share(held)))
    for name, features in SETS.items():
        for l2 in (1.0, 10.0):
            hits = []
            for i in range(len(folds)):
                m = fit_listwise(fs.candidates, fs.qrels, [q for q in qids if fold_of[q] != i], features, l2)
                hits += [_top(fs, q, m.logit) for q in qids if fold_of[q] == i]
            rows.append((f"passage questions only: {name}, L2 {l2:g}", _share(hits)))
    return rows


def quadratic_rows(fs: Any, folds: Sequence[Any]) -> list[tuple[str, str]]:
    """The shipped features and every pairwise product of them (the order model cannot read them, so
    the module's feature list is widened for this study only)."""
    import winnow.search.relevance as relevance
    from training.relevance_fit import fit_listwise

    pairs = [f"{a}*{b}" for a, b in itertools.combinations_with_replacement(BASE, 2)]
    plain = relevance.feature_rows

    def widened(evidence: Sequence[Any]) -> list[dict[str, float]]:
        rows = plain(evidence)
        for r in rows:
            r.update({p: r[p.split("*")[0]] * r[p.split("*")[1]] for p in pairs})
        return rows

    relevance.FEATURES = (*relevance.FEATURES, *pairs)  # type: ignore[assignment]
    relevance.feature_rows = widened
    try:
        fold_of = {q: i for i, f in enumerate(folds) for q in f.held_out}
        qids = [q for q in fs.candidates if q in fold_of]
        rows = []
        for l2 in (1.0, 10.0, 100.0):
            hits = []
            for i in range(len(folds)):
                train = [q for q in qids if fold_of[q] != i]
                m = fit_listwise(fs.candidates, fs.qrels, train, (*BASE, *pairs), l2)
                hits += [_top(fs, q, m.logit) for q in qids if fold_of[q] == i]
            rows.append(
                (f"passage questions only: shipped features and their products, L2 {l2:g}", _share(hits))
            )
        return rows
    finally:
        relevance.feature_rows = plain


def gate_rows(fs: Any, off: dict[str, str], folds: Sequence[Any]) -> list[str]:
    fold_of = {q: i for i, f in enumerate(folds) for q in f.held_out}
    off_fold = {k: i for i, f in enumerate(folds) for k, t in off.items() if t in f.offtopic_held_out}

    def best(i: int, cands: Any) -> float:
        return max(folds[i].models.for_mode("hybrid").probabilities([e for _, e in cands]), default=0.0)

    answerable = [best(fold_of[q], c) for q, c in fs.candidates.items() if q in fold_of]
    fitting = [best(off_fold.get(k, 0), c) for k, c in fs.offtopic.items() if k.startswith("fit")]
    held = [best(0, c) for k, c in fs.offtopic.items() if k.startswith("held")]  # the first fold's models
    lines = ["| gate at | answerable refused | off-topic refused, fitting / held-out set |", "|---|---|---|"]
    for t in (0.24, 0.22, 0.20, 0.19, 0.18, 0.17, 0.16):
        refused = sum(p < t for p in answerable)
        fit_share, held_share = (100 * sum(p < t for p in s) / len(s) for s in (fitting, held))
        lines.append(
            f"| {t:.2f} | {refused} of {len(answerable)} ({100 * refused / len(answerable):.1f} %) | "
            f"{fit_share:.1f} / {held_share:.1f} % |"
        )
    return lines


def report(data: Path, fold_models: Path) -> None:
    from training.passages import load_fold_models

    d = pickle.loads(data.read_bytes())
    folds = load_fold_models(fold_models)
    print(
        "| order (held out; ordered top 3 / top 1, nothing cut) | keyword-best 3 segments | every segment |"
    )
    print("|---|---|---|")
    for (name, a), (_, b) in zip(
        order_rows(d["keyword3"], folds), order_rows(d["every"], folds), strict=True
    ):
        print(f"| {name} | {a} | {b} |")
    for name, a in quadratic_rows(d["searched"], folds):
        print(f"| {name} | {a} | |")
    print()
    print("\n".join(gate_rows(d["searched"], d["off"], folds)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.study_order_ceiling")
    sub = parser.add_subparsers(dest="step", required=True)
    g = sub.add_parser("gather")
    g.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("report")
    r.add_argument("--data", type=Path, required=True)
    r.add_argument("--fold-models", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.step == "gather":
        gather(args.out)
    else:
        report(args.data, args.fold_models)
    return 0


if __name__ == "__main__":
    sys.exit(main())
