"""Retrieval quality of Winnow's real pipeline against the baselines a user would pick instead.

``python -m training.quality [--corpus F] [--queries F] [--qrels F] [--json] [--limit-docs N]
[--limit-queries N]``

Every document is written as ``<_id>.txt``, put into the bucket of a fresh embedded stack (temporary
WINNOW_HOME: folder bucket, SQLite ledger, Qdrant Edge, local ONNX embedder) and ingested by the
real ingest handler from S3 notifications of 50 records each. Every query then goes through the real
search handler as an API Gateway event (tenant from the JWT claim) with ``top_k`` 10, the API's default
``candidates`` (30) and ``relevance_threshold`` 0, so the ranking is measured rather than the threshold:
what a client asking for ten passages gets. Documents are ranked by their best chunk, so a query whose ten
passages come from eight documents is scored on those eight. Modes: ``sparse``, ``dense``, ``hybrid``
(the API default), and ``hybrid+rerank`` when a re-ranker is configured (``VOYAGE_API_KEY``).
Baselines on the same whole documents: BM25 (``bm25s``) and brute-force dense cosine with the same
local model.

Refusals: off-topic questions go through the same handler at the deployed threshold. Two sets: the
fitting set (``--offtopic``), which the threshold rule reads, and the held-out set
(``--offtopic-heldout``), which is only measured. ``--sparse qdrant-bm25`` swaps our BM25 encoder for
Qdrant's own model (see ``QdrantBm25Encoder``).

Known-item queries (``--known-items N`` per style, ``training.known_item``): generated keyword and
phrase queries, split into the same folds, fitted on by the hybrid order model (not with
``--no-fit-known-items``) and measured held out. The fitting lives in ``training.relevance_fit``, the
figures and the printed report in ``training.quality_report``.

Passage questions (``--passages``, ``training.passages``: long documents from this machine's
``/usr/share``, asked as a client's default request): split into the same number of folds, fitted on by
the hybrid order model and read by the threshold rule (with the off-topic questions asked of that
corpus), and measured held out offline on their candidates; ``--fold-models F`` writes each fold's
models and threshold for ``training.passages --fold-models F``, which measures them through the
search handler. ``--write-model --passages`` is how the shipped model is made: ``python -m training.fit``
(training/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    Progress,
    existing_file,
    positive_int,
    quiet_known_warnings,
    stdout_reserved_for_result,
)
from benchmarks.stack import EmbeddedStack, Hit, documents_by_best_chunk, write_documents
from training import relevance_fit
from training.baselines import bm25_rankings, dense_rankings
from training.cv import DEFAULT_FOLDS, DEFAULT_SEED, bootstrap_se, fold_summary, kfold, mean, train_ids
from training.data import (
    DATA_DIR,
    OFFTOPIC_FILE,
    OFFTOPIC_HELDOUT_FILE,
    EvalSet,
    load_eval_set,
    read_lines,
)
from training.embedcache import DEFAULT_CACHE, caching
from training.evidence import candidates as gather
from training.known_item import DEFAULT_PER_STYLE, known_item_queries
from training.passages import fitting_set
from training.quality_report import calibration_table, known_item_figures, passage_table, render
from training.relevance_fit import (
    DEFAULT_MODE,
    PASSAGE_WEIGHT,
    TOP_K,
    Candidate,
    OrderQueries,
    best_scores,
    choose_floor,
    choose_threshold,
    describe_floor_rule,
    describe_threshold_rule,
    fit_models,
    floor_curve,
    lower_results,
)
from winnow_local.evaluation.metrics import evaluate, per_query

MODES = ("sparse", "dense", "hybrid")
RERANK_MODE = "hybrid+rerank"
CANDIDATES: int | None = None  # the API default: 3 x top_k = 30 for top_k 10, with or without re-ranker
EVENT_RECORDS = 50
DEMO_QUESTIONS_FILE = DATA_DIR / "demo_questions.tsv"
PARENTAL_LEAVE_QUESTION = "How many weeks of paid leave do new parents get?"
TRAVEL_POLICY = "handbook/travel-and-expenses.docx"


SPARSE_ENCODERS = ("ours", "qdrant-bm25")
QDRANT_BM25_AVG_LEN = 256.0  # the default of Qdrant's server-side ``qdrant/bm25`` model


class QdrantBm25Encoder:
    """Qdrant's own BM25 behind our encoder's two methods, for ``--sparse qdrant-bm25``: the Rust model
    in qdrant-edge-py, which uses the same token ids and formula as server-side ``qdrant/bm25``
    inference (https://qdrant.tech/documentation/edge/edge-bm25/) and needs no download. IDF stays in
    Qdrant (``Modifier.IDF``), as with ours."""

    def __init__(self, avg_len: float = QDRANT_BM25_AVG_LEN) -> None:
        import qdrant_edge

        self._model = qdrant_edge.Bm25(qdrant_edge.Bm25Config(language="english", avg_len=avg_len))

    def encode_document(self, text: str) -> Any:
        from winnow.models import SparseVector

        v = self._model.embed_document(text)
        return SparseVector(indices=list(v.indices), values=[float(x) for x in v.values])

    def encode_query(self, text: str) -> Any:
        from winnow.models import SparseVector

        v = self._model.embed_query(text)
        return SparseVector(indices=sorted(v.indices), values=[1.0] * len(v.indices))


def read_demo_questions(path: Path = DEMO_QUESTIONS_FILE) -> list[tuple[str, str]]:
    out = []
    for line in read_lines(path):
        question, _, expected = line.partition("\t")
        if not expected:
            raise ValueError(f"{path.name}: expected 'question<TAB>document' in {line[:60]!r}")
        out.append((question.strip(), expected.strip()))
    return out


# --- the run ------------------------------------------------------------------------------------------
def winnow_hits(
    stack: EmbeddedStack, queries: dict[str, str], mode: str, threshold: float = 0.0
) -> dict[str, list[Hit]]:
    rerank = mode == RERANK_MODE
    api_mode = DEFAULT_MODE if rerank else mode
    return {
        qid: stack.search(
            text, api_mode, top_k=TOP_K, candidates=CANDIDATES, rerank=rerank, relevance_threshold=threshold
        )
        for qid, text in queries.items()
    }


def winnow_rankings(
    stack: EmbeddedStack, queries: dict[str, str], mode: str, key_to_id: dict[str, str]
) -> dict[str, list[str]]:
    hits = winnow_hits(stack, queries, mode)
    return {qid: documents_by_best_chunk(h, key_to_id) for qid, h in hits.items()}


def collect_candidates(
    stack: EmbeddedStack, queries: dict[str, str], mode: str, key_to_id: dict[str, str]
) -> dict[str, list[Candidate]]:
    """Every query's candidates with their evidence, through the search service the handler uses."""
    from functions.search.app import service
    from winnow.api.schemas.search import SearchRequest

    svc = service()
    out = {}
    for qid, text in queries.items():
        request = SearchRequest(query=text, top_k=TOP_K, candidates=CANDIDATES, mode=mode)  # type: ignore[arg-type]
        out[qid] = [(key_to_id.get(h.key, h.key), e) for h, e in gather(svc, stack.tenant, request)]
    return out


class PassagesUnavailable(ValueError):
    """``--passages`` cannot be measured held out here: too few passage questions (or folds)."""


def passage_outcome(
    model: Any, cands: list[Candidate], judged: dict[str, int], threshold: float, floor: float | None = None
) -> tuple[bool, bool, bool, bool]:
    """One held-out passage question, offline as the search service orders and drops its candidates:
    an answering passage first, in the top 3, in the top 3 and shown (the first over the threshold, the
    others over the ``floor``, by default the threshold), refused."""
    scores = model.probabilities([e for _, e in cands])
    order = sorted(range(len(cands)), key=lambda i: -scores[i])
    answering = [judged.get(cands[i][0], 0) > 0 for i in order]
    refused = max(scores, default=0.0) < threshold
    least = threshold if floor is None else floor
    shown = [answering[r] and not refused and scores[order[r]] >= least for r in range(min(3, len(order)))]
    return any(answering[:1]), any(answering[:3]), any(shown), refused


def passage_figures(
    outcomes: dict[str, tuple[bool, bool, bool, bool]], kinds: dict[str, tuple[str, str]]
) -> dict[str, dict[str, float]]:
    """Shares of the held-out passage questions, overall and per source and per format."""
    groups: dict[str, list[tuple[bool, bool, bool, bool]]] = {"all": list(outcomes.values())}
    for q, outcome in outcomes.items():
        source, fmt = kinds[q]
        groups.setdefault(f"source:{source}", []).append(outcome)
        groups.setdefault(f"format:{fmt}", []).append(outcome)
    return {
        name: {
            "questions": len(rows),
            **{
                label: round(sum(r[k] for r in rows) / len(rows), 4)
                for k, label in enumerate(("top1", "top3", "top3_shown", "refused"))
            },
        }
        for name, rows in sorted(groups.items())
    }


# How the shipped artifact is fitted (recorded in it): training.fit runs this module with these options.
FIT_COMMAND = "python -m training.fit  # = python -m training.quality --write-model --passages --demo --json"


def deployed_threshold(stack: EmbeddedStack, models: Any) -> float:
    """The default threshold a search applies; when the relevance models were just fitted
    (``--write-model``) the threshold chosen with them, which the written artifact now states."""
    from functions.search.app import service

    if models is not None and not stack.has_reranker:
        return float(models.threshold)
    return float(service().threshold)


def provenance(
    eval_set: EvalSet,
    folds: int,
    known_items: int,
    passage_ids: Sequence[str],
    offtopic: Sequence[str],
    fit_known_items: bool,
) -> dict[str, Any]:
    """What the artifact records of its fit: the data (named files and their sizes), the folds, the
    command that reproduces it, and the date."""
    import datetime

    return {
        "data": {
            "corpus": f"SciFact (BEIR format, ../shared/eval/scifact unless --eval-dir): "
            f"{len(eval_set.documents)} documents, {len(eval_set.judged_queries)} judged claims",
            "known_items": f"{known_items} generated known-item queries (training.known_item)"
            + ("" if fit_known_items else ", not fitted on"),
            "passage_questions": f"{len(passage_ids)} of training/data/passage_questions.tsv",
            "offtopic": f"{len(offtopic)} of training/data/offtopic.txt",
        },
        "folds": f"{folds} folds over query ids, seed {DEFAULT_SEED}",
        "threshold_rule": describe_threshold_rule(bool(offtopic)),
        "floor_rule": describe_floor_rule(),
        "command": FIT_COMMAND,
        "date": datetime.date.today().isoformat(),
    }


def install_models(models: Any) -> None:
    from functions.search.app import service

    service().models = models


def run(
    eval_set: EvalSet,
    workdir: Path,
    progress: Progress | None = None,
    env: dict[str, str | None] | None = None,
    folds: int = DEFAULT_FOLDS,
    embed_cache: Path | None = DEFAULT_CACHE,
    offtopic: Sequence[str] = (),
    offtopic_heldout: Sequence[str] = (),
    demo: bool = False,
    write_model: Path | None = None,
    sparse: str = "ours",
    known_items: int = DEFAULT_PER_STYLE,
    fit_known_items: bool = True,
    passages: bool = False,
    fold_models: Path | None = None,
    lockbox: str | None = None,
) -> dict[str, Any]:
    """Ingest, search every mode (whole set and cross-validated), run the baselines, measure the
    threshold; return the JSON-shaped result (timings under ``seconds``)."""
    from winnow.search.relevance import RelevanceModels, load_models, model_path

    note = progress or Progress(quiet=True)
    queries = eval_set.judged_queries
    qids = list(queries)
    qrels = {qid: eval_set.qrels[qid] for qid in queries}
    split = kfold(qids, min(folds, len(qids))) if len(qids) >= 2 else [qids]
    known_queries, known_qrels = known_item_queries(eval_set.documents, known_items)
    known_split = (
        kfold(list(known_queries), len(split)) if len(split) > 1 and len(known_queries) >= len(split) else []
    )
    # The passage questions (training.passages) on their own corpus, first: one stack at a time.
    off_fit = {f"offtopic-{i}": text for i, text in enumerate(offtopic)}
    fitting = fitting_set(env or {}, note, off_fit, lockbox=lockbox) if passages else None
    passage_ids = sorted(fitting.candidates) if fitting else []
    if fitting is not None and not 1 < len(split) <= len(passage_ids):
        # Fitted on but never measured held out, the questions would shape the written model unseen.
        raise PassagesUnavailable(
            f"--passages needs cross-validation folds and at least one passage question per fold "
            f"({len(split)} folds); {len(passage_ids)} questions have their documents on this machine"
        )
    passage_split = kfold(passage_ids, len(split)) if fitting is not None else []
    folder = workdir / "documents"
    paths = write_documents(folder, eval_set.documents)
    key_to_id: dict[str, str] = {}
    seconds: dict[str, float] = {}
    cv: dict[str, Any] = {}
    per_query_ndcg: dict[str, dict[str, float]] = {}
    with EmbeddedStack(workdir / "home", env=env, wrap_embedder=caching(embed_cache)) as stack:
        if sparse == "qdrant-bm25":  # before anything builds the ingest or search service
            stack.container.__dict__["sparse"] = QdrantBm25Encoder()
        files = []
        for doc_id, path in zip(eval_set.documents, paths, strict=True):
            files.append((path.name, path.read_bytes()))
            key_to_id[stack.key_for(path.name)] = doc_id
        note(f"ingesting {len(files)} documents through the ingest handler")
        started = time.perf_counter()
        results = stack.ingest(files, per_event=EVENT_RECORDS)
        seconds["ingest"] = time.perf_counter() - started
        chunks = sum(int(r.get("chunks") or 0) for r in results)
        note(f"ingested {len(results)} documents, {chunks} chunks in {seconds['ingest']:.1f}s")
        profile = stack.container.embedder.profile.slug
        shipped = load_models(profile)
        note(f"embedding profile {profile}: shipped relevance model {'found' if shipped else 'absent'}")

        modes = list(MODES) + ([RERANK_MODE] if stack.has_reranker else [])
        default_mode = RERANK_MODE if stack.has_reranker else DEFAULT_MODE  # what a client gets
        # Cross-validation: each fold's models are fitted on the other folds, installed in the running
        # service, and the held-out queries go through the search handler.
        started = time.perf_counter()
        candidates = {m: collect_candidates(stack, queries, m, key_to_id) for m in MODES}
        # The fitting off-topic set, split into as many folds as the queries: each fold's threshold reads
        # the training folds of both, and the held-out folds of both are measured.
        off_candidates = collect_candidates(stack, off_fit, DEFAULT_MODE, key_to_id) if off_fit else {}
        off_split = kfold(list(off_fit), len(split)) if len(split) > 1 and len(off_fit) >= len(split) else []
        known_candidates = collect_candidates(stack, known_queries, DEFAULT_MODE, key_to_id)
        all_models = None
        if write_model is not None:
            all_models = fit_models(
                candidates,
                qrels,
                qids,
                profile,
                known=OrderQueries(
                    known_candidates, known_qrels, list(known_queries) if fit_known_items else []
                ),
                passages=(
                    OrderQueries(fitting.candidates, fitting.qrels, passage_ids, PASSAGE_WEIGHT)
                    if fitting
                    else None
                ),
            )
            hybrid = all_models.modes[DEFAULT_MODE]
            answerable = best_scores(hybrid, candidates[DEFAULT_MODE], qids)
            off_tops = [best_scores(hybrid, off_candidates, off_candidates)]
            if fitting is not None:
                # The rule reads the off-topic questions asked of the passage corpus too (and, when it
                # reads answerable ones, the passage questions): both kinds of question it will meet.
                answerable += best_scores(hybrid, fitting.candidates, passage_ids)
                off_tops.append(best_scores(hybrid, fitting.offtopic, off_fit))
            threshold = choose_threshold(answerable, off_tops)
            lower = lower_results(hybrid, candidates[DEFAULT_MODE], qrels, qids, threshold)
            if fitting is not None:
                lower += lower_results(hybrid, fitting.candidates, fitting.qrels, passage_ids, threshold)
            floor = choose_floor(lower, threshold)
            target = model_path(profile, write_model)
            previous = load_models(profile, write_model)
            data = all_models.to_json() | {
                "threshold": threshold,
                "floor": floor,
                "version": previous.version + 1 if previous is not None else 1,
                "provenance": provenance(
                    eval_set, folds, len(known_queries), passage_ids, offtopic, fit_known_items
                ),
            }
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            load_models.cache_clear()
            note(f"wrote {target} (threshold {threshold}, floor {floor})")
            all_models = RelevanceModels.from_json(data)
            shipped = all_models

        scored: dict[str, dict[str, float]] = {}
        for mode in modes:
            started = time.perf_counter()
            install_models(shipped)
            rankings = winnow_rankings(stack, queries, mode, key_to_id)
            scored[mode] = evaluate(rankings, qrels)
            seconds[f"search {mode}"] = time.perf_counter() - started
            note(f"{mode}: nDCG@10 {scored[mode]['ndcg@10']:.4f} whole set ({len(queries)} queries)")

        started = time.perf_counter()
        held_out_hits: dict[str, dict[str, list[Hit]]] = {m: {} for m in modes}
        known_hits: dict[str, list[Hit]] = {}
        fold_thresholds: list[float] = []
        fold_floors: list[float] = []
        floor_curves: list[list[dict[str, float]]] = []
        off_refused_cv: list[bool] = []
        passage_cv: dict[str, tuple[bool, bool, bool, bool]] = {}  # question -> top 1, top 3, shown, refused
        fold_files: list[dict[str, Any]] = []
        passage_off_refused: list[bool] = []
        for i, fold in enumerate(split):
            train = train_ids(split, i) if len(split) > 1 else fold
            known_train = train_ids(known_split, i) if known_split and fit_known_items else []
            try:
                models = fit_models(
                    candidates,
                    qrels,
                    train,
                    profile,
                    known=OrderQueries(known_candidates, known_qrels, known_train),
                    passages=(
                        OrderQueries(
                            fitting.candidates, fitting.qrels, train_ids(passage_split, i), PASSAGE_WEIGHT
                        )
                        if fitting and passage_split
                        else None
                    ),
                )
            except ValueError as exc:
                note(f"fold {i + 1}: no relevance model ({exc}); cosine scores")
                models = None
            install_models(models)
            fold_queries = {q: queries[q] for q in fold}
            train_queries = {q: queries[q] for q in train}
            for mode in modes:
                held_out_hits[mode].update(winnow_hits(stack, fold_queries, mode))
            if known_split:
                held_known = {q: known_queries[q] for q in known_split[i]}
                known_hits.update(winnow_hits(stack, held_known, default_mode))
            # The threshold rule runs on the training queries, scored by this fold's model.
            hybrid_model = models.for_mode(DEFAULT_MODE) if models is not None else None
            off_train = {q: off_fit[q] for q in train_ids(off_split, i)} if off_split else {}
            off_held = {q: off_fit[q] for q in off_split[i]} if off_split else {}
            if stack.has_reranker or hybrid_model is None:

                def tops(texts: dict[str, str], mode: str = default_mode) -> list[float]:
                    hits = winnow_hits(stack, texts, mode)
                    return [max((h.score for h in hs), default=0.0) for hs in hits.values()]

                train_tops = tops(train_queries)
                off_train_tops, off_held_tops = [tops(off_train)], tops(off_held)
            else:  # the best score is the highest probability among the candidates: no need to search again
                train_tops = best_scores(hybrid_model, candidates[DEFAULT_MODE], train)
                off_train_tops = [best_scores(hybrid_model, off_candidates, off_train)]
                off_held_tops = best_scores(hybrid_model, off_candidates, off_held)
                if fitting is not None and passage_split:
                    train_tops += best_scores(hybrid_model, fitting.candidates, train_ids(passage_split, i))
                    off_train_tops.append(best_scores(hybrid_model, fitting.offtopic, off_train))
            threshold = choose_threshold(train_tops, off_train_tops)
            fold_thresholds.append(threshold)
            if hybrid_model is not None and not stack.has_reranker:
                lower = lower_results(hybrid_model, candidates[DEFAULT_MODE], qrels, train, threshold)
                if fitting is not None and passage_split:
                    passage_train = train_ids(passage_split, i)
                    lower += lower_results(
                        hybrid_model, fitting.candidates, fitting.qrels, passage_train, threshold
                    )
                fold_floors.append(choose_floor(lower, threshold))
                floor_curves.append(floor_curve(lower, relevance_fit.FLOOR_GRID[:41:2]))
            else:
                fold_floors.append(threshold)
            off_refused_cv += [s < fold_thresholds[-1] for s in off_held_tops]
            if fitting and passage_split and hybrid_model is not None:
                passage_off_refused += [
                    s < fold_thresholds[-1] for s in best_scores(hybrid_model, fitting.offtopic, off_held)
                ]
                for q in passage_split[i]:
                    passage_cv[q] = passage_outcome(
                        hybrid_model, fitting.candidates[q], fitting.qrels[q], threshold, fold_floors[-1]
                    )
                fold_files.append(
                    {
                        "held_out": passage_split[i],
                        "offtopic_held_out": [off_fit[q] for q in off_held],
                        "models": models.to_json() | {"threshold": threshold, "floor": fold_floors[-1]},
                        "threshold": fold_thresholds[-1],
                        "floor": fold_floors[-1],
                    }
                )
            note(
                f"fold {i + 1}/{len(split)}: {len(fold)} held-out queries, "
                f"threshold chosen on train {fold_thresholds[-1]}, floor {fold_floors[-1]}"
            )
        install_models(shipped)
        seconds["cross-validation"] = time.perf_counter() - started
        for mode in modes:
            rankings = {q: documents_by_best_chunk(h, key_to_id) for q, h in held_out_hits[mode].items()}
            per_query_ndcg[mode] = {q: m["ndcg@10"] for q, m in per_query(rankings, qrels).items()}

        # Known-item queries are answerable too: refused when their best held-out score is under their
        # fold's threshold (chosen on the training claims and off-topic questions).
        known_refused = {
            q: max((h.score for h in known_hits[q]), default=0.0) < t
            for fold, t in (zip(known_split, fold_thresholds, strict=True) if known_split else ())
            for q in fold
            if q in known_hits
        }
        known_figures = known_item_figures(
            known_queries,
            known_qrels,
            {q: documents_by_best_chunk(h, key_to_id) for q, h in known_hits.items()},
            bm25_rankings(eval_set.documents, known_queries) if known_hits else {},
            known_refused,
        )
        started = time.perf_counter()
        bm25_run = bm25_rankings(eval_set.documents, queries)
        bm25 = evaluate(bm25_run, qrels)
        per_query_ndcg["baseline bm25"] = {q: m["ndcg@10"] for q, m in per_query(bm25_run, qrels).items()}
        seconds["baseline bm25"] = time.perf_counter() - started
        note(f"baseline bm25: nDCG@10 {bm25['ndcg@10']:.4f}")
        started = time.perf_counter()
        dense_run = dense_rankings(eval_set.documents, queries, stack.container.embedder)
        dense = evaluate(dense_run, qrels)
        per_query_ndcg["baseline dense"] = {q: m["ndcg@10"] for q, m in per_query(dense_run, qrels).items()}
        seconds["baseline dense"] = time.perf_counter() - started
        note(f"baseline dense: nDCG@10 {dense['ndcg@10']:.4f}")

        for name, values in per_query_ndcg.items():
            cv[name] = fold_summary(values, split)
        bm25_q = per_query_ndcg["baseline bm25"]
        default_q = per_query_ndcg[default_mode]
        margins = []
        for fold in split:
            diffs = [default_q[q] - bm25_q[q] for q in fold]
            margins.append({"margin": round(mean(diffs), 4), "se": round(bootstrap_se(diffs), 4)})
        threshold_cv: dict[str, Any] = {
            "rule": describe_threshold_rule(bool(off_split)),
            "per_fold": fold_thresholds,
            "floor_rule": describe_floor_rule(),
            "floor_per_fold": fold_floors,
            "floor_curves_train": floor_curves,
            "passages": passage_table(held_out_hits[default_mode], qrels, key_to_id),
            "calibration": calibration_table(held_out_hits[default_mode], qrels, key_to_id),
        }
        bands = threshold_cv["calibration"]
        threshold_cv["calibration_error"] = round(
            sum(b["passages"] * abs(b["mean_score"] - b["relevant"]) for b in bands)
            / max(1, sum(b["passages"] for b in bands)),
            4,
        )
        # Answerable queries refused at each fold's threshold (chosen on its training folds).
        refused = [
            max((h.score for h in held_out_hits[default_mode][q]), default=0.0) < t
            for fold, t in zip(split, fold_thresholds, strict=True)
            for q in fold
        ]
        threshold_cv["answerable_refused_cv"] = round(sum(refused) / max(1, len(refused)), 4)
        # The same per mode (issue 24: sparse and dense are calibrated too), at the fold thresholds.
        threshold_cv["answerable_refused_cv_by_mode"] = {
            mode: round(
                sum(
                    max((h.score for h in held_out_hits[mode][q]), default=0.0) < t
                    for fold, t in zip(split, fold_thresholds, strict=True)
                    for q in fold
                )
                / max(1, len(queries)),
                4,
            )
            for mode in modes
        }
        if passage_cv and fitting:
            threshold_cv["passages_heldout"] = passage_figures(passage_cv, fitting.kinds)
            threshold_cv["passages_offtopic_refused_cv"] = (
                round(mean([float(r) for r in passage_off_refused]), 4) if passage_off_refused else None
            )
        if fold_models is not None and fold_files:
            fold_models.write_text(json.dumps({"folds": fold_files}) + "\n", encoding="utf-8")
            note(f"wrote the {len(fold_files)} fold models to {fold_models}")
        threshold_cv["offtopic_fitting_refused_cv"] = (
            round(sum(off_refused_cv) / len(off_refused_cv), 4) if off_refused_cv else None
        )

        deployed = deployed_threshold(stack, shipped)
        install_models(shipped)
        off = {
            name: refusals(stack, texts, deployed, TOP_K)
            for name, texts in (("heldout", offtopic_heldout), ("fitting", offtopic))
            if texts
        }
        for name, figures in off.items():
            note(f"off-topic {name}: {figures['refused']:.1%} of {figures['queries']} refused at {deployed}")
        if offtopic_heldout:
            threshold_cv["offtopic_heldout_refused_by_mode"] = {
                mode: refusals(stack, offtopic_heldout, deployed, TOP_K, mode)["refused"]
                for mode in modes
                if mode in ("sparse", "dense", DEFAULT_MODE)
            }
            note(f"off-topic heldout by mode: {threshold_cv['offtopic_heldout_refused_by_mode']}")

    demo_result = (
        run_demo(workdir / "demo", env, embed_cache, offtopic, offtopic_heldout, all_models) if demo else None
    )

    return {
        "modes": scored,
        "baselines": {"bm25": bm25, "dense": dense},
        "queries": len(queries),
        "documents": len(eval_set.documents),
        "chunks": chunks,
        "cv": {"folds": len(split), "ndcg@10": cv, "default_mode": default_mode, "margin_vs_bm25": margins},
        "threshold": threshold_cv,
        "offtopic": off,
        "demo": demo_result,
        "known_item": known_figures,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
    }


def refusals(
    stack: EmbeddedStack, texts: Sequence[str], threshold: float, top_k: int, mode: str = DEFAULT_MODE
) -> dict[str, Any]:
    """Off-topic questions through the search handler at ``threshold``: the share answered "No relevant
    passages found", and the first few that got an answer."""
    answers = {
        text: stack.search(
            text,
            mode,
            top_k=top_k,
            candidates=CANDIDATES,
            rerank=stack.has_reranker,
            relevance_threshold=threshold,
        )
        for text in texts
    }
    return {
        "queries": len(texts),
        "threshold": threshold,
        "refused": round(sum(1 for a in answers.values() if not a) / max(1, len(texts)), 4),
        "answered": [q for q, a in answers.items() if a][:20],
    }


def run_demo(
    workdir: Path,
    env: dict[str, str | None] | None,
    embed_cache: Path | None,
    offtopic: Sequence[str],
    offtopic_heldout: Sequence[str] = (),
    models: Any = None,
) -> dict[str, Any]:
    """The demo samples through the real handlers: answerable questions (is the expected document the
    first result, is anything refused) and the off-topic questions at the deployed threshold."""
    from winnow.search.relevance import load_models
    from winnow_local.cli.demo import stage_samples

    staged = stage_samples(workdir / "samples")
    files = [
        (str(p.relative_to(staged)), p.read_bytes())
        for p in sorted(staged.rglob("*"))
        if p.is_file() and not p.name.endswith(".metadata.json")
    ]
    questions = read_demo_questions()
    with EmbeddedStack(workdir / "home", env=env, wrap_embedder=caching(embed_cache)) as stack:
        stack.ingest(files, per_event=EVENT_RECORDS)
        models = models or load_models(stack.container.embedder.profile.slug)
        install_models(models)
        rerank = stack.has_reranker
        threshold = deployed_threshold(stack, models)

        def ask(text: str) -> list[Hit]:
            return stack.search(
                text,
                DEFAULT_MODE,
                top_k=5,
                candidates=CANDIDATES,
                rerank=rerank,
                relevance_threshold=threshold,
            )

        answered = {q: ask(q) for q, _ in questions}
        prefix = f"{stack.tenant}/"
        top1 = sum(1 for q, expected in questions if answered[q] and answered[q][0].key == prefix + expected)
        refused = [q for q, _ in questions if not answered[q]]
        wrong_docs = {
            q: sorted({h.key.removeprefix(prefix) for h in answered[q]} - {expected})
            for q, expected in questions
            if {h.key.removeprefix(prefix) for h in answered[q]} - {expected}
        }
        off = {
            name: refusals(stack, texts, threshold, 5)
            for name, texts in (("heldout", offtopic_heldout), ("fitting", offtopic))
            if texts
        }
        parental = [
            h.key.removeprefix(prefix)
            for h in stack.search(
                PARENTAL_LEAVE_QUESTION,
                DEFAULT_MODE,
                top_k=2,
                candidates=CANDIDATES,
                rerank=rerank,
                relevance_threshold=threshold,
            )
        ]  # as `winnow demo` asks it
    return {
        "threshold": threshold,
        "questions": len(questions),
        "top1_expected": round(top1 / len(questions), 4),
        "answerable_refused": round(len(refused) / len(questions), 4),
        "refused_questions": refused,
        "other_documents_returned": wrong_docs,
        "offtopic": off,
        "parental_leave_documents": parental,
        "parental_leave_returns_travel_policy": TRAVEL_POLICY in parental,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m training.quality", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--eval-dir", type=Path, help="folder of corpus.jsonl, queries.jsonl, qrels.tsv; default SciFact"
    )
    parser.add_argument("--corpus", type=existing_file, help="corpus.jsonl ({_id, text}); default SciFact")
    parser.add_argument("--queries", type=existing_file, help="queries.jsonl ({_id, text})")
    parser.add_argument("--qrels", type=existing_file, help="qrels.tsv (query-id, corpus-id, score)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument(
        "--limit-docs", type=positive_int, help="use at most N documents (relevant ones first)"
    )
    parser.add_argument("--limit-queries", type=positive_int, help="use at most N judged queries")
    parser.add_argument(
        "--workdir", type=Path, help="keep documents and the index here instead of a temp dir"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
    parser.add_argument("--folds", type=positive_int, default=DEFAULT_FOLDS, help="cross-validation folds")
    parser.add_argument(
        "--offtopic",
        type=existing_file,
        default=OFFTOPIC_FILE,
        help="off-topic questions the threshold rule is fitted on, one per line",
    )
    parser.add_argument(
        "--offtopic-heldout",
        type=existing_file,
        default=OFFTOPIC_HELDOUT_FILE,
        help="off-topic questions only measured (nothing is chosen on them), one per line",
    )
    parser.add_argument("--demo", action="store_true", help="also measure the demo corpus")
    parser.add_argument(
        "--sparse",
        choices=SPARSE_ENCODERS,
        default="ours",
        help="BM25 encoder for the keyword side: ours (winnow.text.sparse) or Qdrant's qdrant/bm25 model",
    )
    parser.add_argument(
        "--known-items",
        type=int,
        default=DEFAULT_PER_STYLE,
        help="generated known-item queries per style the ordering model is also fitted on (0: none)",
    )
    parser.add_argument(
        "--no-fit-known-items",
        action="store_true",
        help="measure the known-item queries but fit nothing on them (the claims-only model)",
    )
    parser.add_argument(
        "--no-embed-cache", action="store_true", help=f"embed everything again (cache: {DEFAULT_CACHE})"
    )
    parser.add_argument(
        "--passages",
        action="store_true",
        help="also fit the order model on the passage questions (training.passages; documents from "
        "this machine's /usr/share) and measure them held out",
    )
    parser.add_argument(
        "--fold-models",
        type=Path,
        help="with --passages: write each fold's models and held-out passage questions here "
        "(for training.passages --fold-models)",
    )
    parser.add_argument(
        "--segments",
        action="store_true",
        help="the default mode's order model also reads each candidate's best segment (every search "
        "then embeds its candidates' segments: docs/quality.md)",
    )
    parser.add_argument(
        "--gap-scale",
        type=float,
        help=f"the default mode's combining step keeps this share of its gap weight (default "
        f"{relevance_fit.GAP_SCALE}: training.relevance_fit.GAP_SCALE)",
    )
    parser.add_argument(
        "--offtopic-floor",
        type=float,
        help=f"the threshold rule's share of training off-topic questions to refuse on each corpus "
        f"(default {relevance_fit.OFFTOPIC_FLOOR}: training.relevance_fit.OFFTOPIC_FLOOR)",
    )
    parser.add_argument(
        "--floor",
        type=relevance_fit.parse_floor_rule,
        help=f"the floor rule, RULE:TARGET (precision:0.2, recall:0.9) or threshold (every result cut at "
        f"the threshold); default {relevance_fit.FLOOR_RULE}:{relevance_fit.FLOOR_TARGET}",
    )
    parser.add_argument(
        "--write-model",
        action="store_true",
        help="fit the relevance models on every query and write them into the package for this profile",
    )
    parser.add_argument(
        "--lockbox",
        choices=("out",),
        help="with --passages: leave the lockbox's passage questions out of every fit (training.lockbox)",
    )
    args = parser.parse_args(argv)
    if args.lockbox and not args.passages:
        parser.error("--lockbox needs --passages: the lockbox holds passage questions")
    if args.offtopic_floor is not None and not 0 < args.offtopic_floor <= 1:
        parser.error("--offtopic-floor is a share in (0, 1]")
    if args.gap_scale is not None and not args.gap_scale > 0:
        parser.error("--gap-scale must be above 0: the order within a query needs a gap weight")
    if args.fold_models and not args.passages:
        parser.error("--fold-models needs --passages: the fold models are for the passage questions")
    if args.passages and os.environ.get("VOYAGE_API_KEY"):
        # With a re-ranker the threshold reads its scores, not the relevance model the passages fit.
        parser.error("--passages fits the relevance model used without a re-ranker: unset VOYAGE_API_KEY")
    return args


def provider_env() -> dict[str, str | None]:
    """The embedded stack uses the local model, unless a Voyage key is set: then the Voyage embedder and
    re-ranker, as a deployment with that key would."""
    return (
        {"WINNOW_EMBEDDER": "voyage", "WINNOW_RERANKER": "voyage"} if os.environ.get("VOYAGE_API_KEY") else {}
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_known_warnings()
    try:
        eval_set = load_eval_set(args.corpus, args.queries, args.qrels, eval_dir=args.eval_dir)
    except FileNotFoundError as exc:
        print(f"training.quality: {exc}", file=sys.stderr)
        return 2
    if args.limit_docs or args.limit_queries:
        eval_set = eval_set.limited(args.limit_docs, args.limit_queries)
    progress = Progress(quiet=args.quiet)
    relevance_fit.READ_SEGMENTS = args.segments
    if args.gap_scale is not None:
        relevance_fit.GAP_SCALE = args.gap_scale
    if args.floor is not None:
        relevance_fit.FLOOR_RULE, relevance_fit.FLOOR_TARGET = args.floor
    if args.offtopic_floor is not None:
        relevance_fit.OFFTOPIC_FLOOR = args.offtopic_floor
    offtopic = read_lines(args.offtopic)
    options: dict[str, Any] = {
        "env": provider_env(),
        "folds": args.folds,
        "embed_cache": None if args.no_embed_cache else DEFAULT_CACHE,
        "offtopic": offtopic,
        "offtopic_heldout": read_lines(args.offtopic_heldout),
        "demo": args.demo,
        "sparse": args.sparse,
        "known_items": args.known_items,
        "fit_known_items": not args.no_fit_known_items,
        "passages": args.passages,
        "fold_models": args.fold_models,
        "lockbox": args.lockbox,
    }
    with stdout_reserved_for_result():
        if args.write_model:
            from winnow.search.relevance import MODELS_DIR

            # The profile is known once the stack is up; run() names the file after it.
            options["write_model"] = MODELS_DIR
        try:
            if args.workdir:
                result = run(eval_set, args.workdir, progress, **options)
            else:
                with tempfile.TemporaryDirectory(prefix="winnow-quality-") as tmp:
                    result = run(eval_set, Path(tmp), progress, **options)
        except PassagesUnavailable as exc:
            print(f"training.quality: {exc}", file=sys.stderr)
            return 2
    if args.json:
        keys = (
            "modes",
            "baselines",
            "queries",
            "documents",
            "cv",
            "threshold",
            "offtopic",
            "demo",
            "known_item",
        )
        print(json.dumps({k: result[k] for k in keys}))
    else:
        print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
