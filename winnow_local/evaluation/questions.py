"""The questions ``winnow eval`` reads: a BEIR folder (``queries.jsonl``, ``qrels.tsv`` or
``qrels/test.tsv``, optionally ``corpus.jsonl``) or a JSONL file of ``{"question", "document", "answer"?}``
and ``{"question", "offtopic": true}`` lines. A line that cannot be read is named with its number."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_QUESTION_CHARS = 2000  # what POST /search accepts


class QuestionsError(ValueError):
    """The questions cannot be read: one line for the user, naming the file and line."""


@dataclass(frozen=True)
class Question:
    """One labelled question. ``judgements`` maps what answers it (a BEIR corpus id, a key, a path or a
    file name inside the tenant) to a graded relevance; it is empty for an off-topic question."""

    id: str
    text: str
    judgements: dict[str, int] = field(default_factory=dict)
    answer: re.Pattern[str] | None = None
    offtopic: bool = False

    @property
    def answerable(self) -> bool:
        return any(grade > 0 for grade in self.judgements.values())


@dataclass(frozen=True)
class CorpusDocument:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class QuestionSet:
    questions: list[Question]
    corpus: Path | None = None  # a BEIR corpus.jsonl to ingest first


def load(path: Path, offtopic: Path | None = None) -> QuestionSet:
    """The questions at ``path`` (a BEIR folder or a JSONL file), plus off-topic ones from ``offtopic``."""
    if path.is_dir():
        found = _load_beir(path)
    elif path.is_file():
        found = QuestionSet(_load_jsonl(path))
    else:
        raise QuestionsError(f"{path}: no such file or folder (give a BEIR folder or a .jsonl file)")
    questions = list(found.questions)
    if offtopic is not None:
        questions += _load_offtopic(offtopic)
    if not questions:
        raise QuestionsError(f"{path}: no questions found")
    _refuse_repeated_ids(questions)
    return QuestionSet(questions, found.corpus)


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise QuestionsError(f"{path}: cannot be read ({exc.strerror})") from exc
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except (ValueError, RecursionError):
                    raise QuestionsError(f"{path} line {number}: not a JSON object") from None
        except UnicodeDecodeError:
            raise QuestionsError(f"{path}: not UTF-8 text") from None


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise QuestionsError(f'{where}: "{name}" must be a non-empty string')
    text = value.strip()
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionsError(f'{where}: "{name}" is longer than {MAX_QUESTION_CHARS} characters')
    return text


def _load_jsonl(path: Path) -> list[Question]:
    questions = []
    for number, item in _json_lines(path):
        where = f"{path} line {number}"
        if not isinstance(item, dict):
            raise QuestionsError(f"{where}: not a JSON object")
        unknown = set(item) - {"question", "document", "answer", "offtopic", "id"}
        if unknown:
            raise QuestionsError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        text = _text(item.get("question"), where, "question")
        qid = str(item.get("id") or f"line {number}")
        offtopic = item.get("offtopic", False)
        if not isinstance(offtopic, bool):
            raise QuestionsError(f'{where}: "offtopic" must be true or false')
        if offtopic:
            if "document" in item or "answer" in item:
                raise QuestionsError(f'{where}: an off-topic question has no "document" or "answer"')
            questions.append(Question(qid, text, offtopic=True))
            continue
        documents = item.get("document")
        if isinstance(documents, str):
            documents = [documents]
        if not documents or not all(isinstance(d, str) and d.strip() for d in documents):
            raise QuestionsError(
                f'{where}: give "document" (the key, path or file name that answers) or "offtopic": true'
            )
        questions.append(
            Question(qid, text, dict.fromkeys((d.strip() for d in documents), 1), _pattern(item, where))
        )
    return questions


def _pattern(item: dict[str, Any], where: str) -> re.Pattern[str] | None:
    answer = item.get("answer")
    if answer is None:
        return None
    if not isinstance(answer, str) or not answer:
        raise QuestionsError(f'{where}: "answer" must be a regular expression')
    try:
        return re.compile(answer)
    except re.error as exc:
        raise QuestionsError(f'{where}: "answer" is not a regular expression ({exc})') from None


def _beir_qrels(folder: Path) -> Path:
    for candidate in (folder / "qrels.tsv", folder / "qrels" / "test.tsv"):
        if candidate.is_file():
            return candidate
    raise QuestionsError(f"{folder}: a BEIR folder needs qrels.tsv (or qrels/test.tsv) beside queries.jsonl")


def _load_beir(folder: Path) -> QuestionSet:
    queries_path = folder / "queries.jsonl"
    if not queries_path.is_file():
        raise QuestionsError(f"{folder}: a BEIR folder needs queries.jsonl")
    qrels_path = _beir_qrels(folder)
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").split("\t")
            if not line.strip() or (number == 1 and parts[0] in {"query-id", "query_id", "qid"}):
                continue
            if len(parts) != 3:
                raise QuestionsError(f"{qrels_path} line {number}: want query-id, corpus-id, score (tabs)")
            try:
                grade = int(parts[2])
            except ValueError:
                raise QuestionsError(
                    f"{qrels_path} line {number}: the score must be a whole number"
                ) from None
            qrels.setdefault(parts[0], {})[parts[1]] = grade
    questions = []
    for number, item in _json_lines(queries_path):
        where = f"{queries_path} line {number}"
        if not isinstance(item, dict) or "_id" not in item:
            raise QuestionsError(f'{where}: want {{"_id", "text"}}')
        qid = str(item["_id"])
        if qid in qrels:  # queries.jsonl holds every split's queries; the qrels say which are asked
            questions.append(Question(qid, _text(item.get("text"), where, "text"), qrels[qid]))
    corpus = folder / "corpus.jsonl"
    return QuestionSet(questions, corpus if corpus.is_file() else None)


def _load_offtopic(path: Path) -> list[Question]:
    """One question a line (plain text), or JSONL lines with "question"."""
    questions = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionsError(f"{path}: cannot be read as UTF-8 text") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        text: Any = line
        if line.lstrip().startswith("{"):
            try:
                text = json.loads(line).get("question")
            except (ValueError, AttributeError, RecursionError):
                raise QuestionsError(f'{where}: not a JSON object with "question"') from None
        questions.append(Question(f"offtopic line {number}", _text(text, where, "question"), offtopic=True))
    return questions


def _refuse_repeated_ids(questions: list[Question]) -> None:
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise QuestionsError(f"question id {question.id!r} is used twice")
        seen.add(question.id)


def corpus_documents(path: Path) -> Iterator[CorpusDocument]:
    """A BEIR ``corpus.jsonl``: ``{"_id", "title"?, "text"}`` a line."""
    for number, item in _json_lines(path):
        where = f"{path} line {number}"
        if not isinstance(item, dict) or "_id" not in item:
            raise QuestionsError(f'{where}: want {{"_id", "title"?, "text"}}')
        title = item.get("title") or ""
        text = item.get("text")
        if not isinstance(text, str) or not isinstance(title, str) or not (text.strip() or title.strip()):
            raise QuestionsError(f'{where}: "text" (and "title") must be strings, not both empty')
        yield CorpusDocument(str(item["_id"]), title.strip(), text.strip())
