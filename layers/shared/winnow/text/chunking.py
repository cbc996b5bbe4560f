"""Structure-aware chunking: passages that follow the document's sections, sized for embedding.

The rules, in the order they apply:

1. **Sections are walls, pages are walls.** Consecutive blocks with the same section path form a run;
   a chunk never takes text from two runs, and within a run a new page starts a new chunk, so a page
   citation is exact (the one exception to both is rule 5, which can fold a tiny remnant across).
2. **Paragraphs accumulate.** Within a run, whole blocks are packed greedily, joined by a blank line,
   while the chunk stays within ``target_chars``. A definition-list entry (``Block.entry``: one option
   of a manual page, one ``<dt>``/``<dd>`` pair) is a chunk of its own (a tiny one still merges by
   rule 5): with a 256-token embedder a passage holding four options matched a question about one of
   them less well (training/NOTEBOOK.md).
3. **Long blocks are split** at sentence ends or line breaks, a sentence that is still too long at
   word boundaries, and a token longer than the room left (``target_chars - overlap_chars``) is cut
   where it must be. Pieces are balanced (each aims at the run's remaining length divided by the
   pieces still needed), so a split never leaves a 30-character tail.
4. **Overlap where the text was cut.** Each piece after the first in a split block starts with up to
   ``overlap_chars`` of the previous piece's end: whole trailing sentences when they fit, else the
   trailing words. Never more than half of that piece. Blocks that were kept whole need no overlap:
   the cut between them is the author's own paragraph break.
5. **Tiny fragments are merged**, not indexed alone. A chunk under ``min_chars`` joins the following
   chunk of its section, else the previous one; a section that is tiny as a whole (a heading with one
   short line) joins the next section's first chunk, or the previous section's last chunk at the end
   of the document. The merged chunk keeps the tiny part's section path only if that path is an
   ancestor of the other part's path (the whole passage then lies inside it, so the citation is
   true); otherwise it keeps the receiving chunk's path, which holds most of the text. A tiny draft
   goes back only when the previous chunk can also take the tiny drafts that end the document; when
   the tiny drafts after it already need more than the room left, it goes forward (this decides with
   a bounded look-ahead, so the merge streams).

6. **Tables are walls of their own.** A table block becomes ``kind="table"`` chunks of whole rows
   (``winnow.text.tables``: caption and column line repeated at the top of each, at most
   ``table_target_chars``); they are never merged with text, and text read by OCR is never packed or
   merged with text from a text layer (a chunk's ``ocr`` mark is true of all of it). A figure block
   (``winnow.parsing.figures``) is a wall too: ``kind="figure"`` pieces of whole lines, its caption
   leading each.

7. **Small sections are packed** (``pack_sections``): consecutive sections whose chunks together fit
   ``target_chars`` become one passage whose section is their common ancestor, each deeper part led by
   a line naming its own section (``_pack_sections``). Rule 1's walls hold for everything else.

Size guarantee: no chunk is longer than ``target_chars + 2 * min_chars + 4`` (a chunk can receive a
tiny fragment from each side, with a separator each; the merge checks it, see ``_merge_small``), and no
chunk is shorter than ``min_chars`` unless the whole document is. ``chunk_to_fit`` re-chunks a document
with a smaller target when a chunk would not fit the embedder's token window. ``page`` is the page where
the chunk's text starts. The output depends only on the input: no randomness, no clocks.

Every step streams and is linear in the text (chunking runs after the parse budget, so a quadratic step
would be unbounded), and ``max_chunks`` is enforced while chunking.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from winnow.errors import OversizedDocument
from winnow.models import Block, Chunk, ParsedDocument
from winnow.rules import figure_name
from winnow.settings import ChunkingSettings
from winnow.text.tables import table_pieces

__all__ = ["chunk_document", "chunk_to_fit", "max_chunk_chars", "too_many_chunks"]

_BLOCK_SEPARATOR = "\n\n"
# A cut is allowed after sentence-final punctuation (with closing quotes or brackets) followed by
# whitespace, after CJK full stops, and at any line break. A match may only start where a run of
# punctuation starts, and the runs are possessive: a run that is not followed by whitespace ("...x",
# a table rule of dots) fails once, instead of once per character of the run (quadratic).
_SENTENCE_END = re.compile(
    "(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019\u00bb)\\]]*+\\s+|[\u3002\uff01\uff1f]+\\s*|\n\\s*"
)
_WORD = re.compile(r"\S+\s*")
_WORD_START = re.compile(r"(?<=\s)\S")


@dataclass(frozen=True)
class _Draft:
    text: str
    section_path: tuple[str, ...]
    page: int | None
    # The first ``overlap`` characters of ``text`` repeat the end of the previous draft, and ``gap`` is
    # the whitespace that separated the two in the source: both let a merge undo the overlap.
    overlap: int = 0
    gap: str = _BLOCK_SEPARATOR
    kind: str = "text"
    ocr: bool = False
    figure_text: str = ""
    image: str = ""


def max_chunk_chars(settings: ChunkingSettings) -> int:
    """The documented upper bound on a chunk's length (see the module docstring)."""
    return settings.target_chars + 2 * settings.min_chars + 2 * len(_BLOCK_SEPARATOR)


def chunk_document(
    doc: ParsedDocument,
    settings: ChunkingSettings | None = None,
    max_chunks: int | None = None,
    run_settings: Sequence[ChunkingSettings] | None = None,
) -> list[Chunk]:
    """The document's chunks. Every step streams (sections, packing, merging), so the work is linear in
    the text and a document with more than ``max_chunks`` chunks is refused as soon as one too many is
    made, without chunking the rest. ``run_settings`` gives each section run its own sizes (one per run,
    in order: ``chunk_to_fit``'s per-section rule, never larger than ``settings``); tiny fragments then
    merge by the smallest ``min_chars`` of them, and the size guarantee is that of ``settings``."""
    settings = settings or ChunkingSettings()
    sizes = list(run_settings) if run_settings else []
    drafts: Iterator[_Draft] = (
        draft
        for number, (path, blocks) in enumerate(_section_runs(doc.blocks))
        for draft in _SectionPacker(path, sizes[number] if sizes else settings).pack(blocks)
    )
    if settings.pack_sections:
        drafts = _pack_sections(drafts, settings.target_chars)
    min_chars = min((size.min_chars for size in sizes), default=settings.min_chars)
    limit = max((max_chunk_chars(size) for size in sizes), default=max_chunk_chars(settings))
    chunks: list[Chunk] = []
    for index, draft in enumerate(_merge_small(drafts, min_chars, limit)):
        if max_chunks is not None and index >= max_chunks:
            raise OversizedDocument(too_many_chunks(max_chunks))
        chunks.append(
            Chunk(
                index=index,
                text=draft.text,
                title=doc.title,
                section_path=draft.section_path,
                page=draft.page,
                kind=draft.kind,
                ocr=draft.ocr,
                figure_text=draft.figure_text,
                image=draft.image,
            )
        )
    return chunks


def too_many_chunks(max_chunks: int, count: int | None = None) -> str:
    """The one-line reason a document over the chunk cap fails with (``count`` when it is known)."""
    return f"{count if count is not None else f'more than {max_chunks}'} chunks, over the {max_chunks} limit"


# How far ``chunk_to_fit`` shrinks the target below the size the token count suggests, and how often.
_FIT_MARGIN = 0.9
_FIT_ROUNDS = 6
_MIN_TARGET_CHARS = 200


def chunk_to_fit(
    doc: ParsedDocument,
    settings: ChunkingSettings,
    count_tokens: Callable[[Sequence[str]], list[int]],
    max_tokens: int,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """``chunk_document``, with every chunk's ``embed_text`` fitted to the embedder's ``max_tokens``
    (text past the window would be cut before embedding, unseen by the dense vector). Chunks that fit
    keep the configured sizes, so only token-dense text (numbers, option lists, formulas, non-Latin
    scripts) gets smaller chunks: each section run is chunked again with the target its own densest
    chunk needs (with ``pack_sections``, which crosses sections, the whole document is).
    The size rules hold for the settings used; a header longer than the window cannot fit, and is left
    at the floor. Over ``max_chunks`` chunks it refuses before counting a token, and tokens are counted
    a batch at a time, so the tokenizer never holds the whole document's encodings at once."""
    if not settings.pack_sections:  # packing crosses sections
        return _fit_each_section(doc, settings, count_tokens, max_tokens, max_chunks)
    return _fitted(doc, settings, count_tokens, max_tokens, max_chunks)


def _fit_each_section(
    doc: ParsedDocument,
    settings: ChunkingSettings,
    count_tokens: Callable[[Sequence[str]], list[int]],
    max_tokens: int,
    max_chunks: int | None,
) -> list[Chunk]:
    """The document chunked at the configured sizes (over the cap it is refused
    here, before a token is counted) and counted once, in batches; only the section runs that hold a
    chunk over the window are fitted again, each on its own, and the document is chunked once more
    with those sizes. A tiny section folded into a fitted neighbour (rule 5) can still push it over the
    window: the final chunks are counted, and then the whole document is fitted as one
    (``_fitted``), so no chunk is ever over the window where that rule would not leave one."""
    chunks = chunk_document(doc, settings, max_chunks)
    over = {
        chunk.section_path
        for chunk, count in zip(chunks, _token_counts(chunks, count_tokens), strict=True)
        if count > max_tokens
    }
    if not over:
        return chunks
    runs = list(_section_runs(doc.blocks))
    sizes = _fit_runs(
        doc, [blocks for path, blocks in runs if path in over], settings, count_tokens, max_tokens
    )
    refitted = iter(sizes)
    run_sizes = [next(refitted) if path in over else settings for path, _ in runs]
    fitted = chunk_document(doc, settings, max_chunks, run_settings=run_sizes)
    if max(_token_counts(fitted, count_tokens), default=0) > max_tokens:
        return _fitted(doc, settings, count_tokens, max_tokens, max_chunks)
    return fitted


def _fit_runs(
    doc: ParsedDocument,
    runs: Sequence[list[Block]],
    settings: ChunkingSettings,
    count_tokens: Callable[[Sequence[str]], list[int]],
    max_tokens: int,
) -> list[ChunkingSettings]:
    """Each run's sizes, as ``_fitted`` finds them for a whole document, for every run at once: a round
    chunks the runs still over the window and counts all their chunks together, ``_COUNT_BATCH`` a call
    (a document of thousands of dense sections is not thousands of tokenizer calls a round)."""
    sizes = [settings] * len(runs)
    pending = list(range(len(runs)))
    for _ in range(_FIT_ROUNDS):
        if not pending:
            break
        parts = {
            index: chunk_document(
                ParsedDocument(title=doc.title, blocks=runs[index], source_type=doc.source_type), sizes[index]
            )
            for index in pending
        }
        counts = _token_counts([chunk for index in pending for chunk in parts[index]], count_tokens)
        still, start = [], 0
        for index in pending:
            chunks = parts[index]
            smaller = _smaller(sizes[index], chunks, counts[start : start + len(chunks)], max_tokens)
            start += len(chunks)
            if smaller is not None:
                sizes[index] = smaller
                still.append(index)
        pending = still
    return sizes


def _smaller(
    current: ChunkingSettings, chunks: Sequence[Chunk], counts: Sequence[int], max_tokens: int
) -> ChunkingSettings | None:
    """The next, smaller sizes for ``chunks`` (made with ``current``; ``counts`` their tokens), or None
    when they fit the window or the target is at its floor: chars that fit the window at the worst
    chunk's density, less the slack the merge rule may add."""
    most, worst = _extremes(chunks, counts)
    if most <= max_tokens or current.target_chars <= _MIN_TARGET_CHARS:
        return None
    fitting = int(max_tokens / worst * _FIT_MARGIN) - 2 * current.min_chars - 2 * len(_BLOCK_SEPARATOR)
    return _scaled(current, max(_MIN_TARGET_CHARS, min(fitting, int(current.target_chars * _FIT_MARGIN))))


def _fitted(
    doc: ParsedDocument,
    settings: ChunkingSettings,
    count_tokens: Callable[[Sequence[str]], list[int]],
    max_tokens: int,
    max_chunks: int | None,
) -> list[Chunk]:
    """The document chunked with the largest target (from ``settings`` down) whose densest chunk fits."""
    current = settings
    chunks = chunk_document(doc, current, max_chunks)
    for _ in range(_FIT_ROUNDS):
        smaller = _smaller(current, chunks, _token_counts(chunks, count_tokens), max_tokens)
        if smaller is None:
            return chunks
        current = smaller
        chunks = chunk_document(doc, current, max_chunks)
    return chunks


def _token_counts(chunks: Sequence[Chunk], count_tokens: Callable[[Sequence[str]], list[int]]) -> list[int]:
    """Each chunk's ``embed_text`` in tokens, counted ``_COUNT_BATCH`` texts a call."""
    counts: list[int] = []
    for start in range(0, len(chunks), _COUNT_BATCH):
        counts.extend(count_tokens([chunk.embed_text for chunk in chunks[start : start + _COUNT_BATCH]]))
    return counts


# Texts per ``count_tokens`` call: the tokenizer's encodings (ids, offsets, strings per token) cost about
# a hundred bytes a token, so counting 20,000 chunks in one call would hold hundreds of megabytes.
_COUNT_BATCH = 256


def _extremes(chunks: Sequence[Chunk], counts: Sequence[int]) -> tuple[int, float]:
    """The largest token count among ``chunks`` (``counts``, one per chunk's ``embed_text``) and the
    highest tokens-per-character."""
    most, worst = 0, 0.0
    for chunk, count in zip(chunks, counts, strict=True):
        most = max(most, count)
        worst = max(worst, count / max(len(chunk.embed_text), 1))
    return most, worst


def _scaled(settings: ChunkingSettings, target: int) -> ChunkingSettings:
    """Settings with a smaller target; overlap and the tiny-fragment size shrink in proportion. A copy,
    not a new ``ChunkingSettings``: building one reads the environment (0.4 ms), and a document of
    thousands of dense sections scales each of them."""
    ratio = target / settings.target_chars
    return settings.model_copy(
        update={
            "target_chars": target,
            "overlap_chars": min(int(settings.overlap_chars * ratio), target // 2 - 1),
            "min_chars": min(int(settings.min_chars * ratio), target - 1),
        }
    )


def _section_runs(blocks: Sequence[Block]) -> Iterator[tuple[tuple[str, ...], list[Block]]]:
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


class _SectionPacker:
    """Packs the blocks of one section run into drafts (rules 2-4)."""

    def __init__(self, path: tuple[str, ...], settings: ChunkingSettings) -> None:
        self.path = path
        self.target = settings.target_chars
        self.overlap = settings.overlap_chars
        self.min_chars = settings.min_chars
        self.table_target = min(settings.table_target_chars, settings.target_chars)
        self.drafts: list[_Draft] = []  # finished drafts not yet handed on (``pack`` yields them)
        self._parts: list[str] = []
        self._page: int | None = None
        self._length = 0
        self._overlap_prefix = 0
        self._gap = _BLOCK_SEPARATOR
        self._ocr = False

    def pack(self, blocks: Sequence[Block]) -> Iterator[_Draft]:
        for block in blocks:
            yield from self._take()
            text = block.text.strip()
            if block.table is not None:
                # A table is a wall of its own: whole rows, the header repeated in every piece.
                self._emit()
                self.drafts.extend(
                    _Draft(text=piece, section_path=self.path, page=block.page, kind="table", ocr=block.ocr)
                    for piece in table_pieces(block.table, self.table_target, self.target)
                )
                continue
            if block.figure is not None:
                # A figure is a wall too: its caption leads every piece of its text.
                self._emit()
                self.drafts.extend(
                    _Draft(
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
                if self._parts and self._length + len(_BLOCK_SEPARATOR) + len(text) > self.target:
                    self._emit()
                self._append(text, block.page)
                if block.entry:
                    self._emit()  # and nothing joins it
                continue
            spans = [(text, block.page)]
            carried_overlap, carried_gap = 0, ""
            if self._parts and self._length < self.min_chars:
                # A tiny paragraph before a long one would be left alone: split them together instead.
                spans.insert(0, (_BLOCK_SEPARATOR.join(self._parts), self._page))
                carried_overlap, carried_gap = self._overlap_prefix, self._gap
                self._reset()
            else:
                self._emit()
            yield from self._take()  # the drafts emitted above come before the pieces
            last: _Draft | None = None
            for piece in _split_long(spans, self.path, self.target, self.overlap):
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

    def _take(self) -> list[_Draft]:
        taken, self.drafts = self.drafts, []
        return taken

    def _append(self, text: str, page: int | None) -> None:
        if not self._parts:
            self._page = page
            self._length = len(text)
        else:
            self._length += len(_BLOCK_SEPARATOR) + len(text)
        self._parts.append(text)

    def _emit(self) -> None:
        if self._parts:
            self.drafts.append(
                _Draft(
                    text=_BLOCK_SEPARATOR.join(self._parts),
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
        self._gap = _BLOCK_SEPARATOR


def _split_long(
    spans: list[tuple[str, int | None]], path: tuple[str, ...], target: int, overlap_chars: int
) -> Iterator[_Draft]:
    """Split text longer than ``target`` into balanced pieces with overlap (rules 3 and 4)."""
    text = _BLOCK_SEPARATOR.join(span for span, _ in spans)
    span_starts: list[int] = []
    offset = 0
    for span, _ in spans:
        span_starts.append(offset)
        offset += len(span) + len(_BLOCK_SEPARATOR)
    span_pages = [page for _, page in spans]

    def page_at(position: int) -> int | None:
        return span_pages[bisect.bisect_right(span_starts, position) - 1]

    room = target - overlap_chars  # new text per piece when a full overlap is in front of it
    units = _Units(_units(text, room))
    end_of_text = len(text)
    first = 0  # index of the first unit of new text in the next piece
    prefix_start = 0  # where the next piece starts, overlap included
    while units.has(first):
        units.forget_before(first - 1)  # the overlap looks back at most one unit before the piece
        content_start = units[first][0]
        budget = target - (content_start - prefix_start)
        remaining = end_of_text - content_start
        # The rest may fit in this piece even when it is over ``room``: its overlap can be shorter.
        pieces_needed = 1 if remaining <= budget else max(2, math.ceil(remaining / room))
        aim = remaining / pieces_needed
        last = first
        while units.has(last + 1):
            grown = units[last + 1][1] - content_start
            current = units[last][1] - content_start
            if grown > budget and len(text[content_start : units[last + 1][1]].rstrip()) > budget:
                break
            if abs(grown - aim) > abs(current - aim):
                break
            last += 1
        end = units[last][1]
        yield _Draft(
            text=text[prefix_start:end].strip(),
            section_path=path,
            page=page_at(prefix_start),
            overlap=content_start - prefix_start,
            gap=_trailing_whitespace(text, content_start) or _BLOCK_SEPARATOR,
        )
        first = last + 1
        if units.has(first):
            prefix_start = _overlap_start(text, units, content_start, first, overlap_chars)


def _trailing_whitespace(text: str, end: int) -> str:
    start = end
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return text[start:end]


def _overlap_start(text: str, units: _Units, piece_start: int, next_unit: int, limit: int) -> int:
    """Where the next piece's overlap begins: the earliest unit start that keeps the overlap within
    ``limit`` and within half of the finished piece; else the earliest word start that does; else no
    overlap (the next piece starts at its own new text)."""
    boundary = units[next_unit][0]
    limit = min(limit, (boundary - piece_start) // 2)
    if limit <= 0:
        return boundary
    start = boundary
    index = next_unit - 1
    while units.has(index) and units[index][0] >= piece_start and boundary - units[index][0] <= limit:
        start = units[index][0]
        index -= 1
    if start < boundary:
        return start
    word = _WORD_START.search(text, max(piece_start, boundary - limit), boundary)
    if word is not None and text[word.start() : boundary].strip():
        return word.start()
    return boundary


def _units(text: str, room: int) -> Iterator[tuple[int, int]]:
    """Cut candidates as (start, end) spans covering ``text``; trailing whitespace belongs to the span
    before it. Sentences first; a sentence longer than ``room`` falls back to words, a word longer
    than ``room`` to fixed slices. Made as they are needed, so a huge paragraph never holds them all."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() > start:
            yield from _unit_spans(text, start, match.end(), room)
            start = match.end()
    if start < len(text):
        yield from _unit_spans(text, start, len(text), room)


def _unit_spans(text: str, start: int, end: int, room: int) -> Iterator[tuple[int, int]]:
    if end - start <= room or len(text[start:end].rstrip()) <= room:
        yield (start, end)
        return
    for word in _WORD.finditer(text, start, end):
        word_start, word_end = word.span()
        while word_end - word_start > room and len(text[word_start:word_end].rstrip()) > room:
            yield (word_start, word_start + room)
            word_start += room
        yield (word_start, word_end)


class _Units:
    """The units of a text by their index, read from ``_units`` as they are asked for and forgotten once
    the pieces are past them: memory is one piece's units, whatever the paragraph's length."""

    def __init__(self, source: Iterator[tuple[int, int]]) -> None:
        self._source = source
        self._held: deque[tuple[int, int]] = deque()
        self._first = 0  # the index of ``_held[0]``

    def has(self, index: int) -> bool:
        if index < self._first:
            return False
        while index - self._first >= len(self._held):
            unit = next(self._source, None)
            if unit is None:
                return False
            self._held.append(unit)
        return True

    def __getitem__(self, index: int) -> tuple[int, int]:
        if not self.has(index):
            raise IndexError(index)
        return self._held[index - self._first]

    def forget_before(self, index: int) -> None:
        while self._first < index and self._held:
            self._held.popleft()
            self._first += 1


def _pack_sections(drafts: Iterable[_Draft], target: int) -> Iterator[_Draft]:
    """Rule 7: consecutive small sections are packed into one passage while it stays within ``target``
    (a man page's options, an API's entries, an info manual's short subsections: each alone is a chunk
    too small to answer a question, and the answer often sits in its sibling). The passage's section is
    the parts' deepest common ancestor, so its citation is true of all of it, and each part whose
    section is deeper starts with a line naming that section (relative to the ancestor), so the reader
    and the embedder still see which part is which. Tables, OCR text and pieces of a split section
    (which begin with overlap) are never packed; neither are parts on different pages."""
    group: list[_Draft] = []
    common: tuple[str, ...] = ()
    length = 0
    for draft in drafts:
        if group and _packable(group[-1], draft):
            shared = _common_prefix(common, draft.section_path)
            grown = (
                length + len(_BLOCK_SEPARATOR) + _part_length(draft, shared)
                if shared == common
                else sum(_part_length(part, shared) for part in (*group, draft))
                + len(_BLOCK_SEPARATOR) * len(group)
            )
            if grown <= target:
                group.append(draft)
                common, length = shared, grown
                continue
        if group:
            yield _packed(group, common)
        group, common, length = [draft], draft.section_path, len(draft.text)
    if group:
        yield _packed(group, common)


def _packable(last: _Draft, draft: _Draft) -> bool:
    return (
        last.kind == draft.kind == "text"
        and last.ocr == draft.ocr
        and draft.overlap == 0
        and draft.section_path != last.section_path
        and (last.page is None or draft.page is None or last.page == draft.page)
    )


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


def _common_prefix(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    return first[:shared]


def _part_heading(draft: _Draft, common: tuple[str, ...]) -> str:
    return " > ".join(draft.section_path[len(common) :])


def _part_length(draft: _Draft, common: tuple[str, ...]) -> int:
    heading = _part_heading(draft, common)
    return len(draft.text) + (len(heading) + 1 if heading else 0)


def _packed(group: list[_Draft], common: tuple[str, ...]) -> _Draft:
    if len(group) == 1:
        return group[0]
    parts = []
    for draft in group:
        heading = _part_heading(draft, common)
        parts.append(f"{heading}\n{draft.text}" if heading else draft.text)
    first = group[0]
    page = next((draft.page for draft in group if draft.page is not None), None)
    return _Draft(
        text=_BLOCK_SEPARATOR.join(parts),
        section_path=common,
        page=page,
        # the first part's overlap stays known only when no heading line was put in front of it
        overlap=0 if _part_heading(first, common) else first.overlap,
        gap=first.gap,
        ocr=first.ocr,
    )


def _merge_small(drafts: Iterable[_Draft], min_chars: int, limit: int) -> Iterator[_Draft]:
    """Rule 5: fold every draft shorter than ``min_chars`` into a neighbour, never past ``limit``.

    Drafts after the one being looked at are still as packed (at most ``target_chars``), so a tiny
    draft always fits into the following one. The preceding one may already hold folded fragments:
    a tiny draft goes there only when the result, plus every tiny draft after it that would have to
    follow (a run of tiny drafts at the end), stays within ``limit``; otherwise it goes forward.
    Without that check a chunk could collect three fragments (541 characters with a bound of 540).

    It streams: a draft is handed on once no later fragment can join it, and it looks ahead only as
    far as that check needs (at most ``limit / 3`` tiny drafts: each adds a character and a separator,
    and once they add up past ``limit`` the answer is "forward" whatever follows them). Every step is
    constant work on strings of at most ``limit`` characters, so merging is linear in the text."""
    ahead = _Lookahead(iter(drafts), min_chars)
    preceding_slot: _Draft | None = None  # the last draft handed on, still open to a backward fold
    draft = ahead.pop()
    while draft is not None:
        if len(draft.text) >= min_chars or draft.kind in ("table", "figure"):
            if preceding_slot is not None:
                yield preceding_slot
            preceding_slot, draft = draft, ahead.pop()
            continue
        # Only passages of the same kind meet: a table chunk stays a table, OCR text stays marked.
        following = ahead.peek(0)
        if following is not None and (following.kind, following.ocr) != (draft.kind, draft.ocr):
            following = None
        preceding = preceding_slot
        if preceding is not None and (preceding.kind, preceding.ocr) != (draft.kind, draft.ocr):
            preceding = None
        forward = following is not None and (
            following.section_path == draft.section_path
            or preceding is None
            or preceding.section_path != draft.section_path
        )
        if not forward and following is not None:
            assert preceding is not None
            grown = len(_join(preceding, draft, tiny_first=False).text)
            forward = grown > limit or ahead.tiny_tail_exceeds(limit - grown)
        if forward:
            assert following is not None
            ahead.pop()
            draft = _join(draft, following, tiny_first=True)
        elif preceding is not None:
            assert preceding_slot is not None
            preceding_slot = _join(preceding_slot, draft, tiny_first=False)
            # the grown predecessor is not tiny; the next draft is the next to look at
            draft = ahead.pop()
        else:
            if preceding_slot is not None:
                yield preceding_slot
            preceding_slot, draft = draft, ahead.pop()
    if preceding_slot is not None:
        yield preceding_slot


class _Lookahead:
    """The drafts still to come, with as many read ahead as ``_merge_small`` asks for. It remembers the
    run of tiny drafts at the front that it has measured, so each draft is measured once."""

    def __init__(self, source: Iterator[_Draft], min_chars: int) -> None:
        self._source = source
        self._min_chars = min_chars
        self._buffer: deque[_Draft] = deque()
        self._run = 0  # the first ``_run`` drafts in the buffer are tiny
        self._run_chars = 0  # and need this many characters together, separators included
        self._run_ended = False  # the draft after them is read and is not tiny

    def peek(self, position: int) -> _Draft | None:
        while len(self._buffer) <= position:
            following = next(self._source, None)
            if following is None:
                return None
            self._buffer.append(following)
        return self._buffer[position]

    def pop(self) -> _Draft | None:
        if self.peek(0) is None:
            return None
        draft = self._buffer.popleft()
        if self._run:
            self._run -= 1
            self._run_chars -= _folded_size(draft)
        else:
            self._run_ended = False  # the draft that ended the run is gone: a new run starts after it
        return draft

    def tiny_tail_exceeds(self, room: int) -> bool:
        """Whether every draft still to come is tiny and together they need more than ``room``
        characters. Reads ahead only until one is not tiny or the sum passes ``room``: either settles
        it (past ``room`` the tiny draft goes forward whatever comes later, which keeps every bound)."""
        while self._run_chars <= room and not self._run_ended:
            later = self.peek(self._run)
            if later is None:
                return False
            if len(later.text) >= self._min_chars:
                self._run_ended = True
                return False
            self._run += 1
            self._run_chars += _folded_size(later)
        return self._run_chars > room


def _folded_size(draft: _Draft) -> int:
    """What a tiny draft adds to the chunk it is folded into: its text and a separator."""
    return len(draft.text) + max(len(draft.gap), len(_BLOCK_SEPARATOR))


def _join(first: _Draft, second: _Draft, *, tiny_first: bool) -> _Draft:
    tiny, receiver = (first, second) if tiny_first else (second, first)
    if _is_ancestor(tiny.section_path, receiver.section_path):
        path = tiny.section_path
    else:
        path = receiver.section_path
    if 0 < second.overlap < len(second.text):
        text = first.text + second.gap + second.text[second.overlap :]
    else:
        text = first.text + _BLOCK_SEPARATOR + second.text
    return _Draft(
        text=text, section_path=path, page=first.page, overlap=first.overlap, gap=first.gap, ocr=first.ocr
    )


def _is_ancestor(candidate: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return len(candidate) < len(path) and path[: len(candidate)] == candidate
