"""The lockbox of the passage questions (``training.lockbox``): a fixed fifth of the documents, the same
on every run, whose questions are either all left out or all kept."""

from __future__ import annotations

import pytest

from training.lockbox import SHARE, lockbox_documents, questions_for
from training.passages import Question, load_questions


def _questions() -> list[Question]:
    return [Question(f"d{d}-{n}", f"doc{d}.txt", f"question {n}", "x") for d in range(20) for n in range(3)]


def test_the_lockbox_is_a_fixed_fifth_of_the_documents_whatever_their_order() -> None:
    documents = [f"doc{d}.txt" for d in range(35)]
    boxed = lockbox_documents(documents)
    assert len(boxed) == round(SHARE * 35) == 7
    assert lockbox_documents(reversed(documents + documents)) == boxed
    assert boxed <= set(documents)
    assert lockbox_documents(["one.txt"]) == {"one.txt"} and lockbox_documents([]) == frozenset()


def test_out_and_only_split_the_questions_by_document() -> None:
    questions = _questions()
    out, only = questions_for(questions, "out"), questions_for(questions, "only")
    # Every question is on exactly one side, and a document's questions are never split
    assert sorted(q.id for q in out + only) == sorted(q.id for q in questions)
    assert not {q.document for q in out} & {q.document for q in only}
    assert len({q.document for q in only}) == 4
    assert questions_for(questions, None) == questions
    with pytest.raises(ValueError, match="out, only"):
        questions_for(questions, "some")


def test_the_shipped_passage_questions_keep_most_of_them_outside_the_lockbox() -> None:
    questions = load_questions()
    only = questions_for(questions, "only")
    assert 0.1 < len(only) / len(questions) < 0.35
