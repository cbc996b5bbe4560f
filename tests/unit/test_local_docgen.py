"""The demo's PDF and DOCX are rendered from text we ship: they must be real documents that the parsers'
libraries read back, with headings, pages and titles intact, and byte-identical on every run."""

from __future__ import annotations

import io
import time

import docx
import pypdf
import pytest

from winnow_local.cli.demo import GENERATED, SOURCES_DIR
from winnow_local.docgen import parse_source, render

SOURCE = """# Field Guide

Intro paragraph that runs
over two lines.

## Birds (and their calls)

Robins sing at dawn. A backslash \\ stays.
\\f
# Field Guide

## Mammals

Foxes hunt at night.
"""


def test_source_is_split_into_pages_headings_and_paragraphs() -> None:
    pages = parse_source(SOURCE)
    assert [[(p.style, p.text) for p in page] for page in pages] == [
        [
            ("h1", "Field Guide"),
            ("p", "Intro paragraph that runs over two lines."),
            ("h2", "Birds (and their calls)"),
            ("p", "Robins sing at dawn. A backslash \\ stays."),
        ],
        [("h1", "Field Guide"), ("h2", "Mammals"), ("p", "Foxes hunt at night.")],
    ]


def test_pdf_has_one_page_per_source_page_and_readable_text() -> None:
    # Given a two-page source with characters PDF strings must escape
    data = render(SOURCE, "pdf")
    # When pypdf reads it strictly
    reader = pypdf.PdfReader(io.BytesIO(data), strict=True)
    # Then the pages, the title and the text (parentheses and backslash included) survive
    assert len(reader.pages) == 2
    assert reader.metadata is not None
    assert reader.metadata.title == "Field Guide"
    first = reader.pages[0].extract_text()
    assert "Birds (and their calls)" in first
    assert "A backslash \\ stays." in first
    assert "Foxes hunt at night." in reader.pages[1].extract_text()
    assert "Foxes" not in first


def test_docx_uses_heading_styles_once_per_heading() -> None:
    document = docx.Document(io.BytesIO(render(SOURCE, "docx")))
    paragraphs = [(p.style.name if p.style is not None else None, p.text) for p in document.paragraphs]
    assert paragraphs == [
        ("Heading 1", "Field Guide"),
        ("Normal", "Intro paragraph that runs over two lines."),
        ("Heading 2", "Birds (and their calls)"),
        ("Normal", "Robins sing at dawn. A backslash \\ stays."),
        ("Heading 2", "Mammals"),
        ("Normal", "Foxes hunt at night."),
    ]
    assert document.core_properties.title == "Field Guide"


@pytest.mark.parametrize("relative", sorted(GENERATED))
def test_shipped_sources_render_deterministically(relative: str) -> None:
    source_name, fmt = GENERATED[relative]
    text = (SOURCES_DIR / source_name).read_text(encoding="utf-8")
    assert render(text, fmt) == render(text, fmt)
    assert relative.endswith("." + fmt)


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        render(SOURCE, "rtf")


@pytest.mark.parametrize("fmt", ["pdf", "docx"])
def test_output_does_not_depend_on_the_clock(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a sample rendered now
    first = render(SOURCE, fmt)
    # When the clock says a year and a day later (the libraries would stamp dates and zip entry times)
    later = time.time() + 366 * 86400
    monkeypatch.setattr(time, "time", lambda: later)
    # Then the bytes are the same, so re-running the demo re-indexes nothing
    assert render(SOURCE, fmt) == first
