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
on its page, and the switch happens there; text above it stays in the previous section.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from io import BytesIO
from typing import TYPE_CHECKING, Any

from winnow.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    OversizedDocument,
    WinnowError,
)
from winnow.models import Block, ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document, one_line
from winnow.parsing.pdf_outline import (
    OutlineEntry,
    first_page_heading,
    heading_positions,
    metadata_title,
    outline_entries,
)

if TYPE_CHECKING:
    from pypdf import PdfReader
    from pypdf._page import PageObject

    from winnow.models import Figure
    from winnow.parsing.pdf_tables import Fragment, PdfTable
    from winnow.ports import Ocr
    from winnow.settings import IngestSettings, OcrSettings

# A line shorter than this share of the page's typical full line ends its paragraph.
_SHORT_LINE_SHARE = 0.7
_HYPHENATED_END = re.compile(r"[^\W\d_]-$")
# A word with a hyphen inside a line: letters, then hyphen-letters groups; the lookarounds keep a
# line-end hyphen ("non-" before a newline) out.
_HYPHENATED_WORD = re.compile(r"(?<![\w-])[^\W\d_]{1,40}(?:-[^\W\d_]{1,40}){1,4}(?![\w-])")
_WORD_EDGE = re.compile(r"^[^\w-]+|[^\w-]+$")
_MAX_WORD_CHARS = 100
_MARK = "\x00"
_SENTENCE_ENDS = (".", "!", "?", ":", ";", "\u201d", '"')
_HEADING_CHARS = 80
_MAX_PAGE_IMAGES = 200  # image XObjects looked at per page for figures
_MAX_CONTENT_BYTES = 5_000_000  # of a page's content stream, scanned for the images it draws
# "/Im1 Do": an XObject drawn. Names run to the next delimiter; bounded, so a hostile stream scans linearly.
_DRAWN = re.compile(rb"/([^\s/\[\]()<>{}%]{1,127})\s{1,8}Do\b")


@dataclass
class _OpenTable:
    """The table that ended the page before (only short lines after it: a footer, a page number),
    which a table at the top of the next page may go on with."""

    table: PdfTable
    header: list[str]
    caption: str


@dataclass
class _TableCarry:
    """What one page hands the next about tables: the open table, if any."""

    open: _OpenTable | None = None


def parse_pdf(
    key: str,
    data: bytes,
    ocr: Ocr | None = None,
    ocr_settings: OcrSettings | None = None,
    settings: IngestSettings | None = None,
) -> ParsedDocument:
    """Pages with a text layer are read from it; pages without one that hold an image go to ``ocr``
    (when given), at most ``ocr_settings.max_pages`` of them. The images of text-layer pages become
    figure candidates (``parsing.figures``)."""
    # pypdf logs warnings that can quote document strings (bookmark titles); keep them out of our logs.
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    try:
        return _parse(key, data, ocr, ocr_settings, settings)
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
    key: str, data: bytes, ocr: Ocr | None, ocr_settings: OcrSettings | None, settings: IngestSettings | None
) -> ParsedDocument:
    from winnow.parsing.figures import held_limit
    from winnow.settings import IngestSettings
    from winnow.settings import OcrSettings as _OcrSettings

    settings = settings or IngestSettings()
    reader = _open(data)
    page_count = len(reader.pages)
    if page_count == 0:
        raise EmptyDocument("PDF has no pages")
    bookmarks_by_page: dict[int, list[OutlineEntry]] = {}
    for entry in outline_entries(reader):
        bookmarks_by_page.setdefault(entry.page_index, []).append(entry)
    texts: list[str] = []
    tables: list[list[PdfTable]] = []
    failed_pages = 0
    for page_index in range(page_count):
        try:
            follow = tables[-1][-1] if tables and tables[-1] else None
            text, page_tables = _read_page(reader.pages[page_index], follow)
        except RecursionError:
            raise
        except Exception:
            # One damaged page should not cost the reader the other hundred; all damaged is corrupt.
            failed_pages += 1
            text, page_tables = "", []
        texts.append(text)
        tables.append(page_tables)
    if failed_pages == page_count:
        raise CorruptDocument("corrupt PDF: no page could be read")
    scanned = [
        index for index, text in enumerate(texts) if not _has_text(text) and _has_image(reader.pages[index])
    ]
    ocr_read = _read_scanned_pages(reader, texts, scanned, ocr, ocr_settings) if ocr is not None else set()
    collector = BlockCollector(held_limit(settings))
    max_side = (ocr_settings or _OcrSettings()).max_side_pixels
    figures = [
        _page_figures(reader.pages[index], collector, settings, max_side)
        if settings.max_figures and index not in ocr_read and _has_text(text)
        else []
        for index, text in enumerate(texts)
    ]
    _drop_furniture(figures)
    path: tuple[str, ...] = ()
    hyphenated = hyphenated_words(texts)
    carry = _TableCarry()
    for page_index, text in enumerate(texts):
        bookmarks = bookmarks_by_page.get(page_index, [])
        path = _collect_page(
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
        )
    empty_reason = "PDF has no text layer (scanned PDF?)"
    if ocr is None and scanned:
        empty_reason += " and OCR is off"
    elif ocr_read:
        empty_reason = f"PDF has no text layer and OCR found no text on {len(ocr_read)} page(s)"
    title = metadata_title(reader) or (
        first_page_heading(reader.pages[i] for i in range(min(3, page_count))) if 0 not in ocr_read else None
    )
    parsed = finish_document(
        collector.blocks, title=title, key=key, source_type="pdf", empty_reason=empty_reason
    )
    return ParsedDocument(parsed.title, parsed.blocks, parsed.source_type, ocr_pages=len(ocr_read))


def _read_page(page: PageObject, follow: PdfTable | None = None) -> tuple[str, list[PdfTable]]:
    """The page's text, and its tables: each table's text is taken out of the page text and a marker
    line (``_table_marker``) left where it stood, so the table becomes one table block in reading order.
    ``follow`` is the previous page's last table, whose last rows may start this page."""
    from winnow.parsing.pdf_tables import find_tables, fragment_from_visitor

    fragments: list[Fragment] = []

    def visit(text: str, cm: Any, tm: Any, _font: Any, font_size: Any) -> None:
        fragments.append(fragment_from_visitor(text, cm, tm, float(font_size or 0)))

    text = page.extract_text(visitor_text=visit) or ""
    found = find_tables(fragments, follow)
    if not found:
        return text, []
    # pypdf's page text is exactly its visited pieces in order (checked on real PDFs), so the text
    # without the tables is rebuilt from the pieces; NUL never is content and marks the tables.
    owner = {index: number for number, table in enumerate(found) for index in table.fragments}
    parts: list[str] = []
    placed: set[int] = set()
    for index, fragment in enumerate(fragments):
        number = owner.get(index)
        if number is None:
            parts.append(fragment.text.replace(_MARK, ""))
        elif number not in placed:
            placed.add(number)
            parts.append(f"\n{_table_marker(number)}\n")
    return "".join(parts), found


def _page_figures(
    page: PageObject, collector: BlockCollector, settings: IngestSettings, max_side: int
) -> list[Figure]:
    """The image XObjects the page draws that may be figures (``parsing.figures``), in the order it
    draws them (``Do``), so its captions pair with them in reading order; an image the page names but
    never draws is no figure. An image that cannot be read is skipped, never a reason to fail the page."""
    from winnow.parsing.figures import pdf_image

    found: list[Figure] = []
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is None:
            return found
        named = xobjects.get_object()
        contents = page.get_contents()
        drawn = _DRAWN.findall(contents.get_data()[:_MAX_CONTENT_BYTES]) if contents is not None else []
        order = list(dict.fromkeys("/" + name.decode("latin-1") for name in drawn))
        references = [named[name] for name in order if name in named][:_MAX_PAGE_IMAGES]
    except RecursionError:
        raise
    except Exception:
        return found
    for reference in references:
        try:
            xobject = reference.get_object()
            if xobject.get("/Subtype") != "/Image":
                continue
            figure = pdf_image(
                xobject,
                min_side=settings.figure_min_side_pixels,
                max_side=max_side,
                wanted=collector.wants_figure,
            )
        except (RecursionError, MemoryError):
            raise
        except Exception:
            figure = None  # a damaged or hostile image (LimitReachedError past pypdf's inflate limit)
        if figure is not None:
            found.append(figure)
    return found


def _drop_furniture(figures: list[list[Figure]]) -> None:
    """Take out images drawn on two pages or more (a logo, a page border), before the pages' captions
    are matched to their figures: a logo must not take a chart's caption."""
    pages: dict[str, int] = {}
    for page_figures in figures:
        for digest in {figure.digest for figure in page_figures}:
            pages[digest] = pages.get(digest, 0) + 1
    for page_figures in figures:
        page_figures[:] = [figure for figure in page_figures if pages[figure.digest] < 2]


def _table_marker(number: int) -> str:
    return f"{_MARK}{number}{_MARK}"


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


def _collect_page(
    collector: BlockCollector,
    text: str,
    page: int,
    path: tuple[str, ...],
    bookmarks: list[OutlineEntry],
    *,
    ocr: bool = False,
    tables: Sequence[PdfTable] = (),
    hyphenated: frozenset[str] = frozenset(),
    carry: _TableCarry | None = None,
    figures: Sequence[Figure] = (),
) -> tuple[str, ...]:
    """Add the page's paragraphs, tables and figures; returns the section path in effect at the end of
    the page. ``carry`` holds the table that ended the page before, if any, and is left holding the one
    that ends this page. The page's figures take its "Figure N" lines as captions, in order, and stand
    where those lines stood; figures without one follow the page's text."""
    from winnow.parsing.figures import is_figure_caption
    from winnow.parsing.pdf_tables import continuation

    lines = [line.strip() for line in text.splitlines()]
    markers = {_table_marker(number): table for number, table in enumerate(tables)}
    switches = heading_positions(lines, bookmarks)
    heading_lines = {index for index, _, is_heading in switches if is_heading}
    # Each table's caption, and the "Table N" lines it takes out of the text (the table carries them;
    # left as a passage of their own they would outrank the table they name).
    captions: dict[int, str] = {}
    caption_lines: set[int] = set()
    for index, line in enumerate(lines):
        if line in markers:
            captions[index], caption_line = _table_caption(lines, index, heading_lines)
            if caption_line is not None:
                caption_lines.add(caption_line)
    caption_at = [index for index, line in enumerate(lines) if _MARK not in line and is_figure_caption(line)]
    # each figure takes its caption line out of the text and stands there (``owns_caption``)
    figure_at = {
        at: replace(figure, caption=figure.caption or lines[at], owns_caption=True)
        for figure, at in zip(figures, caption_at, strict=False)
    }
    full_line = _typical_full_line(lines)
    paragraph: list[str] = []
    carry = carry if carry is not None else _TableCarry()
    carried, carry.open = carry.open, None
    lines_before_table: list[str] = []  # text since the top of the page or the last table

    def flush() -> None:
        if paragraph:
            collector.add(_join_lines(paragraph, hyphenated), path, page, ocr=ocr)
            paragraph.clear()

    switch_at = 0
    for index, line in enumerate(lines):
        while switch_at < len(switches) and switches[switch_at][0] == index:
            flush()
            path = switches[switch_at][1].path
            switch_at += 1
        if index in figure_at:
            flush()
            collector.add_figure(figure_at[index], path, page)
            continue
        if index in heading_lines:
            carried = None  # a heading starts a new part: a table under it is a table of its own
        if index in heading_lines or (
            not line and not (ocr and _continues_after_blank(paragraph, lines, index))
        ):
            flush()
            continue
        if not line:
            continue
        if line in markers:
            flush()
            table, rows, caption = markers[line], markers[line].rows, captions[index]
            header = rows[0] if rows and table.has_header else []
            drop = None
            if carried is not None and carried.header and _only_short_lines(lines_before_table):
                drop = continuation(carried.table, carried.header, table)
            if carried is not None and drop is not None:
                header, caption = carried.header, carried.caption
                rows = [header, *rows[drop:]]
            elif table.remainder:
                # not the rest of the table above after all: the lines are text, as they stood
                for row in rows:
                    collector.add(" ".join(cell for cell in row if cell), path, page, ocr=ocr)
                carried = None
                lines_before_table = []
                continue
            collector.add_table(rows, path, page, caption=caption, has_header=bool(header))
            carried = None
            carry.open = _OpenTable(table, header, caption or (path[-1] if path else ""))
            lines_before_table = []
            continue
        if index in caption_lines:
            flush()
            continue
        lines_before_table.append(line)
        paragraph.append(line)
        if len(line) < _SHORT_LINE_SHARE * full_line:
            flush()
    while switch_at < len(switches):  # bookmarks pointing below the last line
        flush()
        path = switches[switch_at][1].path
        switch_at += 1
    flush()
    for figure in figures[len(figure_at) :]:
        collector.add_figure(figure, path, page)
    if not _only_short_lines(lines_before_table):
        carry.open = None  # text follows the page's last table: a table on the next page is new
    return path


def _only_short_lines(lines: list[str]) -> bool:
    """Whether the text between a page edge and a table is at most a running head, a footer or a
    page number, not content that would separate two tables."""
    return len(lines) <= 2 and all(len(line) <= _HEADING_CHARS for line in lines)


def _continues_after_blank(paragraph: list[str], lines: list[str], at: int) -> bool:
    """Whether the blank line at ``at`` falls inside a sentence: OCR engines put a blank line wherever
    the line spacing looks a little wider, even mid-sentence ("... (and hence more unification)" /
    "" / "of trigger processing."). It does when the paragraph so far does not end a sentence and the
    next line goes on in lower case."""
    if not paragraph or paragraph[-1].endswith(_SENTENCE_ENDS):
        return False
    following = next((line for line in lines[at + 1 : at + 4] if line), "")
    return following[:1].islower()


def _table_caption(lines: list[str], at: int, heading_lines: set[int]) -> tuple[str, int | None]:
    """A table's caption and the index of its "Table N" line when it has one (just above or below
    the table), else the heading just above it (a bookmarked heading, or a short line without closing
    punctuation) and None; ("", None) when there is neither, and the section's name is used instead."""
    from winnow.parsing.pdf_tables import is_caption

    near = [index for index in (at - 1, at - 2, at + 1, at + 2) if 0 <= index < len(lines) and lines[index]]
    for index in near:
        if is_caption(lines[index]) and _MARK not in lines[index]:
            return lines[index], index
    above = next((index for index in range(at - 1, -1, -1) if lines[index]), None)
    if above is None or _MARK in lines[above]:
        return "", None
    line = lines[above]
    if above in heading_lines or (len(line) <= _HEADING_CHARS and not line.endswith((".", ",", ";", ":"))):
        return line, None
    return "", None


def _typical_full_line(lines: list[str]) -> float:
    """The length of a full line on this page: the 90th percentile, so one stray long line (a URL, a
    table row) does not turn every normal line into a paragraph end."""
    lengths = sorted(len(line) for line in lines if line)
    if not lengths:
        return 0.0
    return float(lengths[min(len(lengths) - 1, int(len(lengths) * 0.9))])


def hyphenated_words(texts: Iterable[str]) -> frozenset[str]:
    """The words a document writes with a hyphen inside a line ("non-exclusive"), lower-cased: a line
    break after such a hyphen keeps it (see ``_join_lines``)."""
    found: set[str] = set()
    for text in texts:
        found.update(word.casefold() for word in _HYPHENATED_WORD.findall(text))
    return frozenset(found)


def _join_lines(lines: list[str], hyphenated: frozenset[str] = frozenset()) -> str:
    """Lines of a paragraph joined by spaces. A word broken across a line break after a hyphen is
    joined again: without the hyphen ("exam-" / "ple" is "example"), unless the document writes that
    word with its hyphen elsewhere ("non-" / "exclusive" is "non-exclusive": word processors and
    typewriters break lines at a compound's own hyphen, and the search must find both halves). Only
    the previous line's end is looked at, so a paragraph of many lines is joined in linear time."""
    parts = [lines[0]]
    for line in lines[1:]:
        if _HYPHENATED_END.search(parts[-1][-2:]) and line[:1].islower():
            if hyphenated and _broken_word(parts[-1], line).casefold() in hyphenated:
                parts.append(line)
                continue
            parts[-1] = parts[-1][:-1]
            parts.append(line)
        else:
            parts.append(" ")
            parts.append(line)
    return "".join(parts)


def _broken_word(before: str, after: str) -> str:
    """The word a line break after a hyphen splits, hyphen kept: "... non-" and "exclusive, ..." give
    "non-exclusive"."""
    head = before[-_MAX_WORD_CHARS:].rsplit(maxsplit=1)[-1]
    tail = after[:_MAX_WORD_CHARS].split(maxsplit=1)[0] if after.strip() else ""
    return _WORD_EDGE.sub("", head) + _WORD_EDGE.sub("", tail)


def collect_ocr_page(text: str, page: int) -> list[Block]:
    """Paragraph blocks of one page of OCR text, marked as OCR (used for image files)."""
    collector = BlockCollector()
    _collect_page(collector, text, page, (), [], ocr=True, hyphenated=hyphenated_words([text]))
    return collector.blocks
