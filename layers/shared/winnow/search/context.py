"""A result's context: the text just before and after it in its document, so an answer that starts in the
neighbouring chunk ("Put in /etc/inputrc:" here, the setting in the next chunk) is in front of the reader
and the answer model.

``neighbours``: the chunk before and the chunk after (``chunk_index`` - 1 and + 1), whatever their section.
``section``: the chunks of the result's own section next to it (up to ``SECTION_SPAN`` each side), so a
small section comes back whole. Either way each side is at most ``CONTEXT_CHARS`` characters, cut at a
space: a response grows by at most ``2 * CONTEXT_CHARS * top_k`` characters.

Neighbours come from the same document version as the result, in one store call filtered to what the
caller may read (the tenant and the access list), as the results themselves are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from winnow.access import ReadScope
from winnow.models import StoredChunk
from winnow.ports import ChunkPlace, VectorStore

ContextMode = Literal["none", "neighbours", "section"]
CONTEXT_CHARS = 800
SECTION_SPAN = 3


def _span(mode: ContextMode) -> int:
    return SECTION_SPAN if mode == "section" else 1


def places(hits: Sequence[StoredChunk], mode: ContextMode) -> list[ChunkPlace]:
    """Where each hit's context lies: its document version's chunk indexes around it."""
    span = _span(mode)
    out = []
    for hit in hits:
        indexes = [i for i in range(hit.chunk_index - span, hit.chunk_index + span + 1) if i >= 0]
        out.append(ChunkPlace(hit.key, hit.doc_version, tuple(i for i in indexes if i != hit.chunk_index)))
    return out


def tail(text: str, limit: int = CONTEXT_CHARS) -> str:
    """The last ``limit`` characters of ``text`` at most, starting after a space when it is cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < limit // 4 else cut


def head(text: str, limit: int = CONTEXT_CHARS) -> str:
    """The first ``limit`` characters of ``text`` at most, ending before a space when it is cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit - limit // 4 else cut


def around(hit: StoredChunk, found: dict[tuple[str, int], StoredChunk], mode: ContextMode) -> tuple[str, str]:
    """(before, after) of ``hit`` from the chunks ``found`` by (key, chunk_index); in ``section`` mode
    only the unbroken run of chunks of the hit's section."""

    def run(step: int) -> list[str]:
        texts = []
        for n in range(1, _span(mode) + 1):
            chunk = found.get((hit.key, hit.chunk_index + step * n))
            if chunk is None or (mode == "section" and chunk.section != hit.section):
                break
            texts.append(chunk.text.strip())
        return texts

    before = "\n\n".join(reversed(run(-1)))
    after = "\n\n".join(run(+1))
    return tail(before), head(after)


def contexts(
    store: VectorStore, tenant: str, reader: ReadScope, hits: Sequence[StoredChunk], mode: ContextMode
) -> list[tuple[str, str]]:
    """Each hit's (before, after), in order; one store call for all of them."""
    if mode == "none" or not hits:
        return [("", "") for _ in hits]
    found: dict[tuple[str, int], StoredChunk] = {}
    versions = {(h.key, h.doc_version) for h in hits}
    for chunk in store.chunks_at(tenant, reader, places(hits, mode)):
        if (chunk.key, chunk.doc_version) in versions or (chunk.key, None) in versions:
            found[(chunk.key, chunk.chunk_index)] = chunk
    return [around(h, found, mode) for h in hits]
