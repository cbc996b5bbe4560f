"""Real documents generated for tests: PDFs drawn with reportlab, DOCX written by python-docx, HTML,
Markdown and text in several encodings, plus the broken and hostile files of the bad-input corpus.

Nothing is checked in and nothing is downloaded: every file is built by the functions below, so a
test shows exactly what its input contains. The factories are plain functions (import them:
``from tests.support.documents import make_pdf``); the fixtures at the bottom wrap common cases.

Factories (all return ``bytes``):

- ``make_pdf(pages: Sequence[str], *, title: str | None = None,
  outline: Sequence[tuple[str, int, int]] = ()) -> bytes``
  One PDF page per string. Paragraphs are separated by blank lines and word-wrapped; a paragraph
  is drawn as its own lines with a gap after it. ``outline`` entries are (bookmark title, 0-based
  page index, level 0..n) in outline order; put the heading text on that page so the parser can
  find where the section starts. Output is byte-for-byte deterministic (reportlab invariant mode).
- ``make_scanned_pdf(pages: int = 2) -> bytes``: pages with drawn shapes only, no text layer.
- ``make_encrypted_pdf(pages: Sequence[str], *, user_password: str = "secret",
  owner_password: str = "owner", algorithm: str = "AES-256") -> bytes``: needs the user password
  to open. ``user_password=""`` gives an owner-only ("restrictions") PDF that opens without one.
  ``algorithm`` is one of pypdf's: "RC4-40", "RC4-128", "AES-128", "AES-256", "AES-256-R5".
- ``make_corrupt_pdf() -> bytes``: a PDF header followed by garbage.
- ``make_truncated_pdf(pages: Sequence[str] = ..., keep: float = 0.4) -> bytes``: a real PDF cut short.
- ``make_docx(body: Sequence[DocxItem], *, core_title: str | None = None) -> bytes``
  ``DocxItem`` is ``DocxHeading(text, level)`` (level 0 = the Title style), ``DocxParagraph(text,
  style=None)`` or ``DocxTable(rows)`` with ``rows: Sequence[Sequence[str]]``.
- ``make_docx_zip_bomb(kind: str = "declared", *, declared_bytes: int = 3_000_000_000) -> bytes``
  A real DOCX plus one extra member. ``"declared"``: the central directory claims ``declared_bytes``
  uncompressed (the data is small: the header lies). ``"ratio"``: 32 MiB of zeros deflated to ~32 KiB,
  a genuine 1000:1 member.
- ``make_html(title: str, sections: Sequence[tuple[int, str, Sequence[str]]], *, noise: bool = True,
  encoding: str = "utf-8", declare_charset: bool = True) -> bytes``
  ``sections`` are (heading level 1..6, heading text, paragraphs). ``noise`` adds script, style,
  nav, page header/footer, aside, form, noscript and template elements whose text contains the
  words in ``HTML_NOISE_MARKERS``: none of them may reach the index.
- ``make_markdown(sections: Sequence[tuple[int, str, Sequence[str]]], *, title: str | None = None,
  front_matter: bool = False, setext: bool = False) -> bytes``: ATX headings (setext for levels 1-2
  when ``setext``), paragraphs, optional YAML front matter with ``title``.
- ``make_text(text: str, encoding: str = "utf-8", *, bom: bool = False) -> bytes``: ``text`` encoded
  (e.g. "latin-1", "cp1252", "utf-16-le", "utf-16-be"); ``bom`` prepends the encoding's BOM.
- ``make_binary(size: int = 4096, seed: int = 0) -> bytes``: random bytes with NULs (not text).
- ``make_large_text(size_bytes: int) -> bytes``: deterministic English-like UTF-8 prose, in
  paragraphs, of at least ``size_bytes`` (50 MB takes well under a second).
- ``bad_input_corpus() -> list[BadInput]``: every hostile or broken input of issue 7, each as
  ``BadInput(name, key, data, expected)`` where ``expected`` is the ``DocumentError`` subclass the
  parser must raise, or ``None`` when the file must be indexed.
"""

from __future__ import annotations

import io
import random
import struct
import textwrap
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from winnow.errors import (
    CorruptDocument,
    DocumentError,
    EmptyDocument,
    EncryptedDocument,
    OversizedDocument,
    UnsupportedDocument,
)

HTML_NOISE_MARKERS = (
    "scriptmarker",
    "stylemarker",
    "navmarker",
    "headermarker",
    "footermarker",
    "asidemarker",
    "formmarker",
    "noscriptmarker",
    "templatemarker",
    "hiddenmarker",
)

_WRAP_COLUMNS = 90
_LINE_HEIGHT = 14
_TOP = 800
_BOTTOM = 40


# --- PDF ---------------------------------------------------------------------------------------------
def make_pdf(
    pages: Sequence[str],
    *,
    title: str | None = None,
    outline: Sequence[tuple[str, int, int]] = (),
) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    if title is not None:
        pdf.setTitle(title)
    for page_index, page_text in enumerate(pages):
        for entry_index, (_, entry_page, _) in enumerate(outline):
            if entry_page == page_index:  # reportlab needs one destination key per outline entry
                pdf.bookmarkPage(f"outline-{entry_index}")
        y = _TOP
        for paragraph in page_text.split("\n\n"):
            for line in textwrap.wrap(" ".join(paragraph.split()), _WRAP_COLUMNS) or []:
                if y < _BOTTOM:
                    raise ValueError(f"page {page_index} has more text than fits on one page")
                pdf.drawString(50, y, line)
                y -= _LINE_HEIGHT
            y -= _LINE_HEIGHT
        pdf.showPage()
    for entry_index, (entry_title, _, level) in enumerate(outline):
        pdf.addOutlineEntry(entry_title, f"outline-{entry_index}", level=level)
    pdf.save()
    return buffer.getvalue()


def make_report_pdf(
    sections: Sequence[tuple[int, str, Sequence[str]]], *, running_head: str = "Chapter 1: Report"
) -> bytes:
    """A PDF laid out as a word processor exports a report without bookmarks: each section's heading
    (level 1 or 2, larger bold type) over its paragraphs, a running head with the page number at the
    top of every page, and paragraphs that flow over page breaks. No outline."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()

    def head(canvas: Any, document: Any) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 9)
        canvas.drawString(72, A4[1] - 40, f"{running_head} {document.page}")
        canvas.restoreState()

    story: list[Any] = []
    for level, title, paragraphs in sections:
        story.append(Paragraph(title, styles["Heading1" if level == 1 else "Heading2"]))
        story.extend(Paragraph(text, styles["Normal"]) for text in paragraphs)
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4, invariant=True).build(story, onFirstPage=head, onLaterPages=head)
    return buffer.getvalue()


def make_table_pdf(
    rows: Sequence[Sequence[str]],
    *,
    caption: str = "",
    before: str = "",
    after: str = "",
    ruled: bool = True,
    valign: str = "BOTTOM",
    column_widths: Sequence[float] | None = None,
    repeat_header: bool = True,
) -> bytes:
    """A PDF laid out as a word processor writes one: a heading-free flow of ``before``, the caption, a
    table (the first row is the header, repeated on every page the table spans unless
    ``repeat_header`` is false; cells wrap as paragraphs when too long for their column), then
    ``after``. ``ruled`` draws the grid lines; ``valign`` is where a short cell sits in a row that a
    wrapped cell made taller."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    buffer = io.BytesIO()
    story: list[Any] = [Paragraph(text, styles["Normal"]) for text in (before, caption) if text]
    cells = [[Paragraph(cell, styles["Normal"]) if len(cell) > 30 else cell for cell in row] for row in rows]
    table = Table(
        cells, repeatRows=1 if repeat_header else 0, colWidths=list(column_widths) if column_widths else None
    )
    style: list[tuple[Any, ...]] = [("VALIGN", (0, 0), (-1, -1), valign)]
    if ruled:
        style.append(("GRID", (0, 0), (-1, -1), 0.5, colors.black))
    table.setStyle(TableStyle(style))
    story.append(table)
    if after:
        story.append(Paragraph(after, styles["Normal"]))
    SimpleDocTemplate(buffer, pagesize=A4, invariant=True).build(story)
    return buffer.getvalue()


def make_pdf_pages_of_tables(tables: Sequence[Sequence[Sequence[str]]], *, after_first: str = "") -> bytes:
    """One table a page, every table in the same columns (as a report's pages of one layout), with
    ``after_first`` as a paragraph below the first table."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Table

    story: list[Any] = []
    for number, rows in enumerate(tables):
        if number:
            story.append(PageBreak())
        story.append(Table([list(row) for row in rows], colWidths=[120] * len(rows[0])))
        if number == 0 and after_first:
            story.append(Paragraph(after_first, getSampleStyleSheet()["Normal"]))
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4, invariant=True).build(story)
    return buffer.getvalue()


def make_two_column_pdf(text: str) -> bytes:
    """A page set in two columns of prose, as a journal prints it: side by side, line after line."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    lines = textwrap.wrap(" ".join(text.split()), 45)
    half = (len(lines) + 1) // 2
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    for column, x in enumerate((50, 310)):
        for n, line in enumerate(lines[column * half : (column + 1) * half]):
            pdf.drawString(x, _TOP - n * _LINE_HEIGHT, line)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_crowded_pdf(rows: int, columns: int, *, column_step: float, row_step: float) -> bytes:
    """One page of ``rows`` x ``columns`` tiny text pieces on a grid: a hostile table (thousands of
    columns, or more pieces than the table search looks at) that must still be read as text."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    pdf.setFont("Helvetica", 1)
    for row in range(rows):
        for column in range(columns):
            pdf.drawString(2 + column * column_step, 830 - row * row_step, f"r{row}c{column}")
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_scanned_pdf(pages: int = 2) -> bytes:
    """What a scanner without OCR produces, as far as text goes: marks on the page, no text layer."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    for page_index in range(pages):
        for row in range(40):
            width = 300 + (row * 37 + page_index * 11) % 200
            pdf.rect(50, 780 - row * 18, width, 8, fill=1, stroke=0)
        pdf.circle(300, 100, 30 + page_index)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_encrypted_pdf(
    pages: Sequence[str],
    *,
    user_password: str = "secret",
    owner_password: str = "owner",
    algorithm: str = "AES-256",
) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages))))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm=algorithm)
    output = io.BytesIO()
    writer.write(output)
    return output.getvalue()


def make_corrupt_pdf() -> bytes:
    return b"%PDF-1.7\n" + make_binary(2048, seed=7) + b"\n%%EOF\n"


def make_truncated_pdf(
    pages: Sequence[str] = ("A page of text that will be cut off.", "Another page."), keep: float = 0.4
) -> bytes:
    data = make_pdf(pages)
    return data[: int(len(data) * keep)]


# --- DOCX --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DocxHeading:
    text: str
    level: int = 1


@dataclass(frozen=True)
class DocxParagraph:
    text: str
    style: str | None = None


@dataclass(frozen=True)
class DocxTable:
    rows: Sequence[Sequence[str]]


DocxItem = DocxHeading | DocxParagraph | DocxTable


def make_docx(body: Sequence[DocxItem], *, core_title: str | None = None) -> bytes:
    import docx

    document = docx.Document()
    if core_title is not None:
        document.core_properties.title = core_title
    for item in body:
        if isinstance(item, DocxHeading):
            document.add_heading(item.text, level=item.level)
        elif isinstance(item, DocxParagraph):
            document.add_paragraph(item.text, style=item.style)
        else:
            columns = max((len(row) for row in item.rows), default=0)
            table = document.add_table(rows=len(item.rows), cols=columns)
            for row_index, row in enumerate(item.rows):
                for column_index, value in enumerate(row):
                    table.cell(row_index, column_index).text = value
    output = io.BytesIO()
    document.save(output)
    return output.getvalue()


def make_docx_zip_bomb(kind: str = "declared", *, declared_bytes: int = 3_000_000_000) -> bytes:
    base = make_docx([DocxHeading("Quarterly report", 1), DocxParagraph("Looks harmless.")])
    output = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as source, zipfile.ZipFile(output, "w") as target:
        for member in source.infolist():
            target.writestr(member, source.read(member.filename), compress_type=zipfile.ZIP_DEFLATED)
        if kind == "ratio":
            target.writestr(
                "word/media/padding.bin", bytes(32 * 1024 * 1024), compress_type=zipfile.ZIP_DEFLATED
            )
        elif kind == "declared":
            target.writestr("word/media/payload.bin", b"x" * 1000, compress_type=zipfile.ZIP_STORED)
        else:
            raise ValueError(f"unknown zip bomb kind {kind!r}")
    data = bytearray(output.getvalue())
    if kind == "declared":
        _patch_declared_size(data, b"word/media/payload.bin", declared_bytes)
    return bytes(data)


def make_docx_paragraph_bomb(paragraphs: int = 3_000_000, *, seed: int = 13) -> bytes:
    """A real DOCX whose ``document.xml`` holds ``paragraphs`` tiny paragraphs, one in 40 carrying a
    random token so the compression ratio stays under the 100:1 rule: with the default, about 1.1 MB
    of zip inflating to 103 MB of XML (the shape outside testing reported: 1.07 MB, 102 MB, 93:1)."""
    import random

    base = make_docx([DocxParagraph("x")])
    rng = random.Random(seed)
    with zipfile.ZipFile(io.BytesIO(base)) as source:
        document = source.read("word/document.xml").decode()
        head, rest = document.split("<w:body>", 1)
        tail = rest.split("</w:body>", 1)[1]
        plain = "<w:p><w:r><w:t>a</w:t></w:r></w:p>"
        body = "".join(
            plain if index % 40 else f"<w:p><w:r><w:t>{rng.getrandbits(64):016x}</w:t></w:r></w:p>"
            for index in range(paragraphs)
        )
        xml = f"{head}<w:body>{body}</w:body>{tail}".encode()
        output = io.BytesIO()
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as target:
            for member in source.infolist():
                is_document = member.filename == "word/document.xml"
                target.writestr(member.filename, xml if is_document else source.read(member.filename))
    return output.getvalue()


def _patch_declared_size(data: bytearray, name: bytes, declared: int) -> None:
    """Overwrite the uncompressed size of ``name`` in its local header and central directory entry,
    the way a crafted bomb lies about what it will inflate to."""
    if declared >= 0xFFFFFFFF:
        raise ValueError("declared size must fit in 32 bits (no zip64 crafting here)")
    patched = 0
    position = 0
    while (local := data.find(b"PK\x03\x04", position)) != -1:
        name_length = struct.unpack_from("<H", data, local + 26)[0]
        if data[local + 30 : local + 30 + name_length] == name:
            struct.pack_into("<I", data, local + 22, declared)
            patched += 1
        position = local + 4
    position = 0
    while (central := data.find(b"PK\x01\x02", position)) != -1:
        name_length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + name_length] == name:
            struct.pack_into("<I", data, central + 24, declared)
            patched += 1
        position = central + 4
    if patched != 2:
        raise AssertionError(f"expected to patch 2 headers of {name!r}, patched {patched}")


def make_not_a_zip_docx() -> bytes:
    return b"This file says it is a DOCX but it is plain text.\n" * 20


# --- HTML / Markdown / text --------------------------------------------------------------------------
def make_html(
    title: str,
    sections: Sequence[tuple[int, str, Sequence[str]]],
    *,
    noise: bool = True,
    encoding: str = "utf-8",
    declare_charset: bool = True,
) -> bytes:
    from html import escape

    parts = ["<!DOCTYPE html>", "<html>", "<head>"]
    if declare_charset:
        parts.append(f'<meta charset="{encoding}">')
    parts.append(f"<title>{escape(title)}</title>")
    if noise:
        parts.append("<style>body { color: red } /* stylemarker */</style>")
        parts.append("<script>var scriptmarker = 'scriptmarker';</script>")
    parts.append("</head><body>")
    if noise:
        parts.append("<header><a href='/'>headermarker home</a></header>")
        parts.append("<nav><ul><li><a href='/a'>navmarker one</a></li><li>navmarker two</li></ul></nav>")
    parts.append("<main><article>")
    for level, heading, paragraphs in sections:
        parts.append(f"<h{level}>{escape(heading)}</h{level}>")
        parts.extend(f"<p>{escape(paragraph)}</p>" for paragraph in paragraphs)
        if noise:
            parts.append("<script>console.log('scriptmarker inline')</script>")
    parts.append("</article></main>")
    if noise:
        parts.append("<aside>asidemarker related links</aside>")
        parts.append("<form><label>formmarker search</label><input name='q'></form>")
        parts.append("<noscript>noscriptmarker enable javascript</noscript>")
        parts.append("<template><p>templatemarker</p></template>")
        parts.append("<div hidden>hiddenmarker</div>")
        parts.append("<footer>footermarker copyright</footer>")
    parts.append("</body></html>")
    return "\n".join(parts).encode(encoding)


def make_markdown(
    sections: Sequence[tuple[int, str, Sequence[str]]],
    *,
    title: str | None = None,
    front_matter: bool = False,
    setext: bool = False,
) -> bytes:
    lines: list[str] = []
    if front_matter:
        lines += ["---", f"title: {title or 'Untitled'}", "tags: [test]", "---", ""]
    for level, heading, paragraphs in sections:
        if setext and level in (1, 2):
            lines += [heading, ("=" if level == 1 else "-") * max(3, len(heading)), ""]
        else:
            lines += [f"{'#' * level} {heading}", ""]
        for paragraph in paragraphs:
            lines += [*textwrap.wrap(paragraph, 72), ""]
    return "\n".join(lines).encode("utf-8")


def make_text(text: str, encoding: str = "utf-8", *, bom: bool = False) -> bytes:
    boms = {"utf-8": b"\xef\xbb\xbf", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}
    prefix = boms[encoding.lower()] if bom else b""
    return prefix + text.encode(encoding)


def make_binary(size: int = 4096, seed: int = 0) -> bytes:
    generator = random.Random(seed)
    data = bytearray(generator.getrandbits(8) for _ in range(size))
    data[::97] = bytes(len(data[::97]))  # make sure NULs are there, as in any real binary
    return bytes(data)


_PROSE_WORDS = [
    "index",
    "search",
    "document",
    "retrieval",
    "passage",
    "relevance",
    "ranking",
    "query",
    "vector",
    "keyword",
    "tenant",
    "bucket",
    "ledger",
    "chunk",
    "section",
    "heading",
    "page",
    "citation",
    "threshold",
    "embedding",
    "sparse",
    "dense",
    "hybrid",
    "fusion",
    "quarterly",
    "report",
    "revenue",
    "customer",
    "support",
    "policy",
    "handbook",
    "release",
    "security",
    "backup",
    "storage",
]


def make_large_text(size_bytes: int) -> bytes:
    """Deterministic prose: numbered paragraphs of ~600 bytes built from a small vocabulary."""
    generator = random.Random(size_bytes)
    paragraphs: list[bytes] = []
    total = 0
    templates = []
    for _ in range(64):
        sentences = []
        for _ in range(6):
            words = [generator.choice(_PROSE_WORDS) for _ in range(generator.randint(8, 16))]
            sentences.append(" ".join(words).capitalize() + ".")
        templates.append(" ".join(sentences))
    number = 0
    while total < size_bytes:
        paragraph = f"Paragraph {number}. {templates[number % len(templates)]}\n\n".encode()
        paragraphs.append(paragraph)
        total += len(paragraph)
        number += 1
    return b"".join(paragraphs)


# --- the bad-input corpus ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BadInput:
    name: str
    key: str
    data: bytes
    expected: type[DocumentError] | None  # None: must be indexed


LATIN1_SAMPLE = "Café crème brûlée, naïve façade, jalapeño: Ålesund über alles. Prix: 12 francs."
CP1252_SAMPLE = (
    "\u201cSmart quotes\u201d \u2013 and a dash \u2014 cost 12\u20ac in Z\u00fcrich; na\u00efve caf\u00e9."
)
UTF16_SAMPLE = "Unicode text written by a Windows tool: résumé, Zürich, Ελληνικά, 日本語."


def _truncated_docx() -> bytes:
    data = make_docx([DocxParagraph("A paragraph that will be cut off. " * 50)])
    return data[: len(data) // 2]


def _scripts_only_html() -> bytes:
    return b"<html><head><script>track()</script></head><body><nav>Home</nav></body></html>"


def _declared_bomb(base: bytes, name: str) -> bytes:
    """``base`` plus a member that declares 3 GB (it holds 1,000 bytes): a lying central directory."""
    output = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as source, zipfile.ZipFile(output, "w") as target:
        for member in source.infolist():
            target.writestr(member, source.read(member.filename), compress_type=zipfile.ZIP_DEFLATED)
        target.writestr(name, b"x" * 1000, compress_type=zipfile.ZIP_STORED)
    data = bytearray(output.getvalue())
    _patch_declared_size(data, name.encode(), 3_000_000_000)
    return bytes(data)


def _office_bad_inputs() -> list[BadInput]:
    """PPTX, XLSX, EPUB, CSV and image inputs that must fail with a reason (or, last, be indexed)."""
    from tests.support.office import Slide, make_epub, make_pptx, make_xlsx
    from tests.support.scans import huge_png_header

    xlsx = make_xlsx({"Staff": [["Name", "Office"], ["Ada", "London"]]})
    pptx = make_pptx([Slide("Review", ["Revenue grew"])])
    epub = make_epub("Guide", [("Birds", "Herons wade.")])
    return [
        BadInput("truncated xlsx", "acme/truncated.xlsx", xlsx[: len(xlsx) // 2], CorruptDocument),
        BadInput("truncated pptx", "acme/truncated.pptx", pptx[: len(pptx) // 2], CorruptDocument),
        BadInput(
            "xlsx zip bomb", "acme/bomb.xlsx", _declared_bomb(xlsx, "xl/media/payload.bin"), OversizedDocument
        ),
        BadInput(
            "pptx zip bomb",
            "acme/bomb.pptx",
            _declared_bomb(pptx, "ppt/media/payload.bin"),
            OversizedDocument,
        ),
        BadInput(
            "epub zip bomb", "acme/bomb.epub", _declared_bomb(epub, "OEBPS/payload.bin"), OversizedDocument
        ),
        BadInput("docx named xlsx", "acme/doc.xlsx", make_docx([DocxParagraph("Hi.")]), UnsupportedDocument),
        BadInput(
            "image of 50,000 px a side", "acme/huge.png", huge_png_header(50_000, 50_000), OversizedDocument
        ),
        BadInput(
            "csv with a giant field", "acme/giant.csv", b"a,b\n1," + b"y" * 200_000 + b"\n", CorruptDocument
        ),
        *_hostile_markup_inputs(xlsx, pptx, epub),
        BadInput("xlsx", "acme/ok.xlsx", xlsx, None),
        BadInput("pptx", "acme/ok.pptx", pptx, None),
        BadInput("epub", "acme/ok.epub", epub, None),
    ]


def _hostile_markup_inputs(xlsx: bytes, pptx: bytes, epub: bytes) -> list[BadInput]:
    """Hostile shapes of the XML inside office files and of gzip'd files, each refused or read within
    bounds: entity expansion, a slide list of 10,000 slides, a chapter nested past the HTML limit, a
    row far past any spreadsheet's last, a gzip bomb and a gzip that is not one."""
    import gzip
    import re

    from tests.support.office import with_member

    laughs = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">'
        + "".join(f'<!ENTITY lol{level} "{f"&lol{level - 1};" * 10}">' for level in range(1, 10))
        + "]>"
    )
    sheet_ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'

    def sheet(rows: str, dimension: str, prolog: str = "") -> bytes:
        body = (
            f'<worksheet {sheet_ns}><dimension ref="{dimension}"/><sheetData>{rows}</sheetData></worksheet>'
        )
        return with_member(xlsx, "xl/worksheets/sheet1.xml", (prolog + body).encode())

    def row(number: int, value: str) -> str:
        return f'<row r="{number}"><c r="A{number}" t="inlineStr"><is><t>{value}</t></is></c></row>'

    with zipfile.ZipFile(io.BytesIO(pptx)) as archive:
        presentation = archive.read("ppt/presentation.xml").decode()
    listed = "".join(f'<p:sldId id="{256 + n}" r:id="rId2"/>' for n in range(10_000))
    presentation = re.sub(r"<p:sldIdLst>.*?</p:sldIdLst>", f"<p:sldIdLst>{listed}</p:sldIdLst>", presentation)
    deep = "<html><body>" + "<div>" * 5_000 + "deep" + "</div>" * 5_000 + "</body></html>"
    return [
        BadInput(
            "xlsx sheet with billion laughs",
            "acme/laughs.xlsx",
            sheet(row(1, "Name") + row(2, "&lol9;"), "A1:A2", laughs),
            CorruptDocument,
        ),
        BadInput(
            "xlsx row far past a sheet's last",
            "acme/far.xlsx",
            sheet(row(1, "Name") + row(3_000_000, "Far"), "A1:A3000000"),
            OversizedDocument,
        ),
        BadInput(
            "pptx listing 10,000 slides",
            "acme/long.pptx",
            with_member(pptx, "ppt/presentation.xml", presentation.encode()),
            OversizedDocument,
        ),
        BadInput(
            "epub chapter nested 5,000 deep",
            "acme/deep.epub",
            with_member(epub, "OEBPS/ch1.xhtml", deep.encode()),
            CorruptDocument,
        ),
        BadInput("gzip bomb", "acme/bomb.txt.gz", gzip.compress(b"a" * 40_000_000), OversizedDocument),
        BadInput("gzip that is not one", "acme/notes.txt.gz", b"plain text, not gzip", UnsupportedDocument),
    ]


def _hostile_image_inputs() -> list[BadInput]:
    """Images inside documents that must cost nothing and fail nothing (issue 27): the document's text
    is indexed, the image is no figure or keeps its caption."""
    from tests.support.figure_docs import (
        CHART,
        docx_with_picture,
        draw_figure,
        jpeg,
        many_tiny_images_html,
        pdf_with_flate_bomb,
        png,
    )
    from tests.support.scans import huge_png_header

    return [
        BadInput("pdf image that inflates to 200 MB", "acme/image-bomb.pdf", pdf_with_flate_bomb(), None),
        BadInput(
            "docx picture declaring 50,000 x 50,000 px",
            "acme/picture-bomb.docx",
            docx_with_picture(huge_png_header(50_000, 50_000), caption="Figure 1: A bomb"),
            None,
        ),
        BadInput("html of 10,000 tiny images", "acme/spacers.html", many_tiny_images_html(10_000), None),
        BadInput(
            "docx with a cmyk jpeg figure",
            "acme/cmyk.docx",
            docx_with_picture(jpeg(draw_figure(CHART).convert("CMYK")), caption="Figure 1: Riders"),
            None,
        ),
        BadInput(
            "docx with a broken png figure",
            "acme/broken-png.docx",
            docx_with_picture(png(draw_figure(CHART))[:300], caption="Figure 1: Riders by city"),
            None,
        ),
    ]


def bad_input_corpus() -> list[BadInput]:
    ok_pdf = make_pdf(["A perfectly good page about the quarterly report."])
    return [
        BadInput("truncated pdf", "acme/truncated.pdf", make_truncated_pdf(), CorruptDocument),
        BadInput("corrupt pdf", "acme/corrupt.pdf", make_corrupt_pdf(), CorruptDocument),
        BadInput(
            "encrypted pdf", "acme/encrypted.pdf", make_encrypted_pdf(["Top secret."]), EncryptedDocument
        ),
        BadInput("scanned pdf", "acme/scanned.pdf", make_scanned_pdf(), EmptyDocument),
        BadInput("pdf named txt", "acme/really-a-pdf.txt", ok_pdf, UnsupportedDocument),
        BadInput(
            "pdf table row of 3,000 cells",
            "acme/wide-table.pdf",
            make_crowded_pdf(4, 3_000, column_step=0.19, row_step=2),
            None,
        ),
        BadInput(
            "pdf page of over 20,000 text pieces",
            "acme/crowded.pdf",
            make_crowded_pdf(2_400, 3, column_step=180, row_step=0.3),
            None,
        ),
        BadInput("docx zip bomb", "acme/bomb.docx", make_docx_zip_bomb("declared"), OversizedDocument),
        BadInput("docx not a zip", "acme/not-a-zip.docx", make_not_a_zip_docx(), UnsupportedDocument),
        BadInput("binary named txt", "acme/binary.txt", make_binary(), UnsupportedDocument),
        BadInput("binary named md", "acme/binary.md", make_binary(seed=1), UnsupportedDocument),
        BadInput("empty file", "acme/empty.txt", b"", EmptyDocument),
        BadInput("unknown extension", "acme/sheet.xls", b"PK\x03\x04 not really", UnsupportedDocument),
        BadInput("whitespace only", "acme/blank.md", b" \n\n\t \n", EmptyDocument),
        BadInput("latin-1 text", "acme/latin1.txt", make_text(LATIN1_SAMPLE, "latin-1"), None),
        BadInput("cp1252 text", "acme/cp1252.txt", make_text(CP1252_SAMPLE, "cp1252"), None),
        BadInput(
            "utf-16 text with bom", "acme/utf16.txt", make_text(UTF16_SAMPLE, "utf-16-le", bom=True), None
        ),
        BadInput(
            "utf-16 text without bom", "acme/utf16-nobom.txt", make_text(UTF16_SAMPLE, "utf-16-le"), None
        ),
        BadInput("truncated docx", "acme/truncated.docx", _truncated_docx(), CorruptDocument),
        *_office_bad_inputs(),
        *_hostile_image_inputs(),
        BadInput("html without visible text", "acme/scripts.html", _scripts_only_html(), EmptyDocument),
        BadInput(
            "key with spaces, plus, percent and unicode",
            "acme/Q3 report + notes 100% \u00fcber caf\u00e9.md",
            b"# Notes\n\nThe file name is awkward, the content is fine.\n",
            None,
        ),
        BadInput(
            "owner-only encrypted pdf",
            "acme/restricted.pdf",
            make_encrypted_pdf(["Readable by anyone, printing restricted."], user_password=""),
            None,
        ),
    ]


# --- fixtures ----------------------------------------------------------------------------------------
SAMPLE_PDF_PAGES = (
    "Introduction\n\nWinnow indexes documents so that search can cite the page a passage came from. "
    "This first page introduces the idea.\n\nA second paragraph on the first page.",
    "Method\n\nThe method page explains how chunks follow the structure of the document, "
    "heading by heading and page by page.",
    "Results\n\nThe results page reports what was measured and what was found.",
)
SAMPLE_PDF_OUTLINE = (("Introduction", 0, 0), ("Method", 1, 0), ("Results", 2, 0))


@pytest.fixture
def sample_pdf() -> bytes:
    """Three pages of text with a bookmark per page and a metadata title."""
    return make_pdf(SAMPLE_PDF_PAGES, title="Winnow Sample", outline=SAMPLE_PDF_OUTLINE)


@pytest.fixture
def scanned_pdf() -> bytes:
    return make_scanned_pdf()


@pytest.fixture
def encrypted_pdf() -> bytes:
    return make_encrypted_pdf(["Confidential numbers."], user_password="secret")


@pytest.fixture
def sample_docx() -> bytes:
    """Title, two heading levels, paragraphs and a table."""
    return make_docx(
        [
            DocxHeading("Employee Handbook", 0),
            DocxHeading("Leave", 1),
            DocxParagraph("Employees get twenty-five days of paid leave per year."),
            DocxHeading("Parental leave", 2),
            DocxParagraph("Parents get sixteen weeks of paid parental leave."),
            DocxTable([["Country", "Days"], ["France", "25"], ["Germany", "30"]]),
            DocxHeading("Expenses", 1),
            DocxParagraph("Submit receipts within thirty days."),
        ]
    )


@pytest.fixture(scope="session")
def docx_zip_bomb() -> bytes:
    return make_docx_zip_bomb("declared")


@pytest.fixture
def sample_html() -> bytes:
    return make_html(
        "Release notes",
        [
            (1, "Release notes", ["What changed in this release."]),
            (2, "Search", ["Hybrid search now fuses dense and sparse results."]),
            (3, "Filters", ["Metadata filters apply before ranking."]),
            (2, "Ingest", ["DOCX tables are kept as text rows."]),
        ],
    )


@pytest.fixture
def sample_markdown() -> bytes:
    return make_markdown(
        [
            (1, "Operations guide", ["How to run the service."]),
            (2, "Install", ["Run the installer, then check the logs."]),
            (2, "Upgrade", ["Stop the service before upgrading."]),
            (3, "Rollback", ["Restore the previous release from backup."]),
        ]
    )


@pytest.fixture
def latin1_text() -> bytes:
    return make_text(LATIN1_SAMPLE, "latin-1")


@pytest.fixture
def utf16_text() -> bytes:
    return make_text(UTF16_SAMPLE, "utf-16-le", bom=True)


@pytest.fixture
def binary_txt() -> bytes:
    return make_binary()


@pytest.fixture(scope="session")
def bad_inputs() -> list[BadInput]:
    return bad_input_corpus()
