"""Tables rendered for the embedder and for a person at once: each row as ``column: value`` pairs.

A row on its own ("North | 120 | 130") means nothing to a reader or to an embedding model; with its
column names ("Region: North | Q1: 120 | Q2: 130") a question about one cell finds the row that answers
it, and the passage shown reads as a sentence. Every chunk of a long table starts with the caption (or
nearest heading) and the column line, so each chunk stands alone.

The rendering can be read back without guessing (the search page draws it as a table): pairs are split
at " | " because a ``|`` inside a cell is written ``\\|``, and a pair's column name ends at its first ": "
because a ": " inside a column name is written with a no-break space (cells never hold one: they are
cleaned to single spaces), which reads the same. Column names are unique (``parsing.tables``).
"""

from __future__ import annotations

from collections.abc import Sequence

from winnow.models import Table

PAIR_SEPARATOR = " | "
COLUMNS_PREFIX = "Columns: "
NAME_SEPARATOR = ": "


def cell_text(value: str) -> str:
    """A cell as written in a row: no ``|`` that could be taken for the pair separator."""
    return value.replace("|", "\\|")


def column_name(name: str) -> str:
    """A column name as written in the column line and before each of its values: as a cell, and no
    ": " that could be taken for the end of the name."""
    return cell_text(name).replace(NAME_SEPARATOR, ":\u00a0")


def table_preamble(table: Table, limit: int | None = None) -> str:
    """The lines every chunk of the table starts with: caption, then the column names. Within
    ``limit`` characters, the caption is cut to half of it and the column line after a whole name
    (the first name at least, so a reader still sees a table; each row's pairs name their columns)."""
    caption = table.caption
    if limit is not None and table.header:
        caption = caption[: limit // 2].rstrip()
    elif limit is not None:
        caption = caption[:limit].rstrip()
    lines = [caption] if caption else []
    if table.header:
        names = [column_name(name) for name in table.header]
        if limit is not None:
            room = limit - len(caption) - 1 - len(COLUMNS_PREFIX)
            kept = [names[0][: max(1, room)]]
            room -= len(names[0])
            for name in names[1:]:
                room -= len(PAIR_SEPARATOR) + len(name)
                if room < 0:
                    break
                kept.append(name)
            names = kept
        lines.append(COLUMNS_PREFIX + PAIR_SEPARATOR.join(names))
    return "\n".join(lines)


def row_pairs(table: Table, row: Sequence[str]) -> list[str]:
    """The row's non-empty cells, each named by its column when the table has a header."""
    return [name + value for name, value in _named_cells(table, row)]


def _named_cells(table: Table, row: Sequence[str]) -> list[tuple[str, str]]:
    """The row's non-empty cells as (``"name: "`` or ``""``, value), both written as the rendering
    writes them."""
    cells = []
    for index, value in enumerate(row):
        if not value:
            continue
        name = column_name(table.header[index]) if index < len(table.header) else ""
        cells.append((f"{name}{NAME_SEPARATOR}" if name else "", cell_text(value)))
    return cells


def render_row(table: Table, row: Sequence[str]) -> str:
    return PAIR_SEPARATOR.join(row_pairs(table, row))


def render_table(table: Table) -> str:
    body = "\n".join(line for line in (render_row(table, row) for row in table.rows) if line)
    return "\n".join(part for part in (table_preamble(table), body) if part)


# A table whose rows render to more than this many small pieces packs its rows into text-sized pieces
# instead (issue 44: a 1 MB CSV became 7,429 chunks of about 135 bytes of its text each).
LONG_TABLE_PIECES = 16


def table_pieces(table: Table, target_chars: int, text_chars: int | None = None) -> list[str]:
    """The table as chunk texts of at most ``target_chars`` (when the preamble leaves room): whole rows
    packed in order, the preamble repeated at the top of each. A row longer than the room left is split
    between its pairs, each line after the first starting with the row's first cell again, and a single
    cell longer than that (a paragraph in a cell) goes on over several lines between words, each line
    naming its column: nothing of a row is lost.

    With ``text_chars`` (the text chunk size), the work is bounded by the table's own size: a cell
    longer than the room is split into text-sized lines, each a piece of its own, and a table longer
    than ``LONG_TABLE_PIECES`` small pieces packs its rows up to ``text_chars``; a piece then carries
    at least about half its size of the table's text, however long its cells or its row count."""
    preamble = table_preamble(table, limit=target_chars // 2)
    text_chars = max(text_chars or target_chars, target_chars)
    if text_chars > target_chars and _rendered_chars(table) > LONG_TABLE_PIECES * target_chars:
        target_chars = text_chars
    room = max(1, target_chars - len(preamble) - 1) if preamble else target_chars
    long_room = max(room, text_chars - len(preamble) - 1) if preamble else text_chars
    lines: list[str] = []
    for row in table.rows:
        lines.extend(_fit_row(_named_cells(table, row), room, long_room))
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for line in lines:
        if current and used + 1 + len(line) > room:
            pieces.append(_with_preamble(preamble, current))
            current, used = [], 0
        used += len(line) + (1 if current else 0)
        current.append(line)
    if current:
        pieces.append(_with_preamble(preamble, current))
    if not pieces and preamble and table.header:
        pieces.append(preamble)  # a table of column names only: the names are its content
    return pieces


def _rendered_chars(table: Table) -> int:
    """About how long the rows render (their pairs and separators), counted without building them."""
    total = 0
    for row in table.rows:
        for name, value in _named_cells(table, row):
            total += len(name) + len(value) + len(PAIR_SEPARATOR)
    return total


def _with_preamble(preamble: str, lines: list[str]) -> str:
    body = "\n".join(lines)
    return f"{preamble}\n{body}" if preamble else body


def _fit_row(cells: list[tuple[str, str]], room: int, long_room: int | None = None) -> list[str]:
    """A row as one line, or, when longer than ``room``, as several: each starting with the row's
    first cell (when short), so every line says which row it belongs to. A cell longer than the room
    goes on over lines of up to ``long_room`` (its column's name cut to half of ``room``)."""
    long_room = max(room, long_room or room)
    pairs = [name + value for name, value in cells]
    whole = PAIR_SEPARATOR.join(pairs)
    if len(whole) <= room:
        return [whole] if whole else []
    key = pairs[0] if len(pairs[0]) <= room // 4 else ""
    prefix = key + PAIR_SEPARATOR if key else ""
    width = room - len(prefix)
    long_width = long_room - len(prefix)
    lines: list[str] = []
    current = ""
    for name, value in cells[1:] if key else cells:
        pair = name + value
        if len(pair) > width:
            if current:
                lines.append(current)
                current = ""
            name = name if len(name) <= width // 2 else name[: width // 2]
            lines.extend(_split_cell(name, value, long_width))
            continue
        candidate = f"{current}{PAIR_SEPARATOR}{pair}" if current else pair
        if len(candidate) > width and current:
            lines.append(current)
            current = pair
        else:
            current = candidate
    if current:
        lines.append(current)
    return [prefix + line for line in lines]


def _split_cell(name: str, value: str, room: int) -> list[str]:
    """A cell too long for one line as lines of at most ``room`` characters, each starting with its
    column's name (cut when the name alone takes more than half the room), broken between words."""
    import textwrap

    name = name if len(name) <= room // 2 else name[: room // 2]
    width = max(1, room - len(name))
    pieces = textwrap.wrap(value, width, break_on_hyphens=False, drop_whitespace=True) or [value[:width]]
    return [name + piece for piece in pieces]


def read_rendered(text: str) -> tuple[str, list[str], list[dict[str, str]]] | None:
    """A table chunk read back (the reverse of ``table_pieces``, for whoever draws it as a table):
    caption, column names and rows as ``{column: value}``; None for text without a column line. A
    column named only in the rows (a shortened column line) is added in order of appearance."""
    lines = text.split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith(COLUMNS_PREFIX)), None)
    if at is None:
        return None

    def cells(line: str) -> list[str]:
        return [cell.replace("\\|", "|") for cell in line.split(PAIR_SEPARATOR)]

    def label(name: str) -> str:
        return name.replace(":\u00a0", NAME_SEPARATOR)

    columns = [label(name) for name in cells(lines[at][len(COLUMNS_PREFIX) :])]
    rows: list[dict[str, str]] = []
    for line in lines[at + 1 :]:
        row: dict[str, str] = {}
        for pair in cells(line):
            name, sep, value = pair.partition(NAME_SEPARATOR)
            name, value = (label(name), value) if sep else ("", pair)
            if name not in columns:
                columns.append(name)
            row[name] = value
        rows.append(row)
    return " ".join(lines[:at]), columns, rows
