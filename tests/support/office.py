"""Generated PPTX, XLSX, EPUB and CSV fixtures (python-pptx and openpyxl write real files; an EPUB is a
zip we assemble as the EPUB 3 spec lays it out, and so is a plain XLSX too big for openpyxl's pace)."""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any


@dataclass
class Slide:
    title: str
    bullets: Sequence[str] = ()
    notes: str = ""
    table: Sequence[Sequence[str]] = field(default_factory=list)
    hidden: bool = False  # "Hide slide" in PowerPoint: skipped in the show


def make_pptx(slides: Sequence[Slide]) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    layout = presentation.slide_layouts[1]  # title and content
    for spec in slides:
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = spec.title
        body = slide.placeholders[1].text_frame
        for index, bullet in enumerate(spec.bullets):
            paragraph = body.paragraphs[0] if index == 0 else body.add_paragraph()
            paragraph.text = bullet
        if spec.table:
            rows, cols = len(spec.table), len(spec.table[0])
            shape = slide.shapes.add_table(rows, cols, Inches(0.5), Inches(4), Inches(9), Inches(2))
            for r, row in enumerate(spec.table):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = value
        if spec.notes:
            slide.notes_slide.notes_text_frame.text = spec.notes
        if spec.hidden:
            slide._element.set("show", "0")
    out = BytesIO()
    presentation.save(out)
    return out.getvalue()


def make_xlsx(
    sheets: dict[str, Sequence[Sequence[Any]]], title: str | None = None, hidden: Sequence[str] = ()
) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
        if name in hidden:
            sheet.sheet_state = "hidden"
    if title:
        workbook.properties.title = title
    out = BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_plain_xlsx(rows: Sequence[Sequence[str | int]], sheet: str = "Data") -> bytes:
    """A one-sheet workbook written straight into its zip (numbers, inline strings, no styles), the
    minimal package a spreadsheet program opens: for sheets too big to build through openpyxl in a
    test's time."""
    from xml.sax.saxutils import escape

    def column(number: int) -> str:
        name = ""
        while number:
            number, rest = divmod(number - 1, 26)
            name = chr(65 + rest) + name
        return name

    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    relationships = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    package = "http://schemas.openxmlformats.org/package/2006"

    def cell(reference: str, value: str | int) -> str:
        if isinstance(value, int):
            return f'<c r="{reference}"><v>{value}</v></c>'
        return f'<c r="{reference}" t="inlineStr"><is><t>{escape(value)}</t></is></c>'

    body = "".join(
        f'<row r="{r}">'
        + "".join(cell(f"{column(c)}{r}", value) for c, value in enumerate(row, start=1))
        + "</row>"
        for r, row in enumerate(rows, start=1)
    )
    corner = f"{column(max((len(row) for row in rows), default=1))}{max(len(rows), 1)}"
    parts = {
        "[Content_Types].xml": f'<Types xmlns="{package}/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType='
        '"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType='
        '"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="{package}/relationships"><Relationship Id="rId1" '
        f'Type="{relationships}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{main}" xmlns:r="{relationships}"><sheets>'
        f'<sheet name="{escape(sheet)}" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{package}/relationships"><Relationship '
        f'Id="rId1" Type="{relationships}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'<worksheet xmlns="{main}"><dimension ref="A1:{corner}"/>'
        f"<sheetData>{body}</sheetData></worksheet>",
    }
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, xml in parts.items():
            archive.writestr(name, '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' + xml)
    return out.getvalue()


def make_epub(
    title: str,
    chapters: Sequence[tuple[str, str]],
    file_name: str = "ch{number}.xhtml",
    *,
    doctype: str = "",
    spine: Sequence[int] | None = None,
) -> bytes:
    """chapters: (heading, body paragraphs separated by blank lines); ``file_name`` names each
    chapter's member (its manifest href is the same name, percent-encoded as a URL); ``doctype`` goes
    after each chapter's XML declaration; ``spine`` lists chapter numbers in reading order (default:
    each once, in order)."""
    documents = []
    for number, (heading, body) in enumerate(chapters, start=1):
        paragraphs = "".join(f"<p>{p}</p>" for p in body.split("\n\n"))
        documents.append(
            (
                file_name.format(number=number),
                f'<?xml version="1.0"?>{doctype}<html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{heading}</title></head><body><h1>{heading}</h1>{paragraphs}</body></html>",
            )
        )
    return epub_package(title, documents, spine=spine)


def epub_package(
    title: str,
    chapters: Sequence[tuple[str, str]],
    members: Sequence[tuple[str, bytes]] = (),
    *,
    spine: Sequence[int] | None = None,
) -> bytes:
    """An EPUB of ``chapters`` ((member name under OEBPS/, XHTML document), numbered from 1) beside other
    ``members`` under OEBPS/ (images); ``spine`` lists chapter numbers in reading order (default: each
    once, in order)."""
    from urllib.parse import quote

    out = BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0"'
            ' xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        for name, data in members:
            archive.writestr(f"OEBPS/{name}", data)
        items = []
        for number, (name, document) in enumerate(chapters, start=1):
            archive.writestr(f"OEBPS/{name}", document)
            items.append(f'<item id="c{number}" href="{quote(name)}" media-type="application/xhtml+xml"/>')
        refs = [f'<itemref idref="c{number}"/>' for number in spine or range(1, len(chapters) + 1)]
        archive.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
            f"<manifest>{''.join(items)}</manifest><spine>{''.join(refs)}</spine></package>",
        )
    return out.getvalue()


def zip_bomb(marker: str, *, size: int = 300 * 1024 * 1024) -> bytes:
    """A zip holding ``marker`` (so it passes as that format) and one member of ``size`` zero bytes."""
    out = BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(marker, "<x/>")
        chunk = b"\0" * (1024 * 1024)
        with archive.open("bomb.xml", "w", force_zip64=True) as member:
            for _ in range(size // len(chunk)):
                member.write(chunk)
    return out.getvalue()


def with_member(data: bytes, name: str, content: bytes) -> bytes:
    """The zip ``data`` with member ``name`` replaced by (or added as) ``content``."""
    out = BytesIO()
    with zipfile.ZipFile(BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            if member.filename != name:
                target.writestr(member.filename, source.read(member.filename))
        target.writestr(name, content)
    return out.getvalue()
