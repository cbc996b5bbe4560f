"""Plain text: paragraphs are separated by blank lines; lines inside a paragraph are joined.

A form feed (page break in text exported from old systems) also separates paragraphs. Plain text has
no headings or pages, so every block has an empty section path and no page; the title comes from the
file name.
"""

from __future__ import annotations

import re

from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\v]*\n|\f")


def parse_text(key: str, text: str) -> ParsedDocument:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    collector = BlockCollector()
    for paragraph in _PARAGRAPH_BREAK.split(text):
        collector.add(paragraph)
    return finish_document(
        collector.blocks, title=None, key=key, source_type="text", empty_reason="text file has no text"
    )
