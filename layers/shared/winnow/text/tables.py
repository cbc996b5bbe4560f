"""Tables rendered for the embedder and for a person at once: each row as ``column: value`` pairs.

A row on its own ("North | 120 | 130") means nothing to a reader or to an embedding model; with its
column names ("Region: North | Q1: 120 | Q2: 130") a question about one cell finds the row that answers
it, and the passage shown reads as a sentence. Every chunk of a long table starts with the caption (or
nearest heading) and the column line, so each chunk stands alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from winnow.models import Table

PAIR_SEPARATOR = " | "
COLUMNS_PREFIX = "Columns: "


def table_preamble(table: Table) -> str:
    """The lines every chunk of the table starts with: caption, then the column names."""
    lines = []
    if table.caption:
        lines.append(table.caption)
    if table.header:
        lines.append(COLUMNS_PREFIX + PAIR_SEPARATOR.join(table.header))
    return "\n".join(lines)


def row_pairs(table: Table, row: Sequence[str]) -> list[str]:
    """The row's non-empty cells, each named by its column when the table has a header."""
    pairs = []
    for index, value in enumerate(row):
        if not value:
            continue
        name = table.header[index] if index < len(table.header) else ""
        pairs.append(f"{name}: {value}" if name else value)
    return pairs


def render_row(table: Table, row: Sequence[str]) -> str:
    return PAIR_SEPARATOR.join(row_pairs(table, row))


def render_table(table: Table) -> str:
    body = "\n".join(line for line in (render_row(table, row) for row in table.rows) if line)
    preamble = table_preamble(table)
    return f"{preamble}\n{body}" if preamble else body


def table_pieces(table: Table, target_chars: int) -> list[str]:
    """The table as chunk texts of at most ``target_chars`` (when the preamble leaves room): whole rows
    packed in order, the preamble repeated at the top of each. A row longer than the room left is split
    between its pairs, and a single pair longer than that is cut."""
    preamble = table_preamble(table)
    if len(preamble) > target_chars // 2:
        preamble = preamble[: target_chars // 2].rstrip()
    room = max(1, target_chars - len(preamble) - 1) if preamble else target_chars
    lines: list[str] = []
    for row in table.rows:
        lines.extend(_fit_row(row_pairs(table, row), room))
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
    return pieces


def _with_preamble(preamble: str, lines: list[str]) -> str:
    body = "\n".join(lines)
    return f"{preamble}\n{body}" if preamble else body


def _fit_row(pairs: list[str], room: int) -> list[str]:
    if not pairs:
        return []
    out: list[str] = []
    current = ""
    for pair in pairs:
        pair = pair[:room]
        candidate = f"{current}{PAIR_SEPARATOR}{pair}" if current else pair
        if len(candidate) > room and current:
            out.append(current)
            current = pair
        else:
            current = candidate
    out.append(current)
    return out
