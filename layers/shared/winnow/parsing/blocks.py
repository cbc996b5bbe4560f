"""What every format parser shares: the heading stack that turns headings into section paths, the
collector of blocks, and the final assembly of a :class:`ParsedDocument`.

Keeping this in one place means the chunker sees the same shape of blocks whatever the format was:
no empty blocks, single spaces inside running text, line breaks only where they carry meaning
(table rows, code, lists).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath

from winnow.errors import EmptyDocument
from winnow.models import Block, Figure, ParsedDocument
from winnow.parsing.cleaning import clean_inline, clean_lines, clean_preformatted
from winnow.parsing.extensions import is_document_extension
from winnow.parsing.lists import introduces, join_list
from winnow.parsing.tables import make_table_block

_MAX_TITLE_CHARS = 300
# A held term longer than this is released as a block of its own: a page of nothing but <dt>s stays
# linear, and a "term" of a paragraph's length is not a term.
_MAX_TERM_CHARS = 500
# A definition's later paragraphs join its entry up to this length (each join copies the entry once, so
# a <dd> of thousands of paragraphs stays linear); past it they start another entry, led by the term.
_MAX_ENTRY_CHARS = 4_000
# Release notes by their conventional names: a first heading with a version in it is the newest
# release ("Version 2.3"), not what the file is.
_RELEASE_NOTES = re.compile(r"(?:NEWS|CHANGES|(?i:changelog|release[-_]?notes))(?:\.[A-Za-z]{1,8})?")
_OBJECT_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # "<_io.BytesIO object at 0x7f...>" varies per run


class HeadingStack:
    """The current section path. A heading of level n closes every open heading of level >= n, so
    "1 Intro / 1.1 Scope / 2 Method" gives ("Method",) after the third heading, not three levels."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []

    def push(self, level: int, title: str) -> None:
        title = clean_inline(title)
        if not title:
            return
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, title[:_MAX_TITLE_CHARS]))

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._open)


def _place(block: Block) -> tuple[tuple[str, ...], int | None, bool]:
    """Where a block sits: a held term leads, and an entry continues, only text in the same place."""
    return block.section_path, block.page, block.ocr


class BlockCollector:
    """Accumulates cleaned, non-empty blocks in document order.

    A *term* (``add(..., term=True)``: an HTML ``<dt>``) is held back and leads the next text block of
    the same section and page, so a term and its definition are one block and no chunk boundary can fall
    between them. Consecutive terms ("-v" then "--verbose") lead it together; a term that nothing
    follows (``release_term``), or longer than ``_MAX_TERM_CHARS``, is a block of its own. A block made
    of a term and its definition is marked ``entry`` (the chunker gives it a chunk of its own), and the
    definition's later paragraphs (``continues_entry``) join it up to ``_MAX_ENTRY_CHARS``; past that they
    go on in another entry led by the same term (copied once per ``_MAX_ENTRY_CHARS`` at most)."""

    def __init__(self, held_figures: int = 200) -> None:
        self._blocks: list[Block] = []
        self._term: Block | None = None
        # Distinct images whose bytes are kept (``parsing.figures``): more are judged by digest alone.
        self._held_figures = held_figures
        self._figure_bytes: dict[str, bytes] = {}

    @property
    def blocks(self) -> list[Block]:
        """The blocks so far (a term still held counts as one)."""
        self.release_term()
        return self._blocks

    def add(
        self,
        text: str,
        section_path: tuple[str, ...] = (),
        page: int | None = None,
        *,
        keep_lines: bool = False,
        ocr: bool = False,
        term: bool = False,
        entry: bool = False,
        continues_entry: bool = False,
        preformatted: bool = False,
        head: str = "",
    ) -> None:
        """``keep_lines``: text whose lines mean something (a list, a table); ``preformatted``: text
        whose indentation means something too (code, a sample file). ``head``: what leads the text and
        leads each piece of it when the chunker splits it (``Block.head``)."""
        if preformatted:
            cleaned = clean_preformatted(text)
        else:
            cleaned = clean_lines(text) if keep_lines else clean_inline(text)
        if not cleaned:
            return
        term = term and len(cleaned) <= _MAX_TERM_CHARS
        where = (section_path, page, ocr)
        held = self._term
        if held is not None and _place(held) == where:
            if term and len(held.text) + len(cleaned) > _MAX_TERM_CHARS:
                self.release_term()
            else:
                head = head or held.text
                cleaned = held.text + ("\n" if keep_lines or preformatted else " ") + cleaned
                self._term = None
                entry = entry or not term  # a term with its definition is an entry
        else:
            self.release_term()
            last = self._blocks[-1] if self._blocks else None
            if continues_entry and not term and last is not None and last.entry and _place(last) == where:
                if len(last.text) + len(cleaned) <= _MAX_ENTRY_CHARS:
                    self._blocks[-1] = replace(last, text=f"{last.text}\n{cleaned}")
                    return
                if last.head:  # a full entry goes on in a block of its own, led by the same term
                    head, entry = last.head, True
                    cleaned = f"{head}\n{cleaned}"
        head = clean_inline(head)
        block = Block(
            text=cleaned,
            section_path=section_path,
            page=page,
            ocr=ocr,
            entry=entry,
            head=head if cleaned.startswith(head) else "",
        )
        if term:
            self._term = block
        else:
            self._blocks.append(block)

    @property
    def count(self) -> int:
        """How many blocks are finished (a held term not counted): where a list's first item will go."""
        return len(self._blocks)

    def join_list(self, start: int) -> None:
        """The blocks from ``start`` on are one list's items (an HTML ``<ol>`` or ``<ul>``). When the
        block just before them introduces them ("The exit status is one of:"), the two become one block
        led by it (``lists.join_list``), so no passage holds the items without it. A list without such
        a paragraph, or holding tables, figures or entries, stays as it is."""
        blocks = self.blocks
        items = blocks[start:]
        if not 0 < start < len(blocks) or not introduces(blocks[start - 1], items[0]):
            return
        if any(item.kind != "text" or item.entry or _place(item) != _place(items[0]) for item in items):
            return
        blocks[start - 1 :] = [join_list(blocks[start - 1], items)]

    def release_term(self) -> None:
        """A held term that no definition followed (the end of its list) becomes a block of its own."""
        if self._term is not None:
            self._blocks.append(self._term)
            self._term = None

    def add_table(
        self,
        rows: list[list[str]],
        section_path: tuple[str, ...] = (),
        page: int | None = None,
        *,
        caption: str = "",
        has_header: bool = True,
    ) -> None:
        """A table as a table block (see ``winnow.parsing.tables``); nothing when it has no text."""
        block = make_table_block(rows, section_path, page, caption=caption, has_header=has_header)
        if block is not None:
            self.blocks.append(block)  # after any held term: a term leads text, not a table

    def wants_figure(self, digest: str) -> bool:
        """Whether the bytes of the image with this digest are still needed (first sight, room left)."""
        return digest not in self._figure_bytes and len(self._figure_bytes) < self._held_figures

    def add_figure(
        self, figure: Figure | None, section_path: tuple[str, ...] = (), page: int | None = None
    ) -> None:
        """A figure candidate where it stands; ``parsing.figures.resolve_figures`` judges it later.
        An image seen before shares the first sight's bytes; past the held limit it keeps none."""
        if figure is None:
            return
        if figure.data:
            if self.wants_figure(figure.digest):
                self._figure_bytes[figure.digest] = figure.data
            else:
                figure = replace(figure, data=b"")
        self.blocks.append(Block(text="", section_path=section_path, page=page, figure=figure))


def title_from_key(key: str) -> str:
    """A readable title from the object key: ``acme/q3_sales-report.pdf`` -> ``q3 sales report``.
    Only a document type's extension goes: ``README.Debian`` and ``resolv.conf`` keep their names."""
    name = PurePosixPath(key).name
    stem, dot, suffix = name.rpartition(".")
    if not (stem.strip(".") and is_document_extension(dot + suffix)):
        stem = name
    readable = clean_inline(stem.replace("_", " ").replace("-", " "))
    return readable or clean_inline(name) or key


def release_notes_title(key: str) -> str:
    """``acme/gzip/NEWS`` -> ``gzip NEWS``: the file's name, with the folder it describes when the key
    has one below the tenant."""
    parts = PurePosixPath(key).parts
    name = title_from_key(key)
    return f"{parts[-2]} {name}" if len(parts) > 2 else name


def finish_document(
    blocks: list[Block], *, title: str | None, key: str, source_type: str, empty_reason: str
) -> ParsedDocument:
    """Assemble the document: choose the title, drop a leading path element that only repeats the
    title (``Chunk.embed_text`` already starts with the title; "Guide > Guide > Install" helps no
    one), and refuse a document without text."""
    if title and any(c.isdigit() for c in title) and _RELEASE_NOTES.fullmatch(PurePosixPath(key).name):
        title = release_notes_title(key)  # "Version 2.3" names the newest release, not the file
    chosen_title = clean_inline(title or "")[:_MAX_TITLE_CHARS] or title_from_key(key)
    if not blocks:
        raise EmptyDocument(empty_reason)
    folded_title = chosen_title.casefold()
    finished = [
        replace(block, section_path=block.section_path[1:])
        if block.section_path and block.section_path[0].casefold() == folded_title
        else block
        for block in blocks
    ]
    if not any(block.section_path for block in finished) and any(block.section_path for block in blocks):
        finished = list(blocks)  # the only heading is the title: it is still the passages' section
    return ParsedDocument(title=chosen_title, blocks=finished, source_type=source_type)


def one_line(error: BaseException, limit: int = 160) -> str:
    """An exception as a short single line for a ledger reason: parser messages can be long and
    span lines. Only the exception text of a parser is used, never document content we chose."""
    message = _OBJECT_ADDRESS.sub("", " ".join(str(error).split())) or type(error).__name__
    return message[:limit]
