"""A DOCX's styles by id, and the chain of styles a style is based on: what the heading, code and list
readers of ``parsing.docx`` each resolve a paragraph's formatting through."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["Styles"]

# A chain of ``w:basedOn`` longer than this (or a loop) is cut: real style sheets are a few levels deep.
_MAX_STYLE_DEPTH = 20


class Styles:
    """The document's ``w:style`` elements by ``w:styleId`` (the first of a repeated id)."""

    def __init__(self, document: Any) -> None:
        from docx.oxml.ns import qn

        self.qn = qn
        self._by_id: dict[str, Any] = {}
        for style in document.styles.element.iterchildren(qn("w:style")):
            style_id = style.get(qn("w:styleId"))
            if style_id:
                self._by_id.setdefault(style_id, style)

    def chain(self, style_id: str | None) -> Iterator[Any]:
        """The style ``style_id`` names, then the one it is based on, and so on (a missing style ends
        the chain; a loop or a chain past ``_MAX_STYLE_DEPTH`` is cut)."""
        qn = self.qn
        seen: set[str] = set()
        current = style_id
        while current and current not in seen and len(seen) < _MAX_STYLE_DEPTH:
            seen.add(current)
            style = self._by_id.get(current)
            if style is None:
                return
            yield style
            based_on = style.find(qn("w:basedOn"))
            current = based_on.get(qn("w:val")) if based_on is not None else None

    def name(self, style: Any) -> str:
        element = style.find(self.qn("w:name"))
        value = element.get(self.qn("w:val")) if element is not None else None
        return value.strip() if isinstance(value, str) else ""
