"""A passage's segments: its sentences, or short lines taken in pairs, as offsets into its text.

The finer units a search reads inside a passage (which sentence answers the question) and the
highlights a result carries. Offsets, not copies, so a highlight always lies inside ``text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from winnow.text.splitting import SENTENCE_END

__all__ = ["MAX_SEGMENTS", "Segment", "segments"]

# A piece shorter than this (a man page's option line, a list item's head) joins the piece after it,
# so "-t, --tries=NUMBER" and its description are read as one segment.
MIN_CHARS = 40
# A longer sentence is still one segment up to this many characters; past it, cut at a word.
MAX_CHARS = 400
# At most this many segments per passage: the work per result is bounded whatever the passage holds.
MAX_SEGMENTS = 48

_WORD_BREAK = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Segment:
    """``text[start:end]`` is the segment, without leading or trailing whitespace."""

    start: int
    end: int


def segments(text: str) -> list[Segment]:
    """The segments of ``text`` in order, non-overlapping, each at most ``MAX_CHARS`` long (unless
    one word is longer), at most ``MAX_SEGMENTS`` of them (the last one runs to the end of the text
    when there would be more)."""
    pieces = list(_merge_short(text, _pieces(text)))
    if len(pieces) > MAX_SEGMENTS:
        pieces = [*pieces[: MAX_SEGMENTS - 1], (pieces[MAX_SEGMENTS - 1][0], pieces[-1][1])]
    return [Segment(start, end) for start, end in pieces]


def _pieces(text: str) -> list[tuple[int, int]]:
    """Stripped spans between sentence ends and line breaks, long ones cut at words."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in SENTENCE_END.finditer(text):
        if match.end() > start:
            spans.extend(_cut(text, start, match.end()))
            start = match.end()
    if start < len(text):
        spans.extend(_cut(text, start, len(text)))
    return spans


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    start, end = _strip(text, start, end)
    out: list[tuple[int, int]] = []
    while end - start > MAX_CHARS:
        brk = None
        for gap in _WORD_BREAK.finditer(text, start + 1, start + MAX_CHARS):
            brk = gap
        if brk is None:  # one word longer than the limit: keep it whole
            break
        out.append((start, brk.start()))
        start = brk.end()
    if end > start:
        out.append((start, end))
    return out


def _merge_short(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join a short piece with the one after it while the joined piece stays within ``MAX_CHARS``;
    a short last piece joins the one before it."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged:
            prev_start, prev_end = merged[-1]
            if prev_end - prev_start < MIN_CHARS and end - prev_start <= MAX_CHARS:
                merged[-1] = (prev_start, end)
                continue
        merged.append((start, end))
    if len(merged) >= 2:
        last_start, last_end = merged[-1]
        prev_start, _ = merged[-2]
        if last_end - last_start < MIN_CHARS and last_end - prev_start <= MAX_CHARS:
            merged[-2:] = [(prev_start, last_end)]
    return merged


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
