"""Tiny, dependency-free writers for the demo's PDF and DOCX samples.

We ship the demo's text, not binaries: ``winnow demo`` renders these two formats from
``sample_sources/*.txt`` at run time, so the repository stays free of opaque files and the demo needs
nothing that ``make install`` does not already bring. The output is deterministic (no timestamps), so
re-running the demo re-ingests nothing.

Source format: ``# `` starts a level-1 heading, ``## `` a level-2 heading, blank lines separate
paragraphs, and a line holding only ``\\f`` starts a new page (PDF only; DOCX ignores it).
"""

from __future__ import annotations

import textwrap
import zipfile
from dataclasses import dataclass
from io import BytesIO
from xml.sax.saxutils import escape


@dataclass(frozen=True)
class Paragraph:
    style: str  # "h1" | "h2" | "p"
    text: str


Page = list[Paragraph]


def parse_source(text: str) -> list[Page]:
    """Split the source into pages of headings and paragraphs."""
    pages: list[Page] = [[]]
    buffer: list[str] = []

    def flush() -> None:
        if buffer:
            pages[-1].append(Paragraph("p", " ".join(line.strip() for line in buffer)))
            buffer.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "\\f":
            flush()
            pages.append([])
        elif stripped.startswith("## "):
            flush()
            pages[-1].append(Paragraph("h2", stripped[3:].strip()))
        elif stripped.startswith("# "):
            flush()
            pages[-1].append(Paragraph("h1", stripped[2:].strip()))
        elif not stripped:
            flush()
        else:
            buffer.append(stripped)
    flush()
    return [page for page in pages if page]


# --- PDF ---------------------------------------------------------------------------------------------
_PDF_STYLES = {"h1": ("F2", 16, 24, 60), "h2": ("F2", 12, 18, 80), "p": ("F1", 10, 14, 95)}
_PAGE_WIDTH, _PAGE_HEIGHT, _MARGIN = 595, 842, 56


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _page_stream(page: Page) -> bytes:
    out = [b"BT"]
    y = _PAGE_HEIGHT - _MARGIN
    for paragraph in page:
        font, size, leading, width = _PDF_STYLES[paragraph.style]
        y -= 6 if paragraph.style == "p" else 12
        for line in textwrap.wrap(paragraph.text, width=width) or [""]:
            y -= leading
            out.append(
                f"/{font} {size} Tf 1 0 0 1 {_MARGIN} {y} Tm".encode() + b" " + _pdf_string(line) + b" Tj"
            )
    out.append(b"ET")
    return b"\n".join(out)


def write_pdf(pages: list[Page], title: str) -> bytes:
    """A valid PDF 1.4 with one text page per source page, in the standard Helvetica fonts."""
    objects: list[bytes] = []  # object n is objects[n - 1]
    page_ids = [5 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    for pid, page in zip(page_ids, pages, strict=True):
        stream = _page_stream(page)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {_PAGE_WIDTH} {_PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents {pid + 1} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    objects.append(b"<< /Title " + _pdf_string(title) + b" /Producer (winnow demo) >>")
    info_id = len(objects)

    buffer = BytesIO()
    buffer.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(buffer.tell())
        buffer.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref_at = buffer.tell()
    buffer.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        buffer.write(f"{offset:010d} 00000 n \n".encode())
    buffer.write(
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {info_id} 0 R >>\n"
        f"startxref\n{xref_at}\n%%EOF\n".encode()
    )
    return buffer.getvalue()


# --- DOCX --------------------------------------------------------------------------------------------
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_CONTENT_TYPES = (
    _XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
    'wordprocessingml.document.main+xml"/>'
    '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.'
    'wordprocessingml.styles+xml"/>'
    '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.'
    'core-properties+xml"/>'
    "</Types>"
)
_ROOT_RELS = (
    _XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'officeDocument" Target="word/document.xml"/>'
    '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/'
    'core-properties" Target="docProps/core.xml"/>'
    "</Relationships>"
)
_DOCUMENT_RELS = (
    _XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'styles" Target="styles.xml"/>'
    "</Relationships>"
)


def _style(style_id: str, name: str, size_half_points: int, bold: bool, level: int | None) -> str:
    outline = f'<w:pPr><w:keepNext/><w:outlineLvl w:val="{level}"/></w:pPr>' if level is not None else ""
    run = f'<w:rPr>{"<w:b/>" if bold else ""}<w:sz w:val="{size_half_points}"/></w:rPr>'
    based = '<w:basedOn w:val="Normal"/><w:next w:val="Normal"/>' if style_id != "Normal" else ""
    default = ' w:default="1"' if style_id == "Normal" else ""
    return (
        f'<w:style w:type="paragraph"{default} w:styleId="{style_id}"><w:name w:val="{name}"/>'
        f"{based}<w:qFormat/>{outline}{run}</w:style>"
    )


_STYLES = (
    _XML
    + f'<w:styles xmlns:w="{_W}">'
    + _style("Normal", "Normal", 22, False, None)
    + _style("Heading1", "heading 1", 32, True, 0)
    + _style("Heading2", "heading 2", 26, True, 1)
    + "</w:styles>"
)
_DOCX_STYLES = {"h1": "Heading1", "h2": "Heading2", "p": None}


def _core(title: str) -> str:
    return (
        _XML + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/'
        'core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{escape(title)}</dc:title><dc:creator>winnow demo</dc:creator></cp:coreProperties>"
    )


def write_docx(pages: list[Page], title: str) -> bytes:
    """A minimal Word document whose headings use the built-in "heading N" styles."""
    body: list[str] = []
    for page in pages:
        for paragraph in page:
            style_id = _DOCX_STYLES[paragraph.style]
            props = f'<w:pPr><w:pStyle w:val="{style_id}"/></w:pPr>' if style_id else ""
            text = escape(paragraph.text)
            body.append(f'<w:p>{props}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>')
    document = (
        _XML + f'<w:document xmlns:w="{_W}"><w:body>' + "".join(body) + "<w:sectPr/></w:body></w:document>"
    )
    parts = {
        "[Content_Types].xml": _CONTENT_TYPES,
        "_rels/.rels": _ROOT_RELS,
        "word/document.xml": document,
        "word/_rels/document.xml.rels": _DOCUMENT_RELS,
        "word/styles.xml": _STYLES,
        "docProps/core.xml": _core(title),
    }
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, content.encode("utf-8"))
    return buffer.getvalue()


def render(source: str, fmt: str) -> bytes:
    """Render a sample source as ``pdf`` or ``docx``; the title is the first level-1 heading."""
    pages = parse_source(source)
    title = next((p.text for page in pages for p in page if p.style == "h1"), "Untitled")
    if fmt == "pdf":
        return write_pdf(pages, title)
    if fmt == "docx":
        # One heading per document: the PDF repeats its title on each page, a Word document would not.
        seen: set[str] = set()
        flat: Page = []
        for page in pages:
            for paragraph in page:
                if paragraph.style == "h1" and paragraph.text in seen:
                    continue
                seen.add(paragraph.text)
                flat.append(paragraph)
        return write_docx([flat], title)
    raise ValueError(f"unknown format {fmt!r}: use pdf or docx")
