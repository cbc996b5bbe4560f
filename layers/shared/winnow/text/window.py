"""Chunks fitted to the embedder's token window: the rounds behind ``chunking.chunk_to_fit``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from winnow.models import Block, Chunk, ParsedDocument
from winnow.settings import ChunkingSettings
from winnow.text.drafts import BLOCK_SEPARATOR
from winnow.text.section_runs import section_runs

__all__ = ["Chunker", "fit_each_section", "fit_whole_document"]

# ``chunking.chunk_document`` (document, settings, max_chunks, run_settings), handed in by chunking:
# this module does not import it back
Chunker = Callable[
    [ParsedDocument, ChunkingSettings, int | None, Sequence[ChunkingSettings] | None], list[Chunk]
]

# How far ``chunk_to_fit`` shrinks the target below the size the token count suggests, and how often.
_FIT_MARGIN = 0.9
_FIT_ROUNDS = 6
_MIN_TARGET_CHARS = 200


def fit_each_section(
    chunker: Chunker,
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
    (``fit_whole_document``), so no chunk is ever over the window where that rule would not leave one."""
    chunks = chunker(doc, settings, max_chunks, None)
    over = {
        chunk.section_path
        for chunk, count in zip(chunks, _token_counts(chunks, count_tokens), strict=True)
        if count > max_tokens
    }
    if not over:
        return chunks
    runs = list(section_runs(doc.blocks))
    sizes = _fit_runs(
        chunker, doc, [blocks for path, blocks in runs if path in over], settings, count_tokens, max_tokens
    )
    refitted = iter(sizes)
    run_sizes = [next(refitted) if path in over else settings for path, _ in runs]
    fitted = chunker(doc, settings, max_chunks, run_sizes)
    if max(_token_counts(fitted, count_tokens), default=0) > max_tokens:
        return fit_whole_document(chunker, doc, settings, count_tokens, max_tokens, max_chunks)
    return fitted


def _fit_runs(
    chunker: Chunker,
    doc: ParsedDocument,
    runs: Sequence[list[Block]],
    settings: ChunkingSettings,
    count_tokens: Callable[[Sequence[str]], list[int]],
    max_tokens: int,
) -> list[ChunkingSettings]:
    """Each run's sizes, as ``fit_whole_document`` finds them for a whole document, for every run at
    once: a round chunks the runs still over the window and counts all their chunks together,
    ``_COUNT_BATCH`` a call (a document of thousands of dense sections is not thousands of tokenizer
    calls a round)."""
    sizes = [settings] * len(runs)
    pending = list(range(len(runs)))
    for _ in range(_FIT_ROUNDS):
        if not pending:
            break
        parts = {
            index: chunker(
                ParsedDocument(title=doc.title, blocks=runs[index], source_type=doc.source_type),
                sizes[index],
                None,
                None,
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
    fitting = int(max_tokens / worst * _FIT_MARGIN) - 2 * current.min_chars - 2 * len(BLOCK_SEPARATOR)
    return _scaled(current, max(_MIN_TARGET_CHARS, min(fitting, int(current.target_chars * _FIT_MARGIN))))


def fit_whole_document(
    chunker: Chunker,
    doc: ParsedDocument,
    settings: ChunkingSettings,
    count_tokens: Callable[[Sequence[str]], list[int]],
    max_tokens: int,
    max_chunks: int | None,
) -> list[Chunk]:
    """The document chunked with the largest target (from ``settings`` down) whose densest chunk fits."""
    current = settings
    chunks = chunker(doc, current, max_chunks, None)
    for _ in range(_FIT_ROUNDS):
        smaller = _smaller(current, chunks, _token_counts(chunks, count_tokens), max_tokens)
        if smaller is None:
            return chunks
        current = smaller
        chunks = chunker(doc, current, max_chunks, None)
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
