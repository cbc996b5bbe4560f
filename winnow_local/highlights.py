"""A search result's ``highlight`` as the CLI and the MCP server show it: the offsets read defensively
(a result may come from another server's JSON), the sentences quoted, and marks put around them in
the passage's text.

Offsets are Python code points, as ``text[start:end]`` reads them: the API's own unit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["mark", "sentences", "spans"]


def spans(text: str, highlight: Any) -> list[tuple[int, int]]:
    """The usable highlights of ``text``, best first: whole numbers with ``0 <= start < end <=
    len(text)``; one overlapping a better one, or anything else, is left out."""
    kept: list[tuple[int, int]] = []
    if not isinstance(highlight, Sequence) or isinstance(highlight, str):
        return kept
    for item in highlight:
        if not isinstance(item, Mapping):
            continue
        start, end = item.get("start"), item.get("end")
        if type(start) is not int or type(end) is not int or not 0 <= start < end <= len(text):
            continue  # not a whole number (a bool, a float, a string), or outside the text
        if any(start < other_end and other_start < end for other_start, other_end in kept):
            continue
        kept.append((start, end))
    return kept


def sentences(text: str, highlight: Any) -> list[str]:
    """The highlighted sentences themselves, best first."""
    return [text[start:end] for start, end in spans(text, highlight)]


def mark(text: str, highlight: Any, opener: str, closer: str) -> str:
    """``text`` with ``opener`` and ``closer`` around each highlighted sentence."""
    out: list[str] = []
    at = 0
    for start, end in sorted(spans(text, highlight)):
        out += [text[at:start], opener, text[start:end], closer]
        at = end
    out.append(text[at:])
    return "".join(out)
