"""Passage-level retrieval: does the passage that answers come first, on long documents nobody wrote for
the benchmark? (issue 24)

``python -m training.passages [--json] [--env NAME=VALUE ...] [--limit N] [--documents DIR]
[--questions TSV]``

- **Documents**: ``training.passage_corpus``: manual pages, GNU info manuals, HTML, Markdown and PDF
  that ship on this machine under ``/usr/share`` (read at run time, never copied into the repository;
  a document this machine lacks is left out with its questions, and the report says how many).
- **Questions**: ``training/data/passage_questions.tsv``, written in plain words for this benchmark
  (never a copied phrase), each with ``answer_excerpt``: a short verbatim excerpt of the document that
  answers it. A retrieved passage *answers* when it contains the excerpt (case, whitespace, quotes and
  hyphen forms aside). Questions are split into the folds of ``training.cv.kfold`` and the report
  gives the spread of top-3 across folds. The shipped relevance model's order was fitted on these
  questions too (``training.quality --write-model --passages``), so with it the figures are in-sample;
  ``--fold-models F`` (written by ``training.quality --passages --fold-models F``) answers each
  question with the models fitted without its fold, at that fold's threshold and floor: the held-out figures
  (the fitting off-topic questions likewise; the held-out off-topic set is read by no fit).
- **Winnow**: every document through the real ingest handler of a fresh embedded stack (local ONNX
  embedder, no re-ranker), then each question as a client's default request (``{"query": ...}``:
  default mode, ``top_k``, ``candidates`` and relevance threshold). Figures: answering passage at rank 1
  and in the top 3, right document first, answerable questions refused (no result at the default
  threshold); the answer among the candidates the search orders (``winnow_reachable``: a bound on
  what any order, fitted model or re-ranker, can reach with that many candidates); and the share of
  off-topic questions refused, of the fitting set (``training/data/offtopic.txt``, which the
  threshold rule reads) and of the held-out set (``offtopic_heldout.txt``).
- **Baselines, same run**: BM25 (``bm25s``, as in ``training.baselines``) over the very chunks Winnow
  indexed, and BM25 over the *gold passages*: each document's own paragraphs as its parser reads them,
  a retriever given perfect chunking. No threshold: they always answer.
- **Chunks**: length distribution per format (median, p10, p90 characters).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import (
    Progress,
    machine,
    positive_int,
    quiet_known_warnings,
    stdout_reserved_for_result,
)
from training.cv import DEFAULT_FOLDS, kfold
from training.data import DATA_DIR, OFFTOPIC_FILE, OFFTOPIC_HELDOUT_FILE, read_lines
from training.embedcache import DEFAULT_CACHE, caching
from training.evidence import candidates as gather
from training.lockbox import CHOICES as LOCKBOX_CHOICES
from training.lockbox import questions_for

QUESTIONS = DATA_DIR / "passage_questions.tsv"
TOP = 3
BASELINE_DEPTH = 10
_QUOTES = str.maketrans(
    {"\u2010": "-", "\u2011": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
)


@dataclass(frozen=True)
class Question:
    id: str
    document: str  # the name in training.passage_corpus the question was written on
    text: str
    excerpt: str


@dataclass(frozen=True)
class Passage:
    """A unit a retriever returns: the document it is from and its text."""

    document: str
    text: str


def normalise(text: str) -> str:
    """Text as the answer check compares it: lower case, one space for any whitespace, one form of
    quotes and hyphens, no soft hyphens (PDF and groff output differ from the source in just these)."""
    return " ".join(text.translate(_QUOTES).replace("\u00ad", "").lower().split())


def answers(passage_text: str, question: Question) -> bool:
    return normalise(question.excerpt) in normalise(passage_text)


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    """The questions of a TSV file with columns id, document, question, answer_excerpt; ids unique and
    every field filled, else ValueError naming the line."""
    questions: list[Question] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8", newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), start=2):
            fields = [
                (row.get(name) or "").strip() for name in ("id", "document", "question", "answer_excerpt")
            ]
            if not all(fields):
                raise ValueError(f"{path.name} line {line}: every column needs a value")
            if fields[0] in seen:
                raise ValueError(f"{path.name} line {line}: duplicate id {fields[0]}")
            seen.add(fields[0])
            questions.append(Question(*fields))
    return questions


def rank_of_answer(ranking: Sequence[Passage], question: Question) -> int | None:
    """1-based rank of the first passage that answers, or None."""
    for rank, passage in enumerate(ranking, start=1):
        if answers(passage.text, question):
            return rank
    return None


@dataclass
class Tally:
    """The figures of one retriever on one group of questions."""

    questions: int = 0
    rank1: int = 0
    top3: int = 0
    document_first: int = 0
    refused: int = 0

    def add(self, ranking: Sequence[Passage], question: Question) -> None:
        self.questions += 1
        if not ranking:
            self.refused += 1
            return
        rank = rank_of_answer(ranking, question)
        self.rank1 += rank == 1
        self.top3 += rank is not None and rank <= TOP
        self.document_first += ranking[0].document == question.document

    def as_dict(self) -> dict[str, Any]:
        n = max(self.questions, 1)
        return {
            "questions": self.questions,
            "rank1": round(self.rank1 / n, 4),
            "top3": round(self.top3 / n, 4),
            "document_first": round(self.document_first / n, 4),
            "refused": round(self.refused / n, 4),
        }


MISS_KINDS = ("refused", "other documents", "right document, other passage")


def miss_kinds(questions: Sequence[Question], rankings: Mapping[str, Sequence[Passage]]) -> dict[str, int]:
    """Why each question missed the top 3: nothing shown, only other documents' passages in the top 3,
    or its own document's but not the answering one. A question in plain words may fit several
    documents (``grep -i`` and ``less -i`` both ignore case); the first kind of miss is about which
    document, the second about which passage."""
    counts = dict.fromkeys(MISS_KINDS, 0)
    for question in questions:
        ranking = list(rankings[question.id])[:TOP]
        if rank_of_answer(ranking, question) is not None:
            continue
        if not ranking:
            counts["refused"] += 1
        elif any(p.document == question.document for p in ranking):
            counts["right document, other passage"] += 1
        else:
            counts["other documents"] += 1
    return counts


def reachable(
    questions: Sequence[Question],
    pools: Mapping[str, Sequence[Passage]],
    kinds: Mapping[str, tuple[str, str]],
) -> dict[str, float]:
    """Per group, the share of questions whose answering passage is among the candidates the search
    orders (``pools``): the most that any order of them, model or re-ranker, could put in the top 3."""
    out: dict[str, float] = {}
    for group, members in sorted(grouped(questions, kinds).items()):
        held = sum(rank_of_answer(pools[q.id], q) is not None for q in members)
        out[group] = round(held / max(len(members), 1), 4)
    return out


def length_stats(lengths: Iterable[int]) -> dict[str, float]:
    """Median, 10th and 90th percentile (nearest rank) of chunk lengths, and their count."""
    ordered = sorted(lengths)
    if not ordered:
        return {"chunks": 0, "median": 0, "p10": 0, "p90": 0}

    def at(fraction: float) -> int:
        return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]

    return {"chunks": len(ordered), "median": statistics.median(ordered), "p10": at(0.1), "p90": at(0.9)}


class Bm25Passages:
    """BM25 (``bm25s``, English stop-words, Snowball stemmer: as ``training.baselines``) over passages."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        import bm25s
        import Stemmer

        self._stemmer = Stemmer.Stemmer("english")
        self._passages = list(passages)
        tokens = bm25s.tokenize(
            [p.text for p in self._passages], stopwords="en", stemmer=self._stemmer, show_progress=False
        )
        self._retriever = bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)

    def rank(self, query: str, k: int = BASELINE_DEPTH) -> list[Passage]:
        import bm25s

        tokens = bm25s.tokenize(
            [query], stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        if not tokens or not tokens[0]:
            return []
        k = min(k, len(self._passages))
        results, scores = self._retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [self._passages[int(i)] for i, s in zip(results[0], scores[0], strict=True) if s > 0]


def grouped(questions: Sequence[Question], kinds: Mapping[str, tuple[str, str]]) -> dict[str, list[Question]]:
    """Questions under "all", "source:<s>" and "format:<f>" (``kinds``: document -> (source, format))."""
    groups: dict[str, list[Question]] = defaultdict(list)
    for question in questions:
        source, fmt = kinds[question.document]
        for name in ("all", f"source:{source}", f"format:{fmt}"):
            groups[name].append(question)
    return dict(groups)


def tally(
    questions: Sequence[Question],
    rankings: Mapping[str, Sequence[Passage]],
    kinds: Mapping[str, tuple[str, str]],
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for group, members in sorted(grouped(questions, kinds).items()):
        counts = Tally()
        for question in members:
            counts.add(rankings[question.id], question)
        out[group] = counts.as_dict()
    return out


def fold_spread(questions: Sequence[Question], rankings: Mapping[str, Sequence[Passage]]) -> dict[str, float]:
    """Top-3 on each of the cross-validation folds: lowest and highest (what one fold's luck moves)."""
    ids = [q.id for q in questions]
    folds = kfold(ids, k=min(DEFAULT_FOLDS, len(ids))) if len(ids) >= 2 else [ids]
    by_id = {q.id: q for q in questions}
    shares = []
    for fold in folds:
        counts = Tally()
        for qid in fold:
            counts.add(rankings[qid], by_id[qid])
        shares.append(counts.top3 / max(counts.questions, 1))
    return {"folds": len(folds), "top3_min": round(min(shares), 4), "top3_max": round(max(shares), 4)}


# --- the run ---------------------------------------------------------------------------------------
def _corpus(progress: Progress) -> tuple[list[tuple[str, bytes]], dict[str, tuple[str, str]], dict[str, str]]:
    """(upload name, bytes) per available document, document -> (source, format), upload name -> document."""
    from training.passage_corpus import render, sources, upload_name

    files: list[tuple[str, bytes]] = []
    kinds: dict[str, tuple[str, str]] = {}
    by_upload: dict[str, str] = {}
    for source in sources():
        data = render(source)
        if data is None:
            progress(f"missing on this machine: {source.name}")
            continue
        files.append((upload_name(source), data))
        kinds[source.name] = (source.source, source.format)
        by_upload[upload_name(source)] = source.name
    return files, kinds, by_upload


def _corpus_from_folder(
    folder: Path,
) -> tuple[list[tuple[str, bytes]], dict[str, tuple[str, str]], dict[str, str]]:
    """Every file of ``folder`` as a document of source "given", its format the file's suffix: for
    documents and questions of one's own (and the smoke test)."""
    files = [(path.name, path.read_bytes()) for path in sorted(folder.iterdir()) if path.is_file()]
    kinds = {name: ("given", Path(name).suffix.lstrip(".") or "text") for name, _ in files}
    return files, kinds, {name: name for name, _ in files}


def document_of(key: str, by_upload: Mapping[str, str]) -> str:
    """The corpus document a result's or candidate's key names (``by_upload``: upload name -> document);
    the key itself for a name the corpus does not know."""
    return by_upload.get(key.rsplit("/", 1)[-1], key)


@contextmanager
def ingested(files: Sequence[Any], env: Mapping[str, str | None], progress: Progress) -> Iterator[Any]:
    """A fresh embedded stack in a temporary home, through the embedding cache, with ``files``
    ingested: the corpus every passage measure asks its questions of."""
    from benchmarks.stack import EmbeddedStack

    with (
        tempfile.TemporaryDirectory(prefix="winnow-passages-") as workdir,
        EmbeddedStack(Path(workdir) / "home", env=dict(env), wrap_embedder=caching(DEFAULT_CACHE)) as stack,
    ):
        progress(f"ingesting {len(files)} documents")
        stack.ingest(files, per_event=10)
        yield stack


def _corpus_and_questions(
    progress: Progress, documents: Path | None, questions_file: Path, lockbox: str | None = None
) -> tuple[list[tuple[str, bytes]], dict[str, tuple[str, str]], dict[str, str], list[Question]]:
    """The corpus (``/usr/share``'s, or the files of ``documents``) as ``_corpus`` gives it, and the
    questions whose document it holds (with ``lockbox``, those outside it or only those in it:
    ``training.lockbox``)."""
    files, kinds, by_upload = _corpus(progress) if documents is None else _corpus_from_folder(documents)
    questions = [q for q in load_questions(questions_file) if q.document in kinds]
    return files, kinds, by_upload, questions_for(questions, lockbox)


def _held_out(folds: Mapping[str, tuple[Any, float]], key: str) -> None:
    """For a question (id, or off-topic text) some fold held out: its models installed, with the
    threshold and floor chosen with them, so the question goes as a client's default request."""
    if key in folds:
        _install(folds[key][0])


def _install(models: Any) -> None:
    """Relevance models for the running search service: fitted ones, or ``"shipped"`` back."""
    from functions.search.app import service
    from winnow.search.relevance import load_models

    svc = service()
    svc.models = load_models(svc.embedder.profile.slug) if models == "shipped" else models


def _default_request(
    stack: Any,
    query: str,
    candidates: int | None = None,
    context: str | None = None,
    threshold: float | None = None,
) -> list[dict[str, Any]]:
    """A client's default search: only the query (and ``candidates``, ``context`` or the threshold when
    measuring other values of them), everything else the API's defaults."""
    from functions.search.app import handler
    from winnow_local.apigw import http_api_event
    from winnow_local.context import LocalLambdaContext

    claim = stack.container.settings.search.tenant_claim
    body: dict[str, Any] = {"query": query}
    if candidates is not None:
        body["candidates"] = candidates
    if context is not None:
        body["context"] = context
    if threshold is not None:
        body["relevance_threshold"] = threshold
    event = http_api_event("POST", "/search", body=body, tenant=stack.tenant, claim=claim)
    response = handler(event, LocalLambdaContext())
    if response.get("statusCode") != 200:
        raise RuntimeError(f"search answered {response.get('statusCode')}: {response.get('body')}")
    return list(json.loads(response["body"])["results"])


def _chunks_as_indexed(stack: Any, files: Sequence[tuple[str, bytes]]) -> dict[str, list[Any]]:
    """Each document's chunks exactly as the ingest service made them (same parser, settings, window)."""
    from winnow.parsing import parse_document
    from winnow.text.chunking import chunk_to_fit

    container = stack.container
    embedder = container.embedder
    out: dict[str, list[Any]] = {}
    for name, data in files:
        parsed = parse_document(stack.key_for(name), data)
        window = embedder.max_input_tokens
        out[name] = chunk_to_fit(parsed, container.settings.chunking, embedder.count_tokens, window or 10**9)
    return out


@dataclass(frozen=True)
class FittingSet:
    """The passage questions as the relevance fit reads them (``training.quality --passages``): each
    question's default-mode candidates as ``(chunk id, evidence)``, the chunks that answer it, and its
    (source, format)."""

    candidates: dict[str, list[tuple[str, Any]]]
    qrels: dict[str, dict[str, int]]
    kinds: dict[str, tuple[str, str]]
    offtopic: dict[str, list[tuple[str, Any]]]  # the off-topic questions' candidates on the same corpus


def fitting_set(
    env: Mapping[str, str | None],
    progress: Progress,
    offtopic: Mapping[str, str] | None = None,
    documents: Path | None = None,
    questions_file: Path = QUESTIONS,
    lockbox: str | None = None,
) -> FittingSet:
    """Every passage question's candidates for a client's default request (``{"query": ...}``), the
    ones the search handler orders and drops when this benchmark asks it, through the search service
    on a fresh embedded stack of the passage corpus (or of ``documents``); a candidate's id names its
    chunk (unique per question). The ``offtopic`` questions (id -> text) are asked the same way."""
    from functions.search.app import service
    from winnow.api.schemas.search import SearchRequest

    files, kinds, _, questions = _corpus_and_questions(progress, documents, questions_file, lockbox)
    candidates: dict[str, list[tuple[str, Any]]] = {}
    qrels: dict[str, dict[str, int]] = {}
    with ingested(files, env, progress) as stack:
        svc = service()
        for q in questions:
            hits = gather(svc, stack.tenant, SearchRequest(query=q.text))
            candidates[q.id] = [(f"{h.key}#{i}", e) for i, (h, e) in enumerate(hits)]
            qrels[q.id] = {f"{h.key}#{i}": 1 for i, (h, _) in enumerate(hits) if answers(h.text, q)}
        off = {
            qid: [(h.key, e) for h, e in gather(svc, stack.tenant, SearchRequest(query=text))]
            for qid, text in (offtopic or {}).items()
        }
    return FittingSet(candidates, qrels, {q.id: kinds[q.document] for q in questions}, off)


@dataclass(frozen=True)
class Fold:
    """One fold of ``training.quality --fold-models``: the passage questions and fitting off-topic
    questions (by text) it held out, the relevance models fitted without them, and the threshold chosen
    with those models."""

    held_out: list[str]
    offtopic_held_out: list[str]
    models: Any
    threshold: float


def load_fold_models(path: Path) -> list[Fold]:
    from winnow.search.relevance import RelevanceModels

    data = json.loads(path.read_text(encoding="utf-8"))
    # The fold's threshold and floor are the models' (a fold file written before the floor: none, so
    # every result is cut at the threshold).
    return [
        Fold(
            list(f["held_out"]),
            list(f.get("offtopic_held_out") or []),
            RelevanceModels.from_json(f["models"] | {"threshold": f["threshold"], "floor": f.get("floor")}),
            float(f["threshold"]),
        )
        for f in data["folds"]
    ]


def run(
    env: Mapping[str, str],
    limit: int | None,
    progress: Progress,
    documents: Path | None = None,
    questions_file: Path = QUESTIONS,
    candidates: int | None = None,
    context: str | None = None,
    fold_models: Path | None = None,
    lockbox: str | None = None,
) -> dict[str, Any]:
    from functions.search.app import service
    from winnow.api.schemas.search import SearchRequest
    from winnow.parsing import parse_document

    files, kinds, by_upload, questions = _corpus_and_questions(progress, documents, questions_file, lockbox)
    if limit is not None:
        questions = questions[:limit]
    offtopic, offtopic_heldout = read_lines(OFFTOPIC_FILE), read_lines(OFFTOPIC_HELDOUT_FILE)
    with ingested(files, env, progress) as stack:
        chunks = _chunks_as_indexed(stack, files)
        progress(f"{sum(len(c) for c in chunks.values())} chunks; asking {len(questions)} questions")
        winnow: dict[str, list[Passage]] = {}
        # Every candidate the request's search orders (as many as it fetches, re-ranker or not),
        # before model, threshold and top_k.
        pools: dict[str, list[Passage]] = {}
        # With ``context``: the same results, each read with the text around it (what the reader sees).
        around: dict[str, list[Passage]] = {}
        # Held out: each question (and each fitting off-topic question) answered by the models fitted
        # without its fold, at that fold's threshold (the shipped models read every one of them).
        held_by: dict[str, tuple[Any, float]] = {}
        off_by: dict[str, tuple[Any, float]] = {}
        profile = stack.container.embedder.profile.slug
        for fold in load_fold_models(fold_models) if fold_models else ():
            if fold.models.profile != profile:
                raise ValueError(f"{fold_models} holds models of {fold.models.profile}, not {profile}")
            held_by.update(dict.fromkeys(fold.held_out, (fold.models, fold.threshold)))
            off_by.update(dict.fromkeys(fold.offtopic_held_out, (fold.models, fold.threshold)))
        unfolded = [q.id for q in questions if fold_models and q.id not in held_by]
        unfolded += [q for q in offtopic if fold_models and q not in off_by]
        if unfolded:
            raise ValueError(f"{fold_models} holds out no fold with {', '.join(unfolded[:3])}")
        svc = service()
        for question in questions:
            request = SearchRequest(query=question.text, candidates=candidates)
            pools[question.id] = [
                Passage(document_of(h.key, by_upload), h.text)
                for h, _ in gather(svc, stack.tenant, request, as_searched=True)
            ]
            _held_out(held_by, question.id)
            results = _default_request(stack, question.text, candidates, context)
            names = [document_of(r["key"], by_upload) for r in results]
            winnow[question.id] = [Passage(n, r["text"]) for n, r in zip(names, results, strict=True)]
            around[question.id] = [
                Passage(n, "\n\n".join(filter(None, [c["before"], r["text"], c["after"]])))
                for n, r in zip(names, results, strict=True)
                for c in [r.get("context") or {"before": "", "after": ""}]
            ]
        refused_offtopic = 0
        for query in offtopic:
            _held_out(off_by, query)
            refused_offtopic += not _default_request(stack, query, candidates)
        if fold_models:
            _install("shipped")
        # The held-out off-topic set, read by no fit and no threshold rule: the shipped models.
        refused_heldout = sum(not _default_request(stack, query, candidates) for query in offtopic_heldout)
        gold = [
            Passage(by_upload[name], block.text)
            for name, data in files
            for block in parse_document(stack.key_for(name), data).blocks
            if block.text.strip()
        ]
    same_chunks = Bm25Passages([Passage(by_upload[n], c.text) for n, cs in chunks.items() for c in cs])
    gold_bm25 = Bm25Passages(gold)
    bm25_chunks = {q.id: same_chunks.rank(q.text) for q in questions}
    bm25_gold = {q.id: gold_bm25.rank(q.text) for q in questions}
    lengths: dict[str, list[int]] = defaultdict(list)
    for name, document_chunks in chunks.items():
        lengths[kinds[by_upload[name]][1]].extend(len(c.text) for c in document_chunks)
    return {
        "machine": machine(),
        "env": dict(env),
        "candidates": candidates,
        "fold_models": str(fold_models) if fold_models else None,
        "lockbox": lockbox,
        "documents": len(files),
        "questions": len(questions),
        "winnow": tally(questions, winnow, kinds),
        "winnow_reachable": reachable(questions, pools, kinds),
        **({"winnow_with_context": tally(questions, around, kinds), "context": context} if context else {}),
        "bm25_same_chunks": tally(questions, bm25_chunks, kinds),
        "bm25_gold_passages": tally(questions, bm25_gold, kinds),
        "folds_winnow": fold_spread(questions, winnow),
        "offtopic_refused": round(refused_offtopic / max(len(offtopic), 1), 4),
        "offtopic_questions": len(offtopic),
        "offtopic_heldout_refused": round(refused_heldout / max(len(offtopic_heldout), 1), 4),
        "offtopic_heldout_questions": len(offtopic_heldout),
        "chunk_lengths": {fmt: length_stats(values) for fmt, values in sorted(lengths.items())},
        "gold_passage_lengths": length_stats(len(p.text) for p in gold),
        "misses_top3": sorted(q.id for q in questions if (rank_of_answer(winnow[q.id], q) or TOP + 1) > TOP),
        "misses_by_kind": miss_kinds(questions, winnow),
    }


def report(result: Mapping[str, Any]) -> str:
    from benchmarks.common import table

    models = (
        f"held-out fold models from {result['fold_models']}"
        if result.get("fold_models")
        else "the shipped models (in-sample for the order)"
    )
    lines = [
        f"{result['documents']} documents, {result['questions']} questions; "
        f"env {result['env'] or 'default'}; {models}"
    ]
    rows = []
    for group in result["winnow"]:
        row = [group, str(result["winnow"][group]["questions"])]
        for system in ("winnow", "bm25_same_chunks", "bm25_gold_passages"):
            figures = result[system][group]
            row += [f"{figures['rank1']:.1%}", f"{figures['top3']:.1%}", f"{figures['document_first']:.1%}"]
        row.append(f"{result['winnow'][group]['refused']:.1%}")
        rows.append(row)
    headers = [
        "group",
        "n",
        "W@1",
        "W@3",
        "Wdoc",
        "Bc@1",
        "Bc@3",
        "Bcdoc",
        "Bg@1",
        "Bg@3",
        "Bgdoc",
        "W refused",
    ]
    lines.append(table(headers, rows))
    spread = result["folds_winnow"]
    lines.append(
        f"Winnow top-3 across {spread['folds']} folds: {spread['top3_min']:.1%} - {spread['top3_max']:.1%}; "
        f"off-topic refused {result['offtopic_refused']:.1%} of {result['offtopic_questions']} "
        "(fitting set), "
        f"{result['offtopic_heldout_refused']:.1%} of {result['offtopic_heldout_questions']} (held-out set)"
    )
    kinds = ", ".join(f"{kind} {n}" for kind, n in result["misses_by_kind"].items())
    lines.append(f"Winnow's top-3 misses: {kinds}")
    shares = ", ".join(f"{group} {share:.1%}" for group, share in result["winnow_reachable"].items())
    lines.append(f"Answer among the candidates Winnow orders (the most its top 3 can hold): {shares}")
    if "winnow_with_context" in result:
        shares = ", ".join(
            f"{group} {figures['top3']:.1%}" for group, figures in result["winnow_with_context"].items()
        )
        lines.append(f"Answer in a top-3 passage or its context ({result['context']}): {shares}")
    length_rows = [
        [fmt, str(s["chunks"]), str(s["median"]), str(s["p10"]), str(s["p90"])]
        for fmt, s in result["chunk_lengths"].items()
    ]
    lines.append(table(["format", "chunks", "median", "p10", "p90"], length_rows))
    return "\n".join(lines)


def _env_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError("use NAME=VALUE")
    return name, value


def _without_header() -> None:
    """The measurement's other arm: ``Chunk.embed_text`` (what the embedder and BM25 read) is the chunk's
    text alone. Benchmarks only; the product always prefixes the title and section path."""
    from winnow.models import Chunk

    Chunk.embed_text = property(lambda chunk: chunk.text)  # type: ignore[method-assign,assignment]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--env", type=_env_pair, action="append", default=[], help="a setting, NAME=VALUE")
    parser.add_argument("--limit", type=positive_int, help="ask only the first N questions (smoke runs)")
    parser.add_argument("--documents", type=Path, help="a folder of documents instead of /usr/share's")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="a TSV of questions (see above)")
    parser.add_argument("--candidates", type=positive_int, help="send this candidates value (default: none)")
    parser.add_argument(
        "--context",
        choices=["neighbours", "section"],
        help="send this context and also count an answer found in a result's context (issue 24)",
    )
    parser.add_argument(
        "--no-header",
        action="store_true",
        help="embed and BM25-score each chunk's text alone, without its title and section path (issue 24)",
    )
    parser.add_argument(
        "--fold-models",
        type=Path,
        help="answer each question with the models fitted without its fold "
        "(the file `training.quality --passages --fold-models` writes)",
    )
    parser.add_argument(
        "--lockbox",
        choices=LOCKBOX_CHOICES,
        help="ask only the questions outside the lockbox, or only those in it (training.lockbox)",
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    quiet_known_warnings()
    if args.no_header:
        _without_header()
    progress = Progress(args.quiet)
    with stdout_reserved_for_result():
        result = run(
            dict(args.env),
            args.limit,
            progress,
            args.documents,
            args.questions,
            args.candidates,
            args.context,
            args.fold_models,
            args.lockbox,
        )
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
