"""PPTX, XLSX and EPUB files as people and tools write them (python-pptx, openpyxl, EPUBs whose
chapter files have spaces in their names), and hostile variants of each, every one bounded."""

from __future__ import annotations

import re
import zipfile
from io import BytesIO

import pytest

from tests.support.office import Slide, make_epub, make_pptx, make_xlsx, with_member
from winnow.errors import CorruptDocument, OversizedDocument
from winnow.parsing import parse_document

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


# --- hostile --------------------------------------------------------------------------------------------
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
