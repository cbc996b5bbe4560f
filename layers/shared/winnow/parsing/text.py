"""Plain text: paragraphs are separated by blank lines; lines inside a paragraph are joined.

A form feed (page break in text exported from old systems) also separates paragraphs. Plain text has
no pages. Its headings are the ones READMEs draw: a line at the start of a paragraph underlined with
``===``, ``---``, ``~~~`` or ``***`` (levels in the order the styles first appear, as in
reStructuredText); without them every block has an empty section path and the title comes from the
file name.

A formatted manual page (``man ls > ls.txt``, ``groff -Tutf8 -man``) is the exception: it says what it
is in its first line (``LS(1)  User Commands  LS(1)``), its section headings start at the margin
(``NAME``, ``OPTIONS``) and its subsections are indented three spaces while the text sits further in,
so those become the section path. The running header and footer lines are dropped, and words that
groff hyphenated at a line end (``lo`` + U+2010, then ``cated``) are joined again. Its option lists
are definition lists, told by indentation (``_Entries``): each option with its whole description is
one block.

So is a GNU info file (``grep.info``, its ``.info-1`` parts, either gzip'd): nodes start after a
``\x1f`` with a ``File: …, Node: …, Next: …, Up: …`` line, which is navigation and dropped, as are each
node's ``* Menu:`` of links to other nodes, the directory entry and the tag tables. Headings underlined
with ``*``, ``=``, ``-`` or ``.`` (chapter to subsubsection) become the section path.

A Debian changelog (``changelog.Debian.gz``) has each entry's first line as the section of its items.
"""

from __future__ import annotations

import itertools
import re

from winnow.models import ParsedDocument
from winnow.parsing.blocks import BlockCollector, HeadingStack, finish_document
from winnow.parsing.cleaning import clean_inline
from winnow.parsing.lists import group_lists

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\v]*\n|\f")
# "GREP(1)    User Commands    GREP(1)": a name and a manual section at both ends of the first line.
# A name starts where a run of name characters starts (every later start would fail the same way) and
# is read possessively: without both, a run of name characters cost time quadratic in its length.
_MAN_HEADER = re.compile(r"(?<![\w.:+\[-])([\w.:+\[-]++)\((\d\w{0,8})\)")
_MAX_HEADER_CHARS = 200
_SUBSECTION_INDENT = range(1, 5)  # groff's .SS indent is 3; the text sits at 7 or more
_MAX_HEADING_CHARS = 80
_MAX_TERM_CHARS = 80  # a term line: an option and its arguments, not a sentence of text
# How much deeper than a term its description sits (groff's .TP indents 7, texinfo's @table 5); texinfo
# indents a paragraph's first line by 3, which must not read as a term and its description.
_MIN_HANG = 4
_MIN_WIDTH_LINES = 40  # lines a text needs before its fill width is read from them
# groff hyphenates with U+2010 at the end of a line: "lo" and U+2010, then "cated" on the next line.
_HYPHENATED = re.compile("(?<=\\w)\u2010\n[ \t]*(?=[a-z])")

# A line of one repeated character drawn under a heading ("History" over "-------").
_UNDERLINE = re.compile(r"^[ \t]*([=\-~*#^+])\1{2,}[ \t]*$")
_MAX_PLAIN_HEADING_CHARS = 100

# A Debian changelog entry's first line: "bash (5.2.15-2) unstable; urgency=medium" (Debian policy 4.4).
# Possessive runs, starting only where a package name can start: linear whichever method calls it (the
# backtracking form was quadratic under search on a line of "4z" pairs).
_DEBIAN_ENTRY = re.compile(
    r"(?<![a-z0-9+.-])[a-z0-9][a-z0-9+.-]*+ \([^()\s]++\)(?: ++[-+0-9a-zA-Z./]++)++ *+;"
)

_INFO_SAMPLE_CHARS = 64 * 1024
_INFO_MARK = re.compile(r"\x1f\n(?:File: [^\n]*Node: |Indirect:|Tag Table:)")
# The file name stops at the next "File: ", so a line of them is scanned once, not once per "File: ".
_INFO_NODE = re.compile(r"File: (?:[^,\nF]|F(?!ile: ))*+, +Node: ([^,\n]+)")
_INFO_TABLES = ("Tag Table:", "End Tag Table", "Indirect:", "Local Variables:")
_INFO_LEVELS = {"*": 1, "=": 2, "-": 3, ".": 4}
# A formatted manual page's NAME section: the heading at the margin, then its indented lines.
_MAN_NAME = re.compile(r"^NAME[ \t]*\n((?:[ \t]+\S[^\n]*\n?){1,4})", re.MULTILINE)


def parse_text(key: str, text: str) -> ParsedDocument:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    collector = BlockCollector()
    title: str | None = None
    header = _man_header(text)
    blocks = None
    if _INFO_MARK.search(text[:_INFO_SAMPLE_CHARS]):
        title = _collect_info(text, collector)
        blocks = group_lists(collector.blocks)
    elif header is not None:
        _collect_man_page(text, header, collector)
        title = _man_title(text)
        blocks = group_lists(collector.blocks)
    else:
        title = _collect_plain(text, collector)
    return finish_document(
        blocks if blocks is not None else collector.blocks,
        title=title,
        key=key,
        source_type="text",
        empty_reason="text file has no text",
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


def _man_title(text: str) -> str | None:
    """A manual page's NAME line (``date - print or set the system date and time``): what the page is
    about, where its file name says only ``date.1``."""
    found = _MAN_NAME.search(text[:_INFO_SAMPLE_CHARS])
    return clean_inline(" ".join(found.group(1).split())) if found else None


def _collect_man_page(text: str, header: str, collector: BlockCollector) -> None:
    sections: list[str] = []
    paragraph: list[str] = []
    entries = _Entries(collector, fill_width(text))

    def flush() -> None:
        if paragraph:
            entries.paragraph(paragraph, tuple(sections))
            paragraph.clear()

    for line in _HYPHENATED.sub("", text).split("\n"):
        stripped = line.strip()
        indent = _indent(line)
        if not stripped or (indent == 0 and stripped.endswith(header)):
            flush()  # a blank line, or the running header or footer ("GNU grep 3.8  2022-09-02  GREP(1)")
            continue
        if indent == 0 and len(stripped) <= _MAX_HEADING_CHARS:
            flush()
            entries.close()
            sections[:] = [stripped]
        elif indent in _SUBSECTION_INDENT and sections and len(stripped) <= _MAX_HEADING_CHARS:
            flush()
            entries.close()
            sections[1:] = [stripped]
        else:
            paragraph.append(line)
    flush()
    entries.close()


class _Entries:
    """Definition lists in fixed-width text (manual pages, info files), told by indentation alone.

    An entry starts with a paragraph whose later lines hang at least ``_MIN_HANG`` columns deeper than
    its first ("-i, --ignore-case" with the description further in: groff's .TP, texinfo's @table), or
    with a one-line paragraph (the term) followed by a paragraph that deep under it (help2man's options:
    "--follow-symlinks", a blank line, the description). The paragraphs after it at the description's
    depth or deeper continue it; a line back at the term's depth starts the next entry even without a
    blank line between (groff's ``.PD 0`` lists). An entry is one block marked ``entry``: the chunker
    never cuts a term from its definition, and gives every entry a chunk of its own. Texinfo indents a
    paragraph's first line by 3, less than ``_MIN_HANG``, so ordinary paragraphs are never entries."""

    def __init__(self, collector: BlockCollector, width: int) -> None:
        self._collector = collector
        self._width = width  # the text's fill width (``fill_width``)
        self._entry: list[str] = []
        self._head = ""  # the open entry's term
        self._depth = 0  # the description's indent: paragraphs at least this deep continue the entry
        self._term: tuple[str, int] | None = None  # a one-line paragraph that may lead the next one
        self._path: tuple[str, ...] = ()

    def paragraph(self, lines: list[str], path: tuple[str, ...]) -> None:
        """One paragraph (its lines as written, indentation kept), cut where a line goes back to the
        depth of the paragraph's first line after hanging deeper; preformatted text is never cut."""
        if is_preformatted(lines, self._width):
            self._part(lines, path)
            return
        first = _indent(lines[0])
        start, hung = 0, False
        for index in range(1, len(lines)):
            depth = _indent(lines[index])
            if hung and depth <= first:
                self._part(lines[start:index], path)
                start, hung = index, False
            elif depth >= first + _MIN_HANG:
                hung = True
        self._part(lines[start:], path)

    def _part(self, lines: list[str], path: tuple[str, ...]) -> None:
        first = _indent(lines[0])
        preformatted = is_preformatted(lines, self._width)
        hanging = (
            [] if preformatted else [i for i, line in enumerate(lines) if _indent(line) >= first + _MIN_HANG]
        )
        # preformatted lines keep their breaks and indentation; prose is one line of single spaces
        text = "\n".join(lines) if preformatted else clean_inline(" ".join(line.strip() for line in lines))
        if self._term is not None:
            term, depth = self._term
            self._term = None
            if first >= depth + _MIN_HANG:
                self._open(
                    f"{term}\n{_dedent(lines)}" if preformatted else f"{term} {text}", first, path, term
                )
                return
            self._collector.add(term, self._path)
        if hanging:
            term = clean_inline(" ".join(line.strip() for line in lines[: hanging[0]]))
            self._open(text, min(_indent(lines[index]) for index in hanging), path, term)
        elif self._entry and first >= self._depth:
            self._entry.append(_dedent(lines, self._depth) if preformatted else text)
        else:
            self.close()
            if len(lines) == 1 and len(text) <= _MAX_TERM_CHARS:
                self._term, self._path = (text, first), path
            else:
                self._collector.add(text, path, preformatted=preformatted)

    def close(self) -> None:
        """Hand on what is open (at a heading, and at the end)."""
        if self._entry:
            self._collector.add(
                "\n".join(self._entry), self._path, preformatted=True, entry=True, head=self._head
            )
            self._entry = []
        if self._term is not None:
            self._collector.add(self._term[0], self._path)
            self._term = None

    def _open(self, text: str, depth: int, path: tuple[str, ...], head: str) -> None:
        self.close()
        self._entry, self._depth, self._path, self._head = [text], depth, path, head


def fill_width(text: str) -> int:
    """The column fixed-width text was filled to (makeinfo's 72, a man page's 78): the 90th percentile
    of its line lengths, which never overstates it (a few long code lines or URLs sit above it); 0
    when the text has too few lines to tell (``is_preformatted`` then reads each paragraph alone)."""
    lengths = sorted(len(line.rstrip()) for line in text.split("\n") if line.strip())
    return lengths[int(len(lengths) * 0.9)] if len(lengths) >= _MIN_WIDTH_LINES else 0


def is_preformatted(lines: list[str], width: int) -> bool:
    """Whether a paragraph of fixed-width text was laid out line by line (code, a sample file, a
    ``.nf`` block) rather than filled: some line ends where the next line's first word would still
    have fit under ``width``, and the next line is as deep (a term's lines over a deeper description,
    and a description's end, are the layout of filled text too), or a line is continued with a
    backslash."""
    if any(line.rstrip().endswith("\\") for line in lines[:-1]):
        return True  # a shell command continued on the next line
    start = 0
    while start + 1 < len(lines) and _indent(lines[start + 1]) == _indent(lines[0]):
        start += 1
    if start + 1 < len(lines) and _indent(lines[start + 1]) >= _indent(lines[0]) + _MIN_HANG:
        lines = lines[start + 1 :]  # the term's lines lead a description: judge the description
    width = width or max(len(line.rstrip()) for line in lines)
    for line, following in itertools.pairwise(lines):
        word = following.split(maxsplit=1)[0] if following.strip() else ""
        if _indent(line) == _indent(following) and len(line.rstrip()) + 1 + len(word) <= width:
            return True
    return False


def _dedent(lines: list[str], depth: int | None = None) -> str:
    """Preformatted lines without the indentation they share (or ``depth`` columns of it)."""
    shared = min(_indent(line) for line in lines if line.strip()) if depth is None else depth
    return "\n".join(line[min(shared, _indent(line)) :].rstrip() for line in lines)


def _collect_info(text: str, collector: BlockCollector) -> str | None:
    """A GNU info file's nodes; returns the manual's title: the Top node's heading, else the manual's
    name from makeinfo's first line ("This is bc.info, ..." gives "bc": bc's Top node is only a menu,
    and its first heading, "1 Introduction", is no title), else the first heading (a split part)."""
    headings = HeadingStack()
    title: str | None = None
    manual = _info_manual_name(text)
    width = fill_width(text)
    for index, part in enumerate(text.split("\x1f")):
        first, _, body = part.lstrip("\n").partition("\n")
        node = _INFO_NODE.match(first)
        if node is not None:
            found = _collect_info_node(body, node.group(1), headings, collector, width)
            if title is None and node.group(1).strip() == "Top":
                found = found or manual
            title = title or found
        elif index == 0:
            _collect_info_preamble(part, collector)
        elif not first.startswith(_INFO_TABLES):
            collector.add(part)
    return title


def _info_manual_name(text: str) -> str | None:
    """ "bc" from makeinfo's first line, "This is bc.info, produced by makeinfo version 6.7 from bc.texi."."""
    first = text[:_MAX_HEADER_CHARS].split("\n", 1)[0]
    if not first.startswith("This is ") or ".info" not in first:
        return None
    return first[len("This is ") : first.index(".info")].strip() or None


def _collect_info_preamble(part: str, collector: BlockCollector) -> None:
    """What precedes the first node: a copyright notice, between makeinfo's "This is grep.info,
    produced by makeinfo" line and the directory entry (lines for the info directory, not text)."""
    kept: list[str] = []
    in_entry = False
    for line in part.split("\n"):
        if line.startswith("START-INFO-DIR-ENTRY"):
            in_entry = True
        elif line.startswith("END-INFO-DIR-ENTRY"):
            in_entry = False
        elif not in_entry and not line.startswith("INFO-DIR-SECTION") and "produced by makeinfo" not in line:
            kept.append(line)
    for paragraph in _PARAGRAPH_BREAK.split("\n".join(kept)):
        collector.add(paragraph)


def _collect_info_node(
    body: str, name: str, headings: HeadingStack, collector: BlockCollector, width: int
) -> str | None:
    menu = body.find("\n* Menu:")
    if menu >= 0 or body.startswith("* Menu:"):
        body = body[: max(menu, 0)]  # a menu ends its node: links to the nodes that follow
    lines = body.split("\n")
    first_heading: str | None = None
    paragraph: list[str] = []

    # A node without a heading of its own (rare) is named by its node.
    own_path = None if _info_heading_at(lines, _first_text_line(lines)) else (clean_inline(name),)

    entries = _Entries(collector, width)

    def flush() -> None:
        if paragraph:
            entries.paragraph(paragraph, own_path or headings.path)
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        level = _info_heading_at(lines, index)
        if level:
            flush()
            entries.close()
            headings.push(level, line)
            first_heading = first_heading or clean_inline(line)
            index += 2
            continue
        if line.strip():
            paragraph.append(line)
        else:
            flush()
        index += 1
    flush()
    entries.close()
    return first_heading


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _first_text_line(lines: list[str]) -> int:
    return next((index for index, line in enumerate(lines) if line.strip()), 0)


def _info_heading_at(lines: list[str], index: int) -> int:
    """The level of a heading whose underline is the next line, or 0."""
    if index + 1 >= len(lines):
        return 0
    title, underline = lines[index].rstrip(), lines[index + 1].rstrip()
    if not title.strip() or not underline or len(set(underline)) != 1 or underline[0] not in _INFO_LEVELS:
        return 0
    return _INFO_LEVELS[underline[0]] if abs(len(underline) - len(title)) <= 2 else 0


def _collect_plain(text: str, collector: BlockCollector) -> str | None:
    """Paragraphs, and headings underlined as READMEs draw them; returns the heading the file opens
    with (its title), if any."""
    lines = text.split("\n")
    headings = HeadingStack()
    styles: list[str] = []
    first_heading: str | None = None
    paragraph: list[str] = []
    # A Debian changelog: each entry's line ("bash (5.2-3) unstable; urgency=medium") is its section,
    # so a passage keeps the version it belongs to; the file's name stays its title.
    changelog = _DEBIAN_ENTRY.match(text.lstrip()) is not None

    def flush() -> None:
        if paragraph:
            collector.add("\n".join(paragraph), headings.path)
            paragraph.clear()

    for index, line in enumerate(lines):
        if "\f" in line:
            before, _, after = line.partition("\f")
            paragraph.append(before)
            flush()
            line = after.replace("\f", " ")
        if not line.strip():
            flush()
            continue
        if changelog and _DEBIAN_ENTRY.match(line):
            flush()
            headings.push(1, line)
            continue
        underline = _UNDERLINE.match(line)
        if underline and not paragraph:
            continue  # an overline, or a rule between paragraphs: drawing, not words
        heading_style = _underline_style(lines, index) if not paragraph else None
        if heading_style is not None:
            flush()
            if heading_style not in styles:
                styles.append(heading_style)
            headings.push(styles.index(heading_style) + 1, line)
            if first_heading is None and not collector.blocks:
                first_heading = clean_inline(line)  # the title only when the file opens with it
            continue
        if underline:
            continue  # the underline of the heading just read
        paragraph.append(line)
    flush()
    return first_heading


def _underline_style(lines: list[str], index: int) -> str | None:
    """The underline character when ``lines[index]`` is a heading drawn over the next line."""
    title = lines[index].strip()
    if index + 1 >= len(lines) or not title or len(title) > _MAX_PLAIN_HEADING_CHARS:
        return None
    if title.endswith((".", ",", ";")):
        return None  # a sentence over a rule, not a heading
    underline = _UNDERLINE.match(lines[index + 1])
    if underline is None or _UNDERLINE.match(lines[index]):
        return None
    return underline.group(1) if len(lines[index + 1].strip()) >= 0.6 * len(title) else None
