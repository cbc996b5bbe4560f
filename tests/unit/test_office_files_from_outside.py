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
