"""A draft chunk: what the chunking rules pass between them before a draft becomes a ``Chunk``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BLOCK_SEPARATOR", "Draft"]

BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Draft:
    text: str
    section_path: tuple[str, ...]
    page: int | None
    # The first ``overlap`` characters of ``text`` repeat the end of the previous draft, and ``gap`` is
    # the whitespace that separated the two in the source: both let a merge undo the overlap.
    overlap: int = 0
    gap: str = BLOCK_SEPARATOR
    kind: str = "text"
    ocr: bool = False
    figure_text: str = ""
    image: str = ""
