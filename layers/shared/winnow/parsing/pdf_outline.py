"""A PDF's own structure: its title from the metadata (unless a tool's placeholder or a file name), and
its outline (bookmarks) as the section path of each page, with where on the page each bookmark's
heading line takes effect. Damaged metadata or outlines are ignored: sections are a bonus."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from winnow.parsing.cleaning import clean_inline

if TYPE_CHECKING:
    from pypdf import PdfReader

_FILE_NAME_TITLE = re.compile(r"\.(docx?|pdf|tex|dvi|indd|pptx?|xlsx?|odt|rtf|txt)$", re.IGNORECASE)
# "(anonymous)" is what reportlab writes when its caller sets no title.
_JUNK_TITLES = frozenset(
    {"untitled", "unknown", "title", "no title", "document", "microsoft word", "(anonymous)", "anonymous"}
)
_MAX_OUTLINE_ENTRIES = 10_000


@dataclass(frozen=True)
class OutlineEntry:
    page_index: int
    path: tuple[str, ...]
    order: int


def metadata_title(reader: PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        raw = metadata.title if metadata is not None else None
    except Exception:
        return None
    if not isinstance(raw, str):
        return None
    title = clean_inline(raw)
    if title.lower().startswith("microsoft word - "):
        title = title[len("microsoft word - ") :]
    if not title or title.lower() in _JUNK_TITLES or _FILE_NAME_TITLE.search(title):
        return None
    return title


def outline_entries(reader: PdfReader) -> list[OutlineEntry]:
    """Bookmarks flattened to (page, path), sorted by page then outline order. A damaged outline is
    ignored: sections are a bonus, the text is what matters."""
    try:
        outline = reader.outline
    except Exception:
        return []
    entries: list[OutlineEntry] = []

    def walk(items: list[Any], parents: tuple[str, ...]) -> None:
        last_path: tuple[str, ...] | None = None
        for item in items:
            if len(entries) >= _MAX_OUTLINE_ENTRIES:
                return
            if isinstance(item, list):
                walk(item, last_path if last_path is not None else parents)
                continue
            title = clean_inline(str(getattr(item, "title", "") or ""))
            if not title:
                last_path = parents
                continue
            last_path = (*parents, title)
            try:
                page_index = reader.get_destination_page_number(item)
            except Exception:
                page_index = None
            if page_index is not None and page_index >= 0:
                entries.append(OutlineEntry(page_index, last_path, len(entries)))

    try:
        walk(outline, ())
    except RecursionError:
        return []
    return sorted(entries, key=lambda entry: (entry.page_index, entry.order))


def _normalise_heading(text: str) -> str:
    """Letters and digits only: a bookmark's title and its printed heading often differ in hyphens,
    dots or spaces ("2.13. Nonregular files" over "2.13. Non-regular files")."""
    return "".join(char for char in clean_inline(text).casefold() if char.isalnum())


def heading_positions(lines: list[str], entries: list[OutlineEntry]) -> list[tuple[int, OutlineEntry, bool]]:
    """Where each bookmark of this page takes effect: (line index, entry, whether that line is the
    heading itself). A bookmark whose title is not found takes effect where the previous one did."""
    positions: list[tuple[int, OutlineEntry, bool]] = []
    cursor = 0
    normalised = [_normalise_heading(line) for line in lines]
    for entry in entries:
        wanted = _normalise_heading(entry.path[-1]) or entry.path[-1].casefold()  # a title of only "—"
        found = next(
            (
                index
                for index in range(cursor, len(lines))
                if normalised[index] == wanted
                or (normalised[index].endswith(wanted) and len(normalised[index]) - len(wanted) <= 8)
            ),
            None,
        )
        if found is None:
            positions.append((cursor, entry, False))
        else:
            positions.append((found, entry, True))
            cursor = found + 1
    return positions


_MAX_COVER_FRAGMENTS = 5_000
_COVER_BODY_PAGES = 3  # the body text's size is read from the first pages (the caller's)
_TITLE_TYPE_RATIO = 1.3  # a title line's type is at least this much larger than the page's body text


def first_page_heading(pages: Any) -> str | None:
    """The words the first of ``pages`` (the document's first few) sets in its largest type, when that
    type is clearly larger than their body text: a manual's cover title (``bzip2 and libbzip2, version
    1.0.8``), where the metadata has none and the file name (``crc-doc.1.0.pdf``) says little. None for
    pages of even type."""
    from winnow.parsing.pdf_tables import Fragment, fragment_from_visitor

    def read(page: Any) -> list[Fragment]:
        fragments: list[Fragment] = []

        def visit(text: str, cm: Any, tm: Any, _font: Any, font_size: Any) -> None:
            if text.strip() and len(fragments) <= _MAX_COVER_FRAGMENTS:
                fragments.append(fragment_from_visitor(text, cm, tm, float(font_size or 0)))

        try:
            page.extract_text(visitor_text=visit)
        except Exception:
            return []  # a damaged page: the title is a bonus
        return fragments

    read_pages = [read(page) for page in pages]
    cover = read_pages[0] if read_pages else []
    every = [f for fragments in read_pages for f in fragments]
    if not cover or len(every) > _COVER_BODY_PAGES * _MAX_COVER_FRAGMENTS:
        return None
    by_size = sorted(every, key=lambda f: f.size)
    total = sum(len(f.text) for f in by_size)
    seen, body = 0, by_size[-1].size
    for fragment in by_size:  # the size of the median character
        seen += len(fragment.text)
        if seen * 2 >= total:
            body = fragment.size
            break
    largest = max(f.size for f in cover)
    if largest < _TITLE_TYPE_RATIO * body:
        return None
    title = clean_inline(" ".join(f.text for f in cover if f.size >= 0.95 * largest))
    if not 3 <= len(title) <= 150 or not any(c.isalpha() for c in title):
        return None
    return title
