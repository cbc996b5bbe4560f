"""Zip-based formats other than DOCX: PPTX, XLSX and EPUB.

- **PPTX** (read with lxml from the package XML; python-pptx would bring Pillow into the ingest bundle):
  a slide is a page, its title is the section, its text frames, tables and SmartArt text follow in
  order, and its speaker notes come last, marked as such. Hidden slides and the date, footer and
  slide-number placeholders repeated on every slide are left out.
- **XLSX** (openpyxl in read-only, streaming mode, with defusedxml guarding its XML): a visible sheet
  is a section and becomes one table, its first non-empty row the header.
- **EPUB** (lxml): the spine's XHTML documents in reading order, each parsed as HTML; text before a
  chapter's first heading is filed under the chapter's entry in the book's table of contents.

Every archive is first judged from its central directory (declared sizes, compression ratios, member
count) before anything is inflated, and every XML parser refuses entities, DTDs and the network. Sheet
rows, slides and chapters are counted as they are read and a file over a limit is refused with its
reason, so a hostile file costs bounded time and memory by construction.
"""

from __future__ import annotations

import functools
import itertools
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from io import BytesIO
from typing import Any
from urllib.parse import unquote

from winnow.errors import CorruptDocument, DocumentError, EmptyDocument, OversizedDocument
from winnow.models import Block, Figure, ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document, one_line, title_from_key
from winnow.parsing.cleaning import clean_inline
from winnow.parsing.containers import check_archive
from winnow.parsing.figures import PackageImages, is_figure_caption
from winnow.settings import IngestSettings

MAX_SLIDES = 2_000
MAX_SHEETS = 200
MAX_SHEET_ROWS = 100_000  # rows with a value, over all sheets of a workbook
MAX_SHEET_CELLS = 6_400_000  # likewise, up to the last non-empty cell of each row
# Rows read, empty ones included: a reader fills the gap up to a cell far down (a stray value in row
# 1,048,576), so a sheet of a few rows can span a million. Two full-height sheets, then refused.
MAX_ROWS_SPANNED = 2 * 1_048_576
MAX_CHAPTERS = 2_000
MAX_SLIDE_PICTURES = 200  # pictures looked at per slide for figures
MAX_MEMBER_BYTES = 50 * 1024 * 1024

_NS = {
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
    "ncx": "http://www.daisy.org/z3986/2005/ncx/",
    "dgm": "http://schemas.openxmlformats.org/drawingml/2006/diagram",
}
# A formula cell of a sheet's XML without a cached result: <c r="D2"><f>B2*C2</f><v></v></c> (or no
# <v>); prefixes allowed (<x:c>). Shared-formula followers (<f t="shared" si="0"/>) count too. Tag
# attributes are matched up to a bound, so hostile XML costs linear time.
_P = rb"(?:[\w.-]+:)?"
_UNCACHED_FORMULA = re.compile(
    rb"<" + _P + rb"c\b(?![^<>]{0,1000}\bt=[\"'](?:str|e)[\"'])[^<>]{0,1000}>\s*"
    rb"(?:<" + _P + rb"f\b[^<>]{0,1000}/>|<" + _P + rb"f\b[^<>]{0,1000}>[^<]*</" + _P + rb"f>)\s*"
    rb"(?:<" + _P + rb"v\s*/>|<" + _P + rb"v>\s*</" + _P + rb"v>)?\s*</" + _P + rb"c>"
)
_SCAN_STEP_BYTES = 1024 * 1024
_SCAN_OVERLAP_BYTES = 64 * 1024  # longer than a formula cell (formulas are at most 8,192 characters)
_FILE_NAME = re.compile(r"\.x?html?$", re.IGNORECASE)
_TITLE_PLACEHOLDERS = frozenset({"title", "ctrTitle"})
_FURNITURE_PLACEHOLDERS = frozenset({"dt", "ftr", "sldNum", "hdr"})
_NOTES_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/notesSlide"
_DIAGRAM_DATA_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/diagramData"


def _guarded(what: str, parse: Callable[[], ParsedDocument]) -> ParsedDocument:
    try:
        return parse()
    except (DocumentError, ImportError):
        raise
    except RecursionError as error:
        raise CorruptDocument(f"corrupt {what}: structure nested too deeply") from error
    except MemoryError as error:
        raise OversizedDocument(f"{what} needs too much memory to parse") from error
    except Exception as error:
        raise CorruptDocument(f"corrupt {what} ({type(error).__name__}: {one_line(error)})") from error


class _Package:
    """Members of a checked archive, read one at a time, each at most ``MAX_MEMBER_BYTES``."""

    def __init__(self, data: bytes, members: list[zipfile.ZipInfo], what: str) -> None:
        self._zip = zipfile.ZipFile(BytesIO(data))
        self._sizes = {member.filename: member.file_size for member in members}
        self.what = what

    def has(self, name: str) -> bool:
        return name in self._sizes

    def read(self, name: str) -> bytes:
        size = self._sizes.get(name)
        if size is None:
            raise CorruptDocument(f"corrupt {self.what}: missing {name[:80]}")
        if size > MAX_MEMBER_BYTES:
            raise OversizedDocument(
                f"{self.what} member {name[:80]} is {size} bytes (limit {MAX_MEMBER_BYTES})"
            )
        return self._zip.read(name)

    def xml(self, name: str) -> Any:
        from lxml import etree

        parser = etree.XMLParser(
            resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
        )
        return etree.fromstring(self.read(name), parser=parser)

    def relationships(self, part: str) -> dict[str, tuple[str, str]]:
        """rId -> (type, target path inside the package) for ``part``."""
        folder, name = posixpath.split(part)
        rels_name = posixpath.join(folder, "_rels", name + ".rels")
        if not self.has(rels_name):
            return {}
        found: dict[str, tuple[str, str]] = {}
        for rel in self.xml(rels_name).iterfind("rel:Relationship", _NS):
            if rel.get("TargetMode") == "External":
                continue
            target = posixpath.normpath(posixpath.join(folder, rel.get("Target", "")))
            found[rel.get("Id", "")] = (rel.get("Type", ""), target.lstrip("/"))
        return found


# --- PPTX ------------------------------------------------------------------------------------------
def parse_pptx(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    members = check_archive(data, settings, "PPTX")
    return _guarded("PPTX", lambda: _parse_pptx(key, _Package(data, members, "PPTX"), settings))


def _parse_pptx(key: str, package: _Package, settings: IngestSettings) -> ParsedDocument:
    from winnow.parsing.figures import held_limit

    presentation = package.xml("ppt/presentation.xml")
    rels = package.relationships("ppt/presentation.xml")
    slide_ids = presentation.findall("p:sldIdLst/p:sldId", _NS)
    if len(slide_ids) > MAX_SLIDES:
        raise OversizedDocument(f"PPTX has {len(slide_ids)} slides (limit {MAX_SLIDES})")
    collector = BlockCollector(held_limit(settings))
    pictures = PackageImages(settings.figure_min_side_pixels)  # each image member judged once a deck
    title: str | None = None
    for number, slide_id in enumerate(slide_ids, start=1):
        target = rels.get(slide_id.get(f"{{{_NS['r']}}}id", ""))
        if target is None or not package.has(target[1]):
            continue
        slide_title = _collect_slide(package, target[1], number, collector, settings, pictures)
        if number == 1 and slide_title:
            title = slide_title
    return finish_document(
        collector.blocks, title=title, key=key, source_type="pptx", empty_reason="presentation has no text"
    )


def _collect_slide(
    package: _Package,
    part: str,
    page: int,
    collector: BlockCollector,
    settings: IngestSettings,
    pictures: PackageImages,
) -> str:
    slide = package.xml(part)
    if slide.get("show") in ("0", "false"):
        return ""  # a hidden slide is skipped in the show: not what the audience sees
    title = ""
    body: list[tuple[str, Any]] = []
    for shape in slide.iter(f"{{{_NS['p']}}}sp", f"{{{_NS['p']}}}graphicFrame"):
        placeholder = shape.find("p:nvSpPr/p:nvPr/p:ph", _NS)
        if placeholder is not None and placeholder.get("type") in _FURNITURE_PLACEHOLDERS:
            continue  # the date, footer and slide number PowerPoint repeats on every slide
        if placeholder is not None and placeholder.get("type") in _TITLE_PLACEHOLDERS and not title:
            title = clean_inline(" ".join(_paragraphs(shape)))
            continue
        table = shape.find(".//a:tbl", _NS)
        if table is not None:
            body.append(("table", table))
        else:
            body.append(("text", shape))
    path = (title,) if title else (f"Slide {page}",)
    figures: list[Figure] = []
    if settings.max_figures:
        captions = [text for kind, element in body if kind == "text" for text in _paragraphs(element)]
        captions = [text for text in captions if is_figure_caption(text)]
        figures = list(_slide_pictures(package, part, slide, captions, pictures))
    taken = [figure.caption for figure in figures if figure.owns_caption]  # the figures carry these
    for kind, element in body:
        if kind == "table":
            collector.add_table(_slide_table_rows(element), path, page)
        else:
            for paragraph in _paragraphs(element):
                if paragraph in taken:
                    taken.remove(paragraph)
                    continue
                collector.add(paragraph, path, page)
    related = package.relationships(part).values()
    for kind, target in related:
        if kind == _DIAGRAM_DATA_REL and package.has(target):
            # SmartArt keeps its text in the diagram's data part, not on the slide
            for paragraph in _diagram_paragraphs(package.xml(target)):
                collector.add(paragraph, path, page)
    for figure in figures:
        collector.add_figure(figure, path, page)
    notes = [target for kind, target in related if kind == _NOTES_REL and package.has(target)]
    if notes:
        text = _notes_text(package.xml(notes[0]))
        if text:
            collector.add(f"Speaker notes: {text}", path, page)
    return title


def _slide_pictures(
    package: _Package,
    part: str,
    slide: Any,
    captions: list[str],
    images: PackageImages,
) -> Iterator[Figure]:
    """The slide's pictures (``p:pic`` with an embedded image; linked ones are never fetched) as figure
    candidates, with their alt text and the slide's "Figure N" lines as captions, in order (each image
    member judged once a deck)."""
    targets = package.relationships(part)
    pictures = list(itertools.islice(slide.iter(f"{{{_NS['p']}}}pic"), MAX_SLIDE_PICTURES))
    captions = captions[: len(pictures)] if len(pictures) > 1 else captions[:1]
    for number, picture in enumerate(pictures):
        blip = picture.find("p:blipFill/a:blip", _NS)
        target = targets.get(blip.get(f"{{{_NS['r']}}}embed", "")) if blip is not None else None
        if target is None or not package.has(target[1]):
            continue
        properties = picture.find("p:nvPicPr/p:cNvPr", _NS)
        alt = (properties.get("descr") or "") if properties is not None else ""
        caption = captions[number] if number < len(captions) else ""
        name = target[1]
        figure = images.candidate(name, functools.partial(package.read, name), caption, alt)
        if figure is not None:
            yield replace(figure, caption=caption, owns_caption=bool(caption))


def _slide_table_rows(table: Any) -> list[list[str]]:
    """Rows of cell texts. A cell merged across columns or down rows names each column and row it
    covers (``hMerge`` / ``vMerge`` cells repeat it), as in DOCX, unless it is long."""
    from winnow.parsing.tables import MAX_REPEATED_CELL_CHARS

    rows: list[list[str]] = []
    for row in table.iterfind("a:tr", _NS):
        cells: list[str] = []
        for cell in row.iterfind("a:tc", _NS):
            text = clean_inline(" ".join(_paragraphs(cell)))
            if cell.get("hMerge") in ("1", "true") and cells:
                merged = cells[-1]
            elif cell.get("vMerge") in ("1", "true") and rows and len(cells) < len(rows[-1]):
                merged = rows[-1][len(cells)]
            else:
                merged = None
            if merged is not None and not text:
                text = merged if len(merged) <= MAX_REPEATED_CELL_CHARS else ""
            cells.append(text)
        rows.append(cells)
    return rows


def _paragraphs(element: Any) -> Iterator[str]:
    for paragraph in element.iter(f"{{{_NS['a']}}}p"):
        text = "".join(
            node.text or "" if node.tag == f"{{{_NS['a']}}}t" else "\n"
            for node in paragraph.iter(f"{{{_NS['a']}}}t", f"{{{_NS['a']}}}br")
        )
        if text.strip():
            yield text


def _diagram_paragraphs(data: Any) -> Iterator[str]:
    """The text of a SmartArt diagram's nodes, in the order of its point list (connector points
    carry no text of their own)."""
    for point in data.iter(f"{{{_NS['dgm']}}}pt"):
        if point.get("type") in ("parTrans", "sibTrans", "pres"):
            continue
        text = point.find("dgm:t", _NS)
        if text is not None:
            yield from _paragraphs(text)


def _notes_text(notes: Any) -> str:
    """The notes' body placeholder (the slide image and the slide number are placeholders too)."""
    parts: list[str] = []
    for shape in notes.iter(f"{{{_NS['p']}}}sp"):
        placeholder = shape.find("p:nvSpPr/p:nvPr/p:ph", _NS)
        if placeholder is not None and placeholder.get("type") not in (None, "body"):
            continue
        parts.extend(_paragraphs(shape))
    return clean_inline(" ".join(parts))


# --- XLSX ------------------------------------------------------------------------------------------
def parse_xlsx(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    check_archive(data, settings, "XLSX")
    return _guarded("XLSX", lambda: _parse_xlsx(key, data))


def _parse_xlsx(key: str, data: bytes) -> ParsedDocument:
    import warnings

    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    from winnow.parsing.tables import MAX_COLUMNS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "unknown extension", "no default style": not the reader's concern
        try:
            workbook = openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=True, keep_links=False)
            # Formulas a library wrote without computing them (openpyxl) have no cached value:
            # their text is read beside the values, so a reader sees "=B2*C2", not an empty column.
            formulas = (
                openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=False, keep_links=False)
                if _has_uncached_formulas(data)
                else None
            )
        except InvalidFileException as error:
            raise CorruptDocument(f"corrupt XLSX ({one_line(error)})") from error
        try:
            sheets = workbook.worksheets
            if len(sheets) > MAX_SHEETS:
                raise OversizedDocument(f"XLSX has {len(sheets)} sheets (limit {MAX_SHEETS})")
            collector = BlockCollector()
            total_rows = total_cells = spanned_rows = 0
            for sheet in sheets:
                if sheet.sheet_state != "visible":
                    continue  # a hidden sheet is not what a reader of the workbook sees
                rows: list[list[str]] = []
                texts = (
                    formulas[sheet.title].iter_rows(max_col=MAX_COLUMNS, values_only=True)
                    if formulas
                    else None
                )
                for values in sheet.iter_rows(max_col=MAX_COLUMNS, values_only=True):
                    if texts is not None:  # the same XML read twice: its rows come in step
                        values = _with_formula_text(values, next(texts, ()))
                    spanned_rows += 1
                    if spanned_rows > MAX_ROWS_SPANNED:
                        raise OversizedDocument(f"XLSX sheets span more than {MAX_ROWS_SPANNED} rows (limit)")
                    if all(value is None for value in values):
                        continue
                    total_rows += 1
                    if total_rows > MAX_SHEET_ROWS:
                        raise OversizedDocument(f"XLSX has more than {MAX_SHEET_ROWS} rows (limit)")
                    row = [_cell_text(value) for value in values]
                    while row and not row[-1]:  # rows come padded to the widest: keep what they hold
                        row.pop()
                    total_cells += len(row)
                    if total_cells > MAX_SHEET_CELLS:
                        raise OversizedDocument(f"XLSX has more than {MAX_SHEET_CELLS} cells (limit)")
                    rows.append(row)
                title = clean_inline(str(sheet.title)) or "Sheet"
                collector.add_table(rows, (title,), caption=title)
            doc_title = clean_inline(str(workbook.properties.title or "")) if workbook.properties else ""
        finally:
            workbook.close()
            if formulas is not None:
                formulas.close()
    return finish_document(
        collector.blocks,
        title=doc_title or None,
        key=key,
        source_type="xlsx",
        empty_reason="workbook has no cells",
    )


def _has_uncached_formulas(data: bytes) -> bool:
    """Whether a sheet holds a formula cell without a cached result (an empty or missing ``<v>``;
    a ``t="str"`` cell's empty value is a computed empty string). Inflates the sheets once more,
    in steps, stopping at the first one: far cheaper than parsing them twice."""
    with zipfile.ZipFile(BytesIO(data)) as archive:
        for member in archive.infolist():
            name = member.filename
            if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
                continue
            with archive.open(member) as stream:
                tail = b""
                while chunk := stream.read(_SCAN_STEP_BYTES):
                    window = tail + chunk
                    if _UNCACHED_FORMULA.search(window):
                        return True
                    tail = window[-_SCAN_OVERLAP_BYTES:]
    return False


def _with_formula_text(values: tuple[Any, ...], formulas: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each empty value whose cell holds a formula, as the formula's text (``=SUM(D2:D3)``)."""

    def text(value: Any, formula: Any) -> Any:
        if value is not None:
            return value
        if isinstance(formula, str) and formula.startswith("="):
            return formula
        array_text = getattr(formula, "text", None)  # an array formula ({=...})
        return array_text if isinstance(array_text, str) and array_text.startswith("=") else None

    return tuple(
        text(value, formula) for value, formula in itertools.zip_longest(values, formulas[: len(values)])
    )


def _cell_text(value: Any) -> str:
    import datetime

    if value is None:
        return ""
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ", timespec="minutes").removesuffix(" 00:00")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- EPUB ------------------------------------------------------------------------------------------
def parse_epub(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    members = check_archive(data, settings, "EPUB")
    return _guarded("EPUB", lambda: _parse_epub(key, _Package(data, members, "EPUB"), settings))


def _parse_epub(key: str, package: _Package, settings: IngestSettings) -> ParsedDocument:
    from winnow.parsing.html import parse_html

    container = package.xml("META-INF/container.xml")
    rootfile = container.find(".//c:rootfile", _NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise CorruptDocument("corrupt EPUB: container.xml names no package document")
    opf_path = posixpath.normpath(str(rootfile.get("full-path"))).lstrip("/")
    opf = package.xml(opf_path)
    folder = posixpath.dirname(opf_path)
    # hrefs are URLs: "Chapter%201.xhtml" names the member "Chapter 1.xhtml"
    manifest = {
        item.get("id"): posixpath.normpath(posixpath.join(folder, unquote(item.get("href", "")))).lstrip("/")
        for item in opf.iterfind("opf:manifest/opf:item", _NS)
    }
    spine = [ref.get("idref") for ref in opf.iterfind("opf:spine/opf:itemref", _NS)]
    if len(spine) > MAX_CHAPTERS:
        raise OversizedDocument(f"EPUB has {len(spine)} spine documents (limit {MAX_CHAPTERS})")
    title_element = opf.find(".//dc:title", _NS)
    title = clean_inline(title_element.text or "") if title_element is not None else ""
    labels = _contents_labels(package, opf, manifest)
    pictures = PackageImages(settings.figure_min_side_pixels)  # each image member judged once per book
    blocks: list[Block] = []
    read: set[str] = set()
    for idref in spine:
        part = manifest.get(idref)
        if part is None or part in read or not package.has(part):
            continue  # a chapter the spine lists again (some tools repeat itemrefs) is read once
        read.add(part)
        try:
            chapter = parse_html(
                part, package.read(part), settings=settings, images=_member_reader(package, part, pictures)
            )
        except EmptyDocument:
            continue  # a cover page or an image-only chapter
        # Text before a chapter's first heading is filed under the chapter's entry in the book's table
        # of contents, else its <title> unless that is only a file name ("ch002.xhtml", as pandoc writes).
        label = labels.get(part) or chapter.title
        named_by_file = label == title_from_key(part) or _FILE_NAME.search(label) is not None
        chapter_path = (label,) if label and label != title and not named_by_file else ()
        for block in chapter.blocks:
            path = block.section_path if block.section_path else chapter_path
            blocks.append(replace(block, section_path=path))
    return finish_document(
        blocks, title=title or None, key=key, source_type="epub", empty_reason="EPUB has no text"
    )


def _member_reader(
    package: _Package, part: str, pictures: PackageImages
) -> Callable[[str, str, str], Figure | None]:
    """The figure candidate an ``<img src>`` of chapter ``part`` names inside the book: a relative URL
    resolved against the chapter's folder, read (bounded like every member) and judged once a book."""
    folder = posixpath.dirname(part)

    def candidate(source: str, caption: str, alt: str) -> Figure | None:
        name = posixpath.normpath(posixpath.join(folder, unquote(source.split("#")[0]))).lstrip("/")
        if not package.has(name):
            return None
        return pictures.candidate(name, lambda: package.read(name), caption, alt)

    return candidate


def _contents_labels(package: _Package, opf: Any, manifest: dict[Any, str]) -> dict[str, str]:
    """Member path -> its label in the book's table of contents: the EPUB 3 navigation document, else
    the EPUB 2 NCX. Only a help for naming chapters: a broken or missing one gives no labels."""
    labels: dict[str, str] = {}
    nav = next(
        (
            item.get("id")
            for item in opf.iterfind("opf:manifest/opf:item", _NS)
            if "nav" in (item.get("properties") or "").split()
        ),
        None,
    )
    spine = opf.find("opf:spine", _NS)
    ncx = spine.get("toc") if spine is not None else None
    try:
        if nav is not None and package.has(manifest.get(nav, "")):
            import lxml.html

            path = manifest[nav]
            root = lxml.html.document_fromstring(package.read(path))
            links = ((a.get("href") or "", a.text_content()) for a in root.iter("a"))
        elif ncx is not None and package.has(manifest.get(ncx, "")):
            path = manifest[ncx]
            points = package.xml(path).iter(f"{{{_NS['ncx']}}}navPoint")
            links = (
                (
                    point.find("ncx:content", _NS).get("src") or "",
                    point.findtext("ncx:navLabel/ncx:text", "", _NS),
                )
                for point in points
                if point.find("ncx:content", _NS) is not None
            )
        else:
            return labels
        folder = posixpath.dirname(path)
        for href, text in itertools.islice(links, MAX_CHAPTERS * 10):
            target = posixpath.normpath(posixpath.join(folder, unquote(href.split("#", 1)[0]))).lstrip("/")
            if href and not href.startswith("#") and clean_inline(text):
                labels.setdefault(target, clean_inline(text)[:300])
    except (DocumentError, ImportError):
        raise
    except Exception:
        return {}
    return labels


PARSERS: dict[str, Callable[[str, bytes, IngestSettings], ParsedDocument]] = {
    "pptx": parse_pptx,
    "xlsx": parse_xlsx,
    "epub": parse_epub,
}
