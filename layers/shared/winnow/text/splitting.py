"""Rules 3 and 4 of ``winnow.text.chunking``: a block longer than the target split into balanced
pieces at sentence ends (else words, else fixed slices), each piece after the first led by overlap."""

from __future__ import annotations

import bisect
import math
import re
from collections import deque
from collections.abc import Iterator

from winnow.text.drafts import BLOCK_SEPARATOR, Draft

__all__ = ["split_long"]

# A cut is allowed after sentence-final punctuation (with closing quotes or brackets) followed by
# whitespace, after CJK full stops, and at any line break. A match may only start where a run of
# punctuation starts, and the runs are possessive: a run that is not followed by whitespace ("...x",
# a table rule of dots) fails once, instead of once per character of the run (quadratic).
SENTENCE_END = re.compile(
    "(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019\u00bb)\\]]*+\\s+|[\u3002\uff01\uff1f]+\\s*|\n\\s*"
)
_WORD = re.compile(r"\S+\s*")


def split_long(
    spans: list[tuple[str, int | None]], path: tuple[str, ...], target: int, overlap_chars: int
) -> Iterator[Draft]:
    """Split text longer than ``target`` into balanced pieces with overlap (rules 3 and 4)."""
    text = BLOCK_SEPARATOR.join(span for span, _ in spans)
    span_starts: list[int] = []
    offset = 0
    for span, _ in spans:
        span_starts.append(offset)
        offset += len(span) + len(BLOCK_SEPARATOR)
    span_pages = [page for _, page in spans]

    def page_at(position: int) -> int | None:
        return span_pages[bisect.bisect_right(span_starts, position) - 1]

    room = target - overlap_chars  # new text per piece when a full overlap is in front of it
    units = _Units(_units(text, room))
    end_of_text = len(text)
    first = 0  # index of the first unit of new text in the next piece
    prefix_start = 0  # where the next piece starts, overlap included
    while units.has(first):
        units.forget_before(first - 1)  # the overlap looks back at most one unit before the piece
        content_start = units[first][0]
        budget = target - (content_start - prefix_start)
        remaining = end_of_text - content_start
        # The rest may fit in this piece even when it is over ``room``: its overlap can be shorter.
        pieces_needed = 1 if remaining <= budget else max(2, math.ceil(remaining / room))
        aim = remaining / pieces_needed
        last = first
        while units.has(last + 1):
            grown = units[last + 1][1] - content_start
            current = units[last][1] - content_start
            if grown > budget and len(text[content_start : units[last + 1][1]].rstrip()) > budget:
                break
            if abs(grown - aim) > abs(current - aim):
                break
            last += 1
        end = units[last][1]
        yield Draft(
            text=text[prefix_start:end].strip(),
            section_path=path,
            page=page_at(prefix_start),
            overlap=content_start - prefix_start,
            gap=_trailing_whitespace(text, content_start) or BLOCK_SEPARATOR,
        )
        first = last + 1
        if units.has(first):
            prefix_start = _overlap_start(units, content_start, first, overlap_chars)


def _trailing_whitespace(text: str, end: int) -> str:
    start = end
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return text[start:end]


def _overlap_start(units: _Units, piece_start: int, next_unit: int, limit: int) -> int:
    """Where the next piece's overlap begins: the earliest start of a sentence or line that keeps the
    overlap within ``limit`` and within half of the finished piece; else no overlap (the next piece
    starts at its own new text). Never at a word inside a sentence: a passage that starts mid-sentence
    reads as a fragment, and the reader and the embedder lose what the sentence is about."""
    boundary = units[next_unit][0]
    limit = min(limit, (boundary - piece_start) // 2)
    start = boundary
    index = next_unit - 1
    while (
        limit > 0
        and units.has(index)
        and units[index][0] >= piece_start
        and boundary - units[index][0] <= limit
    ):
        if not units.has(index - 1) or units[index - 1][2]:
            start = units[index][0]  # the unit before it ends a sentence: this one starts one
        index -= 1
    return start


def _units(text: str, room: int) -> Iterator[tuple[int, int, bool]]:
    """Cut candidates as (start, end, ends a sentence) spans covering ``text``; trailing whitespace
    belongs to the span before it. Sentences first; a sentence longer than ``room`` falls back to words,
    a word longer than ``room`` to fixed slices (only the last of a sentence's units ends it). Made as
    they are needed, so a huge paragraph never holds them all."""
    start = 0
    for match in SENTENCE_END.finditer(text):
        if match.end() > start:
            yield from _unit_spans(text, start, match.end(), room)
            start = match.end()
    if start < len(text):
        yield from _unit_spans(text, start, len(text), room)


def _unit_spans(text: str, start: int, end: int, room: int) -> Iterator[tuple[int, int, bool]]:
    if end - start <= room or len(text[start:end].rstrip()) <= room:
        yield (start, end, True)
        return
    for word in _WORD.finditer(text, start, end):
        word_start, word_end = word.span()
        while word_end - word_start > room and len(text[word_start:word_end].rstrip()) > room:
            yield (word_start, word_start + room, False)
            word_start += room
        yield (word_start, word_end, word_end == end)


class _Units:
    """The units of a text by their index, read from ``_units`` as they are asked for and forgotten once
    the pieces are past them: memory is one piece's units, whatever the paragraph's length."""

    def __init__(self, source: Iterator[tuple[int, int, bool]]) -> None:
        self._source = source
        self._held: deque[tuple[int, int, bool]] = deque()
        self._first = 0  # the index of ``_held[0]``

    def has(self, index: int) -> bool:
        if index < self._first:
            return False
        while index - self._first >= len(self._held):
            unit = next(self._source, None)
            if unit is None:
                return False
            self._held.append(unit)
        return True

    def __getitem__(self, index: int) -> tuple[int, int, bool]:
        if not self.has(index):
            raise IndexError(index)
        return self._held[index - self._first]

    def forget_before(self, index: int) -> None:
        while self._first < index and self._held:
            self._held.popleft()
            self._first += 1
