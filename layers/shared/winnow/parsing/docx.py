"""DOCX text extraction with python-docx: heading styles become the section path, tables stay as rows.

python-docx loads every part of the package into memory, so the zip's central directory is checked
first: the sizes it declares and its compression ratios, before a single byte is inflated. A member
that inflates past its declared size cannot slip through either: Python's zipfile stops at the
declared size and the CRC check then fails, which we report as corrupt. A package can also stay under
the ratio rule and still inflate to a tree too big to build (100 MB of tiny paragraphs from a 1 MB
file): every XML part's size and start tags are checked, streamed, before python-docx parses any.

Headings are recognised by style ("Heading 1".."Heading 9", "Title"; Word stores built-in style
names in English whatever the UI language) and otherwise by the outline level set on the paragraph
or inherited from its style, which also covers custom heading styles.
"""

from __future__ import annotations

import functools
import re
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from io import BytesIO
from typing import IO, TYPE_CHECKING, Any

from winnow.errors import (
    CorruptDocument,
    DocumentError,
    OversizedDocument,
    UnsupportedDocument,
)
from winnow.models import Figure, ParsedDocument
from winnow.parsing.blocks import BlockCollector, HeadingStack, finish_document, one_line
from winnow.parsing.cleaning import clean_inline
from winnow.parsing.containers import check_archive
from winnow.parsing.docx_code import MonospaceStyles, paragraph_lines
from winnow.parsing.docx_lists import ListNumbers
from winnow.parsing.docx_styles import Styles
from winnow.settings import IngestSettings

if TYPE_CHECKING:
    from docx.document import Document as DocxDocument

    from winnow.parsing.figures import PackageImages

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_CONTENT_TYPE = re.compile(r"content type is '([^']{1,120})'")
_XML_READ_BYTES = 1024 * 1024
_TITLE_LEVEL = 0
_DRAWING = "http://schemas.openxmlformats.org/drawingml/2006/main"
_WORD_DRAWING = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
_MAX_PICTURES_PER_PARAGRAPH = 100


def parse_docx(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    check_archive(data, settings, "DOCX")
    check_xml_size(data, settings)
    try:
        return _parse(key, data, settings)
    except (DocumentError, ImportError):
        raise  # an ImportError is a broken deployment, not a broken document: let it be loud
    except RecursionError as error:
        raise CorruptDocument("corrupt DOCX: structure nested too deeply") from error
    except MemoryError as error:
        raise OversizedDocument("DOCX needs too much memory to parse") from error
    except ValueError as error:
        if "not a Word file" in str(error):
            content_type = _CONTENT_TYPE.search(str(error))
            detail = f" (content type {content_type.group(1)})" if content_type else ""
            raise UnsupportedDocument(f"not a Word document{detail}") from error
        raise CorruptDocument(f"corrupt DOCX (ValueError: {one_line(error)})") from error
    except Exception as error:
        raise CorruptDocument(f"corrupt DOCX ({type(error).__name__}: {one_line(error)})") from error


def check_xml_size(data: bytes, settings: IngestSettings) -> None:
    """Refuse a package whose XML would build too big a tree, before python-docx builds it: a 1 MB
    DOCX can inflate (under the ratio rule) to 100 MB of paragraphs that take minutes and gigabytes to
    parse. Every XML part is inflated once, a megabyte at a time, and its start tags counted."""
    limit = settings.max_docx_xml_elements
    elements = 0
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            for member in archive.infolist():
                if not member.filename.endswith((".xml", ".rels")):
                    continue
                if member.file_size > settings.max_docx_xml_part_bytes:
                    raise OversizedDocument(
                        f"DOCX part {member.filename[:60]} is {member.file_size} bytes of XML"
                        f" (limit {settings.max_docx_xml_part_bytes})"
                    )
                with archive.open(member) as stream:
                    elements += _count_start_tags(stream, limit - elements)
                if elements > limit:
                    raise OversizedDocument(f"DOCX has more than {limit} XML elements (limit {limit})")
    except DocumentError:
        raise
    except Exception as error:
        raise CorruptDocument(f"corrupt DOCX ({type(error).__name__}: {one_line(error)})") from error


def _count_start_tags(stream: IO[bytes], budget: int) -> int:
    """Start tags (``<`` not followed by ``/``) in the stream; stops early once over ``budget``. Comments,
    processing instructions and CDATA count too: an upper bound is all the guard needs."""
    count = 0
    previous_last = b""
    while chunk := stream.read(_XML_READ_BYTES):
        count += chunk.count(b"<") - chunk.count(b"</")
        if previous_last == b"<" and chunk[:1] == b"/":
            count -= 1  # a "</" split across two reads
        previous_last = chunk[-1:]
        if count > budget:
            break
    return count


def _parse(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    import docx
    from docx.oxml.ns import qn

    from winnow.parsing.figures import PackageImages, held_limit

    document = docx.Document(BytesIO(data))
    pictures = PackageImages(settings.figure_min_side_pixels)  # each image part judged once
    style_sheet = Styles(document)
    styles = _StyleLevels(style_sheet)
    table_tag = qn("w:tbl")
    collector = BlockCollector(held_limit(settings))
    headings = HeadingStack()
    title_paragraph: str | None = None
    first_top_heading: str | None = None
    elements = list(_iter_body(document))
    taken: set[int] = set()  # caption paragraphs a figure carries: not text of their own
    monospace = MonospaceStyles(style_sheet)
    code: list[str] = []  # the lines of consecutive code paragraphs, one preformatted block
    numbers = ListNumbers(document, style_sheet)
    list_start: int | None = None  # where the items of the list being read begin (collector.count)

    def flush_code() -> None:
        if code:
            collector.add("\n".join(code), headings.path, preformatted=True)
            code.clear()

    def end_list() -> None:
        nonlocal list_start
        if list_start is not None and collector.count - list_start >= 2:
            collector.join_list(list_start)  # with the paragraph that introduces it
        list_start = None

    for at, element in enumerate(elements):
        if at in taken:
            continue
        if element.tag != table_tag and styles.paragraph_level(element) is None:
            if monospace.paragraph_is_code(element):
                end_list()
                code.append(paragraph_lines(element))
                continue
            if code and not _paragraph_text(element).strip() and not _has_drawing(element):
                code.append("")  # a blank line inside a code sample
                continue
        flush_code()
        if element.tag == table_tag:
            end_list()
            collector.add_table(_table_rows(element), headings.path)
            continue
        text = _paragraph_text(element)
        level = styles.paragraph_level(element)
        if level is None or not clean_inline(text):
            label = numbers.label(element) if level is None and clean_inline(text) else None
            if label is not None:
                if list_start is None:
                    list_start = collector.count
                text = f"{label} {text.lstrip()}"
            elif clean_inline(text):
                end_list()
            collector.add(text, headings.path)
            if settings.max_figures:
                caption, where = _caption_near(elements, at)
                for figure in _pictures(document, elements, at, pictures, caption):
                    if where == at - 1 and collector.blocks and collector.blocks[-1].text == caption:
                        collector.blocks.pop()  # the caption above the picture: the figure carries it
                    if where is not None:
                        taken.add(where)
                        figure = replace(figure, owns_caption=True)
                    collector.add_figure(figure, headings.path)
            continue
        end_list()
        headings.push(level, text)
        if level == _TITLE_LEVEL and title_paragraph is None:
            title_paragraph = text
        elif level == 1 and first_top_heading is None:
            first_top_heading = text
    flush_code()
    end_list()
    return finish_document(
        collector.blocks,
        title=_core_title(document) or title_paragraph or first_top_heading,
        key=key,
        source_type="docx",
        empty_reason="DOCX has no text",
    )


def _pictures(
    document: DocxDocument, elements: list[Any], at: int, pictures: PackageImages, caption: str
) -> Iterator[Figure]:
    """The pictures drawn in paragraph ``at`` (``w:drawing`` with an embedded image part; linked
    pictures are never fetched) as figure candidates, with their alt text (``wp:docPr`` ``descr``) and
    the caption next to them: the following paragraph, else the one before, when it is a Caption
    paragraph or reads as one ("Figure 2: ...")."""
    from docx.oxml.ns import qn

    drawings = list(elements[at].iter(qn("w:drawing")))
    if not drawings:
        return
    blip_tag, embed = f"{{{_DRAWING}}}blip", qn("r:embed")
    for drawing in drawings[:_MAX_PICTURES_PER_PARAGRAPH]:
        blip = next(drawing.iter(blip_tag), None)
        target = blip.get(embed) if blip is not None else None
        part = document.part.related_parts.get(target) if target else None
        if part is None:
            continue
        properties = next(drawing.iter(f"{{{_WORD_DRAWING}}}docPr"), None)
        alt = (properties.get("descr") or properties.get("title") or "") if properties is not None else ""
        figure = pictures.candidate(str(part.partname), functools.partial(_blob, part), caption, alt)
        if figure is not None:
            yield figure


def _blob(part: Any) -> bytes:
    return bytes(part.blob)


def _caption_near(elements: list[Any], at: int) -> tuple[str, int | None]:
    from docx.oxml.ns import qn

    from winnow.parsing.figures import is_figure_caption

    for index in (at + 1, at - 1):
        if not 0 <= index < len(elements) or elements[index].tag != qn("w:p"):
            continue
        text = clean_inline(_paragraph_text(elements[index]))
        style = elements[index].find(f"{qn('w:pPr')}/{qn('w:pStyle')}")
        style_id = (style.get(qn("w:val")) or "") if style is not None else ""
        if text and (style_id.lower() == "caption" or is_figure_caption(text)):
            return text, index
    return "", None


def _iter_body(document: DocxDocument) -> Iterator[Any]:
    """Body paragraphs and tables in order, including those wrapped in content controls (``w:sdt``),
    which python-docx's own iterator skips (cover pages and form fields live there)."""
    from docx.oxml.ns import qn

    paragraph_tag, table_tag = qn("w:p"), qn("w:tbl")
    wrapper_tags = {qn("w:sdt"): qn("w:sdtContent"), qn("w:customXml"): None}

    def walk(element: Any) -> Iterator[Any]:
        for child in element.iterchildren():
            if child.tag in (paragraph_tag, table_tag):
                yield child
            elif child.tag in wrapper_tags:
                inner_tag = wrapper_tags[child.tag]
                inner = child.find(inner_tag) if inner_tag else child
                if inner is not None:
                    yield from walk(inner)

    yield from walk(document.element.body)


def _has_drawing(paragraph: Any) -> bool:
    """Whether an empty paragraph holds a picture (a figure, not a blank line of code)."""
    return any(True for _ in paragraph.iter(f"{{{_WORD_DRAWING}}}inline", f"{{{_WORD_DRAWING}}}anchor"))


def _paragraph_text(paragraph: Any) -> str:
    """Text of a ``w:p`` in order: runs, hyperlinks and tracked insertions; tabs and breaks become
    spaces. Deleted text (``w:delText``) and field codes (``w:instrText``) are other tags, so they
    are left out."""
    from docx.oxml.ns import qn

    text_tag = qn("w:t")
    parts = [
        (node.text or "") if node.tag == text_tag else " "
        for node in paragraph.iter(text_tag, qn("w:tab"), qn("w:br"), qn("w:cr"))
    ]
    return "".join(parts)


def _table_rows(table: Any) -> list[list[str]]:
    """Rows of cell texts, one per grid column: a cell merged across columns (``w:gridSpan``) or down
    rows (``w:vMerge``) names each column and row it covers, so values stay under their headers and
    every row is whole (a long merged cell is said once); empty cells keep their place. Nested tables
    and text boxes inside a cell are read too."""
    from docx.oxml.ns import qn

    from winnow.parsing.tables import MAX_COLUMNS, MAX_REPEATED_CELL_CHARS

    paragraph_tag = qn("w:p")
    span_path = f"{qn('w:tcPr')}/{qn('w:gridSpan')}"
    merge_path = f"{qn('w:tcPr')}/{qn('w:vMerge')}"
    value_attribute = qn("w:val")
    rows: list[list[str]] = []
    above: dict[int, str] = {}  # the text of the merge running down each grid column
    for row in table.iterchildren(qn("w:tr")):
        cells: list[str] = []
        for cell in row.iterchildren(qn("w:tc")):
            text = clean_inline(" ".join(_paragraph_text(p) for p in cell.iter(paragraph_tag)))
            merge = cell.find(merge_path)
            if merge is not None and merge.get(value_attribute, "continue") == "continue":
                text = above.get(len(cells), "")
            elif merge is not None:
                above[len(cells)] = text if len(text) <= MAX_REPEATED_CELL_CHARS else ""
            span = cell.find(span_path)
            value = span.get(value_attribute) if span is not None else None
            repeat = max(1, min(int(value) if value and value.isdigit() else 1, MAX_COLUMNS))
            # A short cell (a header) names every column it covers; a long one is said once.
            cells.extend(
                [text] * repeat if len(text) <= MAX_REPEATED_CELL_CHARS else [text] + [""] * (repeat - 1)
            )
        if any(cells):
            rows.append(cells)
    return rows


class _StyleLevels:
    """Heading level of each paragraph style, resolved once per style: by name, else by the outline
    level set on the style or inherited through ``w:basedOn``."""

    def __init__(self, styles: Styles) -> None:
        self._styles = styles
        self._qn = styles.qn
        self._levels: dict[str, int | None] = {}

    def paragraph_level(self, paragraph: Any) -> int | None:
        """0 for a Title, 1..9 for headings, None for body text. Direct formatting wins over style."""
        qn = self._qn
        properties = paragraph.find(qn("w:pPr"))
        if properties is None:
            return None
        outline = properties.find(qn("w:outlineLvl"))
        if outline is not None:
            return _outline_level(outline.get(qn("w:val")))
        style = properties.find(qn("w:pStyle"))
        style_id = style.get(qn("w:val")) if style is not None else None
        if not style_id:
            return None
        if style_id not in self._levels:
            self._levels[style_id] = self._style_level(style_id)
        return self._levels[style_id]

    def _style_level(self, style_id: str) -> int | None:
        qn = self._qn
        for depth, style in enumerate(self._styles.chain(style_id)):
            name = self._styles.name(style)
            if depth == 0 and name.lower() == "title":
                return _TITLE_LEVEL
            match = _HEADING_STYLE.match(name)
            if match:
                return int(match.group(1))
            outline = style.find(f"{qn('w:pPr')}/{qn('w:outlineLvl')}")
            if outline is not None:
                return _outline_level(outline.get(qn("w:val")))
        return None


def _outline_level(value: str | None) -> int | None:
    """w:outlineLvl is 0-based and 9 means body text."""
    try:
        level = int(value or "")
    except ValueError:
        return None
    return level + 1 if 0 <= level <= 8 else None


def _core_title(document: DocxDocument) -> str | None:
    try:
        title = document.core_properties.title
    except Exception:
        return None
    return clean_inline(title) if isinstance(title, str) and title.strip() else None
