"""EPUB, read with lxml: the spine's XHTML documents in reading order, each parsed as HTML.

Text before a chapter's first heading is filed under the chapter's entry in the book's table of
contents. Chapters are counted as they are read and a book over the limit is refused with its reason.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from winnow.errors import CorruptDocument, DocumentError, EmptyDocument, OversizedDocument
from winnow.models import Block, Figure, ParsedDocument
from winnow.parsing.blocks import finish_document, title_from_key
from winnow.parsing.cleaning import clean_inline
from winnow.parsing.containers import check_archive
from winnow.parsing.figures import PackageImages
from winnow.parsing.office_package import NS, Package, guarded
from winnow.settings import IngestSettings

__all__ = ["parse_epub"]

MAX_CHAPTERS = 2_000
_FILE_NAME = re.compile(r"\.x?html?$", re.IGNORECASE)


def parse_epub(key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
    members = check_archive(data, settings, "EPUB")
    return guarded("EPUB", lambda: _parse_epub(key, Package(data, members, "EPUB"), settings))


def _parse_epub(key: str, package: Package, settings: IngestSettings) -> ParsedDocument:
    from winnow.parsing.html import parse_html

    container = package.xml("META-INF/container.xml")
    rootfile = container.find(".//c:rootfile", NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise CorruptDocument("corrupt EPUB: container.xml names no package document")
    opf_path = posixpath.normpath(str(rootfile.get("full-path"))).lstrip("/")
    opf = package.xml(opf_path)
    folder = posixpath.dirname(opf_path)
    # hrefs are URLs: "Chapter%201.xhtml" names the member "Chapter 1.xhtml"
    manifest = {
        item.get("id"): posixpath.normpath(posixpath.join(folder, unquote(item.get("href", "")))).lstrip("/")
        for item in opf.iterfind("opf:manifest/opf:item", NS)
    }
    spine = [ref.get("idref") for ref in opf.iterfind("opf:spine/opf:itemref", NS)]
    if len(spine) > MAX_CHAPTERS:
        raise OversizedDocument(f"EPUB has {len(spine)} spine documents (limit {MAX_CHAPTERS})")
    title_element = opf.find(".//dc:title", NS)
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
    package: Package, part: str, pictures: PackageImages
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


def _contents_labels(package: Package, opf: Any, manifest: dict[Any, str]) -> dict[str, str]:
    """Member path -> its label in the book's table of contents: the EPUB 3 navigation document, else
    the EPUB 2 NCX. Only a help for naming chapters: a broken or missing one gives no labels."""
    labels: dict[str, str] = {}
    nav = next(
        (
            item.get("id")
            for item in opf.iterfind("opf:manifest/opf:item", NS)
            if "nav" in (item.get("properties") or "").split()
        ),
        None,
    )
    spine = opf.find("opf:spine", NS)
    ncx = spine.get("toc") if spine is not None else None
    try:
        if nav is not None and package.has(manifest.get(nav, "")):
            import lxml.html

            path = manifest[nav]
            root = lxml.html.document_fromstring(package.read(path))
            links = ((a.get("href") or "", a.text_content()) for a in root.iter("a"))
        elif ncx is not None and package.has(manifest.get(ncx, "")):
            path = manifest[ncx]
            points = package.xml(path).iter(f"{{{NS['ncx']}}}navPoint")
            links = (
                (
                    point.find("ncx:content", NS).get("src") or "",
                    point.findtext("ncx:navLabel/ncx:text", "", NS),
                )
                for point in points
                if point.find("ncx:content", NS) is not None
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
