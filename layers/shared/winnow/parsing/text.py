"""Plain text: paragraphs are separated by blank lines; lines inside a paragraph are joined.

A form feed (page break in text exported from old systems) also separates paragraphs. Plain text has
no headings or pages, so every block has an empty section path and no page; the title comes from the
file name.

A formatted manual page (``man ls > ls.txt``, ``groff -Tutf8 -man``) is the exception: it says what it
is in its first line (``LS(1)  User Commands  LS(1)``), its section headings start at the margin
(``NAME``, ``OPTIONS``) and its subsections are indented three spaces while the text sits further in,
so those become the section path. The running header and footer lines are dropped, and words that
groff hyphenated at a line end (``lo‐`` / ``cated``) are joined again.
"""

from __future__ import annotations

import re

from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, finish_document

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\v]*\n|\f")
# "GREP(1)    User Commands    GREP(1)": a name and a manual section at both ends of the first line.
_MAN_HEADER = re.compile(r"([\w.:+\[-]+)\((\d\w{0,8})\)")
_MAX_HEADER_CHARS = 200
_SUBSECTION_INDENT = range(1, 5)  # groff's .SS indent is 3; the text sits at 7 or more
_MAX_HEADING_CHARS = 80
# groff hyphenates with U+2010 at the end of a line: "lo‐" then "cated" on the next one.
_HYPHENATED = re.compile("(?<=\\w)\u2010\n[ \t]*(?=[a-z])")


def parse_text(key: str, text: str) -> ParsedDocument:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    collector = BlockCollector()
    header = _man_header(text)
    if header is not None:
        _collect_man_page(text, header, collector)
    else:
        for paragraph in _PARAGRAPH_BREAK.split(text):
            collector.add(paragraph)
    return finish_document(
        collector.blocks, title=None, key=key, source_type="text", empty_reason="text file has no text"
    )


def _man_header(text: str) -> str | None:
    """The page's "NAME(section)" when ``text`` is a formatted manual page, else None."""
    first = text.lstrip("\n").split("\n", 1)[0].strip()
    if len(first) > _MAX_HEADER_CHARS:
        return None
    names = [match.group(0) for match in _MAN_HEADER.finditer(first)]
    if len(names) < 2 or not first.startswith(names[0]) or not first.endswith(names[-1]):
        return None
    return names[-1] if names[0] == names[-1] else None


def _collect_man_page(text: str, header: str, collector: BlockCollector) -> None:
    sections: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            collector.add(" ".join(paragraph), tuple(sections))
            paragraph.clear()

    for line in _HYPHENATED.sub("", text).split("\n"):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if not stripped or (indent == 0 and stripped.endswith(header)):
            flush()  # a blank line, or the running header or footer ("GNU grep 3.8  2022-09-02  GREP(1)")
            continue
        if indent == 0 and len(stripped) <= _MAX_HEADING_CHARS:
            flush()
            sections[:] = [stripped]
        elif indent in _SUBSECTION_INDENT and sections and len(stripped) <= _MAX_HEADING_CHARS:
            flush()
            sections[1:] = [stripped]
        else:
            paragraph.append(stripped)
    flush()
