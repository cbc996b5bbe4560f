"""Reading question files: both formats, and every bad line named with its number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from winnow_local.evaluation.questions import QuestionsError, load


def write(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_jsonl_questions_with_documents_answers_and_offtopic(tmp_path: Path) -> None:
    found = load(
        write(
            tmp_path / "q.jsonl",
            [
                {"question": "how long is leave", "document": "handbook/leave.md", "answer": "18 weeks"},
                "",
                {"question": "where is the office", "document": ["a.md", "b.md"]},
                {"question": "pizza recipe", "offtopic": True},
            ],
        )
    )
    first, second, third = found.questions
    assert first.judgements == {"handbook/leave.md": 1} and first.answer is not None
    assert first.answer.search("it lasts 18 weeks")
    assert second.judgements == {"a.md": 1, "b.md": 1} and second.id == "line 3"
    assert third.offtopic and not third.answerable and found.corpus is None


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("{not json", "line 2: not a JSON object"),
        ('["a list"]', "line 2: not a JSON object"),
        ('{"question": "q"}', 'line 2: give "document"'),
        ('{"question": "", "document": "a"}', 'line 2: "question" must be a non-empty string'),
        ('{"question": "q", "document": "a", "answer": "("}', 'line 2: "answer" is not a regular expression'),
        ('{"question": "q", "document": "a", "extra": 1}', "line 2: unknown field(s) extra"),
        ('{"question": "q", "offtopic": "yes"}', 'line 2: "offtopic" must be true or false'),
        ('{"question": "q", "offtopic": true, "document": "a"}', "line 2: an off-topic question has no"),
        ('{"question": "' + "x" * 2001 + '", "document": "a"}', "longer than 2000 characters"),
        ("[" * 100_000, "line 2: not a JSON object"),
    ],
)
def test_a_bad_line_is_named_with_its_number(tmp_path: Path, line: str, says: str) -> None:
    path = write(tmp_path / "q.jsonl", [{"question": "fine", "document": "a.md"}, line])
    with pytest.raises(QuestionsError) as caught:
        load(path)
    assert says in str(caught.value) and str(path) in str(caught.value)


def test_a_beir_folder_asks_the_judged_queries_with_graded_judgements(tmp_path: Path) -> None:
    write(tmp_path / "queries.jsonl", [{"_id": "1", "text": "first"}, {"_id": "2", "text": "unjudged"}])
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\tdocA\t2\n1\tdocB\t0\n")
    write(tmp_path / "corpus.jsonl", [{"_id": "docA", "title": "A", "text": "a"}])
    found = load(tmp_path)
    assert [q.id for q in found.questions] == ["1"]
    assert found.questions[0].judgements == {"docA": 2, "docB": 0}
    assert found.corpus == tmp_path / "corpus.jsonl"


def test_a_beir_folder_without_qrels_says_what_it_needs(tmp_path: Path) -> None:
    write(tmp_path / "queries.jsonl", [{"_id": "1", "text": "first"}])
    with pytest.raises(QuestionsError, match=r"needs qrels\.tsv"):
        load(tmp_path)
    (tmp_path / "qrels.tsv").write_text("1\tdocA\tlots\n")
    with pytest.raises(QuestionsError, match="line 1: the score must be a whole number"):
        load(tmp_path)


def test_offtopic_file_adds_plain_and_json_lines(tmp_path: Path) -> None:
    questions = write(tmp_path / "q.jsonl", [{"question": "q", "document": "a.md"}])
    offtopic = tmp_path / "off.txt"
    offtopic.write_text('pizza recipe\n\n{"question": "football scores"}\n')
    found = load(questions, offtopic)
    assert [q.text for q in found.questions if q.offtopic] == ["pizza recipe", "football scores"]


def test_a_missing_or_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(QuestionsError, match="no such file or folder"):
        load(tmp_path / "absent.jsonl")
    with pytest.raises(QuestionsError, match="no questions found"):
        load(write(tmp_path / "empty.jsonl", [""]))
