"""PDF text extraction with pypdf: one block per paragraph-like run of lines, each with its 1-based page.

A PDF's text layer has no paragraphs, only positioned lines. pypdf gives them back line by line; a
line that is clearly shorter than the page's full lines ends a paragraph (the last line of a
paragraph, a heading, a list item), and so does a blank line (in OCR text, not one inside a sentence).
Words hyphenated across a line break ("exam-" / "ple") are joined again so the search can find them;
a compound the document writes with its hyphen elsewhere keeps it ("non-" / "exclusive").

Tables in the text layer are found from where pypdf says each piece of text is drawn
(``parsing.pdf_tables``) and become table blocks in reading order, with a "Table N" line near them
or the heading above them as caption. A table at the top of a page that goes on with the one that ended
the page before (same columns, no header of its own: ``pdf_tables.continuation``) takes that table's
header and caption, so its first row stays a row.

Sections come from the outline (bookmarks) when the PDF has one: the path of the bookmark in effect
at that point. A bookmark usually points at a whole page, so the heading line itself is looked for
on its page, and the switch happens there; text above it stays in the previous section. Without an
outline they come from the layout (``pdf_layout``): short lines in larger type or bold, standing
alone, are headings, and running heads and page numbers are skipped. A paragraph that does not end
on its page goes on with the first line of the next one: one paragraph, cited at the page it starts.
"""

from __future__ import annotations

import logging
from io import BytesIO
from typing import TYPE_CHECKING

from winnow.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    OversizedDocument,
    WinnowError,
)
from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document, one_line
from winnow.parsing.lists import group_lists
from winnow.parsing.pdf_figures import drop_furniture, page_figures
from winnow.parsing.pdf_layout import Style, layout, page_lines
from winnow.parsing.pdf_lines import hyphenated_words
from winnow.parsing.pdf_outline import OutlineEntry, first_page_heading, metadata_title, outline_entries
from winnow.parsing.pdf_page import TableCarry, collect_page, read_page

if TYPE_CHECKING:
    from pypdf import PdfReader
    from pypdf._page import PageObject

    from winnow.parsing.pdf_tables import PdfTable
    from winnow.ports import Ocr
    from winnow.settings import IngestSettings, OcrSettings


def parse_pdf(
    key: str, data: bytes, settings: IngestSettings, ocr: Ocr | None, ocr_settings: OcrSettings | None
) -> ParsedDocument:
    """``parse_document``'s step for a PDF, in the order it hands its arguments on. Pages with a text
    layer are read from it; pages without one that hold an image go to ``ocr`` (when given), at most
    ``ocr_settings.max_pages`` of them. The images of text-layer pages become figure candidates
    (``parsing.figures``)."""
    # pypdf logs warnings that can quote document strings (bookmark titles); keep them out of our logs.
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    try:
        return _parse(key, data, settings, ocr, ocr_settings)
    except (WinnowError, ImportError):
        # An ImportError is a broken deployment, not a broken document: let it be loud. OCR outages
        # (TransientError) must reach the caller so the document is retried, not recorded as corrupt.
        raise
    except RecursionError as error:
        raise CorruptDocument("corrupt PDF: structure nested too deeply") from error
    except MemoryError as error:
        raise OversizedDocument("PDF needs too much memory to parse") from error
    except Exception as error:
        raise CorruptDocument(_reason(error)) from error


def _reason(error: Exception) -> str:
    from pypdf.errors import LimitReachedError

    if isinstance(error, LimitReachedError):
        return f"PDF exceeds a decompression limit ({one_line(error)})"
    return f"corrupt PDF ({type(error).__name__}: {one_line(error)})"


def _parse(
    key: str, data: bytes, settings: IngestSettings, ocr: Ocr | None, ocr_settings: OcrSettings | None
) -> ParsedDocument:
    from winnow.parsing.figures import held_limit
    from winnow.settings import OcrSettings as _OcrSettings

    reader = _open(data)
    page_count = len(reader.pages)
    if page_count == 0:
        raise EmptyDocument("PDF has no pages")
    bookmarks_by_page: dict[int, list[OutlineEntry]] = {}
    for entry in outline_entries(reader):
        bookmarks_by_page.setdefault(entry.page_index, []).append(entry)
    texts: list[str] = []
    styles: list[list[Style]] = []
    tables: list[list[PdfTable]] = []
    failed_pages = 0
    for page_index in range(page_count):
        try:
            follow = tables[-1][-1] if tables and tables[-1] else None
            text, page_tables, page_styles = read_page(reader.pages[page_index], follow)
        except RecursionError:
            raise
        except Exception:
            # One damaged page should not cost the reader the other hundred; all damaged is corrupt.
            failed_pages += 1
            text, page_tables, page_styles = "", [], []
        texts.append(text)
        tables.append(page_tables)
        styles.append(page_styles)
    if failed_pages == page_count:
        raise CorruptDocument("corrupt PDF: no page could be read")
    scanned = [
        index for index, text in enumerate(texts) if not _has_text(text) and _has_image(reader.pages[index])
    ]
    ocr_read = _read_scanned_pages(reader, texts, scanned, ocr, ocr_settings) if ocr is not None else set()
    collector = BlockCollector(held_limit(settings))
    max_side = (ocr_settings or _OcrSettings()).max_side_pixels
    figures = [
        page_figures(reader.pages[index], collector, settings, max_side)
        if settings.max_figures and index not in ocr_read and _has_text(text)
        else []
        for index, text in enumerate(texts)
    ]
    drop_furniture(figures)
    path: tuple[str, ...] = ()
    hyphenated = hyphenated_words(texts)
    carry = TableCarry()
    # without an outline, sections come from the layout: larger or bold lines standing alone
    layouts = layout([page_lines(text) for text in texts], styles) if not bookmarks_by_page else None
    for page_index, text in enumerate(texts):
        bookmarks = bookmarks_by_page.get(page_index, [])
        path = collect_page(
            collector,
            text,
            page_index + 1,
            path,
            bookmarks,
            ocr=page_index in ocr_read,
            tables=tables[page_index],
            hyphenated=hyphenated,
            carry=carry,
            figures=figures[page_index],
            layout=layouts[page_index] if layouts is not None and page_index not in ocr_read else None,
        )
    carry.finish(collector, path, hyphenated)
    empty_reason = "PDF has no text layer (scanned PDF?)"
    if ocr is None and scanned:
        empty_reason += " and OCR is off"
    elif ocr_read:
        empty_reason = f"PDF has no text layer and OCR found no text on {len(ocr_read)} page(s)"
    title = metadata_title(reader) or (
        first_page_heading(reader.pages[i] for i in range(min(3, page_count))) if 0 not in ocr_read else None
    )
    parsed = finish_document(
        group_lists(collector.blocks), title=title, key=key, source_type="pdf", empty_reason=empty_reason
    )
    return ParsedDocument(parsed.title, parsed.blocks, parsed.source_type, ocr_pages=len(ocr_read))


def _read_scanned_pages(
    reader: PdfReader, texts: list[str], scanned: list[int], ocr: Ocr, ocr_settings: OcrSettings | None
) -> set[int]:
    """OCR the ``scanned`` pages (no text layer, an image), up to the page cap; their text replaces the
    empty one in ``texts``. Returns the indexes of the pages sent to OCR."""
    from winnow.ports import OcrPage
    from winnow.settings import OcrSettings

    wanted = scanned[: (ocr_settings or OcrSettings()).max_pages]
    if not wanted:
        return set()
    pages = [OcrPage(_single_page_pdf(reader, index), "application/pdf") for index in wanted]
    for index, text in zip(wanted, ocr.read(pages), strict=True):
        texts[index] = text
    return set(wanted)


def _has_text(text: str) -> bool:
    return any(char.isalnum() for char in text)


def _has_image(page: PageObject) -> bool:
    """Whether the page draws an image (an image XObject, directly or in a form) or an inline image."""
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is not None:
            for reference in list(xobjects.get_object().values())[:1000]:
                if reference.get_object().get("/Subtype") in ("/Image", "/Form"):
                    return True
        contents = page.get_contents()
        return contents is not None and b"BI" in contents.get_data()[:5_000_000]
    except RecursionError:
        raise
    except Exception:
        return False


def _single_page_pdf(reader: PdfReader, index: int) -> bytes:
    """Page ``index`` alone, as its own PDF (Textract's synchronous call reads one page)."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_page(reader.pages[index])
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def _open(data: bytes) -> PdfReader:
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError

    try:
        reader = PdfReader(BytesIO(data), strict=False)  # tries the empty user password itself
    except DependencyError as error:
        raise EncryptedDocument("PDF is encrypted with AES and no AES library is installed") from error
    except NotImplementedError as error:
        if b"/Encrypt" in data:
            raise EncryptedDocument(f"PDF uses an unsupported encryption ({one_line(error)})") from error
        raise
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except DependencyError as error:
            raise EncryptedDocument("PDF is encrypted with AES and no AES library is installed") from error
        if opened == PasswordType.NOT_DECRYPTED:
            raise EncryptedDocument("PDF is password protected")
    return reader
