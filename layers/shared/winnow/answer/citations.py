"""Citation markers in a generated answer: ``[1]``, ``[2][3]``, ``[2, 3]`` or ``[2-4]``.

One rule: a bracket that holds only passage numbers (separated by commas or semicolons, or a range with
a dash) is a marker, however large its numbers. Numbers that name a passage that was sent are kept
(written one number a bracket); the marker's other numbers are removed from the text and reported.
Every pattern here reads a model's output, so each is linear: the whitespace before a marker is
handled in code, not by a leading ``\\s*`` that rescanned a run of spaces from each of its positions.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_NUMBER = r"\d++(?:\s*+[-\u2013]\s*+\d++)?+"  # 7, or a range 2-4 (hyphen or en dash)
_MARKER = re.compile(rf"\[\s*+({_NUMBER}(?:\s*+[,;]\s*+{_NUMBER})*+)\s*+\]")
_RANGE = re.compile(r"[-\u2013]")
# Starts only where a run of blanks starts: a start inside the run would fail the same way, later.
_SPACE_BEFORE_PUNCT = re.compile(r"(?<![ \t])[ \t]++([.,;:!?])")
_BLANKS = re.compile(r"[ \t]{2,}")
# More digits than any passage number: read as "no such passage" without converting a huge number.
_MAX_DIGITS = 6


@dataclass(frozen=True)
class CheckedAnswer:
    text: str
    cited: list[int]  # valid passage numbers, ascending, each once
    removed: list[str]  # what the markers named that was no passage, as written ("9", "6-9"), in order


def check_citations(text: str, valid: Collection[int]) -> CheckedAnswer:
    cited: set[int] = set()
    removed: list[str] = []
    pieces: list[str] = []
    position = 0
    for match in _MARKER.finditer(text):
        kept: list[int] = []
        for item in re.split(r"[,;]", match.group(1)):
            named, unsent = _named(item.strip(), valid)
            kept.extend(named)
            if unsent:
                removed.append(unsent)
        before = text[position : match.start()]
        trimmed = before.rstrip()
        pieces.append(trimmed)
        if kept:
            cited.update(kept)
            pieces.append(" " if len(trimmed) < len(before) else "")
            pieces.append("".join(f"[{n}]" for n in dict.fromkeys(kept)))
        position = match.end()
    pieces.append(text[position:])
    cleaned = "".join(pieces)
    if removed:  # "text [9]." became "text." already; tidy "text [9] ." and doubled spaces too
        cleaned = _BLANKS.sub(" ", _SPACE_BEFORE_PUNCT.sub(r"\1", cleaned))
    return CheckedAnswer(text=cleaned.strip(), cited=sorted(cited), removed=removed)


def _named(item: str, valid: Collection[int]) -> tuple[list[int], str]:
    """The sent passages one item names (``7`` or ``2-4``), and the item as written when it names any
    number that was not sent (a range is kept for its sent members)."""
    ends = [end.strip() for end in _RANGE.split(item)]
    if any(len(end) > _MAX_DIGITS for end in ends):
        return [], item
    low, high = int(ends[0]), int(ends[-1])
    if low > high:
        return [], item
    named = [n for n in sorted(valid) if low <= n <= high]
    return named, "" if len(named) == high - low + 1 else item
