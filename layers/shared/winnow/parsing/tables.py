"""Turning rows of cells from any format (DOCX, HTML, Markdown, PPTX, XLSX, CSV, PDF) into table blocks.

Cells are cleaned to single-line text; empty rows and columns are dropped; sizes are bounded (a sheet
with a million columns is cut, never rendered whole). The first row is the header unless the caller
knows the table has none; a header cell left empty is named by its position, so every value keeps a name,
and a name used twice (a header cell merged across columns) is numbered, so every value keeps its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from winnow.models import Block, Table
from winnow.parsing.cleaning import clean_inline
from winnow.text.tables import render_table

# Wide enough for the sheets people keep (a 100-column export); columns beyond are cut.
MAX_COLUMNS = 256
# As long as a CSV field may be: a cell holding whole paragraphs is kept whole (chunks split it).
MAX_CELL_CHARS = 100_000
MAX_CAPTION_CHARS = 300
# A merged cell (DOCX, PPTX) longer than this is not repeated into each column or row it covers.
MAX_REPEATED_CELL_CHARS = 200


def make_table_block(
    rows: Sequence[Sequence[str]],
    section_path: tuple[str, ...] = (),
    page: int | None = None,
    *,
    caption: str = "",
    has_header: bool = True,
) -> Block | None:
    cleaned = [[clean_inline(str(cell))[:MAX_CELL_CHARS] for cell in row[:MAX_COLUMNS]] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return None
    width = max(len(row) for row in cleaned)
    padded = [row + [""] * (width - len(row)) for row in cleaned]
    keep = [column for column in range(width) if any(row[column] for row in padded)]
    padded = [[row[column] for column in keep] for row in padded]
    caption = clean_inline(caption)[:MAX_CAPTION_CHARS] or (section_path[-1] if section_path else "")
    header: tuple[str, ...] = ()
    body = padded
    if has_header and (len(padded) > 1 or len(keep) > 1):  # one row of several cells: column names only
        header = _unique_names([name or f"column {index + 1}" for index, name in enumerate(padded[0])])
        body = padded[1:]
    if len(keep) == 1 and not header:
        # One column is a list, not a table: keep it as text.
        return Block(text="\n".join(row[0] for row in body), section_path=section_path, page=page)
    table = Table(header=header, rows=tuple(tuple(row) for row in body), caption=caption)
    return Block(text=render_table(table), section_path=section_path, page=page, table=table)


def _unique_names(names: list[str]) -> tuple[str, ...]:
    """Column names, a repeated one numbered from its second use ("Contact", "Contact (2)")."""
    seen: set[str] = set()
    uses: dict[str, int] = {}
    unique: list[str] = []
    for name in names:
        candidate = name
        while candidate in seen:
            uses[name] = uses.get(name, 1) + 1
            candidate = f"{name} ({uses[name]})"
        seen.add(candidate)
        unique.append(candidate)
    return tuple(unique)


def html_table(table: Any) -> tuple[str, list[list[str]], bool]:
    """An lxml ``<table>``: its caption, rows of cell texts, and whether the first row is a header
    (a ``<thead>``, or ``<th>`` for every cell that holds text: Texinfo's index leaves its spacer
    cells ``<td>``; or, in a table without ``<th>``, every text cell of the first row bold and not
    every one of the second: older pages and word processors mark their headers so). Rows of nested
    tables stay inside their cell's text."""
    from winnow.parsing.cleaning import spaced_text

    caption_element = table.find("caption")
    caption = clean_inline(spaced_text(caption_element)) if caption_element is not None else ""
    rows: list[list[str]] = []
    bold: list[bool] = []  # per row: every cell that holds text is bold
    has_header = table.find("thead") is not None
    for index, row in enumerate(table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")):
        cells = row.xpath("./td | ./th")
        texts = [clean_inline(spaced_text(cell)) for cell in cells]
        named = [(cell, text) for cell, text in zip(cells, texts, strict=True) if text]
        if index == 0 and named and all(cell.tag == "th" for cell, _ in named):
            has_header = True
        if index < 2:
            bold.append(bool(named) and all(_all_bold(cell, text) for cell, text in named))
        rows.append(texts)
    if not has_header and len(bold) == 2 and bold[0] and not bold[1]:
        has_header = True
    return caption, rows, has_header


def _all_bold(cell: Any, text: str) -> bool:
    """Whether all of ``cell``'s text (``text``, cleaned) is inside ``<b>`` or ``<strong>``."""
    from winnow.parsing.cleaning import spaced_text

    outer = [e for e in cell.iter("b", "strong") if e is not cell and not _inside_bold(e, cell)]
    return bool(outer) and clean_inline(" ".join(spaced_text(e) for e in outer)) == text


def _inside_bold(element: Any, cell: Any) -> bool:
    parent = element.getparent()
    while parent is not None and parent is not cell:
        if parent.tag in ("b", "strong"):
            return True
        parent = parent.getparent()
    return False


_DELIMITER_CELL = re.compile(r":?-+:?")
_PIPE_SPLIT = re.compile(r"(?<!\\)\|")


def is_pipe_delimiter_row(line: str, min_cells: int = 1) -> bool:
    """``| --- | :-: |``: the row under a pipe table's header. Split on pipes and checked cell by cell:
    the one-regex form (``^\\s*\\|?\\s*:?-+…``) backtracked quadratically on a line of spaces."""
    row = line.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|"):
        row = row[:-1]
    cells = row.split("|")
    return len(cells) >= min_cells and all(_DELIMITER_CELL.fullmatch(cell.strip()) for cell in cells)


def pipe_table(lines: Sequence[str]) -> list[list[str]] | None:
    """The rows of a Markdown (GFM) pipe table, header first, or None when ``lines`` are not one: a
    header line, a delimiter line of dashes, then rows, every line holding a ``|``."""
    if len(lines) < 2 or not is_pipe_delimiter_row(lines[1]) or not all("|" in line for line in lines):
        return None
    rows = []
    for index, line in enumerate(lines):
        if index == 1:
            continue
        stripped = line.strip()
        stripped = stripped[1:] if stripped.startswith("|") else stripped
        stripped = stripped[:-1] if stripped.endswith("|") and not stripped.endswith("\\|") else stripped
        rows.append([cell.strip().replace("\\|", "|") for cell in _PIPE_SPLIT.split(stripped)])
    return rows
