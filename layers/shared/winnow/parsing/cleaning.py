"""Cleaning that removes what is not the document's own text, and nothing else.

- Terminal output (man pages saved with ``man foo > foo.txt``, build logs): ANSI escape sequences
  (colours, bold, cursor movement, OSC titles and links) and backspace overstrike (``_\\bw`` underline,
  ``w\\bw`` bold) are removed, leaving the characters a terminal would show.
- HTML: blocks that are site furniture (navigation panels by class or id, breadcrumb trails, "Next: ...
  Previous: ... Up: ..." link bars of GNU info pages) and permalink markers in headings (Sphinx's ``¶``).

Every rule deletes markup or whole furniture blocks; none rewrites words, so the words of the cleaned
text are always words of the source (a property test checks it).
"""

from __future__ import annotations

import re
from typing import Any

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
        "breadcrumbs", "sidebar", "sphinxsidebar", "related", "site-header", "site-footer", "skip-link",
        "skiplink", "menu", "topbar", "cookie-banner", "cookie-notice", "pagination", "header-nav",
    }
)  # fmt: skip
_NAV_WORDS = frozenset(
    {"next", "previous", "prev", "up", "top", "home", "contents", "index", "back", "forward", "toc"}
)
_LINK_BLOCK_TAGS = frozenset({"p", "div", "ul", "ol", "nav", "table", "center", "span"})
PERMALINK_MARKS = frozenset({"¶", "#", "§", "🔗", "link"})
_TRAILING_MARKS = re.compile(r"\s*[¶§\U0001f517]+\s*$")


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


def is_furniture(element: Any) -> bool:
    """A navigation panel, breadcrumb trail or link bar: class/id names it so, or its only text outside
    links is navigation words ("Next:", "Up:", "[Index]") and it holds at least one link."""
    tag = element.tag if isinstance(element.tag, str) else ""
    names = f"{element.get('class', '')} {element.get('id', '')}".lower().split()
    if any(name in _FURNITURE_TOKENS for name in names):
        return True
    if tag not in _LINK_BLOCK_TAGS:
        return False
    links = element.findall(".//a")
    if not links or len(links) > 200:
        return False
    outside = _text_outside_links(element)
    words = re.findall(r"\w+", outside.lower())
    if not words:
        return len(links) >= 2  # a bare list of links: a menu, not prose
    return all(word in _NAV_WORDS for word in words) and any(word in _NAV_WORDS - {"top"} for word in words)


def _text_outside_links(element: Any) -> str:
    parts: list[str] = [element.text or ""]
    for child in element:
        if isinstance(child.tag, str) and child.tag != "a":
            parts.append(_text_outside_links(child))
        parts.append(child.tail or "")
    return "".join(parts)


def heading_text(element: Any) -> str:
    """A heading's text without its permalink anchor (``<a class="headerlink">¶</a>``) or trailing mark."""
    parts: list[str] = [element.text or ""]
    for child in element:
        is_permalink = (
            isinstance(child.tag, str)
            and child.tag == "a"
            and (
                "headerlink" in (child.get("class") or "")
                or "anchor" in (child.get("class") or "")
                or child.text_content().strip().lower() in PERMALINK_MARKS
            )
        )
        if not is_permalink and isinstance(child.tag, str):
            parts.append(child.text_content())
        parts.append(child.tail or "")
    return _TRAILING_MARKS.sub("", "".join(parts))
