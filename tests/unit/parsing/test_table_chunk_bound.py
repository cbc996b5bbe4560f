"""Chunks per byte of a table are bounded (issue 44, item 13): a 1 MB CSV of long cells became 7,429
chunks (277 s and 451 MB in the ingest process); a Markdown table the same. A cell longer than a table
chunk goes on over text-sized lines, and a long table packs its rows into text-sized chunks, so each
chunk carries a fair share of the document's own text, whatever the shape of its cells."""

from __future__ import annotations

import pytest

from tests.support.tables import table_csv, table_rows
from winnow.parsing.delimited import parse_delimited
from winnow.parsing.markdown import parse_markdown
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document

SIZE = 200_000


def _markdown(long_cells: bool) -> str:
    header, row = table_rows(long_cells)
    lines = ["# Sheet", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    size = sum(len(line) for line in lines)
    while size < SIZE:
        lines.append("| " + " | ".join(row()) + " |")
        size += len(lines[-1]) + 1
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("form", "long_cells", "most_per_kb"),
    [("csv", True, 2.0), ("markdown", True, 2.0), ("csv", False, 5.0), ("markdown", False, 5.0)],
)
def test_a_table_makes_a_bounded_number_of_chunks_per_byte(
    form: str, long_cells: bool, most_per_kb: float
) -> None:
    # Given 200 KB of table: paragraphs in cells, or many short cells
    text = table_csv(long_cells, SIZE) if form == "csv" else _markdown(long_cells)
    parsed = parse_delimited("t/sheet.csv", text) if form == "csv" else parse_markdown("t/sheet.md", text)
    settings = ChunkingSettings()
    # When it is chunked with the default sizes
    chunks = chunk_document(parsed, settings)
    # Then the chunks are few for its size (plain text makes about one per KB), none over the size
    # guarantee, and together they hold every word of every cell
    assert len(chunks) <= most_per_kb * len(text.encode()) / 1000, len(chunks)
    assert max(len(c.text) for c in chunks) <= settings.target_chars
    assert sum(len(c.text) for c in chunks) >= len(text) * 0.9
