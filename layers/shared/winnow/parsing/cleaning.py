"""Cleaning that removes what is not the document's own text, and nothing else.

- Whitespace (every parser): running text gets single spaces (``clean_inline``); text whose line breaks
  mean something keeps its lines (``clean_lines``), and preformatted text its indentation too
  (``clean_preformatted``); invisible and control characters go.
- Terminal output (man pages saved with ``man foo > foo.txt``, build logs): ANSI escape sequences
  (colours, bold, cursor movement, OSC titles and links) and backspace overstrike (``_\\bw`` underline,
  ``w\\bw`` bold) are removed, leaving the characters a terminal would show.
- HTML: blocks that are site furniture (navigation panels, sidebars, footers and tables of contents by
  class or id; breadcrumb trails, "Next: ... Previous: ... Up: ..." link bars of GNU info pages, menus
  and other blocks that are links and next to no other text) and permalink markers in headings
  (Sphinx's ``¶``, the ``#`` of other generators).

Every rule deletes markup or whole furniture blocks; none rewrites words, so the words of the cleaned
text are always words of the source (a property test checks it).
"""

from __future__ import annotations

import re
from typing import Any

# Characters that are invisible or formatting-only (zero-width spaces and joiners, BOM, soft hyphen)
# are removed; control characters other than tab and line breaks (PDF text layers are full of them)
# become spaces. One regex finds whether there is anything to do, so clean text pays only a scan.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_CONTROL_CODES = [*range(0x00, 0x09), *range(0x0E, 0x20), *range(0x7F, 0xA0)]
_CLEANUP_TABLE: dict[int, str | None] = {ord(char): None for char in _INVISIBLE}
_CLEANUP_TABLE.update({code: " " for code in _CONTROL_CODES})
_NEEDS_CLEANUP = re.compile(f"[{_INVISIBLE}\x00-\x08\x0e-\x1f\x7f-\x9f]")
_HORIZONTAL_WHITESPACE = re.compile(r"[^\S\n]+")
_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\u2028\u2029\x85]")

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \\), nF escapes with intermediates (ESC ( B selects a
# character set, as man output has), and two-character escapes (ESC followed by one).
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]+[0-~]|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_OVERSTRIKE = re.compile(r"[^\x08\n]\x08")
_MAX_OVERSTRIKE_PASSES = 8

_FURNITURE_TOKENS = frozenset(
    {
        "nav", "navbar", "navigation", "nav-panel", "navheader", "navfooter", "navlinks", "breadcrumb",
        "breadcrumbs", "footer", "sidebar", "sphinxsidebar", "related", "site-header", "site-footer",
        "skip-link", "skiplink", "skip-to-content", "menu", "topbar", "cookie-banner", "cookie-notice",
        "pagination", "header-nav", "toc", "section-toc", "localtoc", "table-of-contents",
    }
)  # fmt: skip
_NAV_WORDS = frozenset(
    {"next", "previous", "prev", "up", "top", "home", "contents", "index", "back", "forward", "toc"}
)
_LINK_BLOCK_TAGS = frozenset(
    {"p", "div", "ul", "ol", "dl", "dd", "nav", "table", "center", "span", "details"}
)
_MAX_OUTSIDE_CHARS = 200
# Elements whose text never runs into its neighbours' on screen.
_SEPARATING_TAGS = frozenset(
    {
        "address", "article", "blockquote", "br", "caption", "dd", "div", "dl", "dt", "figcaption",
        "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "ol", "p",
        "pre", "section", "table", "td", "th", "tr", "ul", "center",
    }
)  # fmt: skip
_MIN_MENU_LINKS = 4
_MAX_LABEL_CHARS = 40
_MENU_OUTSIDE_SHARE = 0.1
_MIN_LETTER_LINKS = 3
_MAX_LETTER_CHARS = 2
PERMALINK_MARKS = frozenset({"¶", "#", "§", "🔗", "link"})
_PERMALINK_CLASSES = frozenset(
    {
        "headerlink", "anchor", "mark", "anchorjs-link", "heading-anchor", "permalink",
        "copiable-anchor", "copiable-link",  # makeinfo 6.8 / 7: "¶" after each definition and index entry
    }
)  # fmt: skip
_MARK_SYMBOLS = frozenset({"¶", "§", "🔗"})
_MARK_CHARS = "".join(_MARK_SYMBOLS)


def strip_terminal_codes(text: str) -> str:
    """Text as a terminal shows it: escape sequences gone, overstruck characters resolved."""
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    if "\x08" in text:
        for _ in range(_MAX_OVERSTRIKE_PASSES):
            text, count = _OVERSTRIKE.subn("", text)
            if not count:
                break
        text = text.replace("\x08", "")
    return text


def is_named_furniture(element: Any) -> bool:
    """A navigation panel, breadcrumb trail, sidebar or table of contents, by its class or id."""
    names = f"{element.get('class', '')} {element.get('id', '')}".lower().split()
    return any(name in _FURNITURE_TOKENS for name in names)


class _TextStats:
    """Characters of an element's subtree, split into link text and the rest (kept only up to a cap:
    past it, the block is prose whatever its links)."""

    __slots__ = ("letter_links", "link_chars", "links", "menu_links", "outside", "outside_chars")

    def __init__(self) -> None:
        self.link_chars = 0
        self.links = 0
        self.letter_links = 0  # links whose text is a letter or two: an index's "Jump to: A B C" bar
        self.menu_links = 0  # links of menus found inside, already doomed
        self.outside_chars = 0
        self.outside: list[str] = []

    def add_text(self, text: str, in_link: bool) -> None:
        if in_link:
            self.link_chars += len(text.strip())
        elif text.strip():
            self.outside_chars += len(text.strip())
            if self.outside_chars <= _MAX_OUTSIDE_CHARS:
                self.outside.append(text)

    def absorb(self, child: _TextStats) -> None:
        self.link_chars += child.link_chars
        self.links += child.links
        self.letter_links += child.letter_links
        self.menu_links += child.menu_links
        if self.outside_chars + child.outside_chars <= _MAX_OUTSIDE_CHARS:
            self.outside.extend(child.outside)
        self.outside_chars += child.outside_chars


def link_furniture(root: Any) -> list[Any]:
    """Link bars, menus and tables of contents: blocks that are links and little else. One walk
    gathers every element's link and other text bottom-up, so the cost is linear in the page
    whatever its nesting (no per-element rescans, no recursion)."""
    from lxml import etree

    doomed: list[Any] = []
    stack: list[_TextStats] = []
    link_depth = data_tables = 0
    for event, element in etree.iterwalk(root, events=("start", "end")):
        is_link = element.tag == "a"
        is_data_table = element.tag == "table" and _has_header(element)
        if event == "start":
            if is_link:
                link_depth += 1
            data_tables += is_data_table
            stats = _TextStats()
            stats.links = int(is_link and bool(element.get("href")))
            stats.add_text(element.text or "", link_depth > 0)
            stack.append(stats)
            continue
        stats = stack.pop()
        if is_link:
            link_depth -= 1
            stats.letter_links = int(stats.links == 1 and 0 < stats.link_chars <= _MAX_LETTER_CHARS)
        data_tables -= is_data_table
        # Inside a table of data, links in a cell are the cell's value, never a menu; a bar of letters
        # is a menu wherever it is (makeinfo puts "Jump to:" in a header cell of its own table).
        is_menu = element.tag in _LINK_BLOCK_TAGS and (
            _is_letter_bar(stats) or (not data_tables and _is_link_block(stats))
        )
        if is_menu:
            doomed.append(element)
        if stack:
            parent = stack[-1]
            if is_menu:
                # Its text no longer counts for its ancestors: they are judged on what stays, so a
                # menu cannot drag the page around it down.
                parent.menu_links += stats.links + stats.menu_links
            else:
                parent.absorb(stats)
            parent.add_text(element.tail or "", link_depth > 0)
    return doomed


def _has_header(table: Any) -> bool:
    """A table of data names its columns (``<thead>``, ``<th>`` cells in its first row) or has a
    caption; a layout table does neither. Only the children up to the first row are looked at."""
    for child in table:
        if child.tag in ("thead", "caption"):
            return True
        row = child if child.tag == "tr" else child.find("tr") if child.tag == "tbody" else None
        if row is not None:
            return row.find("th") is not None
    return False


def _is_letter_bar(stats: _TextStats) -> bool:
    """An index's letter bar ("Jump to: A C F V"): links of a letter or two each, under a label."""
    return (
        stats.links >= _MIN_LETTER_LINKS
        and stats.letter_links == stats.links
        and stats.outside_chars <= _MAX_LABEL_CHARS
    )


def _is_link_block(stats: _TextStats) -> bool:
    if not stats.links:
        # What is left of a menu box once its lists of links are gone: its label ("Main Menu").
        return stats.menu_links >= _MIN_MENU_LINKS and 0 < stats.outside_chars <= _MAX_LABEL_CHARS
    words = (
        re.findall(r"\w+", " ".join(stats.outside).lower())
        if stats.outside_chars <= _MAX_OUTSIDE_CHARS
        else []
    )
    if not stats.outside_chars:
        return stats.links >= 2  # a bare list of links: a menu, not prose
    if words and all(word in _NAV_WORDS for word in words):
        return any(word in _NAV_WORDS - {"top"} for word in words)  # "Next: ... Up: ... [Index]"
    # A menu or table of contents under a label ("Main Menu", "Table of Contents"): many links,
    # next to no other text.
    return stats.links >= _MIN_MENU_LINKS and stats.outside_chars <= _MENU_OUTSIDE_SHARE * (
        stats.outside_chars + stats.link_chars
    )


def heading_text(element: Any) -> str:
    """A heading's text without its permalink anchors (Sphinx's ``<a class="headerlink">¶</a>``,
    Node.js's ``<span><a class="mark">#</a></span>``) or a trailing mark."""
    from lxml import etree

    parts: list[str] = []
    walker = etree.iterwalk(element, events=("start", "end"))
    for event, node in walker:
        if event == "start":
            if node is not element and _is_permalink(node):
                walker.skip_subtree()
                parts.append(node.tail or "")
                continue
            if node.tag in _SEPARATING_TAGS:
                parts.append(" ")
            parts.append(node.text or "")
        elif node is not element:
            parts.append(node.tail or "")
    return strip_trailing_marks("".join(parts))


def strip_trailing_marks(text: str) -> str:
    """A heading's text without the permalink marks (and the spaces around them) at its end. String
    operations: the pattern ``\\s*[¶§]+\\s*$`` was quadratic on whitespace inside a heading."""
    body = text.rstrip()
    unmarked = body.rstrip(_MARK_CHARS)
    return text if len(unmarked) == len(body) else unmarked.rstrip()


def is_permalink_anchor(node: Any) -> bool:
    """A permalink outside a heading (makeinfo's ``<a class="copiable-anchor"> ¶</a>`` after each
    definition term): a mark symbol, or a permalink class on a link of a character or two."""
    if node.tag != "a":
        return False
    text = node.text_content().strip()
    if text in _MARK_SYMBOLS:
        return True
    classes = (node.get("class") or "").split()
    return len(text) <= 2 and any(name in _PERMALINK_CLASSES for name in classes)


def _is_permalink(node: Any) -> bool:
    if node.tag != "a":
        return False
    classes = (node.get("class") or "").split()
    return any(name in _PERMALINK_CLASSES for name in classes) or (
        node.text_content().strip().lower() in PERMALINK_MARKS
    )


def spaced_text(element: Any) -> str:
    """``text_content()`` with a space wherever a block element or ``<br>`` separates words, so
    ``<h1>Library</h1><h2>FAQ</h2>`` in one cell reads "Library FAQ", not "LibraryFAQ"."""
    from lxml import etree

    parts: list[str] = []
    for event, node in etree.iterwalk(element, events=("start", "end")):
        separates = node.tag in _SEPARATING_TAGS
        if event == "start":
            if separates:
                parts.append(" ")
            parts.append(node.text or "")
        else:
            if separates:
                parts.append(" ")
            if node is not element:
                parts.append(node.tail or "")
    return "".join(parts)


def clean_inline(text: str) -> str:
    """Running text: every run of whitespace, line breaks included, becomes one space."""
    if _NEEDS_CLEANUP.search(text):
        text = text.translate(_CLEANUP_TABLE)
    return " ".join(text.split())


def clean_preformatted(text: str) -> str:
    """Preformatted text (code, a configuration sample, a man page's ``.nf`` block): its lines as they
    are, with their indentation (less what every line shares) and single blank lines; tabs expanded,
    trailing blanks and invisible characters gone, control characters spaces."""
    text = _LINE_BREAKS.sub("\n", text).expandtabs(8)
    if _NEEDS_CLEANUP.search(text):
        text = text.translate(_CLEANUP_TABLE)
    lines: list[str] = []
    for line in text.split("\n"):
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    shared = min((len(line) - len(line.lstrip(" ")) for line in lines if line), default=0)
    return "\n".join(line[shared:] for line in lines)


def clean_lines(text: str) -> str:
    """Text whose line breaks mean something (a table, code, a list): spaces collapse inside each
    line, blank lines disappear, the lines themselves stay."""
    text = _LINE_BREAKS.sub("\n", text)
    if _NEEDS_CLEANUP.search(text):
        text = text.translate(_CLEANUP_TABLE)
    lines = (_HORIZONTAL_WHITESPACE.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)
