"""PPTX, XLSX, CSV/TSV, reStructuredText, EPUB, extension-less files and table chunks, on generated files."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.office import Slide, make_epub, make_pptx, make_xlsx, zip_bomb
from winnow.errors import CorruptDocument, DocumentError, OversizedDocument, UnsupportedDocument
from winnow.models import ParsedDocument
from winnow.parsing import detect_type, office, parse_document
from winnow.parsing.cleaning import strip_terminal_codes
from winnow.settings import ChunkingSettings, IngestSettings
from winnow.text.chunking import chunk_document, max_chunk_chars

STAFF = [
    ["Name", "Office", "Extension", "Role"],
    ["Ada Lovelace", "London", "4411", "Analyst"],
    ["Grace Hopper", "Arlington", "5120", "Compiler lead"],
    ["Katherine Johnson", "Hampton", "7730", "Trajectory analysis"],
]


def tables_of(doc: ParsedDocument) -> list[str]:
    return [chunk.text for chunk in chunk_document(doc) if chunk.kind == "table"]


# --- XLSX ---------------------------------------------------------------------------------------------
def test_an_xlsx_sheet_is_a_section_and_a_table_whose_rows_name_their_columns() -> None:
    # Given a workbook with two sheets
    data = make_xlsx({"Staff": STAFF, "Budget": [["Quarter", "Spend"], ["Q1", 1200.0], ["Q2", 980.5]]})
    # When it is parsed and chunked
    doc = parse_document("acme/directory.xlsx", data)
    chunks = chunk_document(doc)
    # Then each sheet is a section holding one table, rows rendered as "column: value" pairs
    assert doc.source_type == "xlsx"
    assert [chunk.section_path for chunk in chunks] == [("Staff",), ("Budget",)]
    assert all(chunk.kind == "table" for chunk in chunks)
    assert "Name: Grace Hopper | Office: Arlington | Extension: 5120 | Role: Compiler lead" in chunks[0].text
    assert "Quarter: Q1 | Spend: 1200" in chunks[1].text and "Spend: 980.5" in chunks[1].text


def test_a_long_table_repeats_its_header_in_every_chunk_and_never_splits_a_row() -> None:
    # Given a sheet of 400 rows
    rows = [["Part", "Bin", "Stock"]] + [[f"P-{n:04d}", f"B{n % 37}", str(n * 3)] for n in range(400)]
    doc = parse_document("acme/stock.xlsx", make_xlsx({"Stock": rows}))
    settings = ChunkingSettings(target_chars=600, overlap_chars=50, min_chars=50)
    # When it is chunked
    chunks = chunk_document(doc, settings)
    # Then there are many chunks, each starting with the caption and the column line
    assert len(chunks) > 10
    for chunk in chunks:
        assert chunk.kind == "table"
        assert chunk.text.startswith("Stock\nColumns: Part | Bin | Stock\n")
        assert len(chunk.text) <= max_chunk_chars(settings)
    # and every row appears whole exactly once
    body = [line for chunk in chunks for line in chunk.text.split("\n")[2:]]
    assert body == [f"Part: P-{n:04d} | Bin: B{n % 37} | Stock: {n * 3}" for n in range(400)]


def test_a_sheet_of_100_columns_keeps_every_column() -> None:
    # Given a sheet of 100 columns (an export from a measuring device)
    header = [f"Measurement {n}" for n in range(100)]
    rows = [header] + [[f"r{r}c{n}" for n in range(100)] for r in range(3)]
    # When it is parsed and chunked
    doc = parse_document("acme/wide.xlsx", make_xlsx({"Readings": rows}))
    text = "\n".join(tables_of(doc))
    # Then every column keeps its name and every value is in a chunk, beside its column's name
    [table] = [block.table for block in doc.blocks if block.table is not None]
    assert table.header == tuple(header)
    assert all(f"Measurement {n}: r{r}c{n}" in text for r in range(3) for n in range(100))


def test_a_csv_cell_holding_a_long_paragraph_is_kept_whole_over_several_chunks() -> None:
    # Given a CSV whose cell holds a paragraph of 3,000 characters
    paragraph = " ".join(f"clause{n}" for n in range(380))
    data = f'Article,Text\n12,"{paragraph}"\n13,Short\n'.encode()
    # When it is parsed and chunked
    chunks = tables_of(parse_document("acme/terms.csv", data))
    # Then every word of the paragraph is in the table chunks, in order, each line naming its row
    lines = [line for chunk in chunks for line in chunk.split("\n") if line.startswith("Article: 12 | ")]
    assert " ".join(line.removeprefix("Article: 12 | Text: ") for line in lines) == paragraph


def test_a_table_of_column_names_only_is_a_table_of_its_names() -> None:
    # Given a CSV that holds its header row and nothing else
    doc = parse_document("acme/empty-list.csv", b"Name,Email,Phone\n")
    # Then it is one table chunk naming its columns, which the page draws as a table
    assert tables_of(doc) == ["empty list\nColumns: Name | Email | Phone"]


def _with_cached_results(xlsx: bytes, results: dict[str, str]) -> bytes:
    """The workbook as a spreadsheet program saves it: ``results`` (formula -> value) cached in <v>."""
    source = zipfile.ZipFile(io.BytesIO(xlsx))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            content = source.read(member)
            if member.filename.startswith("xl/worksheets/"):
                for formula, value in results.items():
                    content = content.replace(
                        f"<f>{formula}</f><v></v>".encode(), f"<f>{formula}</f><v>{value}</v>".encode()
                    )
            target.writestr(member, content)
    return out.getvalue()


def test_formulas_without_cached_results_keep_their_text_and_cached_results_win() -> None:
    # Given a workbook written by a library (openpyxl stores formulas, never their results), one of
    # whose formulas a spreadsheet program has since computed and cached
    written = make_xlsx(
        {
            "Orders": [
                ["Item", "Qty", "Price", "Total"],
                ["Pens", 3, 2, "=B2*C2"],
                ["Ink", 2, 5, "=B3*C3"],
                ["All", None, None, "=SUM(D2:D3)"],
            ]
        }
    )
    data = _with_cached_results(written, {"B2*C2": "6"})
    # When it is parsed
    [table] = tables_of(parse_document("acme/orders.xlsx", data))
    # Then the computed cell shows its result, the others their formula, and no column is left empty
    assert "Item: Pens | Qty: 3 | Price: 2 | Total: 6" in table
    assert "Item: Ink | Qty: 2 | Price: 5 | Total: =B3*C3" in table
    assert "Item: All | Total: =SUM(D2:D3)" in table


def test_a_workbook_whose_formulas_are_all_cached_is_read_for_its_values_only() -> None:
    # Given every formula computed by a spreadsheet program
    written = make_xlsx({"S": [["Label", "Total"], ["One", 1], ["Sum", "=B2*2"]]})
    data = _with_cached_results(written, {"B2*2": "2"})
    # When it is parsed
    assert not office._has_uncached_formulas(data)  # (so it is read once)
    [table] = tables_of(parse_document("acme/s.xlsx", data))
    # Then it reads as the program shows it
    assert "Label: Sum | Total: 2" in table and "=B2" not in table


def test_a_huge_sheet_is_refused_with_a_reason() -> None:
    rows = [["n"]] + [[str(n)] for n in range(100_001)]
    with pytest.raises(OversizedDocument, match="rows"):
        parse_document("acme/huge.xlsx", make_xlsx({"Data": rows}))


def test_sheet_cells_are_counted_to_the_last_value_of_each_row_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from winnow.parsing import office

    monkeypatch.setattr(office, "MAX_SHEET_CELLS", 1_000)
    # Given a sheet with one row of 200 cells above 700 rows of one cell (openpyxl pads every row to
    # the widest), within a budget of 1,000 cells
    narrow = [[f"c{n}" for n in range(200)]] + [[f"r{n}"] for n in range(700)]
    # Then it is read: the padding is not counted
    assert parse_document("acme/narrow.xlsx", make_xlsx({"Data": narrow})).blocks
    # Given a sheet of 40 rows of 30 cells, over the budget
    wide = [[f"r{r}c{n}" for n in range(30)] for r in range(40)]
    # Then it is refused with the reason
    with pytest.raises(OversizedDocument, match="1000 cells"):
        parse_document("acme/wide.xlsx", make_xlsx({"Data": wide}))


def test_a_corrupt_xlsx_is_a_one_line_reason() -> None:
    data = bytearray(make_xlsx({"Staff": STAFF}))
    data[len(data) // 2 : len(data) // 2 + 200] = bytes(200)
    with pytest.raises(DocumentError) as caught:
        parse_document("acme/broken.xlsx", bytes(data))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("key", "marker"),
    [
        ("acme/bomb.xlsx", "xl/workbook.xml"),
        ("acme/bomb.pptx", "ppt/presentation.xml"),
        ("acme/bomb.epub", "META-INF/container.xml"),
    ],
)
def test_zip_bombs_are_refused_before_inflating(key: str, marker: str) -> None:
    with pytest.raises(OversizedDocument, match="zip bomb"):
        parse_document(key, zip_bomb(marker))


# --- PPTX ---------------------------------------------------------------------------------------------
def test_a_slide_is_a_page_its_title_the_section_and_its_notes_are_kept() -> None:
    # Given a deck whose second slide has a table and speaker notes
    data = make_pptx(
        [
            Slide("Quarterly review", ["Revenue grew in every region"]),
            Slide(
                "Regional figures",
                ["North led the quarter"],
                notes="Mention that the Oslo office opened in March.",
                table=[["Region", "Revenue"], ["North", "4.2M"], ["South", "3.1M"]],
            ),
        ]
    )
    # When it is parsed
    doc = parse_document("acme/review.pptx", data)
    # Then the title is the first slide's, pages are slide numbers, sections are slide titles
    assert doc.title == "Quarterly review" and doc.source_type == "pptx"
    pages = {block.page for block in doc.blocks}
    assert pages == {1, 2}
    second = [block for block in doc.blocks if block.page == 2]
    assert all(block.section_path == ("Regional figures",) for block in second)
    assert any(b.text == "Speaker notes: Mention that the Oslo office opened in March." for b in second)
    (table,) = [block for block in second if block.table is not None]
    assert "Region: North | Revenue: 4.2M" in table.text


def test_a_slide_table_cell_merged_across_columns_or_down_rows_names_each_it_covers() -> None:
    import io

    from pptx import Presentation
    from pptx.util import Inches

    # Given a slide whose table has a header cell merged across two columns and a cell merged down two rows
    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Sales"
    grid = [["Region", "Units", ""], ["North", "10", "12"], ["", "7", "9"]]
    table = slide.shapes.add_table(3, 3, Inches(1), Inches(2), Inches(8), Inches(2)).table
    for r, row in enumerate(grid):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(0, 1).merge(table.cell(0, 2))
    table.cell(1, 0).merge(table.cell(2, 0))
    buffer = io.BytesIO()
    presentation.save(buffer)
    # When it is parsed
    [block] = [b for b in parse_document("acme/sales.pptx", buffer.getvalue()).blocks if b.table]
    # Then both columns under the merged header are named by it, and both rows by the merged region
    assert block.table is not None
    assert block.table.header == ("Region", "Units", "Units (2)")
    assert block.table.rows == (("North", "10", "12"), ("North", "7", "9"))


def test_a_corrupt_pptx_is_a_one_line_reason() -> None:
    data = make_pptx([Slide("A", ["b"])])
    import zipfile
    from io import BytesIO

    out = BytesIO()
    with zipfile.ZipFile(BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            target.writestr(item, b"<not-xml" if item.filename == "ppt/presentation.xml" else body)
    with pytest.raises(CorruptDocument):
        parse_document("acme/broken.pptx", out.getvalue())


# --- CSV / TSV ----------------------------------------------------------------------------------------
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


# --- reStructuredText -----------------------------------------------------------------------------------
RST = """\
=============
Backup policy
=============

Nightly backups
===============

Backups run at **02:00** every night and are kept for `thirty days <https://example.org>`_.

.. note::
   Restores are tested every quarter.

.. image:: diagram.png

Retention
---------

+------------+-----------+
| Tier       | Kept      |
+============+===========+
| Daily      | 30 days   |
+------------+-----------+
| Monthly    | 12 months |
+------------+-----------+
"""


def test_rst_sections_inline_markup_directives_and_grid_tables() -> None:
    doc = parse_document("acme/backup.rst", RST.encode())
    assert doc.title == "Backup policy"
    texts = {block.text: block.section_path for block in doc.blocks}
    assert texts["Backups run at 02:00 every night and are kept for thirty days."] == ("Nightly backups",)
    assert texts["Restores are tested every quarter."] == ("Nightly backups",)
    assert not any("diagram.png" in text for text in texts)
    (table,) = [block for block in doc.blocks if block.table is not None]
    assert table.section_path == ("Nightly backups", "Retention")
    assert "Tier: Monthly | Kept: 12 months" in table.text


def test_rst_simple_table_span_underlines_are_not_rows_and_wrapped_lines_join_their_row() -> None:
    # Given a simple table as pyparsing's docs write one: the header underlined with dashes, and a
    # cell whose text wraps onto a line with an empty first column
    source = (
        "Charsets\n========\n\n"
        "=========  ==========  ===========\n"
        "Set        Alias       Description\n"
        "---------  ----------  -----------\n"
        "Arabic     arab        Right to left\n"
        "                       script\n"
        "Greek      grek\n"
        "=========  ==========  ===========\n"
    )
    # When it is parsed
    [block] = [b for b in parse_document("acme/sets.rst", source.encode()).blocks if b.table]
    # Then the dashes are no row, and the wrapped line belongs to the row above
    assert block.table is not None
    assert block.table.header == ("Set", "Alias", "Description")
    assert block.table.rows == (("Arabic", "arab", "Right to left script"), ("Greek", "grek", ""))


# --- EPUB ---------------------------------------------------------------------------------------------
def test_epub_chapters_in_spine_order_with_their_headings() -> None:
    data = make_epub(
        "Field guide", [("Birds", "Herons wade in shallow water."), ("Trees", "Oaks live for centuries.")]
    )
    doc = parse_document("acme/guide.epub", data)
    assert doc.title == "Field guide" and doc.source_type == "epub"
    assert [(b.text, b.section_path) for b in doc.blocks] == [
        ("Herons wade in shallow water.", ("Birds",)),
        ("Oaks live for centuries.", ("Trees",)),
    ]


def test_an_xhtml_chapter_declaring_entities_in_its_doctype_leaks_no_markup() -> None:
    # Given chapters whose XHTML declares entities in an internal DTD subset, as EPUB tools write
    doctype = (
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd" [\n'
        '<!ENTITY nbsp "&#160;">\n<!ENTITY mdash "&#8212;">\n]>\n'
    )
    data = make_epub("Field guide", [("Herons", "Herons&nbsp;wade &mdash; slowly.")], doctype=doctype)
    # When the book is parsed
    doc = parse_document("acme/guide.epub", data)
    # Then the chapter reads as its text under its heading: no "]>" and no title turned into text
    assert [(b.text, b.section_path) for b in doc.blocks] == [("Herons wade \u2014 slowly.", ("Herons",))]


def test_a_chapter_listed_many_times_in_the_spine_is_read_once() -> None:
    # Given a book whose spine lists its first chapter again and again (a tool's repeated itemrefs)
    data = make_epub(
        "Field guide",
        [("Birds", "Herons wade in shallow water."), ("Trees", "Oaks live for centuries.")],
        spine=[1, 2, 1, 1, 2, 1],
    )
    # When it is parsed
    doc = parse_document("acme/guide.epub", data)
    # Then each chapter is indexed once, in the order of its first appearance
    assert [b.text for b in doc.blocks] == ["Herons wade in shallow water.", "Oaks live for centuries."]


# --- sniffing -----------------------------------------------------------------------------------------
def test_files_without_an_extension_are_sniffed() -> None:
    assert detect_type("acme/README", b"Plain words in a readme.\n") == "text"
    assert detect_type("acme/page", b"<!DOCTYPE html><html><body><p>x</p></body></html>") == "html"
    assert detect_type("acme/deck", make_pptx([Slide("A", ["b"])])) == "pptx"
    assert detect_type("acme/book", make_xlsx({"S": STAFF})) == "xlsx"
    assert detect_type("acme/scan", b"\x89PNG\r\n\x1a\n" + bytes(40)) == "image"


@pytest.mark.parametrize(
    ("key", "data", "expected"),
    [
        ("acme/README.Debian", b"Notes for Debian\n================\n\nThe daemon starts on boot.\n", "text"),
        ("acme/NEWS.old", "Version 1.2: fixed the caf\u00e9 crash.\n".encode("cp1252"), "text"),
        ("acme/app.conf", b"# where logs go\nlog_dir = /var/log/app\n", "text"),
        ("acme/build.log", b"\x1b[32mok\x1b[0m compiled 12 files\n", "text"),
        ("acme/manual.html.en", b"<!DOCTYPE html><html><body><p>Hello</p></body></html>", "html"),
        ("acme/page.php", b"<?xml version='1.0'?>\n<html xmlns='urn:x'><p>x</p>", "html"),
    ],
)
def test_an_unknown_extension_holding_text_is_read_by_its_content(
    key: str, data: bytes, expected: str
) -> None:
    # Given a file whose extension names no type Winnow reads, but whose bytes are text
    # When its type is decided
    # Then the content decides, as for a file without an extension
    assert detect_type(key, data) == expected


@pytest.mark.parametrize(
    ("key", "title"),
    [
        ("acme/README.Debian", "README.Debian"),
        ("acme/resolv.conf", "resolv.conf"),
        ("acme/q3_notes.txt", "q3 notes"),
    ],
)
def test_a_file_named_with_no_document_extension_keeps_its_whole_name_as_title(key: str, title: str) -> None:
    # Given text without a heading, under a name whose suffix is part of the name, not a format
    # When it is parsed, its title is the name people call it by; only a format's extension goes
    assert parse_document(key, b"nameserver 10.0.0.53\n").title == title


def test_readme_debian_gzipped_is_read_as_text_with_its_heading() -> None:
    # Given a Debian changelog as packages ship it: changelog.Debian.gz
    import gzip

    text = b"Release notes\n=============\n\nThe cache is now flushed on shutdown.\n"
    # When it is parsed
    doc = parse_document("acme/changelog.Debian.gz", gzip.compress(text))
    # Then its words are indexed, under its heading
    assert doc.source_type == "text" and doc.title == "Release notes"
    assert [block.text for block in doc.blocks] == ["The cache is now flushed on shutdown."]


@pytest.mark.parametrize(
    ("key", "data", "reason_part"),
    [
        ("acme/sheet.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "legacy Office (OLE2)"),
        ("acme/letter.odt", make_xlsx({"S": STAFF}), "zip archive"),
        ("acme/report.bak", b"%PDF-1.7\n1 0 obj", "content is a PDF"),
        ("acme/photo.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00" + bytes(64), "binary"),
        ("acme/tool.exe", b"MZ\x90\x00\x03" + bytes(200), "binary"),
        ("acme/logo.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0"/></svg>', "SVG"),
        ("acme/data.xml", b'<?xml version="1.0"?>\n<catalog><book id="1"/></catalog>', "XML"),
        ("acme/letter.rtf", b"{\\rtf1\\ansi Dear reader}", "RTF"),
        ("acme/figure.eps", b"%!PS-Adobe-3.0 EPSF-3.0\n", "PostScript"),
        ("acme/ls.1", b'.\\" DO NOT MODIFY THIS FILE!\n.TH LS "1" "2022"\n.SH NAME\nls \\- list\n', "troff"),
        ("acme/init.1", b".so man1/systemd.1\n", "troff"),
    ],
)
def test_an_unknown_extension_holding_binary_or_markup_is_refused_in_one_line(
    key: str, data: bytes, reason_part: str
) -> None:
    # Given a file whose extension names no type Winnow reads and whose bytes are no text to index
    # When it is parsed
    with pytest.raises(UnsupportedDocument) as caught:
        parse_document(key, data)
    # Then it is refused with one line naming the extension, what the bytes are, and what is read
    # (or how to make it readable)
    reason = str(caught.value)
    assert reason_part in reason and repr(key[key.rindex(".") :]) in reason
    assert "\n" not in reason and ("supported:" in reason or "save it as text" in reason)


def test_extension_is_checked_against_the_first_bytes() -> None:
    with pytest.raises(DocumentError, match="not a PPTX"):
        parse_document("acme/deck.pptx", b"just text")
    with pytest.raises(DocumentError, match=r"ppt/presentation\.xml"):
        parse_document("acme/deck.pptx", make_xlsx({"S": STAFF}))


# --- terminal codes -------------------------------------------------------------------------------------
def test_ansi_escapes_and_backspace_overstrike_are_removed() -> None:
    man = "N\bNA\bAM\bME\bE\n     ls - list \x1b[1mdirectory\x1b[0m contents, _\bs_\bo_\br_\bt_\be_\bd\n"
    doc = parse_document("acme/ls.txt", man.encode())
    assert [block.text for block in doc.blocks] == ["NAME ls - list directory contents, sorted"]


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789", min_size=1, max_size=8)
_CODE = st.sampled_from(
    ["\x1b[1m", "\x1b[0m", "\x1b[31;1m", "\x1b]8;;http://x\x07", "\x1b]8;;\x1b\\", "\x1b(B"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_WORD, st.lists(_CODE, max_size=2), st.booleans()), min_size=1, max_size=30))
def test_cleaning_keeps_every_word_and_adds_none(parts: list[tuple[str, list[str], bool]]) -> None:
    # Given words decorated with escape codes and, some of them, overstruck in bold
    source_words = [word for word, _, _ in parts]
    decorated = " ".join(
        "".join(codes) + ("".join(f"{c}\b{c}" for c in word) if bold else word) + "".join(codes)
        for word, codes, bold in parts
    )
    # When it is cleaned
    cleaned = strip_terminal_codes(decorated)
    # Then the words are exactly the source's words: none lost, none added
    assert cleaned.split() == source_words


def test_table_rows_keep_their_column_names_in_a_chunk_any_reader_understands() -> None:
    doc = parse_document("acme/staff.csv", "\n".join(",".join(r) for r in STAFF).encode())
    (chunk,) = chunk_document(doc)
    assert chunk.kind == "table"
    assert re.search(
        r"^Name: Ada Lovelace \| Office: London \| Extension: 4411 \| Role: Analyst$", chunk.text, re.M
    )
    assert chunk.embed_text.startswith("staff")


def test_settings_bound_the_ingest_of_new_formats() -> None:
    # The zip checks use the same limits as DOCX
    tight = IngestSettings(max_uncompressed_bytes=10_000)
    with pytest.raises(OversizedDocument):
        parse_document("acme/staff.xlsx", make_xlsx({"S": STAFF * 200}), tight)
