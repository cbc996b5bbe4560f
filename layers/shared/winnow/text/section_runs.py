"""Rules 1, 2 and 6 of ``winnow.text.chunking``: a document's blocks in section runs, and each run's
blocks packed into drafts (paragraphs accumulated, long blocks split, tables and figures walls of
their own, a new page or OCR text a new draft)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from winnow.models import Block
from winnow.rules import figure_name
from winnow.settings import ChunkingSettings
from winnow.text.drafts import BLOCK_SEPARATOR, Draft
from winnow.text.splitting import split_long
from winnow.text.tables import table_pieces

__all__ = ["SectionPacker", "section_runs"]


def section_runs(blocks: Sequence[Block]) -> Iterator[tuple[tuple[str, ...], list[Block]]]:
    run: list[Block] = []
    for block in blocks:
        if not block.text.strip():
            continue
        if run and block.section_path != run[0].section_path:
            yield run[0].section_path, run
            run = []
        run.append(block)
    if run:
        yield run[0].section_path, run


class SectionPacker:
    """Packs the blocks of one section run into drafts (rules 2-4)."""

    def __init__(self, path: tuple[str, ...], settings: ChunkingSettings) -> None:
        self.path = path
        self.target = settings.target_chars
        self.overlap = settings.overlap_chars
        self.min_chars = settings.min_chars
        self.table_target = min(settings.table_target_chars, settings.target_chars)
        self.drafts: list[Draft] = []  # finished drafts not yet handed on (``pack`` yields them)
        self._parts: list[str] = []
        self._page: int | None = None
        self._length = 0
        self._overlap_prefix = 0
        self._gap = BLOCK_SEPARATOR
        self._ocr = False

    def pack(self, blocks: Sequence[Block]) -> Iterator[Draft]:
        for block in blocks:
            yield from self._take()
            text = block.text.strip()
            if block.table is not None:
                # A table is a wall of its own: whole rows, the header repeated in every piece.
                self._emit()
                self.drafts.extend(
                    Draft(text=piece, section_path=self.path, page=block.page, kind="table", ocr=block.ocr)
                    for piece in table_pieces(block.table, self.table_target, self.target)
                )
                continue
            if block.figure is not None:
                # A figure is a wall too: its caption leads every piece of its text.
                self._emit()
                self.drafts.extend(
                    Draft(
                        text=piece,
                        section_path=self.path,
                        page=block.page,
                        kind="figure",
                        ocr=block.ocr,
                        figure_text=block.figure.figure_text,
                        image=figure_name(block.figure.digest, block.figure.media_type)
                        if block.figure.data
                        else "",
                    )
                    for piece in _figure_pieces(text, block.figure.caption, self.target)
                )
                continue
            if self._parts and block.ocr != self._ocr:
                self._emit()  # text read by OCR is never mixed with a text layer's in one chunk
            self._ocr = block.ocr
            if self._parts and None not in (block.page, self._page) and block.page != self._page:
                self._emit()  # a new page starts a new chunk, so every chunk's page citation is exact
            if block.entry:
                self._emit()  # rule 2: an entry starts a chunk of its own
            if len(text) <= self.target:
                if self._parts and self._length + len(BLOCK_SEPARATOR) + len(text) > self.target:
                    self._emit()
                self._append(text, block.page)
                if block.entry:
                    self._emit()  # and nothing joins it
                continue
            if _usable_head(block.head, text, self.target):
                # an entry's term, a list's introduction: it leads every piece, never cut off
                self._emit()
                yield from self._take()
                self.drafts.extend(_headed_pieces(block, text, self.path, self.target, self.overlap))
                continue
            spans = [(text, block.page)]
            carried_overlap, carried_gap = 0, ""
            if self._parts and self._length < self.min_chars:
                # A tiny paragraph before a long one would be left alone: split them together instead.
                spans.insert(0, (BLOCK_SEPARATOR.join(self._parts), self._page))
                carried_overlap, carried_gap = self._overlap_prefix, self._gap
                self._reset()
            else:
                self._emit()
            yield from self._take()  # the drafts emitted above come before the pieces
            last: Draft | None = None
            for piece in split_long(spans, self.path, self.target, self.overlap):
                piece = replace(piece, ocr=block.ocr)
                if last is None:
                    if carried_overlap:
                        # The folded paragraph began with overlap from the draft before it: keep that known.
                        piece = replace(piece, overlap=carried_overlap, gap=carried_gap)
                else:
                    yield last
                last = piece
            assert last is not None  # a long block has text, so at least one piece
            self._parts = [last.text]
            self._page = last.page
            self._length = len(last.text)
            self._overlap_prefix = last.overlap
            self._gap = last.gap
            if block.entry:
                self._emit()
        self._emit()
        yield from self._take()

    def _take(self) -> list[Draft]:
        taken, self.drafts = self.drafts, []
        return taken

    def _append(self, text: str, page: int | None) -> None:
        if not self._parts:
            self._page = page
            self._length = len(text)
        else:
            self._length += len(BLOCK_SEPARATOR) + len(text)
        self._parts.append(text)

    def _emit(self) -> None:
        if self._parts:
            self.drafts.append(
                Draft(
                    text=BLOCK_SEPARATOR.join(self._parts),
                    section_path=self.path,
                    page=self._page,
                    overlap=self._overlap_prefix,
                    gap=self._gap,
                    ocr=self._ocr,
                )
            )
        self._reset()

    def _reset(self) -> None:
        self._parts = []
        self._page = None
        self._length = 0
        self._overlap_prefix = 0
        self._gap = BLOCK_SEPARATOR


def _usable_head(head: str, text: str, target: int) -> bool:
    """Whether a block's head can lead each of its pieces: it leads the text and takes at most a third
    of a piece (a longer one would leave too little room: the block is then split as any other)."""
    return bool(head) and len(head) <= target // 3 and text.startswith(head) and len(text) > len(head)


def _headed_pieces(block: Block, text: str, path: tuple[str, ...], target: int, overlap: int) -> list[Draft]:
    """A long block split after its head, the head and a line break leading each piece. Each piece's
    ``overlap`` covers the head too, so a tiny piece merged into its neighbour (rule 5) leaves its
    head out rather than repeat it."""
    head = block.head
    room = target - len(head) - 1
    body = text[len(head) :].lstrip()
    pieces: list[Draft] = []
    for piece in split_long([(body, block.page)], path, room, min(overlap, room // 2 - 1)):
        lead = 0 if not pieces else len(head) + 1 + piece.overlap
        pieces.append(replace(piece, text=f"{head}\n{piece.text}", overlap=lead, ocr=block.ocr))
    return pieces


def _figure_pieces(text: str, caption: str, target: int) -> list[str]:
    """A figure's text in pieces of at most ``target`` characters, whole lines packed in order (a line
    longer than the room is cut between words), each piece after the first led by the caption."""
    lead = caption[: target // 2] if caption and text.startswith(caption) else ""
    lines = text.split("\n")[1:] if lead else text.split("\n")
    room = max(1, target - len(lead) - 1) if lead else target
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for line in (part for whole in lines for part in _cut_line(whole, room)):
        if current and used + 1 + len(line) > room:
            pieces.append("\n".join([lead, *current] if lead else current))
            current, used = [], 0
        used += len(line) + (1 if current else 0)
        current.append(line)
    if current or not pieces:
        pieces.append("\n".join([lead, *current] if lead else current))
    return [piece for piece in pieces if piece]


def _cut_line(line: str, room: int) -> Iterator[str]:
    while len(line) > room:
        cut = line.rfind(" ", 0, room)
        cut = cut if cut > 0 else room
        yield line[:cut]
        line = line[cut:].lstrip()
    if line:
        yield line
