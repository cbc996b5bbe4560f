"""Code and sample files in a DOCX: paragraphs set in a monospaced face keep their lines.

Word has no preformatted block: a configuration sample is a paragraph in Courier New whose lines are
manual line breaks (``w:br``), or one such paragraph per line, or a paragraph in a "Code" / "HTML
Preformatted" style. Read as running text its lines ran together ("[backup] schedule = "02:30"
target = ..."), so a paragraph all of whose text is monospaced (by its runs' fonts, its character or
paragraph style, and the styles they are based on) is read line by line, and consecutive ones make
one preformatted block (``BlockCollector.add(..., preformatted=True)``).
"""

from __future__ import annotations

import re
from typing import Any

from winnow.parsing.docx_styles import Styles

__all__ = ["MonospaceStyles", "paragraph_lines"]

_MONO_FONT = re.compile(
    r"mono|courier|consolas|menlo|monaco|lucida console|inconsolata|typewriter|fixedsys|source code|\bcode\b",
    re.IGNORECASE,
)
_CODE_STYLE = re.compile(r"\bcode\b|preformatted|plain text|macro text|verbatim|listing", re.IGNORECASE)
_PAGE_BREAKS = frozenset({"page", "column"})


class MonospaceStyles:
    """Whether a ``w:p`` is all monospaced text, each style's answer worked out once."""

    def __init__(self, styles: Styles) -> None:
        self._styles = styles
        self._qn = styles.qn
        self._mono: dict[str, bool | None] = {}

    def paragraph_is_code(self, paragraph: Any) -> bool:
        """Every run that holds text is monospaced (its own font, else its character style's, else the
        paragraph style's), and there is at least one such run."""
        qn = self._qn
        style = paragraph.find(f"{qn('w:pPr')}/{qn('w:pStyle')}")
        paragraph_mono = self._style_mono(style.get(qn("w:val")) if style is not None else None)
        seen = False
        for run in paragraph.iter(qn("w:r")):
            if not "".join(t.text or "" for t in run.iterchildren(qn("w:t"))).strip():
                continue
            seen = True
            properties = run.find(qn("w:rPr"))
            mono = self._fonts_mono(properties) if properties is not None else None
            if mono is None and properties is not None:
                char_style = properties.find(qn("w:rStyle"))
                mono = self._style_mono(char_style.get(qn("w:val")) if char_style is not None else None)
            if not (paragraph_mono if mono is None else mono):
                return False
        return seen

    def _fonts_mono(self, properties: Any) -> bool | None:
        qn = self._qn
        fonts = properties.find(qn("w:rFonts"))
        if fonts is None:
            return None
        name = fonts.get(qn("w:ascii")) or fonts.get(qn("w:hAnsi"))
        return bool(_MONO_FONT.search(name)) if name else None

    def _style_mono(self, style_id: str | None) -> bool:
        if not style_id:
            return False
        if style_id not in self._mono:
            self._mono[style_id] = self._resolve(style_id)
        return bool(self._mono[style_id])

    def _resolve(self, style_id: str) -> bool | None:
        """The style's own answer (its name, then its run fonts), else the style it is based on's."""
        for style in self._styles.chain(style_id):
            if _CODE_STYLE.search(self._styles.name(style)):
                return True
            properties = style.find(self._qn("w:rPr"))
            mono = self._fonts_mono(properties) if properties is not None else None
            if mono is not None:
                return mono
        return None


def paragraph_lines(paragraph: Any) -> str:
    """A code paragraph's text with its line breaks (``w:br``, ``w:cr``) as lines and tabs kept."""
    from docx.oxml.ns import qn

    text_tag, tab_tag, run_tag = qn("w:t"), qn("w:tab"), qn("w:r")
    parts: list[str] = []
    for node in paragraph.iter(text_tag, tab_tag, qn("w:br"), qn("w:cr")):
        if node.getparent().tag != run_tag:
            continue  # a tab stop's definition in the paragraph's properties, not a character
        if node.tag == text_tag:
            parts.append(node.text or "")
        elif node.tag == tab_tag:
            parts.append("\t")
        else:
            parts.append(" " if node.get(qn("w:type")) in _PAGE_BREAKS else "\n")
    return "".join(parts)
