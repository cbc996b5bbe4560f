"""Tables in a PDF's text layer, found from where pypdf says each piece of text is drawn.

A PDF has no tables, only text drawn at positions. A table shows as lines whose pieces start at the
same few x positions, line after line, with clear gaps between them; prose does not (its pieces are
one run per line, or runs that follow each other without a gap). So a table here is a run of at
least ``MIN_ROWS`` nearby lines of two or more cells each, every cell starting at one of the run's
column positions, the cells short (long cells side by side are a two-column page, not a table).
A line whose first column is empty continues the row above (a cell wrapped onto a second line).
A table at the top of a page with the column layout of the table that ended the page before, and no
row that looks like a header, continues that table (``continuation``): its first row is a row.

pypdf reports no text widths, so a piece's end is estimated from its length; the estimate only
decides whether two pieces on a line are one cell or two, and errs towards one (a missed table stays
text; a false table would garble prose). The positions come from the same
``extract_text`` call that reads the page, so finding tables costs no second pass over the page.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

MIN_ROWS = 3
MIN_COLUMNS = 2
# A line of more cells than this is not taken for a table's first: pages do not print wider tables.
MAX_COLUMNS = 64
# Pieces on a page beyond this are not searched for tables (the text is still read): bounds the work.
MAX_FRAGMENTS = 20_000
# Average glyph width as a share of the font size (Helvetica and Times set prose at 0.40-0.47).
_GLYPH_WIDTH = 0.45
# A table has a column of short cells; long runs side by side in every column are page columns.
_MAX_SHORT_CELL_CHARS = 24
# Between two lines of one table: at most this many font sizes.
_MAX_LINE_GAP = 2.6
# Lines above a table's remainder at the top of a page: a running head, a page number.
_MAX_LINES_ABOVE = 2
# A column of bullets or enumerators ("•", "2.", "b)") makes a list, not a table.
_LIST_MARKER = re.compile(r"^(?:[^\w\s]|\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)])$")
# A cell that starts with a bullet (any symbol: fonts draw bullets as "•", "\x7f" or a private-use
# glyph) and a space: the first column of a list whose items run on beside it.
_BULLETED = re.compile(r"^[^\w\s$\u20ac\u00a3\u00a5(\[]\s")
# Dot leaders, as tables of contents and indexes draw them.
_LEADER = re.compile(r"(?:\. ?){4}")
# A number as tables print one, spaces taken out: "1,250", "-3.5", "12%", "$40", "06:00".
_NUMBER = re.compile(r"^[-+\u2212(]?[$€£¥]?\d[\d.,:']*\)?%?$")
_CAPTION = re.compile(r"^(table|tab\.)\s*[\dIVXivx]+\b", re.IGNORECASE)


@dataclass(frozen=True)
class Fragment:
    """One piece of text as pypdf's ``visitor_text`` reports it: where it starts and its font size."""

    x: float
    y: float
    size: float
    text: str


@dataclass
class PdfTable:
    rows: list[list[str]]
    fragments: set[int] = field(default_factory=set)
    columns: list[float] = field(default_factory=list)  # where each column starts (x, page space)
    tolerance: float = 0.0  # how far a cell may start from its column's x
    has_header: bool = True  # the first row names the columns
    remainder: bool = False  # too short to be a table alone: only the rest of the table above


@dataclass
class _Cell:
    x: float
    end: float
    text: str
    fragments: list[int]
    spaced: bool  # the last piece ended with a space: the next one is a new word
    # Where each later piece joined the cell: its x, its offset in ``text`` and in ``fragments``. The
    # width estimate can run a long cell into the next column's; ``_place`` cuts it there again.
    joins: list[tuple[float, int, int]] = field(default_factory=list)


@dataclass
class _Line:
    y: float
    size: float
    cells: list[_Cell]
    fragments: list[int]
    broken: bool = False  # holds a piece spanning several lines: never part of a table


def fragment_from_visitor(text: str, cm: Sequence[float], tm: Sequence[float], font_size: float) -> Fragment:
    """A :class:`Fragment` from ``visitor_text``'s matrices: the text matrix's origin in page space."""
    x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
    y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
    scale = math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3])
    size = abs(font_size * scale) if scale else abs(font_size)
    return Fragment(float(x), float(y), float(size) or 1.0, text)


def find_tables(fragments: Sequence[Fragment], follow: PdfTable | None = None) -> list[PdfTable]:
    """The tables among a page's text pieces, top to bottom; each knows which pieces it took.
    ``follow`` is the last table of the page before: at the top of this page, fewer than ``MIN_ROWS``
    lines in its columns are taken too, as a ``remainder`` (the last rows of a table that goes on)."""
    if len(fragments) > MAX_FRAGMENTS:
        return []
    lines = _lines(fragments)
    tables: list[PdfTable] = []
    start = 0
    if follow is not None:
        # The first line in the table's columns, below at most a running head: a remainder, or not.
        for at in range(min(_MAX_LINES_ABOVE + 1, len(lines))):
            if _place(lines[at].cells, follow.columns, follow.tolerance) is None:
                continue
            remainder, end = _remainder_from(lines, at, follow)
            if remainder is not None:
                tables.append(remainder)
                start = end
            break
    while start < len(lines):
        table, end = _table_from(lines, start)
        if table is not None:
            tables.append(table)
        # A run that is no table is not searched again from each of its lines: linear in the lines.
        start = max(end, start + 1)
    return tables


def is_caption(line: str) -> bool:
    """Whether a line names a table ("Table 3: Opening hours")."""
    return bool(_CAPTION.match(line.strip()))


def _lines(fragments: Sequence[Fragment]) -> list[_Line]:
    """Pieces grouped into visual lines (same baseline), top of the page first, cells left to right."""
    pieces = [
        (index, fragment)
        for index, fragment in enumerate(fragments)
        if fragment.text.strip() and math.isfinite(fragment.x) and math.isfinite(fragment.y)
    ]
    pieces.sort(key=lambda item: (-item[1].y, item[1].x))
    lines: list[_Line] = []
    for index, fragment in pieces:
        line = lines[-1] if lines else None
        if line is None or abs(line.y - fragment.y) > 0.35 * max(line.size, fragment.size):
            line = _Line(fragment.y, fragment.size, [], [])
            lines.append(line)
        line.fragments.append(index)
        line.size = max(line.size, fragment.size)
        if "\n" in fragment.text.strip():
            line.broken = True
        _add_piece(line, index, fragment)
    return lines


def _add_piece(line: _Line, index: int, fragment: Fragment) -> None:
    """Extend the last cell when the piece starts before that cell's estimated end plus half an em;
    otherwise the piece starts a new cell."""
    text = " ".join(fragment.text.split())
    width = _GLYPH_WIDTH * fragment.size * len(text)
    last = line.cells[-1] if line.cells else None
    if last is not None and fragment.x <= last.end + 0.5 * fragment.size:
        joiner = " " if last.spaced or fragment.text[:1].isspace() else ""
        last.joins.append((fragment.x, len(last.text) + len(joiner), len(last.fragments)))
        last.text = f"{last.text}{joiner}{text}".strip()
        last.spaced = fragment.text[-1:].isspace()
        last.end = max(last.end, fragment.x + width)
        last.fragments.append(index)
        return
    line.cells.append(_Cell(fragment.x, fragment.x + width, text, [index], fragment.text[-1:].isspace()))


def _table_from(lines: list[_Line], start: int) -> tuple[PdfTable | None, int]:
    """The table starting at ``lines[start]`` and the index after it, or (None, start)."""
    first = lines[start]
    if first.broken or not MIN_COLUMNS <= len(first.cells) <= MAX_COLUMNS:
        return None, start
    columns = [cell.x for cell in first.cells]
    tolerance = 0.6 * first.size
    run: list[tuple[_Line, list[_Cell | None]]] = [(first, list(first.cells))]
    end = start + 1
    while end < len(lines):
        line, previous = lines[end], run[-1][0]
        if line.broken or previous.y - line.y > _MAX_LINE_GAP * max(line.size, previous.size):
            break
        placed = _place(line.cells, columns, tolerance)
        if placed is None or (placed[0] is not None and sum(c is not None for c in placed) < MIN_COLUMNS):
            break
        run.append((line, placed))
        end += 1
    rows = _rows(run, len(columns))
    if len(rows) < MIN_ROWS or not _has_short_column(rows):
        return None, end
    if all(_LIST_MARKER.match(row[0]) or _BULLETED.match(row[0]) for row in rows if row[0]):
        return None, end
    if any(_is_leader_column([row[column] for row in rows]) for column in range(len(columns))):
        return None, end  # a table of contents or an index: entries, dot leaders, page numbers
    fragments = {index for line, _ in run for index in line.fragments}
    return PdfTable(rows, fragments, columns, tolerance, has_header=_first_row_names_columns(rows)), end


def _remainder_from(lines: list[_Line], start: int, follow: PdfTable) -> tuple[PdfTable | None, int]:
    """Fewer than ``MIN_ROWS`` lines from ``lines[start]`` whose cells start at ``follow``'s columns
    (the first one filled), as a remainder table, or (None, start). Longer runs are found as tables."""
    run: list[tuple[_Line, list[_Cell | None]]] = []
    end = start
    while end < len(lines) and len(run) <= MIN_ROWS:
        line = lines[end]
        if line.broken or (run and run[-1][0].y - line.y > _MAX_LINE_GAP * max(line.size, run[-1][0].size)):
            break
        placed = _place(line.cells, follow.columns, follow.tolerance)
        if placed is None or (not run and (placed[0] is None or sum(c is not None for c in placed) < 2)):
            break
        run.append((line, placed))
        end += 1
    rows = _rows(run, len(follow.columns)) if run else []
    if not rows or len(rows) >= MIN_ROWS:
        return None, start
    fragments = {index for line, _ in run for index in line.fragments}
    return PdfTable(rows, fragments, follow.columns, follow.tolerance, remainder=True), end


def _is_leader_column(cells: list[str]) -> bool:
    """Whether most of a column's cells hold dot leaders ("Salsa20 . . . . . . 33")."""
    filled = [cell for cell in cells if cell]
    return sum(bool(_LEADER.search(cell)) for cell in filled) * 2 > len(filled)


def _first_row_names_columns(rows: list[list[str]]) -> bool:
    """Whether the first row is a header: not when it holds, in some column, the value most of the
    rows below hold too (a list of definitions tagged "[Constant]" on every line has no header)."""
    first, body = rows[0], rows[1:]
    for column, cell in enumerate(first):
        same = sum(row[column] == cell for row in body)
        if cell and len(body) >= 2 and same * 2 >= len(body):
            return False
    return True


def continuation(previous: PdfTable, header: Sequence[str], table: PdfTable) -> int | None:
    """Whether ``table`` (at the top of a page) goes on with ``previous`` (which ended the page before,
    under ``header``): None when it does not, else how many of its first rows to drop (1 when it
    repeats the header, 0 when it starts with a row). It does when its columns are as many and start
    at the same x positions, and its first row is not a header of its own (a header names with a word
    a column whose other cells are all numbers)."""
    if len(table.columns) != len(previous.columns) or len(table.rows) < 1:
        return None
    tolerance = max(previous.tolerance, table.tolerance)
    if any(abs(a - b) > tolerance for a, b in zip(previous.columns, table.columns, strict=True)):
        return None
    first = table.rows[0]
    if [_folded(cell) for cell in first] == [_folded(cell) for cell in header]:
        return 1
    body = table.rows[1:]
    for column, cell in enumerate(first):
        values = [row[column] for row in body if row[column]]
        if cell and not _is_number(cell) and values and all(_is_number(value) for value in values):
            return None
    return 0


def _is_number(cell: str) -> bool:
    return bool(_NUMBER.match(cell.replace(" ", "")))


def _folded(cell: str) -> str:
    return " ".join(cell.split()).casefold()


def _has_short_column(rows: list[list[str]]) -> bool:
    """Whether some column holds short cells (names, numbers, codes), as every table has; lines of
    prose side by side (a page set in columns) are long in every column."""
    columns = zip(*rows[1:], strict=True)
    return any(statistics.median(len(cell) for cell in column) <= _MAX_SHORT_CELL_CHARS for column in columns)


def _owners(run: list[tuple[_Line, list[_Cell | None]]]) -> list[int | None]:
    """The row (index into ``run``) each line belongs to. A line without a first cell continues a row:
    such lines come in blocks (the later lines of wrapped cells), and a block goes to the nearer full
    line above or below it: line spacing inside a cell is tighter than between rows, and wrapped lines
    sit above their row's other cells when those are aligned to the bottom, below when to the top."""
    owners: list[int | None] = [at if placed[0] is not None else None for at, (_, placed) in enumerate(run)]
    at = 0
    while at < len(run):
        if owners[at] is not None:
            at += 1
            continue
        last = at
        while last + 1 < len(run) and owners[last + 1] is None:
            last += 1
        above = at - 1 if at > 0 else None
        below = last + 1 if last + 1 < len(run) else None
        if above is None or below is None:
            row = above if below is None else below
        else:
            gap_above = run[above][0].y - run[at][0].y
            gap_below = run[last][0].y - run[below][0].y
            row = above if gap_above <= gap_below else below
        owners[at : last + 1] = [row] * (last + 1 - at)
        at = last + 1
    return owners


def _rows(run: list[tuple[_Line, list[_Cell | None]]], width: int) -> list[list[str]]:
    """The run's lines as table rows, each wrapped line's text joined to its row's cells in page order."""
    rows: dict[int, list[list[str]]] = {}
    for (_, placed), row in zip(run, _owners(run), strict=True):
        if row is None:
            continue
        cells = rows.setdefault(row, [[] for _ in range(width)])
        for column, cell in enumerate(placed):
            if cell is not None:
                cells[column].append(cell.text)
    return [[" ".join(parts) for parts in rows[row]] for row in sorted(rows)]


def _place(cells: list[_Cell], columns: list[float], tolerance: float) -> list[_Cell | None] | None:
    """The line's cells by column (None for an empty one), or None when a cell starts away from every
    column or two cells fall into one column: then the line is not part of this table."""
    placed: list[_Cell | None] = [None] * len(columns)
    for cell in (part for whole in cells for part in _cut_at_columns(whole, columns, tolerance)):
        column = next((n for n, x in enumerate(columns) if abs(cell.x - x) <= tolerance), None)
        if column is None or placed[column] is not None:
            return None
        placed[column] = cell
    return placed


def _cut_at_columns(cell: _Cell, columns: list[float], tolerance: float) -> list[_Cell]:
    """``cell`` cut where a piece it took starts at another column of the table: pypdf gives no text
    widths, so a cell whose letters are narrower than the estimate ("Two visits, parts,
    calibration") seemed to reach its neighbour, which it then swallowed ("Covers: ... 1,980" with
    no price)."""
    own = next((n for n, x in enumerate(columns) if abs(cell.x - x) <= tolerance), None)
    out: list[_Cell] = []
    start_x, start_text, start_fragment = cell.x, 0, 0
    for x, offset, fragment in cell.joins:
        column = next((n for n, c in enumerate(columns) if abs(x - c) <= tolerance), None)
        if column is None or column == own:
            continue
        head = cell.text[start_text:offset].strip()
        out.append(_Cell(start_x, x, head, cell.fragments[start_fragment:fragment], True))
        start_x, start_text, start_fragment, own = x, offset, fragment, column
    if not out:
        return [cell]
    rest = cell.text[start_text:].strip()
    out.append(_Cell(start_x, cell.end, rest, cell.fragments[start_fragment:], cell.spaced))
    return out
