"""Citation markers in a generated answer: ``[1]``, ``[2][3]`` or ``[2, 3]``. Markers that name a
passage that was sent are kept (written one number a bracket); the others are removed and reported."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_MARKER = re.compile(r"\s*\[(\s*\d{1,4}(?:\s*[,;]\s*\d{1,4})*\s*)\]")
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:!?])")


@dataclass(frozen=True)
class CheckedAnswer:
    text: str
    cited: list[int]  # valid passage numbers, ascending, each once
    removed: list[int]  # numbers that pointed at no passage, in order of appearance


def check_citations(text: str, valid: Collection[int]) -> CheckedAnswer:
    cited: set[int] = set()
    removed: list[int] = []

    def replace(match: re.Match[str]) -> str:
        numbers = [int(n) for n in re.split(r"[,;]", match.group(1))]
        kept = [n for n in numbers if n in valid]
        removed.extend(n for n in numbers if n not in valid)
        cited.update(kept)
        if not kept:
            return ""
        lead = " " if match.group(0)[:1].isspace() else ""
        return lead + "".join(f"[{n}]" for n in dict.fromkeys(kept))

    cleaned = _MARKER.sub(replace, text)
    if removed:  # "text [9]." became "text." already; tidy "text [9] ." and doubled spaces too
        cleaned = re.sub(r"[ \t]{2,}", " ", _SPACE_BEFORE_PUNCT.sub(r"\1", cleaned))
    cleaned = cleaned.strip()
    return CheckedAnswer(text=cleaned, cited=sorted(cited), removed=removed)
