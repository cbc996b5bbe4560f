"""A PDF paragraph's lines joined again, with the words a line break hyphenated made whole.

Words hyphenated across a line break ("exam-" / "ple") are joined again so the search can find them;
a compound the document writes with its hyphen elsewhere keeps it ("non-" / "exclusive").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["hyphenated_words", "join_lines"]

_HYPHENATED_END = re.compile(r"[^\W\d_]-$")
# A word with a hyphen inside a line: letters, then hyphen-letters groups; the lookarounds keep a
# line-end hyphen ("non-" before a newline) out.
_HYPHENATED_WORD = re.compile(r"(?<![\w-])[^\W\d_]{1,40}(?:-[^\W\d_]{1,40}){1,4}(?![\w-])")
_WORD_EDGE = re.compile(r"^[^\w-]+|[^\w-]+$")
_MAX_WORD_CHARS = 100


def hyphenated_words(texts: Iterable[str]) -> frozenset[str]:
    """The words a document writes with a hyphen inside a line ("non-exclusive"), lower-cased: a line
    break after such a hyphen keeps it (see ``join_lines``)."""
    found: set[str] = set()
    for text in texts:
        found.update(word.casefold() for word in _HYPHENATED_WORD.findall(text))
    return frozenset(found)


def join_lines(lines: list[str], hyphenated: frozenset[str] = frozenset()) -> str:
    """Lines of a paragraph joined by spaces. A word broken across a line break after a hyphen is
    joined again: without the hyphen ("exam-" / "ple" is "example"), unless the document writes that
    word with its hyphen elsewhere ("non-" / "exclusive" is "non-exclusive": word processors and
    typewriters break lines at a compound's own hyphen, and the search must find both halves). Only
    the previous line's end is looked at, so a paragraph of many lines is joined in linear time."""
    parts = [lines[0]]
    for line in lines[1:]:
        if _HYPHENATED_END.search(parts[-1][-2:]) and line[:1].islower():
            if hyphenated and _broken_word(parts[-1], line).casefold() in hyphenated:
                parts.append(line)
                continue
            parts[-1] = parts[-1][:-1]
            parts.append(line)
        else:
            parts.append(" ")
            parts.append(line)
    return "".join(parts)


def _broken_word(before: str, after: str) -> str:
    """The word a line break after a hyphen splits, hyphen kept: "... non-" and "exclusive, ..." give
    "non-exclusive"."""
    head = before[-_MAX_WORD_CHARS:].rsplit(maxsplit=1)[-1]
    tail = after[:_MAX_WORD_CHARS].split(maxsplit=1)[0] if after.strip() else ""
    return _WORD_EDGE.sub("", head) + _WORD_EDGE.sub("", tail)
