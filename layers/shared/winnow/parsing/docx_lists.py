"""Numbered and bulleted paragraphs of a DOCX: the numbers Word draws, written into the text.

Word keeps a list item's number out of its text: the paragraph (or its style, "List Number") names a
numbering definition (``w:numPr``: ``numId`` and level), and Word counts and draws "1.", "2.", "a)"
or a bullet. Read as text the steps of a procedure were unnumbered paragraphs ("what is step 3?" had
nothing to match) and could be cut off from the sentence that introduces them. ``ListNumbers.label``
gives each item the label Word shows, counted per list and level as Word counts it (a deeper level
restarts after a shallower item), for ``docx`` to put before the item's text and to join the items
with their introduction (``BlockCollector.join_list``).
"""

from __future__ import annotations

import re
from typing import Any

from winnow.parsing.docx_styles import Styles

__all__ = ["ListNumbers"]

_LEVEL_TOKEN = re.compile(r"%([1-9])")
_MAX_LEVELS = 9
_BULLET = "\u2022"
_ROMAN = (
    (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
    (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
)  # fmt: skip


class ListNumbers:
    """The label of each numbered paragraph, in document order (``label`` counts as it goes)."""

    def __init__(self, document: Any, styles: Styles) -> None:
        qn = styles.qn
        self._qn = qn
        self._styles = styles
        self._levels: dict[str, dict[int, tuple[str, int, str]]] = {}  # numId -> level -> format
        self._counters: dict[str, list[int | None]] = {}  # numId -> each level's last number
        try:
            numbering = document.part.numbering_part.element
        except (KeyError, NotImplementedError, AttributeError):
            return  # no numbering part: nothing is numbered
        abstract: dict[str, dict[int, tuple[str, int, str]]] = {}
        for definition in numbering.iterchildren(qn("w:abstractNum")):
            levels: dict[int, tuple[str, int, str]] = {}
            for level in definition.iterchildren(qn("w:lvl")):
                ilvl = _int(level.get(qn("w:ilvl")), -1)
                if 0 <= ilvl < _MAX_LEVELS:
                    levels[ilvl] = (
                        self._val(level, "w:numFmt") or "decimal",
                        _int(self._val(level, "w:start"), 1),
                        self._val(level, "w:lvlText") or f"%{ilvl + 1}.",
                    )
            abstract[definition.get(qn("w:abstractNumId")) or ""] = levels
        for num in numbering.iterchildren(qn("w:num")):
            num_id = num.get(qn("w:numId")) or ""
            self._levels[num_id] = abstract.get(self._val(num, "w:abstractNumId") or "", {})

    def label(self, paragraph: Any) -> str | None:
        """The label Word draws before ``paragraph`` ("3.", "b)", "•"), or None when it is no list item."""
        found = self._numbering(paragraph)
        if found is None:
            return None
        num_id, ilvl = found
        levels = self._levels.get(num_id)
        if not levels or ilvl not in levels:
            return None
        counters = self._counters.setdefault(num_id, [None] * _MAX_LEVELS)
        for deeper in range(ilvl + 1, _MAX_LEVELS):
            counters[deeper] = None  # a deeper level starts again after this item
        last = counters[ilvl]
        counters[ilvl] = last + 1 if last is not None else levels[ilvl][1]
        fmt, _, text = levels[ilvl]
        if fmt == "bullet":
            return _BULLET
        if fmt == "none":
            return None

        def number(match: re.Match[str]) -> str:
            at = int(match.group(1)) - 1
            level_format, start, _ = levels.get(at, ("decimal", 1, ""))
            value = counters[at]
            return _formatted(value if value is not None else start, level_format)

        label = _LEVEL_TOKEN.sub(number, text).strip()
        return label or None

    def _numbering(self, paragraph: Any) -> tuple[str, int] | None:
        """The paragraph's (numId, level): its own ``w:numPr``, else its style's (through basedOn)."""
        qn = self._qn
        properties = paragraph.find(qn("w:pPr"))
        if properties is None:
            return None
        num_id, ilvl = self._num_pr(properties)
        style = properties.find(qn("w:pStyle"))
        if num_id is None:
            for definition in self._styles.chain(style.get(qn("w:val")) if style is not None else None):
                style_properties = definition.find(qn("w:pPr"))
                if style_properties is None:
                    continue
                num_id, style_level = self._num_pr(style_properties)
                ilvl = ilvl if ilvl is not None else style_level
                if num_id is not None:
                    break
        if num_id is None or num_id == "0":  # numId 0: numbering switched off
            return None
        return num_id, ilvl or 0

    def _num_pr(self, properties: Any) -> tuple[str | None, int | None]:
        qn = self._qn
        num_pr = properties.find(qn("w:numPr"))
        if num_pr is None:
            return None, None
        level = self._val(num_pr, "w:ilvl")
        return self._val(num_pr, "w:numId"), (_int(level, 0) if level is not None else None)

    def _val(self, element: Any, tag: str) -> str | None:
        child = element.find(self._qn(tag))
        value = child.get(self._qn("w:val")) if child is not None else None
        return value if isinstance(value, str) else None


def _int(value: str | None, default: int) -> int:
    return int(value) if value and value.isdigit() and len(value) <= 6 else default


def _formatted(number: int, fmt: str) -> str:
    if fmt in ("lowerLetter", "upperLetter"):
        letters = ""
        while number > 0:
            number, rest = divmod(number - 1, 26)
            letters = chr(ord("a") + rest) + letters
        return letters.upper() if fmt == "upperLetter" else letters
    if fmt in ("lowerRoman", "upperRoman") and 0 < number < 4000:
        roman = ""
        for value, digits in _ROMAN:
            while number >= value:
                roman, number = roman + digits, number - value
        return roman.upper() if fmt == "upperRoman" else roman
    return str(number)
