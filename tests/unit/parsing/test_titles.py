"""Titles and sections a reader recognises (issue 48): a manual page by its NAME line, a PDF by its
cover's title where the metadata has none, a CSV by its columns, release notes by their name rather than
the newest release, Markdown without its backslash escapes, pydoc's HTML with its sections."""

from __future__ import annotations

import io
import json
import pydoc

from tests.support.documents import make_pdf
from winnow.parsing import parse_document

MAN_PAGE = """DATE(1)                          User Commands                         DATE(1)

NAME
       date - print or set the system date and time

SYNOPSIS
       date [OPTION]... [+FORMAT]

DESCRIPTION
       Display date and time in the given FORMAT.  With -s, or with [MMDDhhmm[[CC]YY][.ss]], set the
       date and time.

GNU coreutils 9.1               September 2022                         DATE(1)
"""


def cover_pdf() -> bytes:
    """A manual as TeX sets one: a cover in large type, no title in the metadata, body pages after."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    pdf.setFont("Helvetica-Bold", 25)
    pdf.drawString(50, 700, "bzip2 and libbzip2, version 1.0.8")
    pdf.setFont("Helvetica", 21)
    pdf.drawString(50, 660, "A program and library for data compression")
    pdf.setFont("Helvetica", 12)
    pdf.drawString(50, 620, "Julian Seward")
    pdf.showPage()
    for page in range(2):
        pdf.setFont("Helvetica", 10)
        for line in range(30):
            pdf.drawString(
                50, 750 - 14 * line, f"Body text of page {page + 2}, line {line}: blocks are sorted."
            )
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_a_manual_page_is_titled_by_its_name_line() -> None:
    parsed = parse_document("acme/man/date.1.txt", MAN_PAGE.encode())
    assert parsed.title == "date - print or set the system date and time"


def test_a_pdf_without_a_metadata_title_is_titled_by_its_cover() -> None:
    parsed = parse_document("acme/crc-doc.1.0.pdf", cover_pdf())
    assert parsed.title == "bzip2 and libbzip2, version 1.0.8"


def test_a_pdf_of_even_type_keeps_its_metadata_or_file_name() -> None:
    body = ["Plain text all in one size, nothing set larger than the rest of the page."]
    assert parse_document("acme/even-type.pdf", make_pdf(body)).title == "even type"
    assert parse_document("acme/x.pdf", make_pdf(body, title="Field guide")).title == "Field guide"


def test_a_csv_is_titled_by_its_name_and_columns() -> None:
    data = (
        b"version,codename,series,created,release,eol,eol-lts\n12,Bookworm,bookworm,2021-08-14,2023-06-10,,\n"
    )
    parsed = parse_document("acme/distro/debian.csv", data)
    assert parsed.title == "debian table: version, codename, series, created, release, eol, ..."


def test_release_notes_are_titled_by_their_name_not_the_newest_release() -> None:
    news = (
        b"Version 2.3\n===========\n\nFixed the crash on start.\n\nVersion 2.2\n===========\n\nAdded tabs.\n"
    )
    parsed = parse_document("acme/gzip/NEWS", news)
    assert parsed.title == "gzip NEWS"
    assert [b.section_path for b in parsed.blocks] == [("Version 2.3",), ("Version 2.2",)]
    assert parse_document("acme/NEWS.md", b"# 1.4.0\n\nFaster.\n").title == "NEWS"
    assert parse_document("acme/guide/news.md", b"# Company news\n\nWe moved.\n").title == "Company news"


def test_markdown_escapes_are_resolved_outside_code_spans() -> None:
    text = b"# The man\\_db guide\n\n## Using man\\_db\n\nRun `man\\_db` or man\\_db \\*now\\*.\n"
    parsed = parse_document("acme/guide.md", text)
    assert parsed.title == "The man_db guide"
    (block,) = parsed.blocks
    assert block.section_path == ("Using man_db",)
    assert block.text == "Run `man\\_db` or man_db *now*."


def test_pydoc_html_passages_carry_their_sections() -> None:
    page = pydoc.html.page(pydoc.describe(json), pydoc.html.document(json))
    parsed = parse_document("acme/pydoc/json.html", page.encode())
    sections = {b.section_path for b in parsed.blocks}
    assert ("Functions",) in sections
    assert ("Classes", "class JSONDecoder(builtins.object)") in sections
    untitled = [b for b in parsed.blocks if not b.section_path]
    assert len(untitled) <= 2, [b.text[:60] for b in untitled]  # the page's header line at most
    dumps = next(b for b in parsed.blocks if b.text.startswith("dumps("))
    assert dumps.section_path == ("Functions",)
