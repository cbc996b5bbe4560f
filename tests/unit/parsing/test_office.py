"""PPTX, XLSX and EPUB into blocks, on files as people and tools write them (python-pptx, openpyxl,
pandoc) and hostile variants of each, every one bounded."""

from __future__ import annotations

import io
import re
import zipfile
from io import BytesIO

import pytest

from tests.support.office import (
    Slide,
    make_epub,
    make_plain_xlsx,
    make_pptx,
    make_xlsx,
    with_member,
    zip_bomb,
)
from tests.support.samples import STAFF, tables_of
from winnow.errors import CorruptDocument, DocumentError, OversizedDocument
from winnow.parsing import parse_document, xlsx
from winnow.settings import ChunkingSettings, IngestSettings
from winnow.text.chunking import chunk_document, max_chunk_chars


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
    assert not xlsx._has_uncached_formulas(data)  # (so it is read once)
    [table] = tables_of(parse_document("acme/s.xlsx", data))
    # Then it reads as the program shows it
    assert "Label: Sum | Total: 2" in table and "=B2" not in table


def test_a_huge_sheet_is_refused_with_a_reason() -> None:
    # Given a sheet of more rows with values than the limit (written straight into its zip: openpyxl
    # spends seconds building it)
    rows: list[list[str | int]] = [["n"]] + [[n] for n in range(100_001)]
    # Then it is refused, naming the limit
    with pytest.raises(OversizedDocument, match="more than 100000 rows"):
        parse_document("acme/huge.xlsx", make_plain_xlsx(rows))


def test_sheet_cells_are_counted_to_the_last_value_of_each_row_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(xlsx, "MAX_SHEET_CELLS", 1_000)
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


def test_reading_a_row_converts_its_values_and_not_the_padding_to_the_widest_sheet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a sheet of 51 rows of two values (openpyxl hands each row over padded to 256 columns)
    rows = [["Part", "Stock"]] + [[f"P-{n}", n] for n in range(50)]
    converted: list[object] = []
    convert = xlsx._cell_text
    monkeypatch.setattr(xlsx, "_cell_text", lambda value: converted.append(value) or convert(value))
    # When it is parsed
    doc = parse_document("acme/stock.xlsx", make_xlsx({"Stock": rows}))
    # Then every value is read, and only the 102 values were converted (the work is the sheet's, not
    # 256 cells a row)
    assert "Part: P-49 | Stock: 49" in "\n".join(tables_of(doc))
    assert len(converted) == 102


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
    # Given a real bomb (zeros inflating past the limit) under a limit lowered through the settings,
    # so the bomb need not inflate past the 200 MB default to test the same check
    limit = IngestSettings(max_uncompressed_bytes=16 * 1024 * 1024)
    bomb = zip_bomb(marker, size=24 * 1024 * 1024)
    # Then it is refused from its central directory, before anything is inflated
    with pytest.raises(OversizedDocument, match="zip bomb"):
        parse_document(key, bomb, limit)


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


def test_settings_bound_the_ingest_of_new_formats() -> None:
    # The zip checks use the same limits as DOCX
    tight = IngestSettings(max_uncompressed_bytes=10_000)
    with pytest.raises(OversizedDocument):
        parse_document("acme/staff.xlsx", make_xlsx({"S": STAFF * 200}), tight)


SHEET_NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'


# Nine levels of ten: a billion "lol"s if an XML parser expanded them.
BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + "".join(f'<!ENTITY lol{level} "{f"&lol{level - 1};" * 10}">' for level in range(1, 10))
    + "]>"
)


def _row(number: int, *values: str) -> str:
    cells = "".join(
        f'<c r="{column}{number}" t="inlineStr"><is><t>{value}</t></is></c>'
        for column, value in zip("ABCDEFGH", values, strict=False)
    )
    return f'<row r="{number}">{cells}</row>'


def _with_sheet(rows: str, dimension: str = "A1:B2", prolog: str = "") -> bytes:
    base = make_xlsx({"Staff": [["Name", "Office"], ["Ada", "London"]]})
    sheet = f'{prolog}<worksheet {SHEET_NS}><dimension ref="{dimension}"/><sheetData>{rows}</sheetData>'
    sheet += "</worksheet>"
    return with_member(base, "xl/worksheets/sheet1.xml", sheet.encode())


def test_a_stray_cell_in_the_last_row_of_a_sheet_does_not_refuse_the_workbook() -> None:
    # Given a sheet of two rows and one value typed in row 1,048,576 (Excel's last row)
    rows = _row(1, "Name", "Office") + _row(2, "Ada", "London") + _row(1_048_576, "Total", "1")
    data = _with_sheet(rows, dimension="A1:B1048576")
    # When it is parsed: the million empty rows between do not count as rows
    (block,) = parse_document("acme/staff.xlsx", data).blocks
    # Then every value is kept
    assert block.table is not None
    assert block.table.rows == (("Ada", "London"), ("Total", "1"))


def test_a_sheet_claiming_rows_past_any_spreadsheet_is_refused_after_a_bounded_scan() -> None:
    # Given rows numbered past what two full sheets hold: every row between is read as empty
    data = _with_sheet(_row(1, "Name", "Office") + _row(3_000_000, "Far", "away"), dimension="A1:B3000000")
    with pytest.raises(OversizedDocument, match="span more than"):
        parse_document("acme/far.xlsx", data)


def test_a_dimension_claim_of_a_million_rows_costs_nothing() -> None:
    data = _with_sheet(_row(1, "Name", "Office") + _row(2, "Ada", "London"), dimension="A1:XFD1048576")
    (block,) = parse_document("acme/claim.xlsx", data).blocks
    assert block.table is not None and block.table.rows == (("Ada", "London"),)


def test_hidden_sheets_and_hidden_slides_are_not_indexed() -> None:
    # Given a workbook with a hidden lookup sheet, and a deck with a hidden slide
    workbook = make_xlsx(
        {"Prices": [["Item", "Price"], ["Tea", "2"]], "Lookup": [["Code", "Secret"], ["x1", "hunter2"]]},
        hidden=["Lookup"],
    )
    deck = make_pptx([Slide("Shown", ["Revenue grew"]), Slide("Backup", ["Draft figures"], hidden=True)])
    # Then only what a reader or the audience sees is kept
    sheets = parse_document("acme/prices.xlsx", workbook)
    assert [block.section_path for block in sheets.blocks] == [("Prices",)]
    slides = parse_document("acme/deck.pptx", deck)
    assert [block.text for block in slides.blocks] == ["Revenue grew"]


def test_epub_chapters_whose_file_names_need_percent_encoding_are_read() -> None:
    # Given an EPUB whose manifest names "Chapter 1.xhtml" as "Chapter%201.xhtml", as it must
    data = make_epub(
        "Field guide", [("Birds", "Herons wade."), ("Trees", "Oaks grow.")], "Chapter {number}.xhtml"
    )
    doc = parse_document("acme/guide.epub", data)
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        (("Birds",), "Herons wade."),
        (("Trees",), "Oaks grow."),
    ]


def test_entity_expansion_in_sheet_slide_and_chapter_xml_is_never_performed() -> None:
    sheet = _with_sheet(_row(1, "Name", "&lol9;") + _row(2, "Ada", "x"), prolog=BILLION_LAUGHS)
    with pytest.raises(CorruptDocument):
        parse_document("acme/laughs.xlsx", sheet)
    deck = make_pptx([Slide("Review", ["Revenue grew"])])
    slide = zipfile.ZipFile(BytesIO(deck)).read("ppt/slides/slide1.xml").decode()
    slide = BILLION_LAUGHS + slide.split("?>", 1)[-1].replace("Revenue grew", "&lol9;")
    with pytest.raises(CorruptDocument):
        parse_document("acme/laughs.pptx", with_member(deck, "ppt/slides/slide1.xml", slide.encode()))
    book = make_epub("Guide", [("Birds", "Herons wade.")])
    chapter = BILLION_LAUGHS + '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>&lol9;</p></body></html>'
    doc = parse_document("acme/laughs.epub", with_member(book, "OEBPS/ch1.xhtml", chapter.encode()))
    assert sum(len(block.text) for block in doc.blocks) < 100  # the entity is text, never a billion lols


def test_a_pptx_listing_ten_thousand_slides_is_refused_from_its_slide_list() -> None:
    deck = make_pptx([Slide("Only", ["one"])])
    presentation = zipfile.ZipFile(BytesIO(deck)).read("ppt/presentation.xml").decode()
    listed = "".join(f'<p:sldId id="{256 + n}" r:id="rId2"/>' for n in range(10_000))
    presentation = re.sub(r"<p:sldIdLst>.*?</p:sldIdLst>", f"<p:sldIdLst>{listed}</p:sldIdLst>", presentation)
    with pytest.raises(OversizedDocument, match="10000 slides"):
        parse_document("acme/long.pptx", with_member(deck, "ppt/presentation.xml", presentation.encode()))


def test_an_epub_chapter_nested_past_the_html_limit_fails_with_a_reason() -> None:
    book = make_epub("Guide", [("Birds", "Herons wade.")])
    chapter = "<html><body>" + "<div>" * 5_000 + "deep" + "</div>" * 5_000 + "</body></html>"
    with pytest.raises(CorruptDocument, match="nests elements deeper"):
        parse_document("acme/deep.epub", with_member(book, "OEBPS/ch1.xhtml", chapter.encode()))


def _epub(files: dict[str, str], opf: str) -> bytes:
    out = BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0"'
            ' xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="EPUB/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        for name, text in files.items():
            archive.writestr(f"EPUB/{name}", text)
        archive.writestr("EPUB/content.opf", opf)
    return out.getvalue()


def _chapter(title: str, body: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}'
        f"</title></head><body>{body}</body></html>"
    )


_OPF_HEAD = (
    '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
    'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>My Book</dc:title></metadata><manifest>'
)


_XHTML = 'media-type="application/xhtml+xml"'


def test_an_epub_as_pandoc_writes_it_names_untitled_chapters_from_its_table_of_contents() -> None:
    # Given pandoc's shape: a title page, the navigation document in the spine, chapters whose <title>
    # is their file name, the second one without a heading
    nav = (
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>'
        '<nav epub:type="toc"><h1>My Book</h1><ol><li><a href="text/ch001.xhtml">Birds</a></li>'
        '<li><a href="text/ch002.xhtml#c2">Trees</a></li></ol></nav></body></html>'
    )
    files = {
        "nav.xhtml": nav,
        "text/ch001.xhtml": _chapter("ch001.xhtml", "<section><h1>Birds</h1><p>Herons wade.</p></section>"),
        "text/ch002.xhtml": _chapter("ch002.xhtml", "<p>Oaks live for centuries.</p>"),
    }
    opf = (
        f'{_OPF_HEAD}<item id="nav" href="nav.xhtml" {_XHTML} properties="nav"/>'
        f'<item id="c1" href="text/ch001.xhtml" {_XHTML}/><item id="c2" href="text/ch002.xhtml" {_XHTML}/>'
        '</manifest><spine><itemref idref="nav"/><itemref idref="c1"/><itemref idref="c2"/></spine></package>'
    )
    doc = parse_document("acme/book.epub", _epub(files, opf))
    # Then the heading-less chapter is filed under its table-of-contents entry, never "ch002.xhtml",
    # and the navigation document itself adds nothing
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        (("Birds",), "Herons wade."),
        (("Trees",), "Oaks live for centuries."),
    ]


def test_an_epub2_names_untitled_chapters_from_its_ncx() -> None:
    ncx = (
        '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>'
        '<navPoint id="p1" playOrder="1"><navLabel><text>Chapter One</text></navLabel>'
        '<content src="Text/Chapter%201.xhtml"/></navPoint></navMap></ncx>'
    )
    files = {"toc.ncx": ncx, "Text/Chapter 1.xhtml": _chapter("Unknown", "<p>It was a dark night.</p>")}
    opf = (
        f'{_OPF_HEAD}<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        f'<item id="c1" href="Text/Chapter%201.xhtml" {_XHTML}/></manifest><spine toc="ncx">'
        '<itemref idref="c1"/></spine></package>'
    )
    doc = parse_document("acme/novel.epub", _epub(files, opf))
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        (("Chapter One",), "It was a dark night.")
    ]


def test_slide_numbers_dates_and_footers_repeated_on_every_slide_are_not_indexed() -> None:
    # Given a deck saved by PowerPoint with "Insert > Header & Footer" on: each slide holds date,
    # footer and slide-number placeholders
    deck = make_pptx([Slide("Results", ["Revenue grew"]), Slide("Plans", ["Hire two engineers"])])
    for number in (1, 2):
        part = f"ppt/slides/slide{number}.xml"
        slide = zipfile.ZipFile(BytesIO(deck)).read(part).decode()
        furniture = "".join(
            f'<p:sp><p:nvSpPr><p:cNvPr id="{90 + n}" name="{kind}"/><p:cNvSpPr/><p:nvPr><p:ph type="{kind}"/>'
            f"</p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:p>{text}</a:p></p:txBody></p:sp>"
            for n, (kind, text) in enumerate(
                [
                    ("dt", "<a:r><a:t>12/03/2026</a:t></a:r>"),
                    ("ftr", "<a:r><a:t>Acme confidential</a:t></a:r>"),
                    (
                        "sldNum",
                        f'<a:fld id="{{B6F15528-21DE-4FAA}}" type="slidenum"><a:t>{number}</a:t></a:fld>',
                    ),
                ]
            )
        )
        deck = with_member(deck, part, slide.replace("</p:spTree>", furniture + "</p:spTree>").encode())
    doc = parse_document("acme/deck.pptx", deck)
    assert [(block.page, block.text) for block in doc.blocks] == [
        (1, "Revenue grew"),
        (2, "Hire two engineers"),
    ]


def test_smartart_text_on_a_slide_is_indexed() -> None:
    # Given a slide whose process diagram (SmartArt) keeps its text in ppt/diagrams/data1.xml
    deck = make_pptx([Slide("Onboarding", ["Four steps"])])

    def point(number: int, text: str, kind: str = "node") -> str:
        run = f"<a:r><a:t>{text}</a:t></a:r>" if text else "<a:endParaRPr/>"
        return f'<dgm:pt modelId="{number}" type="{kind}"><dgm:t><a:bodyPr/><a:p>{run}</a:p></dgm:t></dgm:pt>'

    data = (
        '<dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram"'
        ' xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst>'
        + point(0, "", "doc")
        + point(1, "Sign the contract")
        + point(2, "connector", "parTrans")
        + point(3, "Collect a badge")
        + "</dgm:ptLst></dgm:dataModel>"
    )
    rels_part = "ppt/slides/_rels/slide1.xml.rels"
    rels = zipfile.ZipFile(BytesIO(deck)).read(rels_part).decode()
    rels = rels.replace(
        "</Relationships>",
        '<Relationship Id="rId90" Target="../diagrams/data1.xml" Type="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships/diagramData"/></Relationships>',
    )
    deck = with_member(with_member(deck, "ppt/diagrams/data1.xml", data.encode()), rels_part, rels.encode())
    doc = parse_document("acme/onboarding.pptx", deck)
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        (("Onboarding",), "Four steps"),
        (("Onboarding",), "Sign the contract"),
        (("Onboarding",), "Collect a badge"),
    ]
