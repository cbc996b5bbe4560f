"""One page of a PDF's text layer: text and tables read, then paragraphs, tables and figures collected.

``read_page`` takes each table's text out of the page text and leaves a marker line where it stood;
``collect_page`` turns the lines into paragraph blocks (a short line or a blank one ends a paragraph),
puts each table and figure where it stood, and switches sections where the outline's headings are.
A table at the top of a page that goes on with the one that ended the page before takes that table's
header and caption (``TableCarry``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from winnow.models import Block
from winnow.parsing.blocks import BlockCollector, HeadingStack
from winnow.parsing.pdf_layout import PageLayout, Style, font_is_bold, line_styles, page_lines
from winnow.parsing.pdf_lines import hyphenated_words, join_lines
from winnow.parsing.pdf_outline import OutlineEntry, heading_positions

if TYPE_CHECKING:
    from pypdf._page import PageObject

    from winnow.models import Figure
    from winnow.parsing.pdf_tables import Fragment, PdfTable

__all__ = ["TableCarry", "collect_ocr_page", "collect_page", "read_page"]

# A line shorter than this share of the page's typical full line ends its paragraph.
_SHORT_LINE_SHARE = 0.7
_MARK = "\x00"
_SENTENCE_ENDS = (".", "!", "?", ":", ";", "\u201d", '"')
_HEADING_CHARS = 80
# A list item's first line ("• INTEGER;", "- item", "3. Step"): it starts a paragraph of its own.
_LIST_ITEM = re.compile(r"(?:[\u2022\u00b7\u2023\u25e6*\u2013-]|\d{1,3}[.)])\s")


@dataclass
class _OpenTable:
    """The table that ended the page before (only short lines after it: a footer, a page number),
    which a table at the top of the next page may go on with."""

    table: PdfTable
    header: list[str]
    caption: str


@dataclass
class TableCarry:
    """What one page hands the next: the open table, if any; a paragraph that goes on over the page
    (its lines so far and its first page); the headings read from the layout so far."""

    open: _OpenTable | None = None
    paragraph: list[str] = field(default_factory=list)
    paragraph_page: int | None = None
    headings: HeadingStack = field(default_factory=HeadingStack)

    def finish(self, collector: BlockCollector, path: tuple[str, ...], hyphenated: frozenset[str]) -> None:
        """Hand on the paragraph the last page left open."""
        if self.paragraph:
            collector.add(join_lines(self.paragraph, hyphenated), path, self.paragraph_page)
            self.paragraph = []


def read_page(page: PageObject, follow: PdfTable | None = None) -> tuple[str, list[PdfTable], list[Style]]:
    """The page's text, its tables, and each text line's style (``pdf_layout.line_styles``; empty
    when they cannot be matched to the text): each table's text is taken out of the page text and a
    marker line (``_table_marker``) left where it stood, so the table becomes one table block in
    reading order. ``follow`` is the previous page's last table, whose last rows may start this page."""
    from winnow.parsing.pdf_tables import find_tables, fragment_from_visitor

    fragments: list[Fragment] = []
    bold: list[bool] = []

    def visit(text: str, cm: Any, tm: Any, font: Any, font_size: Any) -> None:
        fragments.append(fragment_from_visitor(text, cm, tm, float(font_size or 0)))
        bold.append(font_is_bold(font))

    text = page.extract_text(visitor_text=visit) or ""
    found = find_tables(fragments, follow)
    if not found:
        pieces = [(f.text, f.size, b) for f, b in zip(fragments, bold, strict=True)]
        return text, [], line_styles(pieces) if "".join(p for p, _, _ in pieces) == text else []
    # pypdf's page text is exactly its visited pieces in order (checked on real PDFs), so the text
    # without the tables is rebuilt from the pieces; NUL never is content and marks the tables.
    owner = {index: number for number, table in enumerate(found) for index in table.fragments}
    parts: list[tuple[str, float, bool]] = []
    placed: set[int] = set()
    for index, fragment in enumerate(fragments):
        number = owner.get(index)
        if number is None:
            parts.append((fragment.text.replace(_MARK, ""), fragment.size, bold[index]))
        elif number not in placed:
            placed.add(number)
            parts.append((f"\n{_table_marker(number)}\n", 0.0, False))
    return "".join(part for part, _, _ in parts), found, line_styles(parts)


def _table_marker(number: int) -> str:
    return f"{_MARK}{number}{_MARK}"


def collect_page(
    collector: BlockCollector,
    text: str,
    page: int,
    path: tuple[str, ...],
    bookmarks: list[OutlineEntry],
    *,
    ocr: bool = False,
    tables: Sequence[PdfTable] = (),
    hyphenated: frozenset[str] = frozenset(),
    carry: TableCarry | None = None,
    figures: Sequence[Figure] = (),
    layout: PageLayout | None = None,
) -> tuple[str, ...]:
    """Add the page's paragraphs, tables and figures; returns the section path in effect at the end of
    the page. ``carry`` holds the table that ended the page before, if any, and is left holding the one
    that ends this page; likewise a paragraph that does not end on the page (it goes on at the top of
    the next one, and is handed on there, or by ``TableCarry.finish`` after the last page). The page's
    figures take its "Figure N" lines as captions, in order, and stand where those lines stood; figures
    without one follow the page's text. ``layout`` (a PDF without an outline) names the page's heading
    lines, which become sections, and its running heads and page numbers, which are skipped."""
    from winnow.parsing.figures import is_figure_caption
    from winnow.parsing.pdf_tables import continuation

    # A bullet set in a font of the standard encoding comes out as DEL ("\x7f"), which cleaning drops:
    # the item would lose its mark and run into its neighbours.
    lines = [f"\u2022{line[1:]}" if line.startswith("\x7f") else line for line in page_lines(text)]
    markers = {_table_marker(number): table for number, table in enumerate(tables)}
    switches = heading_positions(lines, bookmarks)
    layout = layout or PageLayout()
    heading_lines = {index for index, _, is_heading in switches if is_heading} | set(layout.headings)
    # Each table's caption, and the "Table N" lines it takes out of the text (the table carries them;
    # left as a passage of their own they would outrank the table they name).
    captions: dict[int, str] = {}
    caption_lines: set[int] = set()
    for index, line in enumerate(lines):
        if line in markers:
            captions[index], caption_line = _table_caption(lines, index, heading_lines)
            if caption_line is not None:
                caption_lines.add(caption_line)
    caption_at = [index for index, line in enumerate(lines) if _MARK not in line and is_figure_caption(line)]
    # each figure takes its caption line out of the text and stands there (``owns_caption``)
    figure_at = {
        at: replace(figure, caption=figure.caption or lines[at], owns_caption=True)
        for figure, at in zip(figures, caption_at, strict=False)
    }
    full_line = _typical_full_line(
        [line for index, line in enumerate(lines) if index not in layout.furniture]
    )
    carry = carry if carry is not None else TableCarry()
    carried, carry.open = carry.open, None
    # a paragraph the page before left open goes on here, unless this page starts with a list item
    paragraph, paragraph_page = carry.paragraph, carry.paragraph_page
    carry.paragraph, carry.paragraph_page = [], None
    first_line = next((line for i, line in enumerate(lines) if line and i not in layout.furniture), "")
    if paragraph and (ocr or _LIST_ITEM.match(first_line)):
        collector.add(join_lines(paragraph, hyphenated), path, paragraph_page)
        paragraph, paragraph_page = [], None
    lines_before_table: list[str] = []  # text since the top of the page or the last table

    def flush() -> None:
        nonlocal paragraph_page
        if paragraph:
            collector.add(join_lines(paragraph, hyphenated), path, paragraph_page or page, ocr=ocr)
            paragraph.clear()
        paragraph_page = None

    switch_at = 0
    for index, line in enumerate(lines):
        while switch_at < len(switches) and switches[switch_at][0] == index:
            flush()
            path = switches[switch_at][1].path
            switch_at += 1
        if index in layout.furniture:
            continue  # a running head, a footer, a page number: not the text's
        if index in layout.headings:
            flush()
            carry.headings.push(layout.headings[index], line)
            path = carry.headings.path
            carried = None
            continue
        if index in figure_at:
            flush()
            collector.add_figure(figure_at[index], path, page)
            continue
        if index in heading_lines:
            carried = None  # a heading starts a new part: a table under it is a table of its own
        if index in heading_lines or (
            not line and not (ocr and _continues_after_blank(paragraph, lines, index))
        ):
            flush()
            continue
        if not line:
            continue
        if line in markers:
            flush()
            table, rows, caption = markers[line], markers[line].rows, captions[index]
            header = rows[0] if rows and table.has_header else []
            drop = None
            if carried is not None and carried.header and _only_short_lines(lines_before_table):
                drop = continuation(carried.table, carried.header, table)
            if carried is not None and drop is not None:
                header, caption = carried.header, carried.caption
                rows = [header, *rows[drop:]]
            elif table.remainder:
                # not the rest of the table above after all: the lines are text, as they stood
                for row in rows:
                    collector.add(" ".join(cell for cell in row if cell), path, page, ocr=ocr)
                carried = None
                lines_before_table = []
                continue
            collector.add_table(rows, path, page, caption=caption, has_header=bool(header))
            carried = None
            carry.open = _OpenTable(table, header, caption or (path[-1] if path else ""))
            lines_before_table = []
            continue
        if index in caption_lines:
            flush()
            continue
        lines_before_table.append(line)
        if (
            paragraph
            and _LIST_ITEM.match(line)
            and (paragraph[-1].endswith(_SENTENCE_ENDS) or _LIST_ITEM.match(paragraph[0]))
        ):
            # "... in order:" / "1. Check ...", or the item before it: an item starts a paragraph
            flush()
        if not paragraph:
            paragraph_page = page
        paragraph.append(line)
        if len(line) < _SHORT_LINE_SHARE * full_line and not _goes_on(line, lines, index, layout):
            flush()
    while switch_at < len(switches):  # bookmarks pointing below the last line
        flush()
        path = switches[switch_at][1].path
        switch_at += 1
    if paragraph and not ocr and not paragraph[-1].endswith(_SENTENCE_ENDS):
        carry.paragraph, carry.paragraph_page = list(paragraph), paragraph_page
        paragraph.clear()
    flush()
    for figure in figures[len(figure_at) :]:
        collector.add_figure(figure, path, page)
    if not _only_short_lines(lines_before_table):
        carry.open = None  # text follows the page's last table: a table on the next page is new
    return path


def _goes_on(line: str, lines: list[str], at: int, layout: PageLayout) -> bool:
    """Whether a short line's sentence goes on in the next line (a line broken early before a long
    word, an inline code span): it ends no sentence, and the next line of text starts in lower case."""
    if line.endswith(_SENTENCE_ENDS):
        return False
    following = next(
        (lines[i] for i in range(at + 1, min(at + 4, len(lines))) if lines[i] and i not in layout.furniture),
        "",
    )
    return following[:1].islower() and (at + 1) not in layout.headings


def _only_short_lines(lines: list[str]) -> bool:
    """Whether the text between a page edge and a table is at most a running head, a footer or a
    page number, not content that would separate two tables."""
    return len(lines) <= 2 and all(len(line) <= _HEADING_CHARS for line in lines)


def _continues_after_blank(paragraph: list[str], lines: list[str], at: int) -> bool:
    """Whether the blank line at ``at`` falls inside a sentence: OCR engines put a blank line wherever
    the line spacing looks a little wider, even mid-sentence ("... (and hence more unification)" /
    "" / "of trigger processing."). It does when the paragraph so far does not end a sentence and the
    next line goes on in lower case."""
    if not paragraph or paragraph[-1].endswith(_SENTENCE_ENDS):
        return False
    following = next((line for line in lines[at + 1 : at + 4] if line), "")
    return following[:1].islower()


def _table_caption(lines: list[str], at: int, heading_lines: set[int]) -> tuple[str, int | None]:
    """A table's caption and the index of its "Table N" line when it has one (just above or below
    the table), else the heading just above it (a bookmarked heading, or a short line without closing
    punctuation) and None; ("", None) when there is neither, and the section's name is used instead."""
    from winnow.parsing.pdf_tables import is_caption

    near = [index for index in (at - 1, at - 2, at + 1, at + 2) if 0 <= index < len(lines) and lines[index]]
    for index in near:
        if is_caption(lines[index]) and _MARK not in lines[index]:
            return lines[index], index
    above = next((index for index in range(at - 1, -1, -1) if lines[index]), None)
    if above is None or _MARK in lines[above]:
        return "", None
    line = lines[above]
    if above in heading_lines or (len(line) <= _HEADING_CHARS and not line.endswith((".", ",", ";", ":"))):
        return line, None
    return "", None


def _typical_full_line(lines: list[str]) -> float:
    """The length of a full line on this page: the 90th percentile, so one stray long line (a URL, a
    table row) does not turn every normal line into a paragraph end."""
    lengths = sorted(len(line) for line in lines if line)
    if not lengths:
        return 0.0
    return float(lengths[min(len(lengths) - 1, int(len(lengths) * 0.9))])


def collect_ocr_page(text: str, page: int) -> list[Block]:
    """Paragraph blocks of one page of OCR text, marked as OCR (used for image files)."""
    collector = BlockCollector()
    collect_page(collector, text, page, (), [], ocr=True, hyphenated=hyphenated_words([text]))
    return collector.blocks
