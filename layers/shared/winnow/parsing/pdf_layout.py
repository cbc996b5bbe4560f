"""Sections and furniture of a PDF without an outline, read from its layout.

A PDF exported without bookmarks still shows its structure: headings are short lines set in larger
type than the body, or in bold, standing alone. Without them every passage of a long PDF had the same
empty section, so the whole document was one run, chunked at the size its densest part needed: a
36-page manual became 546 passages of one or two sentences. Running heads and footers ("Chapter 2:
ASN.1 structure handling 3", a page number) repeat on page after page and are the layout's, not the
text's: they would cut a paragraph that goes on over the page in two, so they go.

``line_styles`` gives each line of a page's text its type size and whether it is set in bold;
``layout`` reads the whole document's lines and styles and says, page by page, which lines are
headings (and their level) and which are furniture.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PageLayout", "Style", "font_is_bold", "layout", "line_styles", "page_lines"]

# The line breaks ``str.splitlines`` splits at: a page's lines are those of ``page_lines``.
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_BOLD_FONT = re.compile(r"bold|black|heavy|demi|semibold|cmbx|sfbx|-bd\b", re.IGNORECASE)
_HEADING_SIZE_RATIO = 1.15  # a heading's type is at least this much larger than the body's
_MAX_HEADING_CHARS = 80
_SHORT_LINE_SHARE = 0.7
_RUNNING_PAGES = 3  # a line on this many pages or more, at a page's top or bottom, is a running head
_EDGE_LINES = 2  # how many lines at a page's top and bottom a running head or footer may take
_DIGITS = re.compile(r"\d+")
_TABLE_MARK = "\x00"  # ``pdf_page`` marks where a table stood with it
_NOT_HEADING_ENDS = (".", ",", ";", ":", "!", "?")
_SENTENCE_ENDS = (".", "!", "?")


@dataclass(frozen=True)
class Style:
    size: float = 0.0  # the line's largest type
    bold: bool = False  # every piece of text on the line is set in a bold face


@dataclass
class PageLayout:
    """One page's headings (line index -> level, 1 the largest) and furniture (line indexes)."""

    headings: dict[int, int] = field(default_factory=dict)
    furniture: set[int] = field(default_factory=set)


def page_lines(text: str) -> list[str]:
    """A page's lines, stripped (the lines ``collect_page`` reads)."""
    return [line.strip() for line in text.splitlines()]


def font_is_bold(font: Any) -> bool:
    """Whether a pypdf font dictionary names a bold face (``/Times-Bold``, TeX's ``CMBX12``)."""
    try:
        name = str(font.get("/BaseFont", "")) if font is not None else ""
    except Exception:
        return False
    return bool(_BOLD_FONT.search(name))


def line_styles(pieces: Sequence[tuple[str, float, bool]]) -> list[Style]:
    """Each line's style, for the text the ``pieces`` (text, size, bold) make in order, its lines
    split as ``page_lines`` splits them. One pass over the text."""
    text = "".join(piece for piece, _, _ in pieces)
    if not text:
        return []
    starts: list[int] = []
    offset = 0
    for piece, _, _ in pieces:
        starts.append(offset)
        offset += len(piece)
    bounds = [0]
    for found in _LINE_BREAK.finditer(text):
        bounds.append(found.end())
    line_ends = [found.start() for found in _LINE_BREAK.finditer(text)] + [len(text)]
    if text and line_ends[-1] == bounds[-1] == len(text) and len(bounds) > 1:
        bounds.pop()  # splitlines gives no empty line after a final break
        line_ends.pop()
    styles: list[Style] = []
    at = 0
    for start, end in zip(bounds, line_ends, strict=True):
        size, bold, seen = 0.0, True, False
        while at < len(pieces) and starts[at] + len(pieces[at][0]) <= start:
            at += 1
        scan = at
        while scan < len(pieces) and starts[scan] < end:
            piece, piece_size, piece_bold = pieces[scan]
            if piece.strip():
                seen = True
                size = max(size, piece_size)
                bold = bold and piece_bold
            scan += 1
        styles.append(Style(size, bold and seen))
    return styles


def layout(pages: Sequence[Sequence[str]], styles: Sequence[Sequence[Style]]) -> list[PageLayout]:
    """Each page's headings and furniture, from every page's lines and their styles (a page whose
    styles do not match its lines gets none)."""
    running = _running_heads(pages)
    body = _body_size(pages, styles)
    candidates: list[dict[int, tuple[float, bool]]] = []
    for lines, line_style in zip(pages, styles, strict=True):
        found: dict[int, tuple[float, bool]] = {}
        if len(line_style) == len(lines) and body:
            full = _full_line(lines)
            edges = _edges(lines)
            for index, line in enumerate(lines):
                style = line_style[index]
                if index in edges and _furniture_key(line) in running:
                    continue
                if _looks_like_heading(line, style, body, full):
                    found[index] = (round(style.size * 2) / 2, style.bold)
        candidates.append(found)
    sizes = sorted(
        {size for found in candidates for size, _ in found.values() if size >= body * _HEADING_SIZE_RATIO},
        reverse=True,
    )
    level_of = {size: level for level, size in enumerate(sizes, start=1)}
    out: list[PageLayout] = []
    for lines, found in zip(pages, candidates, strict=True):
        page = PageLayout()
        page.furniture = {
            index
            for index in _edges(lines)
            if _furniture_key(lines[index]) in running or lines[index].isdigit()
        }
        for index, (size, _) in found.items():
            page.headings[index] = level_of.get(size, len(sizes) + 1)
        out.append(page)
    return out


def _looks_like_heading(line: str, style: Style, body: float, full: float) -> bool:
    if _TABLE_MARK in line or not 2 <= len(line) <= _MAX_HEADING_CHARS or not any(c.isalpha() for c in line):
        return False
    if line.endswith(_NOT_HEADING_ENDS) or line[0].islower():
        return False
    larger = style.size >= body * _HEADING_SIZE_RATIO
    bold_short = style.bold and style.size >= body * 0.95 and len(line) < _SHORT_LINE_SHARE * full
    return larger or bold_short


def _body_size(pages: Sequence[Sequence[str]], styles: Sequence[Sequence[Style]]) -> float:
    """The type size most of the document's characters are set in."""
    weight: Counter[float] = Counter()
    for lines, line_style in zip(pages, styles, strict=True):
        if len(line_style) != len(lines):
            continue
        for line, style in zip(lines, line_style, strict=True):
            if style.size:
                weight[round(style.size * 2) / 2] += len(line)
    return weight.most_common(1)[0][0] if weight else 0.0


def _full_line(lines: Sequence[str]) -> float:
    lengths = sorted(len(line) for line in lines if line)
    return float(lengths[min(len(lengths) - 1, int(len(lengths) * 0.9))]) if lengths else 0.0


def _furniture_key(line: str) -> str:
    """A line with its numbers taken out: a running head reads the same on every page but its number.
    One that ends in its page number is known by its first word ("Chapter 2: Naming 7", "Chapter 3:
    Errors 12": a manual's running heads name the chapter they are in)."""
    folded = line.casefold()
    if folded[-1:].isdigit() and len(folded.split()) > 1:
        return "#page " + _DIGITS.sub("#", folded.split()[0])
    return _DIGITS.sub("#", folded)


def _edges(lines: Sequence[str]) -> set[int]:
    """The indexes of the first and last ``_EDGE_LINES`` lines of text on a page (a table's marker line,
    ``pdf_page``'s NUL, is a table, not text)."""
    filled = [at for at, line in enumerate(lines) if line and _TABLE_MARK not in line]
    return {*filled[:_EDGE_LINES], *filled[-_EDGE_LINES:]}


def _running_heads(pages: Sequence[Sequence[str]]) -> set[str]:
    """Lines at a page's top or bottom that appear so on ``_RUNNING_PAGES`` pages or more and end no
    sentence (a running head or footer is a title, a name, a page number; a sentence repeated on each
    page of a template is still text)."""
    seen: Counter[str] = Counter()
    for lines in pages:
        filled = [line for line in lines if line and _TABLE_MARK not in line]
        edges = {
            _furniture_key(line)
            for line in (*filled[:_EDGE_LINES], *filled[-_EDGE_LINES:])
            if not line.endswith(_SENTENCE_ENDS)
        }
        seen.update(key for key in edges if key.strip("# "))
    return {key for key, count in seen.items() if count >= _RUNNING_PAGES}
