"""Document-level quality as a user measures it from outside: each claim asked as a client's request
through the search handler, its results turned into documents in order (first occurrence wins),
nDCG@10 against the judgements, on claims the relevance model was not fitted on.

``python -m training.doc_level [--eval-dir D] [--artifact SPEC ...] [--fit NAME ...] [--shape NAME ...]
[--lockbox] [--passage-lockbox out] [--json]``

- ``--artifact SPEC``: a shipped artifact on today's code, every claim (in-sample: each artifact so far
  was fitted on all of them); SPEC is ``main`` (this tree's), ``git:<commit>`` or a file.
- ``--fit NAME`` (``FITS``): a fit design, cross-validated on the same 5 folds as ``training.quality``
  (each fold's models, threshold and floor fitted on the other folds) and, with ``--lockbox``, fitted
  once on a fixed two thirds of the claims and measured on the other third. ``--passage-lockbox out``
  leaves the passage questions of training.lockbox's documents out of every fit.
- ``--shape NAME`` (``SHAPES``): the request each claim is asked as.
- ``--chunks FILE``: index these chunks (JSON: document id -> [{text, title, section_path}], e.g. made
  by another commit's chunker) instead of today's, to measure a chunking change alone.

BM25 (bm25s, whole documents) on the same claims in the same run. Issue 46 item 6.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.common import Progress, quiet_known_warnings, stdout_reserved_for_result
from benchmarks.stack import EmbeddedStack, documents_by_best_chunk, write_documents
from training import relevance_fit
from training.baselines import bm25_rankings
from training.cv import DEFAULT_FOLDS, kfold, mean, train_ids
from training.data import OFFTOPIC_FILE, EvalSet, load_eval_set, read_lines
from training.embedcache import DEFAULT_CACHE, caching
from training.known_item import DEFAULT_PER_STYLE, known_item_queries
from training.quality import EVENT_RECORDS, MODES, collect_candidates, install_models
from training.relevance_fit import (
    DEFAULT_MODE,
    OrderQueries,
    best_scores,
    choose_floor,
    choose_threshold,
    fit_models,
    lower_results,
)
from winnow_local.evaluation.metrics import per_query

# The request body beside the query. "default" is a client's {"query": ...}: top_k 5, the default
# candidates (15 per retriever since 2026-11-27, 30 before) and the artifact's threshold.
SHAPES: dict[str, dict[str, Any]] = {
    "default": {},
    "default-c30": {"candidates": 30},  # the default request of 2026-11-24
    "default-t0": {"relevance_threshold": 0.0},
    "top10": {"top_k": 10},  # 3 x top_k = 30 candidates
    "top10-t0": {"top_k": 10, "relevance_threshold": 0.0},  # what training.quality measures
}
LOCKBOX_PARTS = 3  # the lockbox holds one third of the claims, chosen once with its own seed
LOCKBOX_SEED = 46


@dataclass(frozen=True)
class Fit:
    """A fit design: which query sets the default mode's order model reads, and how."""

    known: bool = True
    passages: bool = True
    judged_weight: float = relevance_fit.JUDGED_WEIGHT
    order_features: tuple[str, ...] = relevance_fit.ORDER_FEATURES
    pointwise: bool = False  # the design shipped until 2026-11-27: one logistic fit, every candidate a row
    rule: str = relevance_fit.THRESHOLD_RULE  # "balanced" until 2026-11-28 (f5fbbbd)
    # relevance_fit.GAP_SCALE in this fit: within a query the order and the best score (so the
    # threshold and the refusals) stay; only how fast the scores fall below the best one changes.
    gap_scale: float = 1.0  # as fitted: the shipped artifact's design
    # The floor rule (relevance_fit.choose_floor): None, the fit's default; ("threshold", 0): every
    # result cut at the threshold, the design shipped until issue 46's gate.
    floor: tuple[str, float] | None = None


FITS: dict[str, Fit] = {
    "today": Fit(),
    "cut": Fit(floor=("threshold", 0.0)),  # today's models, every result cut at the threshold
    "no-passages": Fit(passages=False),
    "claims-only": Fit(known=False, passages=False),
    "pointwise4": Fit(passages=False, order_features=relevance_fit.ORDER_FEATURES[:4], pointwise=True),
    "2026-11-24": Fit(
        passages=False,
        order_features=relevance_fit.ORDER_FEATURES[:4],
        pointwise=True,
        rule="balanced",
        floor=("threshold", 0.0),
    ),  # the design shipped at 3fedbd1
}


def parse_fit(name: str) -> Fit:
    """A ``FITS`` name, then optionally ``+w=N`` (another judged weight), ``+g=X`` (a gap scale) and
    ``+f=RULE`` (a floor rule, ``relevance_fit.parse_floor_rule``): ``today+w=16``, ``today+g=0.5``,
    ``today+f=recall:0.9``."""
    base, *options = name.split("+")
    if base not in FITS:
        raise argparse.ArgumentTypeError(f"unknown fit {base!r}; one of {', '.join(FITS)}")
    fit = FITS[base]
    for option in options:
        key, _, value = option.partition("=")
        if key not in ("w", "g", "f") or not value:
            raise argparse.ArgumentTypeError(f"unknown fit option {option!r}: w=N, g=X or f=RULE")
        if key == "f":
            try:
                fit = replace(fit, floor=relevance_fit.parse_floor_rule(value))
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from exc
            continue
        weight, gap = (float(value), fit.gap_scale) if key == "w" else (fit.judged_weight, float(value))
        fit = replace(fit, judged_weight=weight, gap_scale=gap)
    return fit


@contextmanager
def fit_design(fit: Fit) -> Iterator[None]:
    """``relevance_fit``'s module choices set to ``fit``'s for the duration (restored after)."""
    saved = (
        relevance_fit.JUDGED_WEIGHT,
        relevance_fit.ORDER_FEATURES,
        relevance_fit.fit_ranked,
        relevance_fit.GAP_SCALE,
    )
    relevance_fit.JUDGED_WEIGHT = fit.judged_weight
    relevance_fit.GAP_SCALE = fit.gap_scale
    relevance_fit.ORDER_FEATURES = fit.order_features  # type: ignore[assignment]
    if fit.pointwise:
        relevance_fit.fit_ranked = _pointwise_ranked
    try:
        yield
    finally:
        (
            relevance_fit.JUDGED_WEIGHT,
            relevance_fit.ORDER_FEATURES,
            relevance_fit.fit_ranked,
            relevance_fit.GAP_SCALE,
        ) = saved


def _pointwise_ranked(candidates: Any, qrels: Any, qids: Any, answer: Any, extra: Any) -> Any:
    """The order model as fitted until 2026-11-27 (git show 3fedbd1:benchmarks/relevance_fit.py):
    pointwise logistic on the claims' and the extra sets' candidates, L2 chosen by inner CV."""
    merged, merged_qrels, order_ids = dict(candidates), dict(qrels), list(qids)
    for queries in extra:
        merged.update({q: queries.candidates[q] for q in queries.ids})
        merged_qrels.update({q: queries.qrels.get(q, {}) for q in queries.ids})
        order_ids += queries.ids
    features = relevance_fit.ORDER_FEATURES
    l2 = relevance_fit.choose_l2(merged, merged_qrels, order_ids, features)
    order = relevance_fit.fit_mode(merged, merged_qrels, order_ids, features, l2)
    return relevance_fit.calibrate(candidates, qrels, qids, order, answer, relevance_fit.GAP_SCALE)


def load_artifact(spec: str) -> Any:
    from winnow.search.relevance import MODELS_DIR, RelevanceModels

    if spec == "main":
        path = next(MODELS_DIR.glob("*.json"))
        return RelevanceModels.from_json(json.loads(path.read_text(encoding="utf-8")))
    if spec.startswith("git:"):
        name = "layers/shared/winnow/search/models/local-all-minilm-l6-v2-int8-384.json"
        text = subprocess.run(
            ["git", "show", f"{spec[4:]}:{name}"], check=True, capture_output=True, text=True
        ).stdout
        return RelevanceModels.from_json(json.loads(text))
    return RelevanceModels.from_json(json.loads(Path(spec).read_text(encoding="utf-8")))


class Bench:
    """SciFact ingested once; the claims' candidates, the known-item queries', the off-topic
    questions' and (when a fit reads them) the passage questions'."""

    def __init__(
        self,
        stack: EmbeddedStack,
        eval_set: EvalSet,
        key_to_id: dict[str, str],
        passages: Any = None,
        known_items: int = DEFAULT_PER_STYLE,
    ) -> None:
        self.stack, self.eval_set, self.key_to_id = stack, eval_set, key_to_id
        self.queries = eval_set.judged_queries
        self.qrels = {q: eval_set.qrels[q] for q in self.queries}
        self.profile = stack.container.embedder.profile.slug
        self.candidates = {m: collect_candidates(stack, self.queries, m, key_to_id) for m in MODES}
        self.known_queries, self.known_qrels = known_item_queries(eval_set.documents, known_items)
        self.known = collect_candidates(stack, self.known_queries, DEFAULT_MODE, key_to_id)
        self.off_fit = {f"offtopic-{i}": t for i, t in enumerate(read_lines(OFFTOPIC_FILE))}
        self.off = collect_candidates(stack, self.off_fit, DEFAULT_MODE, key_to_id)
        self.passages: Any = passages
        bm25 = bm25_rankings(eval_set.documents, self.queries)
        self.bm25 = {q: m["ndcg@10"] for q, m in per_query(bm25, self.qrels).items()}

    def passage_set(self) -> Any:
        if self.passages is None:
            raise ValueError("a fit that reads the passage questions needs them gathered first")
        return self.passages

    def fit(
        self,
        fit: Fit,
        train: Sequence[str],
        known_ids: Sequence[str],
        passage_ids: Sequence[str],
        off_ids: Sequence[str],
    ) -> Any:
        """Models fitted on these ids with ``fit``'s design, and the threshold chosen with them (the
        off-topic floor, as ``training.quality`` chooses it)."""
        from winnow.search.relevance import RelevanceModels

        passages = self.passage_set() if fit.passages else None
        with fit_design(fit):
            models = fit_models(
                self.candidates,
                self.qrels,
                list(train),
                self.profile,
                known=OrderQueries(self.known, self.known_qrels, list(known_ids) if fit.known else []),
                passages=OrderQueries(passages.candidates, passages.qrels, list(passage_ids))
                if passages
                else None,
            )
        hybrid = models.for_mode(DEFAULT_MODE)
        off_tops = [best_scores(hybrid, self.off, off_ids)]
        if passages:
            off_tops.append(best_scores(hybrid, passages.offtopic, off_ids))
        answerable = best_scores(hybrid, self.candidates[DEFAULT_MODE], train)
        if passages and fit.rule == "balanced":
            answerable += best_scores(hybrid, passages.candidates, passage_ids)
        threshold = choose_threshold(answerable, off_tops, rule=fit.rule)
        lower = lower_results(hybrid, self.candidates[DEFAULT_MODE], self.qrels, train, threshold)
        if passages:
            lower += lower_results(hybrid, passages.candidates, passages.qrels, passage_ids, threshold)
        rule, target = fit.floor or (relevance_fit.FLOOR_RULE, relevance_fit.FLOOR_TARGET)
        floor = choose_floor(lower, threshold, rule, target)
        return RelevanceModels(profile=self.profile, modes=models.modes, threshold=threshold, floor=floor)

    def measure(self, models: Any, qids: Sequence[str], shapes: Sequence[str]) -> dict[str, dict[str, float]]:
        """Per shape, each claim's nDCG@10 through the search handler with ``models`` installed."""
        from winnow_local.apigw import http_api_event

        install_models(models)
        claim = self.stack.container.settings.search.tenant_claim
        out: dict[str, dict[str, float]] = {}
        for shape in shapes:
            runs = {}
            for q in qids:
                body = {"query": self.queries[q], **SHAPES[shape]}
                event = http_api_event("POST", "/search", body=body, tenant=self.stack.tenant, claim=claim)
                runs[q] = documents_by_best_chunk(self.stack.call_search(event), self.key_to_id)
            judged = {q: self.qrels[q] for q in qids}  # per_query scores every judged query it is given
            out[shape] = {q: m["ndcg@10"] for q, m in per_query(runs, judged).items()}
        return out


def cross_validated(
    bench: Bench, fit: Fit, shapes: Sequence[str], folds: int = DEFAULT_FOLDS
) -> dict[str, Any]:
    """Each fold's claims measured with the models fitted on the others (the folds of training.quality)."""
    qids = list(bench.queries)
    split = kfold(qids, folds)
    known_split = kfold(list(bench.known_queries), folds)
    off_split = kfold(list(bench.off_fit), folds)
    passage_split = kfold(sorted(bench.passage_set().candidates), folds) if fit.passages else []
    scores: dict[str, dict[str, float]] = {s: {} for s in shapes}
    thresholds, floors = [], []
    for i, fold in enumerate(split):
        models = bench.fit(
            fit,
            train_ids(split, i),
            train_ids(known_split, i),
            train_ids(passage_split, i) if passage_split else [],
            train_ids(off_split, i),
        )
        thresholds.append(models.threshold)
        floors.append(models.lower_floor)
        for shape, values in bench.measure(models, fold, shapes).items():
            scores[shape].update(values)
    return summary(scores, bench.bm25, qids) | {"thresholds": thresholds, "floors": floors}


def lockbox(bench: Bench, fit: Fit, shapes: Sequence[str]) -> dict[str, Any]:
    """Fitted once on a fixed two thirds of the claims (and every other set), measured on the rest."""
    qids = list(bench.queries)
    held = set(kfold(qids, LOCKBOX_PARTS, seed=LOCKBOX_SEED)[0])
    train = [q for q in qids if q not in held]
    passage_ids = sorted(bench.passage_set().candidates) if fit.passages else []
    models = bench.fit(fit, train, list(bench.known_queries), passage_ids, list(bench.off_fit))
    held_ids = [q for q in qids if q in held]
    return summary(bench.measure(models, held_ids, shapes), bench.bm25, held_ids) | {
        "threshold": models.threshold,
        "floor": models.lower_floor,
    }


def summary(
    scores: dict[str, dict[str, float]], bm25: dict[str, float], qids: Sequence[str]
) -> dict[str, Any]:
    """The means, and each claim's figure (to compare two runs claim by claim: ``bootstrap_se``)."""
    return {
        "claims": len(qids),
        "ndcg@10": {shape: round(mean([v[q] for q in qids]), 4) for shape, v in scores.items()},
        "bm25": round(mean([bm25[q] for q in qids]), 4),
        "per_claim": {shape: {q: round(v[q], 4) for q in qids} for shape, v in scores.items()},
    }


def use_chunks(stack: EmbeddedStack, path: Path) -> None:
    """The ingest handler indexes ``path``'s chunks for each document (by its file name) instead of
    chunking it: everything else (parsing, embedding, the index) stays today's."""
    from winnow.models import Chunk

    given = json.loads(path.read_text(encoding="utf-8"))
    reader = stack.container.ingest_service().reader

    def read(key: str, data: bytes) -> tuple[Any, list[Any]]:
        chunks = [
            Chunk(index=i, text=c["text"], title=c["title"], section_path=tuple(c["section_path"]), page=None)
            for i, c in enumerate(given[Path(key).stem])
        ]
        return reader.parse(key, data), chunks

    reader.read = read


def run(eval_set: EvalSet, workdir: Path, args: argparse.Namespace, note: Progress) -> dict[str, Any]:
    folder = workdir / "documents"
    paths = write_documents(folder, eval_set.documents)
    result: dict[str, Any] = {"artifacts": {}, "cv": {}, "lockbox": {}}
    passages = None
    if any(parse_fit(name).passages for name in args.fit):  # one embedded stack at a time
        from training.passages import fitting_set

        off_fit = {f"offtopic-{i}": t for i, t in enumerate(read_lines(OFFTOPIC_FILE))}
        passages = fitting_set({}, note, off_fit, lockbox=args.passage_lockbox)
    with EmbeddedStack(workdir / "home", wrap_embedder=caching(DEFAULT_CACHE)) as stack:
        if args.chunks:
            use_chunks(stack, args.chunks)
        key_to_id = {
            stack.key_for(p.name): doc_id for doc_id, p in zip(eval_set.documents, paths, strict=True)
        }
        ingested = stack.ingest([(p.name, p.read_bytes()) for p in paths], per_event=EVENT_RECORDS)
        result["chunks"] = sum(int(r.get("chunks") or 0) for r in ingested)
        note(f"ingested {len(ingested)} documents, {result['chunks']} chunks")
        bench = Bench(stack, eval_set, key_to_id, passages, args.known_items)
        qids = list(bench.queries)
        for spec in args.artifact:
            models = load_artifact(spec)
            result["artifacts"][spec] = summary(bench.measure(models, qids, args.shape), bench.bm25, qids) | {
                "threshold": models.threshold,
                "floor": models.lower_floor,
            }
            note(f"artifact {spec}: {result['artifacts'][spec]}")
        for name in args.fit:
            fit = parse_fit(name)
            result["cv"][name] = cross_validated(bench, fit, args.shape)
            note(f"fit {name}, CV: {result['cv'][name]}")
            if args.lockbox:
                result["lockbox"][name] = lockbox(bench, fit, args.shape)
                note(f"fit {name}, lockbox: {result['lockbox'][name]}")
    return result


def render(result: dict[str, Any]) -> str:
    lines = [f"chunks: {result['chunks']}"]
    for section in ("artifacts", "cv", "lockbox"):
        for name, row in result[section].items():
            figures = ", ".join(f"{s} {v:.4f}" for s, v in row["ndcg@10"].items())
            lines.append(f"{section} {name} ({row['claims']} claims): {figures}; BM25 {row['bm25']:.4f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.doc_level", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--eval-dir", type=Path, help="folder of corpus.jsonl, queries.jsonl, qrels.tsv")
    parser.add_argument("--artifact", action="append", default=[], help="main, git:<commit> or a file")
    parser.add_argument(
        "--fit", action="append", default=[], type=str, help=f"one of {', '.join(FITS)} [+w=N]"
    )
    parser.add_argument("--shape", action="append", choices=SHAPES, help="request shape (default: all)")
    parser.add_argument(
        "--lockbox", action="store_true", help="also fit on two thirds of the claims, measure the rest"
    )
    parser.add_argument("--known-items", type=int, default=DEFAULT_PER_STYLE, help="per style, for the fits")
    parser.add_argument("--chunks", type=Path, help="index these chunks instead of today's (JSON)")
    parser.add_argument(
        "--passage-lockbox",
        choices=("out",),
        help="fit on the passage questions outside training.lockbox's documents only (choosing a design)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    args.shape = args.shape or list(SHAPES)
    for name in args.fit:
        parse_fit(name)
    quiet_known_warnings()
    eval_set = load_eval_set(None, None, None, eval_dir=args.eval_dir)
    note: Callable[[str], None] = Progress(quiet=args.quiet)
    with stdout_reserved_for_result(), tempfile.TemporaryDirectory(prefix="winnow-doclevel-") as tmp:
        result = run(eval_set, Path(tmp), args, note)  # type: ignore[arg-type]
    print(json.dumps(result) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
