"""Markdown: ATX (``# Title``) and setext (underlined) headings become the section path.

A small line scanner instead of a Markdown library: we need headings, paragraphs and code fences,
not HTML rendering, and it keeps the layer free of another dependency (markdown-it-py was measured
slower on the same documents: training/NOTEBOOK.md). It follows CommonMark where it
matters for structure: a ``#`` inside a code fence is not a heading, ``---`` under a paragraph is a
setext heading but after a blank line is a rule, closing ``#``s are trimmed. YAML front matter is
not indexed; its ``title:`` is the document title.

Inline syntax is mostly left alone (the analyzer ignores ``*`` and backticks), except links and
images, whose URLs are noise to search: ``[text](url)`` keeps ``text``, ``![alt](src)`` keeps ``alt``.
"""

from __future__ import annotations

import re

from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, HeadingStack, finish_document
from winnow.parsing.cleaning import clean_inline
from winnow.parsing.tables import is_pipe_delimiter_row, pipe_table

# Every pattern here runs on lines an uploader controls, so none may backtrack: no two adjacent
# quantifiers that can match the same characters, and a lazy match is never followed by an optional
# suffix. Where CommonMark needs more than that (the ATX closing sequence, table delimiter cells),
# plain string operations do the rest. tests/unit/test_regex_linear.py holds every pattern to linear time.
_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_THEMATIC_BREAK = re.compile(r"^ {0,3}((\*[ \t]*){3,}|(-[ \t]*){3,}|(_[ \t]*){3,})$")
_STRUCTURED_LINE = re.compile(r"^\s*([-*+][ \t]|\d{1,9}[.)][ \t]|\||>)")
# Link text stops at the next bracket and the destination at the next parenthesis (one balanced pair
# allowed inside, as in Wikipedia URLs): a scan that fails ends where the next candidate starts, so
# a line of a million unclosed "[a](" costs one pass, not one pass per bracket.
_DESTINATION = r"\((?:[^()]|\([^()]*\))*\)"
_IMAGE = re.compile(r"!\[([^\[\]]*)\]" + _DESTINATION)
_LINK = re.compile(r"\[([^\[\]]+)\]" + _DESTINATION)
_FRONT_MATTER_TITLE = re.compile(r"title:(.*)", re.IGNORECASE)
# CommonMark's backslash escapes: a backslash before ASCII punctuation stands for that character.
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def parse_markdown(key: str, text: str) -> ParsedDocument:
    text = _strip_html_comments(text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.split("\n")
    title, start = _front_matter(lines)
    collector = BlockCollector()
    headings = HeadingStack()
    paragraph: list[str] = []
    first_h1: str | None = None

    def flush() -> None:
        rows = pipe_table(paragraph) if paragraph else None
        if rows is not None:
            collector.add_table([[_strip_links(cell) for cell in row] for row in rows], headings.path)
            paragraph.clear()
        if paragraph:
            structured = _is_structured(paragraph)
            body = "\n".join(line for line in paragraph if not _is_table_delimiter_row(line))
            collector.add(_strip_links(body), headings.path, keep_lines=structured)
            paragraph.clear()

    def heading(level: int, text: str) -> None:
        nonlocal first_h1
        flush()
        text = clean_inline(_strip_links(text))
        if level == 1 and first_h1 is None and text:
            first_h1 = text
        headings.push(level, text)

    index = start
    while index < len(lines):
        line = lines[index]
        fence = _FENCE_OPEN.match(line)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            flush()
            index = _code_block(lines, index + 1, fence.group(1), collector, headings.path)
            continue
        atx = _atx_heading(line)
        if atx:
            heading(*atx)
        elif not line.strip():
            flush()
        elif paragraph and _SETEXT_UNDERLINE.match(line) and not _is_structured(paragraph):
            text = " ".join(paragraph)
            paragraph.clear()
            heading(1 if line.strip().startswith("=") else 2, text)
        elif _THEMATIC_BREAK.match(line):
            flush()
        else:
            paragraph.append(line)
        index += 1
    flush()
    return finish_document(
        collector.blocks,
        title=title or first_h1,
        key=key,
        source_type="markdown",
        empty_reason="Markdown file has no text",
    )


def _closes_fence(line: str, fence: str) -> bool:
    """Up to three spaces, at least as many of the fence's characters, then only blanks: the line that
    closes a code fence (string code, so no pattern is built per fence)."""
    body = line.rstrip(" \t")
    marks = body.lstrip(" ")
    return len(body) - len(marks) <= 3 and len(marks) >= len(fence) and marks == fence[0] * len(marks)


def _code_block(
    lines: list[str], index: int, fence: str, collector: BlockCollector, path: tuple[str, ...]
) -> int:
    """Collect a fenced code block as one line-preserving block; returns the index after it. An
    unclosed fence runs to the end of the file, as CommonMark says."""
    body: list[str] = []
    while index < len(lines) and not _closes_fence(lines[index], fence):
        body.append(lines[index])
        index += 1
    collector.add("\n".join(body), path, preformatted=True)
    return index + 1


def _front_matter(lines: list[str]) -> tuple[str | None, int]:
    """YAML front matter between ``---`` lines at the very top: (its title, first line after it)."""
    if not lines or lines[0].strip() != "---":
        return None, 0
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() in ("---", "..."):
            title = None
            for line in lines[1:end]:
                match = _FRONT_MATTER_TITLE.match(line.strip())
                value = _unquote(match.group(1).strip()) if match else ""
                if value:
                    title = value
                    break
            return title, end + 1
    return None, 0


def _atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, else None. CommonMark: 1-6 ``#`` after at most three
    spaces, then a space or the end; a closing run of ``#`` is dropped when a space precedes it."""
    opening = _ATX_OPEN.match(line)
    if opening is None:
        return None
    level = len(opening.group(1))
    text = line[opening.end() :].strip(" \t")
    without_closing = text.rstrip("#")
    if len(without_closing) < len(text) and (not without_closing or without_closing[-1] in " \t"):
        text = without_closing.rstrip(" \t")
    return level, text


def _is_table_delimiter_row(line: str) -> bool:
    """``| --- | :-: |``: the row under a table's header, which carries no text. Two cells at least."""
    return is_pipe_delimiter_row(line, min_cells=2)


def _strip_html_comments(text: str) -> str:
    """Remove ``<!-- ... -->``; an unclosed comment is left as it is. One pass with ``str.find``: a
    lazy regex would rescan the rest of the file from every unclosed ``<!--``."""
    if "<!--" not in text:
        return text
    parts: list[str] = []
    position = 0
    while True:
        start = text.find("<!--", position)
        end = text.find("-->", start + 4) if start >= 0 else -1
        if end < 0:
            parts.append(text[position:])
            return "".join(parts)
        parts.append(text[position:start])
        position = end + 3


def _unquote(value: str) -> str:
    """A YAML scalar without its quotes: ``"Guide"`` and ``'Guide'`` give ``Guide``."""
    if value[:1] in ("'", '"'):
        value = value[1:]
    if value[-1:] in ("'", '"'):
        value = value[:-1]
    return value.strip()


def _is_structured(lines: list[str]) -> bool:
    """Lists, tables and quotes keep their line breaks; wrapped prose does not."""
    return any(_STRUCTURED_LINE.match(line) for line in lines)


def _strip_links(text: str) -> str:
    """Inline text as a reader sees it: links and images by their text, backslash escapes resolved
    (``man\\_db`` is ``man_db``; inside a code span an escape is literal, so those stay)."""
    text = _LINK.sub(r"\1", _IMAGE.sub(r"\1", text))
    if "\\" not in text:
        return text
    spans = text.split("`")  # odd pieces are inside code spans
    return "`".join(span if i % 2 else _ESCAPE.sub(r"\1", span) for i, span in enumerate(spans))
