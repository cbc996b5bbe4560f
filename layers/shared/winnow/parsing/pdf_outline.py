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
