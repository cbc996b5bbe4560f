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
   ``overlap_chars`` of the previous piece's end: whole trailing sentences (or lines) when they fit,
   else none, so a piece never starts inside a sentence unless that sentence alone is longer than the
   room (then it was cut at words). Never more than half of that piece. Blocks that were kept whole
   need no overlap: the cut between them is the author's own paragraph break. A block with a ``head``
   (an entry's term, a list's introduction) is split after it, and the head leads every piece.
5. **Tiny fragments are merged**, not indexed alone. A chunk under ``min_chars`` joins the following
   chunk of its section, else the previous one; a section that is tiny as a whole (a heading with one
   short line) joins the next section's first chunk, or the previous section's last chunk at the end
   of the document. The merged chunk keeps the tiny part's section path only if that path is an
   ancestor of the other part's path (the whole passage then lies inside it, so the citation is
   true) and names a section (the document's root, no section at all, names none); otherwise it
   keeps the receiving chunk's path, which holds most of the text. A tiny draft
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
   a line naming its own section (``text.section_packing``). Rule 1's walls hold for everything else.

Size guarantee: no chunk is longer than ``target_chars + 2 * min_chars + 4`` (a chunk can receive a
tiny fragment from each side, with a separator each; the merge checks it, see ``text.merging``), and no
chunk is shorter than ``min_chars`` unless the whole document is. ``chunk_to_fit`` re-chunks a document
with a smaller target when a chunk would not fit the embedder's token window. ``page`` is the page where
the chunk's text starts. The output depends only on the input: no randomness, no clocks.

Every step streams and is linear in the text (chunking runs after the parse budget, so a quadratic step
would be unbounded), and ``max_chunks`` is enforced while chunking.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from winnow.errors import OversizedDocument
from winnow.models import Chunk, ParsedDocument
from winnow.settings import ChunkingSettings
from winnow.text.drafts import BLOCK_SEPARATOR, Draft
from winnow.text.merging import merge_small
from winnow.text.section_packing import pack_sections
from winnow.text.section_runs import SectionPacker, section_runs
from winnow.text.window import fit_each_section, fit_whole_document

__all__ = ["chunk_document", "chunk_to_fit", "max_chunk_chars", "too_many_chunks"]


def max_chunk_chars(settings: ChunkingSettings) -> int:
    """The documented upper bound on a chunk's length (see the module docstring)."""
    return settings.target_chars + 2 * settings.min_chars + 2 * len(BLOCK_SEPARATOR)


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
    drafts: Iterator[Draft] = (
        draft
        for number, (path, blocks) in enumerate(section_runs(doc.blocks))
        for draft in SectionPacker(path, sizes[number] if sizes else settings).pack(blocks)
    )
    if settings.pack_sections:
        drafts = pack_sections(drafts, settings.target_chars)
    min_chars = min((size.min_chars for size in sizes), default=settings.min_chars)
    limit = max((max_chunk_chars(size) for size in sizes), default=max_chunk_chars(settings))
    chunks: list[Chunk] = []
    for index, draft in enumerate(merge_small(drafts, min_chars, limit)):
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
        return fit_each_section(chunk_document, doc, settings, count_tokens, max_tokens, max_chunks)
    return fit_whole_document(chunk_document, doc, settings, count_tokens, max_tokens, max_chunks)
