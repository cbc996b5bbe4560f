"""PPTX, read with lxml from the package XML (python-pptx would bring Pillow into the ingest bundle).

A slide is a page, its title is the section, its text frames, tables and SmartArt text follow in
order, and its speaker notes come last, marked as such. Hidden slides and the date, footer and
slide-number placeholders repeated on every slide are left out. Slides are counted as they are read
and a deck over the limit is refused with its reason.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from winnow.errors import OversizedDocument
from winnow.models import Figure, ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document
from winnow.parsing.cleaning import clean_inline
from winnow.parsing.containers import check_archive
from winnow.parsing.figures import PackageImages, is_figure_caption
from winnow.parsing.office_package import NS, Package, guarded
from winnow.settings import IngestSettings

__all__ = ["parse_pptx"]

MAX_SLIDES = 2_000
MAX_SLIDE_PICTURES = 200  # pictures looked at per slide for figures
_TITLE_PLACEHOLDERS = frozenset({"title", "ctrTitle"})
_FURNITURE_PLACEHOLDERS = frozenset({"dt", "ftr", "sldNum", "hdr"})
_NOTES_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/notesSlide"
_DIAGRAM_DATA_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/diagramData"


def parse_pptx(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    members = check_archive(data, settings, "PPTX")
    return guarded("PPTX", lambda: _parse_pptx(key, Package(data, members, "PPTX"), settings))


def _parse_pptx(key: str, package: Package, settings: IngestSettings) -> ParsedDocument:
    from winnow.parsing.figures import held_limit

    presentation = package.xml("ppt/presentation.xml")
    rels = package.relationships("ppt/presentation.xml")
    slide_ids = presentation.findall("p:sldIdLst/p:sldId", NS)
    if len(slide_ids) > MAX_SLIDES:
        raise OversizedDocument(f"PPTX has {len(slide_ids)} slides (limit {MAX_SLIDES})")
    collector = BlockCollector(held_limit(settings))
    pictures = PackageImages(settings.figure_min_side_pixels)  # each image member judged once a deck
    title: str | None = None
    for number, slide_id in enumerate(slide_ids, start=1):
        target = rels.get(slide_id.get(f"{{{NS['r']}}}id", ""))
        if target is None or not package.has(target[1]):
            continue
        slide_title = _collect_slide(package, target[1], number, collector, settings, pictures)
        if number == 1 and slide_title:
            title = slide_title
    return finish_document(
        collector.blocks, title=title, key=key, source_type="pptx", empty_reason="presentation has no text"
    )


def _collect_slide(
    package: Package,
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
    for shape in slide.iter(f"{{{NS['p']}}}sp", f"{{{NS['p']}}}graphicFrame"):
        placeholder = shape.find("p:nvSpPr/p:nvPr/p:ph", NS)
        if placeholder is not None and placeholder.get("type") in _FURNITURE_PLACEHOLDERS:
            continue  # the date, footer and slide number PowerPoint repeats on every slide
        if placeholder is not None and placeholder.get("type") in _TITLE_PLACEHOLDERS and not title:
            title = clean_inline(" ".join(_paragraphs(shape)))
            continue
        table = shape.find(".//a:tbl", NS)
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
    package: Package,
    part: str,
    slide: Any,
    captions: list[str],
    images: PackageImages,
) -> Iterator[Figure]:
    """The slide's pictures (``p:pic`` with an embedded image; linked ones are never fetched) as figure
    candidates, with their alt text and the slide's "Figure N" lines as captions, in order (each image
    member judged once a deck)."""
    targets = package.relationships(part)
    pictures = list(itertools.islice(slide.iter(f"{{{NS['p']}}}pic"), MAX_SLIDE_PICTURES))
    captions = captions[: len(pictures)] if len(pictures) > 1 else captions[:1]
    for number, picture in enumerate(pictures):
        blip = picture.find("p:blipFill/a:blip", NS)
        target = targets.get(blip.get(f"{{{NS['r']}}}embed", "")) if blip is not None else None
        if target is None or not package.has(target[1]):
            continue
        properties = picture.find("p:nvPicPr/p:cNvPr", NS)
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
    for row in table.iterfind("a:tr", NS):
        cells: list[str] = []
        for cell in row.iterfind("a:tc", NS):
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
    for paragraph in element.iter(f"{{{NS['a']}}}p"):
        text = "".join(
            node.text or "" if node.tag == f"{{{NS['a']}}}t" else "\n"
            for node in paragraph.iter(f"{{{NS['a']}}}t", f"{{{NS['a']}}}br")
        )
        if text.strip():
            yield text


def _diagram_paragraphs(data: Any) -> Iterator[str]:
    """The text of a SmartArt diagram's nodes, in the order of its point list (connector points
    carry no text of their own)."""
    for point in data.iter(f"{{{NS['dgm']}}}pt"):
        if point.get("type") in ("parTrans", "sibTrans", "pres"):
            continue
        text = point.find("dgm:t", NS)
        if text is not None:
            yield from _paragraphs(text)


def _notes_text(notes: Any) -> str:
    """The notes' body placeholder (the slide image and the slide number are placeholders too)."""
    parts: list[str] = []
    for shape in notes.iter(f"{{{NS['p']}}}sp"):
        placeholder = shape.find("p:nvSpPr/p:nvPr/p:ph", NS)
        if placeholder is not None and placeholder.get("type") not in (None, "body"):
            continue
        parts.extend(_paragraphs(shape))
    return clean_inline(" ".join(parts))
