"""The evaluation set: a BEIR-format corpus, queries and graded relevance judgements.

Defaults point at ``../shared/eval/scifact/`` beside the repository, found from this file's location so
the benchmarks work from any working directory; ``--eval-dir`` names another folder of the same three
files (``tests/data/scifact`` is a 100-document excerpt that ships with the repository)."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL_DIR = REPO_ROOT.parent / "shared" / "eval" / "scifact"
EXCERPT_EVAL_DIR = REPO_ROOT / "tests" / "data" / "scifact"
DATA_DIR = REPO_ROOT / "training" / "data"
OFFTOPIC_FILE = DATA_DIR / "offtopic.txt"  # the fitting set: the threshold rule reads it
OFFTOPIC_HELDOUT_FILE = DATA_DIR / "offtopic_heldout.txt"  # the reported set: nothing is chosen on it


def read_lines(path: Path) -> list[str]:
    """Non-empty lines that are not ``#`` comments (the off-topic question files)."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@dataclass(frozen=True)
class EvalSet:
    """Documents by id (corpus order kept), queries by id, and qrels: query -> document -> relevance."""

    documents: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def judged_queries(self) -> dict[str, str]:
        """The queries that have at least one relevant document in the corpus: the ones that are scored."""
        return {
            qid: text
            for qid, text in self.queries.items()
            if any(r > 0 and doc in self.documents for doc, r in self.qrels.get(qid, {}).items())
        }

    def limited(self, max_documents: int | None = None, max_queries: int | None = None) -> EvalSet:
        """A smaller set that stays meaningful: the first ``max_queries`` judged queries whose relevant
        documents all fit in ``max_documents``, every one of those documents, then other documents in
        corpus order up to ``max_documents`` as distractors."""
        doc_budget = len(self.documents) if max_documents is None else max(0, max_documents)
        chosen_queries: dict[str, str] = {}
        chosen_docs: list[str] = []
        for qid, text in self.judged_queries.items():
            if max_queries is not None and len(chosen_queries) >= max_queries:
                break
            relevant = [d for d, r in self.qrels[qid].items() if r > 0 and d in self.documents]
            new = [d for d in relevant if d not in chosen_docs]
            if len(chosen_docs) + len(new) > doc_budget:
                continue
            chosen_queries[qid] = text
            chosen_docs.extend(new)
        taken = set(chosen_docs)
        for doc_id in self.documents:
            if len(chosen_docs) >= doc_budget:
                break
            if doc_id not in taken:
                chosen_docs.append(doc_id)
                taken.add(doc_id)
        order = [d for d in self.documents if d in taken]  # keep corpus order
        return EvalSet(
            documents={d: self.documents[d] for d in order},
            queries=chosen_queries,
            qrels={qid: {d: r for d, r in self.qrels[qid].items() if d in taken} for qid in chosen_queries},
        )


def _read_jsonl(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as stream:
        for line_number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                doc_id = str(row["_id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{line_number}: expected a JSON object with _id and text") from exc
            title = str(row.get("title") or "").strip()
            text = str(row.get("text") or "")
            out[doc_id] = f"{title}\n\n{text}" if title else text
    return out


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as stream:
        for row in csv.reader(stream, delimiter="\t"):
            if len(row) < 3 or row[0] == "query-id":
                continue
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = int(float(row[2]))
    return qrels


def load_eval_set(
    corpus: Path | None = None,
    queries: Path | None = None,
    qrels: Path | None = None,
    eval_dir: Path | None = None,
) -> EvalSet:
    """Read the three files, each defaulting to ``eval_dir`` (the SciFact subset in
    ``../shared/eval/scifact`` when not given). A missing file is a one-line error that says what to do."""
    folder = eval_dir or DEFAULT_EVAL_DIR
    corpus = corpus or folder / "corpus.jsonl"
    queries = queries or folder / "queries.jsonl"
    qrels = qrels or folder / "qrels.tsv"
    for path in (corpus, queries, qrels):
        if not path.is_file():
            raise FileNotFoundError(
                f"evaluation file not found: {path}. The benchmarks read the SciFact set from "
                f"{DEFAULT_EVAL_DIR} (the shared folder beside the repository); put it there, or pass "
                f"--eval-dir DIR (e.g. --eval-dir {EXCERPT_EVAL_DIR.relative_to(REPO_ROOT)}, a 100-document "
                "excerpt)"
            )
    return EvalSet(documents=_read_jsonl(corpus), queries=_read_jsonl(queries), qrels=_read_qrels(qrels))
