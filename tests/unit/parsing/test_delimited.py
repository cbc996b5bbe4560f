"""CSV and TSV files into table blocks, bounded."""

from __future__ import annotations

import re

import pytest

from tests.support.samples import STAFF, tables_of
from winnow.errors import CorruptDocument
from winnow.parsing import parse_document
from winnow.text.chunking import chunk_document


def test_a_csv_cell_holding_a_long_paragraph_is_kept_whole_over_several_chunks() -> None:
    # Given a CSV whose cell holds a paragraph of 3,000 characters
    paragraph = " ".join(f"clause{n}" for n in range(380))
    data = f'Article,Text\n12,"{paragraph}"\n13,Short\n'.encode()
    # When it is parsed and chunked
    chunks = tables_of(parse_document("acme/terms.csv", data))
    # Then every word of the paragraph is in the table chunks, in order, each line naming its row
    lines = [line for chunk in chunks for line in chunk.split("\n") if line.startswith("Article: 12 | ")]
    assert " ".join(line.removeprefix("Article: 12 | Text: ") for line in lines) == paragraph


@pytest.mark.parametrize(
    ("key", "delimiter"), [("acme/staff.csv", ","), ("acme/staff.csv", ";"), ("acme/staff.tsv", "\t")]
)
def test_delimited_files_become_tables(key: str, delimiter: str) -> None:
    text = "\n".join(delimiter.join(row) for row in STAFF).encode()
    doc = parse_document(key, text)
    (table,) = tables_of(doc)
    assert "Name: Katherine Johnson | Office: Hampton | Extension: 7730" in table
    assert table.startswith("staff\nColumns: Name | Office | Extension | Role")


def test_a_csv_with_a_giant_field_is_refused() -> None:
    data = b"a,b\n" + b"x," + b"y" * 200_000 + b"\n"
    with pytest.raises(CorruptDocument, match="CSV"):
        parse_document("acme/giant.csv", data)


def test_table_rows_keep_their_column_names_in_a_chunk_any_reader_understands() -> None:
    doc = parse_document("acme/staff.csv", "\n".join(",".join(r) for r in STAFF).encode())
    (chunk,) = chunk_document(doc)
    assert chunk.kind == "table"
    assert re.search(
        r"^Name: Ada Lovelace \| Office: London \| Extension: 4411 \| Role: Analyst$", chunk.text, re.M
    )
    assert chunk.embed_text.startswith("staff")
