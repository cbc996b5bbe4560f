"""The lockbox of the passage questions (issue 46 item 6): a fixed fifth of the passage documents whose
questions no design choice may read. Choose on the others (``--lockbox out`` on ``training.quality
--passages`` and ``training.passages``); open it once per design: fit without it (``training.quality
--passages --lockbox out --write-model``), then ``training.passages --lockbox only``. By document, not
by question, so no passage of a lockbox document ever shapes a choice."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

SEED = 46
SHARE = 0.2
CHOICES = ("out", "only")


class _OnADocument(Protocol):
    @property
    def document(self) -> str: ...


Q = TypeVar("Q", bound=_OnADocument)


def lockbox_documents(documents: Iterable[str]) -> frozenset[str]:
    """``SHARE`` of the distinct ``documents`` (at least one), drawn with a fixed seed from their sorted
    names: the same lockbox on every run with the same documents."""
    ordered = sorted(set(documents))
    if not ordered:
        return frozenset()
    return frozenset(random.Random(SEED).sample(ordered, max(1, round(SHARE * len(ordered)))))


def questions_for(questions: Sequence[Q], lockbox: str | None) -> list[Q]:
    """All ``questions`` (``lockbox`` None), those on no lockbox document ("out"), or only those on
    one ("only"); the lockbox is drawn from the documents the questions are on."""
    if lockbox is None:
        return list(questions)
    if lockbox not in CHOICES:
        raise ValueError(f"lockbox is one of {', '.join(CHOICES)} (got {lockbox!r})")
    boxed = lockbox_documents(q.document for q in questions)
    return [q for q in questions if (q.document in boxed) == (lockbox == "only")]
