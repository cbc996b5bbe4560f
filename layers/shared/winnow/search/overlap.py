"""No repeats in a result list: two passages whose texts overlap by more than half are one result.

Overlap, precisely: each text is read as its words (casefolded runs of letters and digits) and its set
of word shingles, every run of ``SHINGLE_WORDS`` consecutive words (a text shorter than that is one
shingle of all its words). Two texts overlap by the share of the shorter one's shingles (the text with
fewer) that the other also holds; more than ``MAX_OVERLAP`` of it and they repeat each other. A span of
``f`` of the shorter text's words shared with the other gives a share of ``(f n - 4) / (n - 4)`` of
its ``n - 4`` shingles, never more than ``f``: a pair that shares exactly half of a passage is not a
repeat, one that shares three quarters is. Overlapping windows of one document, the same section in two
files (a manual as HTML and as info) and a passage inside a longer one are all caught; wording that
merely agrees here and there (scattered shingles) rarely reaches half.

Bounded by construction: each passage's shingles are built once (linear in its length, and passages are
bounded by the chunker), and each candidate is compared, with a set intersection, only with the results
already kept, of which there are at most ``top_k``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

SHINGLE_WORDS = 5
MAX_OVERLAP = 0.5

_WORD = re.compile(r"\w+")
T = TypeVar("T")


def shingles(text: str) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.casefold())
    if len(words) <= SHINGLE_WORDS:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1))


def overlap(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """The share of the smaller shingle set that the other holds (0 when either is empty)."""
    smaller, larger = (a, b) if len(a) <= len(b) else (b, a)
    if not smaller:
        return 0.0
    return len(smaller & larger) / len(smaller)


def distinct(items: Sequence[T], text: Callable[[T], str], limit: int) -> list[T]:
    """The first ``limit`` items, in order, skipping each that repeats one kept before it (so the better
    placed of two repeats stays)."""
    kept: list[T] = []
    seen: list[frozenset[tuple[str, ...]]] = []
    for item in items:
        if len(kept) >= limit:
            break
        mine = shingles(text(item))
        if any(overlap(mine, other) > MAX_OVERLAP for other in seen):
            continue
        kept.append(item)
        seen.append(mine)
    return kept
