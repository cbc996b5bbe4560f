"""HTML with lxml: the visible text of the page, with h1..h6 as the section path.

What a reader does not see, or sees on every page of the site, is removed before the walk: scripts,
styles, templates, forms, navigation, page headers and footers, asides, hidden elements. A ``header``
inside an ``article`` or ``main`` is kept, because that is where the article's own heading lives.

Bytes are decoded by our fallback chain, with the page's ``<meta charset>`` trusted ahead of the
guesses; lxml then parses UTF-8 we hand it, so a wrong declaration cannot garble the text twice.

A ``<dt>`` leads its ``<dd>`` in one block (``BlockCollector``), and an ``<ol>`` or ``<ul>`` is one block
with the short paragraph that introduces it (``parsing.lists``): the chunker repeats the term or the
introduction at the head of every piece, so no passage holds a definition or an item without it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from winnow.errors import CorruptDocument, DocumentError, EmptyDocument, OversizedDocument
from winnow.models import Figure, ParsedDocument
from winnow.parsing.blocks import BlockCollector, HeadingStack, finish_document, one_line
from winnow.parsing.cleaning import (
    clean_inline,
    heading_text,
    is_named_furniture,
    is_permalink_anchor,
    link_furniture,
)
from winnow.parsing.figures import held_limit
from winnow.parsing.tables import html_table
from winnow.parsing.text_decoding import DecodedText, decode_text
from winnow.settings import IngestSettings

_DROPPED_TAGS = frozenset(
    {
        "script", "style", "nav", "footer", "aside", "noscript", "template", "form",
        "iframe", "object", "embed", "svg", "math", "canvas", "button", "select", "textarea",
        "head", "dialog", "menu",
    }
)  # fmt: skip
_DROPPED_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search", "menu"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "blockquote", "body", "caption", "center", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "header", "hr", "html", "legend", "li", "main",
        "ol", "p", "section", "summary", "ul", "table", "tr", "td", "th",
    }
)  # fmt: skip
_LIST_TAGS = frozenset({"ol", "ul"})
_HEADING_TAGS = {f"h{level}": level for level in range(1, 7)}
_SECTION_TITLE_CLASS = "section-title"  # pydoc's section heading cells
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# [^<>]: a scan from one "<meta" ends where the next tag begins, so a head full of "<meta" stays linear.
_META_CHARSET = re.compile(rb"""<meta[^<>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
# A document type declaration with an internal subset (XHTML chapters of EPUBs declare entities so):
# the HTML parser ends the declaration at its first ">" and reads the rest, down to "]>", as text.
# Anchored at the start (after an XML declaration), so a page of "<!DOCTYPE [" costs one scan.
_DOCTYPE_WITH_SUBSET = re.compile(
    r"\A(\ufeff?\s*(?:<\?xml[^<>]*\?>\s*)?)<!DOCTYPE[^<>\[]*\[.*?\]\s*>", re.IGNORECASE | re.DOTALL
)
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]{0,20}:|//)", re.IGNORECASE)  # a URL with a scheme: never fetched
_MAX_HTML_DEPTH = 2048  # libxml2's limit with XML_PARSE_HUGE
_UNICODE_ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


def parse_html(
    key: str,
    data: bytes,
    decoded: DecodedText | None = None,
    *,
    settings: IngestSettings | None = None,
    images: Callable[[str, str, str], Figure | None] | None = None,
) -> ParsedDocument:
    """``images(src, caption, alt)`` is the figure candidate an ``<img src>`` names inside the file's
    own package (an EPUB's members, each judged once: ``figures.PackageImages``); without it only
    ``data:`` images are the page's own. Nothing is fetched."""
    text = _decode(data, decoded)
    try:
        return _parse(key, text, settings or IngestSettings(), images)
    except (DocumentError, ImportError):
        raise  # an ImportError is a broken deployment, not a broken document: let it be loud
    except RecursionError as error:
        raise CorruptDocument("corrupt HTML: nested too deeply") from error
    except MemoryError as error:
        raise OversizedDocument("HTML needs too much memory to parse") from error
    except Exception as error:
        raise CorruptDocument(f"unreadable HTML ({type(error).__name__}: {one_line(error)})") from error


def _decode(data: bytes, decoded: DecodedText | None) -> str:
    if decoded is not None and decoded.encoding in _UNICODE_ENCODINGS:
        return decoded.text
    declared = _META_CHARSET.search(data[:4096])
    if declared is None:
        return decoded.text if decoded is not None else decode_text(data).text
    return decode_text(data, declared.group(1).decode("ascii")).text


def _parse(
    key: str, text: str, settings: IngestSettings, images: Callable[[str, str, str], Figure | None] | None
) -> ParsedDocument:
    import lxml.html
    from lxml import etree

    # huge_tree lifts libxml2's nesting limit from 256 to 2,048 levels (pages built by tools nest deep);
    # size stays bounded by the object size limit and the parse budget.
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True)
    text = _DOCTYPE_WITH_SUBSET.sub(r"\1", text, count=1)
    try:
        root = lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=parser)
    except etree.ParserError as error:
        raise EmptyDocument("HTML file has no content") from error
    if any(entry.type_name == "ERR_RESOURCE_LIMIT" for entry in parser.error_log):
        # libxml2 stops reading at the limit and returns what it had: indexing that would silently
        # drop the rest of the page, so the document fails instead.
        raise CorruptDocument(
            f"HTML nests elements deeper than {_MAX_HTML_DEPTH} levels; cannot read it whole"
        )
    title = _title(root)
    navigation_only = _drop_invisible(root)
    body = root.find("body")
    collector = BlockCollector(held_limit(settings))
    headings = HeadingStack()
    first_h1: str | None = None
    buffer: list[str] = []
    taken: set[Any] = set()  # <figcaption>s a figure carries

    definitions = 0  # open <dd>s: their paragraphs after the first continue the entry
    lists = 0  # open <ol>s and <ul>s
    list_start: int | None = None  # where the outermost open list's items start (outside a <dd>)
    counters: list[tuple[Any, int]] = []  # the open <ol>s and the number of each one's next item
    number = ""  # an <ol> item's number ("3. "), put before the item's first text

    def flush(term: bool = False) -> None:
        nonlocal number
        if buffer:
            text = "".join(buffer)
            if number and text.strip():
                text, number = number + text.lstrip(), ""
            collector.add(text, headings.path, term=term, continues_entry=definitions > 0)
            buffer.clear()

    walker = etree.iterwalk(body if body is not None else root, events=("start", "end"))
    for event, element in walker:
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            if tag in _HEADING_TAGS:
                flush()
                heading = clean_inline(heading_text(element))
                headings.push(_HEADING_TAGS[tag], heading)
                if tag == "h1" and first_h1 is None and heading:
                    first_h1 = heading
                walker.skip_subtree()
            elif _is_section_title(element):
                flush()
                headings.push(_section_level(element), clean_inline(heading_text(element)))
                walker.skip_subtree()
            elif tag == "table" and (_is_box(element) or _is_layout_table(element)):
                # A one-cell table frames its content (a code listing); a page laid out in a table has
                # its cells read as the page: neither is a table of values.
                flush()
            elif tag == "table":
                flush()
                caption, rows, has_header = html_table(element)
                collector.add_table(rows, headings.path, caption=caption, has_header=has_header)
                walker.skip_subtree()
            elif tag == "pre":
                flush()
                collector.add(element.text_content(), headings.path, preformatted=True)
                walker.skip_subtree()
            elif tag == "br":
                buffer.append("\n")
            elif tag == "img" and settings.max_figures:
                figure, caption_element = _image_figure(element, settings, images)
                if figure is not None:
                    flush()
                    if caption_element is not None:
                        # the figure carries its <figcaption>: not text of its own (read already when
                        # it came first: taken back)
                        taken.add(caption_element)
                        if collector.blocks and collector.blocks[-1].text == figure.caption:
                            collector.blocks.pop()
                        figure = replace(figure, owns_caption=True)
                    collector.add_figure(figure, headings.path)
            elif tag == "figcaption" and element in taken:
                walker.skip_subtree()
            else:
                if tag in _BLOCK_TAGS:
                    flush()
                if tag == "ol":
                    counters.append((element, _attribute_number(element, "start", 1)))
                elif tag == "li" and counters and element.getparent() is counters[-1][0]:
                    at = _attribute_number(element, "value", counters[-1][1])
                    counters[-1] = (counters[-1][0], at + 1)
                    number = "" if _numbered(element) else f"{at}. "
                definitions += tag == "dd"
                if tag in _LIST_TAGS:
                    lists += 1
                    if lists == 1 and not definitions:  # a <dd>'s list is its entry's already
                        list_start = collector.count
                if element.text:
                    buffer.append(element.text)
        else:
            if tag in _BLOCK_TAGS or tag == "table":
                flush(term=tag == "dt")  # a <dt> leads its <dd>: one block, never split apart
            if tag == "li":
                number = ""  # an item without text takes its number with it
            if tag == "dd":
                definitions -= 1
            elif tag == "dl":
                collector.release_term()  # a <dt> with no <dd> leads nothing after its list
            elif tag in _LIST_TAGS:
                if counters and counters[-1][0] is element:
                    counters.pop()
                lists -= 1
                if not lists and list_start is not None:
                    collector.join_list(list_start)  # with the paragraph that introduces it
                    list_start = None
            if element.tail:
                buffer.append(element.tail)
    flush()
    return finish_document(
        collector.blocks,
        title=title or first_h1,
        key=key,
        source_type="html",
        empty_reason=(
            "HTML has no text besides navigation (menus, link bars, lists of links)"
            if navigation_only
            else "HTML has no visible text"
        ),
    )


def _attribute_number(element: Any, name: str, default: int) -> int:
    """An ``<ol start>`` or ``<li value>`` number, or ``default`` when there is none that reads as one."""
    value = (element.get(name) or "").strip()
    return int(value) if value.isdigit() and len(value) <= 9 else default


def _numbered(item: Any) -> bool:
    """Whether an ``<ol>`` item's text already starts with its number ("0 Success."): then the list's
    own numbers are not added."""
    first = next((text.strip() for text in item.itertext() if text.strip()), "")
    return first[:1].isdigit()


def _image_figure(
    element: Any, settings: IngestSettings, images: Callable[[str, str, str], Figure | None] | None
) -> tuple[Figure | None, Any]:
    """An ``<img>`` as a figure candidate when its image is the file's own (a ``data:`` URL, or a
    member ``images`` finds), with its alt text and its ``<figure>``'s ``<figcaption>`` as caption
    (returned too, for the walker to leave out)."""
    from winnow.parsing.figures import figure_candidate

    source = (element.get("src") or "").strip()
    inline = source[:5].lower() == "data:"
    if not inline and (images is None or _REMOTE.match(source)):
        return None, None
    caption, captions = "", None
    holder = next((parent for parent in element.iterancestors("figure")), None)
    if holder is not None:
        captions = holder.find(".//figcaption")
        caption = captions.text_content() if captions is not None else ""
    alt = element.get("alt") or element.get("title") or ""
    if inline:  # its bytes are in the file: the work is linear in the file's size
        data = _data_url(source)
        figure = (
            figure_candidate(data, caption=caption, alt=alt, min_side=settings.figure_min_side_pixels)
            if data
            else None
        )
    else:
        assert images is not None
        figure = images(source, caption, alt)
    return figure, captions if figure is not None and figure.caption else None


def _data_url(source: str) -> bytes | None:
    """The bytes of a base64 ``data:`` URL (``data:image/png;base64,...``); None for anything else."""
    import base64
    import binascii

    header, comma, body = source.partition(",")
    if not comma or not header.lower().endswith(";base64"):
        return None
    try:
        return base64.b64decode("".join(body.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def _title(root: Any) -> str | None:
    element = root.find(".//title")
    if element is None:
        return None
    return clean_inline(element.text_content()) or None


def _drop_invisible(root: Any) -> bool:
    """What is hidden or named as furniture goes first, then link bars and menus (judged on what is
    left, so a hidden block cannot make its neighbours look like prose). Whether any menu went."""
    invisible = [element for element in root.iter() if _is_invisible(element)]
    rescued = _rescue_header_heading(root, invisible)
    _drop(invisible)
    furniture = link_furniture(root)
    _drop(furniture)
    others = rescued is not None and any(heading is not rescued for heading in root.iter(*_HEADING_TAGS))
    if others and rescued.getparent() is not None:
        rescued.drop_tree()  # the page has headings of its own: the header's was the site's name
    return bool(furniture)


def _drop(elements: list[Any]) -> None:
    for element in elements:
        if element.getparent() is not None:
            element.drop_tree()  # keeps the element's tail text, which belongs to its parent


def _rescue_header_heading(root: Any, invisible: list[Any]) -> Any:
    """The page's only ``h1`` when it sits in the page header (outside ``article``/``main``), moved
    out before the header so it survives it: kept when it turns out to be the page's only heading
    (it names the page, and without it the page has no section), dropped again otherwise."""
    h1s = list(itertools.islice(root.iter("h1"), 2))
    if len(h1s) != 1:
        return None
    heading = h1s[0]
    doomed = set(invisible)
    holders = [ancestor for ancestor in heading.iterancestors() if ancestor in doomed]
    if len(holders) != 1 or not _is_page_header(holders[0]) or heading in doomed:
        return None  # kept already, or inside something hidden or named as furniture
    heading.tail = None  # the header's text after it goes with the header
    holders[0].addprevious(heading)
    return heading


def _is_page_header(element: Any) -> bool:
    return element.tag == "header" or element.get("role", "").lower() == "banner"


def _is_layout_table(table: Any) -> bool:
    """A table used to lay out a page (old generated docs put the whole page in one): it says so
    with ``role``, or holds headings or other tables, which a table of data does not."""
    if table.get("role", "").lower() in ("presentation", "none"):
        return True
    return any(
        isinstance(node.tag, str)
        and (node.tag in _HEADING_TAGS or node.tag == "table" or _is_section_title(node))
        for node in table.iterdescendants()
    )


def _is_section_title(element: Any) -> bool:
    """A cell that heads a section as ``h2`` would: pydoc's HTML (``python -m pydoc -w``) has no
    ``h1``..``h6`` at all, and heads "Classes", "Functions" and each class so."""
    return element.tag == "td" and _SECTION_TITLE_CLASS in (element.get("class") or "").split()


def _section_level(cell: Any) -> int:
    """Below the page's ``h1``: 2 for a top section, one more for each section table it sits in."""
    tables = sum(1 for a in cell.iterancestors("table") if "section" in (a.get("class") or "").split())
    return min(6, 1 + max(1, tables))


def _is_invisible(element: Any) -> bool:
    if not isinstance(element.tag, str):
        return False
    tag = element.tag
    if tag in _DROPPED_TAGS:
        return True
    if tag == "a" and is_permalink_anchor(element):
        return True
    if tag == "header":
        return not any(
            isinstance(ancestor.tag, str) and ancestor.tag in ("article", "main")
            for ancestor in element.iterancestors()
        )
    attributes = element.attrib
    if "hidden" in attributes or attributes.get("aria-hidden", "").lower() == "true":
        return True
    if attributes.get("role", "").lower() in _DROPPED_ROLES:
        return True
    return bool(_HIDDEN_STYLE.search(attributes.get("style", ""))) or is_named_furniture(element)


def _is_box(table: Any) -> bool:
    """Whether a table has a single cell: a frame around its content, not a table of values."""
    cells = table.xpath("./tr/td | ./tr/th | ./*/tr/td | ./*/tr/th")
    return len(cells) == 1
