"""The demo's PDF and DOCX samples, written with reportlab and python-docx from text we ship.

``winnow demo`` renders these two formats from ``sample_sources/*.txt`` at run time, so the repository
stays free of opaque files. The output is deterministic (reportlab's invariant mode, fixed zip entry
times), so re-running the demo re-ingests nothing.

Source format: ``# `` starts a level-1 heading, ``## `` a level-2 heading, blank lines separate
paragraphs, and a line holding only ``\\f`` starts a new page (PDF only; DOCX ignores it).
"""

from __future__ import annotations

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


def write_pdf(pages: list[Page], title: str) -> bytes:
    """One A4 page per source page (a longer one flows onto the next), in the standard Helvetica fonts."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, SimpleDocTemplate
    from reportlab.platypus import Paragraph as PdfParagraph

    sheet = getSampleStyleSheet()
    styles = {"h1": sheet["Heading1"], "h2": sheet["Heading2"], "p": sheet["BodyText"]}
    story: list[object] = []
    for number, page in enumerate(pages):
        if number:
            story.append(PageBreak())
        story.extend(PdfParagraph(escape(p.text), styles[p.style]) for p in page)
    buffer = BytesIO()
    document = SimpleDocTemplate(
        buffer, pagesize=A4, title=title, author="winnow demo", creator="winnow demo", invariant=True
    )
    document.build(story)
    return buffer.getvalue()


def write_docx(paragraphs: Page, title: str) -> bytes:
    """A Word document whose headings use the built-in "Heading N" styles."""
    import docx

    document = docx.Document()
    document.core_properties.title = title
    document.core_properties.author = "winnow demo"
    for paragraph in paragraphs:
        if paragraph.style == "p":
            document.add_paragraph(paragraph.text)
        else:
            document.add_heading(paragraph.text, level=1 if paragraph.style == "h1" else 2)
    buffer = BytesIO()
    document.save(buffer)
    return _fixed_zip_times(buffer.getvalue())


def _fixed_zip_times(data: bytes) -> bytes:
    """The same archive with every entry dated 1980-01-01: python-docx stamps entries with the time of
    saving, which would make each run's DOCX differ."""
    out = BytesIO()
    with zipfile.ZipFile(BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for entry in source.infolist():
            fixed = zipfile.ZipInfo(entry.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, source.read(entry))
    return out.getvalue()


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
        return write_docx(flat, title)
    raise ValueError(f"unknown format {fmt!r}: use pdf or docx")
