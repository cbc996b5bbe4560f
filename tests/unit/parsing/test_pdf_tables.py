"""Tables in text-layer PDFs become table blocks: whole rows with their column names, the header in
every chunk, the caption or the heading above as context; prose, lists and two-column pages do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.documents import make_pdf, make_pdf_pages_of_tables, make_table_pdf, make_two_column_pdf
from winnow.models import Block
from winnow.parsing import parse_document
from winnow.parsing.pdf_tables import MAX_FRAGMENTS, Fragment, find_tables
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document, max_chunk_chars

DEPOTS = [
    ["Site", "Manager", "Opening hours", "Phone"],
    ["Depot Amsterdam", "Ingrid Bakker", "06:00-22:00", "+31 20 555 0000"],
    ["Depot Rotterdam", "Pieter de Vries", "07:00-19:00", "+31 20 555 0001"],
    ["Depot Utrecht", "Fatima El Amrani", "05:30-23:00", "+31 20 555 0002"],
]
PROSE = (
    "Every depot accepts returns during its opening hours. Managers approve refunds above one hundred "
    "euros, and a refund below that is approved by the desk clerk on duty without a second signature."
)


def _tables(blocks: list[Block]) -> list[Block]:
    return [block for block in blocks if block.table is not None]


@pytest.mark.parametrize("ruled", [True, False], ids=["ruled", "unruled"])
def test_a_pdf_table_becomes_one_table_block_between_its_paragraphs(ruled: bool) -> None:
    # Given a PDF with a paragraph, a captioned table (with or without grid lines) and a closing line
    data = make_table_pdf(
        DEPOTS, caption="Table 1: Depot managers", before=PROSE, after="Call ahead on holidays.", ruled=ruled
    )
    # When it is parsed
    doc = parse_document("acme/depots.pdf", data)
    # Then the table is one table block with the header, every row whole, and the caption
    [table] = _tables(doc.blocks)
    assert table.table is not None and table.page == 1
    assert table.table.header == tuple(DEPOTS[0])
    assert [list(row) for row in table.table.rows] == DEPOTS[1:]
    assert table.table.caption == "Table 1: Depot managers"
    assert "Site: Depot Utrecht | Manager: Fatima El Amrani | Opening hours: 05:30-23:00" in table.text
    # And the prose around it stays text, in reading order, without the cells mixed in
    texts = [block.text for block in doc.blocks]
    assert texts.index(PROSE) < texts.index(table.text) < texts.index("Call ahead on holidays.")
    assert not any("Ingrid Bakker" in block.text for block in doc.blocks if block.table is None)
    # And the caption line is the table's, not a passage of its own competing with the table
    assert "Table 1: Depot managers" not in texts
    # And reportlab's placeholder title "(anonymous)" is no title: the file name is used
    assert doc.title == "depots"


@pytest.mark.parametrize("valign", ["BOTTOM", "TOP", "MIDDLE"])
def test_a_cell_wrapped_onto_several_lines_stays_in_its_row(valign: str) -> None:
    # Given a table whose note cells wrap onto two or three lines, the short cells aligned as given
    note = "Ships from warehouse {n}; fragile items are wrapped twice before they leave the dock"
    rows = [["Code", "Item", "Notes", "Price"]] + [
        [f"SKU-{n:04d}", f"Widget model {n}", note.format(n=n) if n % 3 == 0 else f"note {n}", f"{n * 3}.50"]
        for n in range(12)
    ]
    data = make_table_pdf(rows, valign=valign, column_widths=[70, 110, 160, 60])
    # When it is parsed
    [table] = _tables(parse_document("acme/prices.pdf", data).blocks)
    # Then each wrapped note is whole in its own row, beside that row's other cells
    assert table.table is not None
    assert [list(row) for row in table.table.rows] == rows[1:]


def test_a_cell_of_narrow_letters_that_fills_its_column_keeps_the_next_column_apart() -> None:
    # Given a table sized to its contents, whose widest "Covers" cell is set in narrow letters: from
    # its length alone it seems to reach the price column, two points of padding away
    rows = [
        ["Contract", "Covers", "Annual price (EUR)"],
        ["Basic", "One maintenance visit", "690"],
        ["Standard", "Two visits, parts, calibration", "1,240"],
        ["Premium", "Four visits, loan instrument", "2,760"],
    ]
    # When it is parsed
    [table] = _tables(parse_document("acme/contracts.pdf", make_table_pdf(rows)).blocks)
    # Then every row keeps its price in the price column, not run into the cell before it
    assert table.table is not None
    assert [list(row) for row in table.table.rows] == rows[1:]
    assert "Covers: Two visits, parts, calibration | Annual price (EUR): 1,240" in table.text


def test_a_table_over_several_pages_keeps_its_header_in_every_chunk() -> None:
    # Given a 150-row table that runs over several pages (its header repeated on each, as word
    # processors print it)
    rows = [["Part", "Bin", "Stock"]] + [[f"P-{n:04d}", f"B{n % 37}", str(n * 3)] for n in range(150)]
    doc = parse_document("acme/stock.pdf", make_table_pdf(rows, caption="Stock list"))
    tables = _tables(doc.blocks)
    # Then every page holds one table block, with the page it is on
    assert len(tables) >= 3
    assert [block.page for block in tables] == list(range(1, len(tables) + 1))
    # When it is chunked
    settings = ChunkingSettings(target_chars=600, overlap_chars=50, min_chars=50)
    chunks = chunk_document(doc, settings)
    table_chunks = [chunk for chunk in chunks if chunk.kind == "table"]
    # Then every chunk starts with the column line and no row is split or lost
    assert len(table_chunks) > 5
    for chunk in table_chunks:
        assert "Columns: Part | Bin | Stock\n" in chunk.text
        assert len(chunk.text) <= max_chunk_chars(settings)
    body = [line for chunk in table_chunks for line in chunk.text.split("\n") if line.startswith("Part: ")]
    assert body == [f"Part: P-{n:04d} | Bin: B{n % 37} | Stock: {n * 3}" for n in range(150)]


def test_a_table_without_a_caption_takes_the_heading_above_it() -> None:
    # Given a table under a short heading line and no "Table N" caption
    data = make_table_pdf(DEPOTS, before="Depot managers")
    # When it is parsed
    [table] = _tables(parse_document("acme/depots.pdf", data).blocks)
    # Then the heading is the table's caption, so every chunk of it says what it is about
    assert table.table is not None and table.table.caption == "Depot managers"


LICENSES = Path("/usr/share/common-licenses")


@pytest.mark.parametrize(
    "name",
    ["prose", "list", "two columns", "code"],
)
def test_prose_lists_two_column_pages_and_code_make_no_tables(name: str) -> None:
    # Given PDFs without a table: licence prose, bulleted and numbered lists, a two-column page, and
    # aligned code
    gpl = " ".join((LICENSES / "GPL-3").read_text().split()) if LICENSES.is_dir() else PROSE * 20
    documents = {
        "prose": make_pdf([gpl[:2500], gpl[2500:5000]]),
        "list": make_table_pdf(
            [["•", "Returns are accepted for thirty days."], ["•", "Refunds go to the original card."]]
            + [[f"{n}.", f"Step {n} of the returns procedure."] for n in range(1, 6)],
            ruled=False,
        ),
        "two columns": make_two_column_pdf(gpl[:3000]),
        "code": make_pdf(["x = 1    # one\n\ny = 22   # two\n\nz = 333  # three"]),
    }
    # When each is parsed
    doc = parse_document(f"acme/{name}.pdf", documents[name])
    # Then no block is a table and no text is lost to one
    assert _tables(doc.blocks) == []
    assert doc.blocks


@pytest.mark.parametrize("name", ["contents", "bulleted"])
def test_a_table_of_contents_and_a_bulleted_list_beside_text_make_no_tables(name: str) -> None:
    # Given, laid out in aligned columns as Texinfo and DocBook print them, a table of contents with
    # dot leaders and a list whose bullets start its first column (as nettle's and bzip2's manuals)
    rows = {
        "contents": [[f"7.1.{n}", f"SHA{n}" + " ." * 30, str(n + 8)] for n in range(6)],
        "bulleted": [[f"\u2022 tool{n}", f", alias{n}", f"- does thing {n}"] for n in range(4)],
    }
    # When it is parsed
    doc = parse_document(f"acme/{name}.pdf", make_table_pdf(rows[name], ruled=False))
    # Then no block is a table, and the text is kept
    assert _tables(doc.blocks) == []
    assert any("SHA3" in block.text or "tool3" in block.text for block in doc.blocks)


def test_a_list_of_definitions_tagged_alike_is_a_table_without_a_header() -> None:
    # Given definitions each tagged "[Constant]" on the right, as Texinfo prints a reference manual
    rows = [[f"AES{bits}_KEY_SIZE", "[Constant]"] for bits in (128, 192, 256, 512)]
    # When it is parsed
    [table] = _tables(parse_document("acme/aes.pdf", make_table_pdf(rows, ruled=False)).blocks)
    # Then its first row is a row like the others, not the names of the columns
    assert table.table is not None and table.table.header == ()
    assert [list(row) for row in table.table.rows] == rows


def test_table_search_is_bounded_on_a_page_with_a_huge_number_of_pieces() -> None:
    # Given a page whose text comes in more pieces than the table search looks at
    pieces = [
        Fragment(float(50 + 100 * (n % 3)), float(800 - 12 * (n // 3)), 10.0, f"cell {n}")
        for n in range(MAX_FRAGMENTS + 1)
    ]
    # Then no tables are looked for (the text is still read by the caller)
    assert find_tables(pieces) == []
    # And just under the bound the same kind of grid is searched and found
    assert find_tables(pieces[:30])


def test_a_pdf_table_comes_back_from_the_parse_budget_worker_as_a_table() -> None:
    from winnow.parsing.budget import parse_within_budget

    # Given a PDF with a table
    data = make_table_pdf(DEPOTS, caption="Table 1: Depot managers", before=PROSE)
    # When it is parsed under the parse budget (a worker process, as ingest does)
    parsed = parse_within_budget("acme/depots.pdf", data)
    # Then its table block arrives whole, exactly as an in-process parse
    assert _tables(parsed.blocks)
    assert parsed == parse_document("acme/depots.pdf", data)


def test_a_table_that_goes_on_over_pages_without_repeating_its_header_keeps_it() -> None:
    # Given a 150-row table over several pages whose header is printed on the first page only
    rows = [["Part", "Bin", "Stock"]] + [[f"P-{n:04d}", f"B{n % 37}", str(n * 3)] for n in range(150)]
    doc = parse_document("acme/stock.pdf", make_table_pdf(rows, caption="Stock list", repeat_header=False))
    tables = _tables(doc.blocks)
    # Then the table on each later page takes the first page's header and caption, and its first row
    # stays a row
    assert len(tables) >= 3
    assert [block.page for block in tables] == list(range(1, len(tables) + 1))
    for block in tables:
        assert block.table is not None
        assert block.table.header == ("Part", "Bin", "Stock")
        assert block.table.caption == "Stock list"
    assert [list(row) for block in tables if block.table for row in block.table.rows] == rows[1:]
    # And every chunk starts with the column line, no row split or lost
    chunks = chunk_document(doc, ChunkingSettings(target_chars=600, overlap_chars=50, min_chars=50))
    table_chunks = [chunk for chunk in chunks if chunk.kind == "table"]
    assert all("Columns: Part | Bin | Stock\n" in chunk.text for chunk in table_chunks)
    body = [line for chunk in table_chunks for line in chunk.text.split("\n") if line.startswith("Part: ")]
    assert body == [f"Part: P-{n:04d} | Bin: B{n % 37} | Stock: {n * 3}" for n in range(150)]


@pytest.mark.parametrize("rows_on_next_page", [1, 2])
def test_the_last_rows_of_a_table_alone_at_the_top_of_the_next_page_stay_in_the_table(
    rows_on_next_page: int,
) -> None:
    # Given a table whose last one or two rows go on to the next page, without its header
    count = 36 + rows_on_next_page
    rows = [["Part", "Bin", "Stock"]] + [[f"P-{n:04d}", f"B{n % 37}", str(n * 3)] for n in range(count)]
    doc = parse_document("acme/stock.pdf", make_table_pdf(rows, caption="Stock list", repeat_header=False))
    # Then those rows are a table on page 2 under the table's header and caption, not loose text
    tables = [block for block in _tables(doc.blocks) if block.table]
    assert [block.page for block in tables] == [1, 2]
    assert tables[1].table is not None and tables[1].table.header == ("Part", "Bin", "Stock")
    assert tables[1].table.caption == "Stock list"
    assert [list(row) for block in tables if block.table for row in block.table.rows] == rows[1:]
    assert not any("P-00" in block.text for block in doc.blocks if block.table is None)


def test_lines_in_a_tables_columns_after_text_that_ended_its_page_stay_text() -> None:
    # Given a table followed by a paragraph, and on the next page two lines in the same columns
    first = [["Part", "Bin", "Stock"]] + [[f"P-{n:04d}", f"B{n}", str(n)] for n in range(5)]
    second = [["T-0001", "S1", "2"], ["T-0002", "S2", "4"]]
    doc = parse_document("acme/two.pdf", make_pdf_pages_of_tables([first, second], after_first=PROSE))
    # Then the two lines are no rows of the first table: they are text, nothing lost
    assert [block.page for block in _tables(doc.blocks)] == [1]
    assert [block.text for block in doc.blocks if block.page == 2] == ["T-0001 S1 2", "T-0002 S2 4"]


def test_a_table_at_the_top_of_a_page_with_a_header_of_its_own_is_a_new_table() -> None:
    # Given two tables of the same column layout, the second at the top of the next page under a header
    # of its own (a word above a column of numbers)
    first = [["Part", "Bin", "Stock"]] + [[f"P-{n:04d}", f"B{n}", str(n)] for n in range(30)]
    second = [["Tool", "Shelf", "Count"]] + [[f"T-{n:04d}", f"S{n}", str(n * 2)] for n in range(5)]
    doc = parse_document("acme/two.pdf", make_pdf_pages_of_tables([first, second]))
    # Then the second page's table keeps its own header
    tables = [block.table for block in _tables(doc.blocks) if block.table]
    assert [table.header for table in tables] == [tuple(first[0]), tuple(second[0])]
    assert [list(row) for row in tables[1].rows] == second[1:]


def test_a_table_after_text_at_the_end_of_its_page_is_not_continued() -> None:
    # Given a table whose page goes on with a paragraph, and a table of the same layout on the next page
    first = [["Part", "Bin", "Stock"]] + [[f"P-{n:04d}", f"B{n}", str(n)] for n in range(5)]
    second = [["T-0001", "S1", "2"], ["T-0002", "S2", "4"], ["T-0003", "S3", "6"], ["T-0004", "S4", "8"]]
    data = make_pdf_pages_of_tables([first, second], after_first=PROSE)
    # When it is parsed
    tables = _tables(parse_document("acme/two.pdf", data).blocks)
    # Then the second table does not take the first one's header: its first row is its header
    assert [block.table.header for block in tables if block.table] == [tuple(first[0]), tuple(second[0])]
