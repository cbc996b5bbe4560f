"""CSV and TSV: one table, its first row the header, split into table chunks by whole rows.

The delimiter of a ``.csv`` is sniffed among comma, semicolon, tab and pipe (spreadsheets in many
locales write semicolons); ``.tsv`` is tab. Field size and row count are bounded, so a hostile file
(one 20 MB field, a million empty rows) is refused or read within fixed memory.
"""

from __future__ import annotations

import csv
import io

from winnow.errors import CorruptDocument, OversizedDocument
from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document, one_line, title_from_key
from winnow.parsing.cleaning import clean_inline

MAX_ROWS = 100_000
MAX_FIELD_CHARS = 100_000
_SNIFF_CHARS = 64 * 1024
_TITLE_COLUMNS = 6


def parse_delimited(key: str, text: str, *, tab: bool = False) -> ParsedDocument:
    delimiter = "\t" if tab else _sniff_delimiter(text[:_SNIFF_CHARS])
    rows: list[list[str]] = []
    previous_limit = csv.field_size_limit()
    try:
        csv.field_size_limit(MAX_FIELD_CHARS)
        for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter):
            if len(rows) >= MAX_ROWS:
                raise OversizedDocument(f"table has more than {MAX_ROWS} rows (limit)")
            rows.append(row)
    except csv.Error as error:
        raise CorruptDocument(f"unreadable CSV ({one_line(error)})") from error
    finally:
        csv.field_size_limit(previous_limit)
    caption = title_from_key(key)
    collector = BlockCollector()
    collector.add_table(rows, caption=caption)
    title = table_title(caption, rows[0] if rows else [])
    return finish_document(
        collector.blocks, title=title, key=key, source_type="csv", empty_reason="table has no cells"
    )


def table_title(name: str, header: list[str]) -> str:
    """``debian table: version, codename, series, ...``: a file name alone (``debian``) says nothing of
    what the table holds; its columns do."""
    columns = [clean_inline(cell) for cell in header if clean_inline(cell)]
    if not columns:
        return name
    shown = ", ".join(columns[:_TITLE_COLUMNS]) + (", ..." if len(columns) > _TITLE_COLUMNS else "")
    return f"{name} table: {shown}"


def _sniff_delimiter(sample: str) -> str:
    lines = [line for line in sample.splitlines()[:50] if line.strip()]
    if not lines:
        return ","
    best, best_score = ",", 0.0
    for candidate in (",", ";", "\t", "|"):
        counts = [line.count(candidate) for line in lines]
        if not counts[0]:
            continue
        consistent = sum(1 for count in counts if count == counts[0]) / len(counts)
        score = consistent * counts[0]
        if score > best_score:
            best, best_score = candidate, score
    return best
