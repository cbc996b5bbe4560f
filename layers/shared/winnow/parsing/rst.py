"""reStructuredText, read by a small line parser rather than docutils (whose ``include`` and ``raw``
directives read files and URLs: not something to run on uploads inside a Lambda).

Section titles are lines underlined (optionally also overlined) with a repeated punctuation character;
their levels follow the order in which each adornment style first appears, as in docutils. Comments,
link targets, substitutions and directives that are not prose (images, includes, tables of contents)
are dropped with their indented body; every other directive, at any indentation (notes, version
notes, code blocks, Sphinx's and CMake's descriptions of a function or variable), keeps its argument
and its body, which is read as ordinary text. Simple and grid tables become table blocks.
Inline markup (``**bold**``, ```code```, ``:role:`text```, links) is reduced to its text.
"""

from __future__ import annotations

import itertools
import re

from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, HeadingStack, finish_document

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\.\.\s+(?:(\[[^\]]*\])|_[^:]*:|\|[^|]*\||([\w:.-]+)::)?")
# Directives whose argument and body are not the document's prose: pictures, other files, generated
# lists, settings. Every other directive (notes, version notes, Sphinx and CMake descriptions of a
# function, option or variable) keeps its argument and its body, which is read as ordinary text.
_DROPPED_DIRECTIVES = frozenset(
    {"image", "include", "raw", "toctree", "contents", "index", "meta", "highlight", "sectnum",
     "section-numbering", "default-role", "role", "literalinclude", "currentmodule", "autosummary",
     "automodule", "autoclass", "autofunction", "automethod", "autoattribute", "autodata",
     "autoexception", "tabularcolumns", "class", "cssclass", "title", "replace", "unicode", "date",
     "target-notes", "header", "footer", "cmake-module"}
)  # fmt: skip
_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "parsed-literal"})
_ARGUMENT_IS_A_PATH = frozenset({"figure"})
_VERSION_DIRECTIVES = frozenset({"versionadded", "versionchanged", "deprecated"})
# A role (":py:func:`name <target>`") starts where a run of name characters starts and every run is
# read possessively; the text before a target is trimmed in code. The lazy text followed by an optional
# ``\s*<`` was quadratic on a run of spaces, and a start at every colon on ``1:`` repeated.
_ROLE = re.compile(r"(?<![\w:+.-]):[\w:+.-]{2,}+(?<=:)`([^`<]*+)(<[^>`]*+>)?`")
_LINK = re.compile(r"`([^`<]++)<[^>`]*+>`_{1,2}")
# Emphasis starts and ends at a non-space, as docutils requires: "* item" is a bullet, not emphasis
# running to the next item's bullet (which swallowed the ``literals`` in between). Neither runs past
# a star, so each start scans at most to the next one: linear.
_INLINE = re.compile(
    r"\*\*([^\s*][^*]*?)(?<=[^\s*])\*\*|\*([^\s*][^*]*?)(?<=[^\s*])\*|``(.+?)``|`([^`]+)`_{0,2}"
)
# A list item's first line: a bullet ("* ", "- ", "+ ", "• ") or an enumerator ("1. ", "#. ", "(a) ").
_ITEM = re.compile(r"^(?:[*+\-\u2022]|(?:\d{1,3}|#|[a-zA-Z])[.)]|\((?:\d{1,3}|#|[a-zA-Z])\))\s+\S")
# An option list's entry: its options ("-c FILE, --config=FILE"), two spaces or more, the description.
_ONE_OPTION = r"(?:--?|/)[\w?][^\s,=]*+(?:[ =][<\w][^\s,]*+)?"
_OPTION = re.compile(rf"^({_ONE_OPTION}(?:, {_ONE_OPTION})*+) {{2,}}(\S.*)$")
_FOOTNOTE_REFERENCE = re.compile(r" ?\[(?:#[\w-]*|\d+|\*|[A-Za-z][\w.-]*)\]_")
_GRID_BORDER = re.compile(r"^\+[-=+]+\+$")
_SIMPLE_BORDER = re.compile(r"^=+( +=+)+$")
_SPAN_UNDERLINE = re.compile(r"^-+( +-+)*$")
_MAX_LINES = 2_000_000


def parse_rst(key: str, text: str) -> ParsedDocument:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:_MAX_LINES]
    collector = BlockCollector()
    headings = HeadingStack()
    styles: list[tuple[str, bool]] = []
    first_title: str | None = None
    paragraph: list[str] = []
    in_item = False  # the paragraph is a list item or an option's description
    list_start: int | None = None  # where the items of the current list begin (collector.count)
    index = 0

    def flush() -> None:
        if paragraph:
            collector.add(_inline(" ".join(paragraph)), headings.path)
            paragraph.clear()

    def end_list() -> None:
        nonlocal list_start, in_item
        if list_start is not None and collector.count - list_start >= 2:
            collector.join_list(list_start)  # with the paragraph that introduces it
        list_start, in_item = None, False

    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        heading = _heading_at(lines, index)
        if heading is not None:
            flush()
            end_list()
            title, style, consumed = heading
            if style not in styles:
                styles.append(style)
            level = styles.index(style) + 1
            headings.push(level, _inline(title))
            if first_title is None:
                first_title = _inline(title)
            index += consumed
            continue
        if _GRID_BORDER.match(stripped) or _SIMPLE_BORDER.match(stripped):
            flush()
            end_list()
            index = _table(lines, index, collector, headings.path)
            continue
        directive = _DIRECTIVE.match(stripped) if stripped.startswith("..") else None
        if directive:
            flush()
            end_list()
            index = _directive(lines, index, directive, collector, headings.path)
            continue
        option = _OPTION.match(stripped) if not paragraph or in_item else None
        if option:
            flush()
            end_list()
            collector.add(option.group(1), headings.path, term=True)
            paragraph.append(option.group(2))
            in_item = True
            index += 1
            continue
        if _ITEM.match(stripped) and (not paragraph or in_item):
            flush()
            if list_start is None:
                list_start = collector.count
            in_item = True
            paragraph.append(stripped)
            index += 1
            continue
        if not stripped:
            flush()
            if list_start is None:
                in_item = False
        elif in_item and not paragraph and not line[:1].isspace():
            end_list()  # an unindented paragraph after the items: the list is over
            paragraph.append(stripped)
        elif stripped.endswith("::") and not stripped.startswith(".."):
            paragraph.append(stripped[:-1] if stripped != "::" else "")
            flush()
            index += 1
            literal_start = index
            while index < len(lines) and (not lines[index].strip() or lines[index][:1] in (" ", "\t")):
                index += 1
            collector.add("\n".join(lines[literal_start:index]), headings.path, preformatted=True)
            continue
        else:
            paragraph.append(stripped)
        index += 1
    flush()
    end_list()
    return finish_document(
        collector.blocks, title=first_title, key=key, source_type="rst", empty_reason="document has no text"
    )


def _directive(
    lines: list[str], index: int, match: re.Match[str], collector: BlockCollector, path: tuple[str, ...]
) -> int:
    """A directive, comment, target or footnote at ``index`` (at any indentation: directives nest in
    lists and in other directives); returns where reading continues. A kept directive's body is
    read by the caller as ordinary text, so directives inside it are handled the same way."""
    line = lines[index]
    indent = len(line) - len(line.lstrip())
    stripped = line.strip()
    footnote, name = match.group(1), (match.group(2) or "").split(":")[-1]
    argument = stripped[match.end() :].strip()
    index += 1
    body_end = index
    while body_end < len(lines) and (not lines[body_end].strip() or _indent(lines[body_end]) > indent):
        body_end += 1
    if footnote is None and (not match.group(2) or name in _DROPPED_DIRECTIVES):
        return body_end  # a comment, a link target, a substitution or a directive that is not prose
    while index < body_end and lines[index].strip().startswith(":"):
        index += 1  # the directive's options (":maxdepth: 2") come straight after it
    if name in _CODE_DIRECTIVES:
        collector.add("\n".join(lines[index:body_end]), path, keep_lines=True)
        return body_end
    if argument and name in _VERSION_DIRECTIVES:
        collector.add(f"{name} {argument}", path)  # "versionadded 3.18": a bare "3.18" says nothing
    elif argument and name not in _ARGUMENT_IS_A_PATH:
        collector.add(_inline(argument), path)
    return index


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _heading_at(lines: list[str], index: int) -> tuple[str, tuple[str, bool], int] | None:
    """(title, adornment style, lines consumed) when a section title starts at ``index``."""
    line = lines[index]
    over = _ADORNMENT.match(line)
    if over and index + 2 < len(lines):
        title, under = lines[index + 1], lines[index + 2]
        under_match = _ADORNMENT.match(under)
        if title.strip() and under_match and under_match.group(1) == over.group(1):
            return title.strip(), (over.group(1), True), 3
    if line.strip() and not over and index + 1 < len(lines) and not line[:1].isspace():
        under_match = _ADORNMENT.match(lines[index + 1])
        if under_match and len(lines[index + 1].rstrip()) >= len(line.rstrip()) * 0.6:
            return line.strip(), (under_match.group(1), False), 2
    return None


def _table(lines: list[str], index: int, collector: BlockCollector, path: tuple[str, ...]) -> int:
    """A grid table (``+---+``) or a simple table (``=== ===``); returns the index after it."""
    border = lines[index].strip()
    rows: list[list[str]] = []
    if border.startswith("+"):
        cuts = [position for position, char in enumerate(border) if char == "+"]
        index += 1
        current: list[str] | None = None
        while index < len(lines) and lines[index].strip()[:1] in ("|", "+"):
            row = lines[index].strip()
            if row.startswith("+"):
                if current is not None:
                    rows.append(current)
                current = None
            else:
                cells = [row[a + 1 : b].strip() for a, b in itertools.pairwise(cuts)]
                current = (
                    cells
                    if current is None
                    else [f"{x} {y}".strip() for x, y in zip(current, cells, strict=False)]
                )
            index += 1
    else:
        starts = [match.start() for match in re.finditer(r"=+", border)]
        borders = 1
        index += 1
        while index < len(lines) and borders < 3:
            row = lines[index]
            if _SIMPLE_BORDER.match(row.strip()):
                borders += 1
                if borders == 2 and (index + 1 >= len(lines) or not lines[index + 1].strip()):
                    index += 1
                    break  # a table without a header row ends at its second border
            elif _SPAN_UNDERLINE.match(row.strip()):
                pass  # a column-span underline ("-----  -----") is drawing, not a row
            elif row.strip():
                cells = [row[a:b].strip() for a, b in zip(starts, [*starts[1:], len(row) + 1], strict=False)]
                if rows and not cells[0]:
                    # a blank first column continues the row above (its text wrapped)
                    rows[-1] = [f"{x} {y}".strip() for x, y in zip(rows[-1], cells, strict=False)]
                else:
                    rows.append(cells)
            elif borders >= 2:
                pass
            index += 1
    collector.add_table([[_inline(cell) for cell in row] for row in rows], path)
    return index


def _inline(text: str) -> str:
    text = _FOOTNOTE_REFERENCE.sub("", text)
    text = _LINK.sub(lambda m: m.group(1).rstrip() or m.group(1)[0], text)
    text = _ROLE.sub(lambda m: m.group(1).rstrip() if m.group(2) else m.group(1), text)
    return _INLINE.sub(lambda m: next(group for group in m.groups() if group is not None), text)
