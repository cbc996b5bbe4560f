"""Texts shaped like documents this machine ships (a page laid out in tables, a man page saved as text,
a GNU info file), for the parsing tests and the ingest tests that index them, and the small readers of a
parsed document the parsing tests share."""

from __future__ import annotations

from collections.abc import Callable

from winnow.errors import DocumentError
from winnow.models import ParsedDocument
from winnow.text.chunking import chunk_document


def block_texts(doc: ParsedDocument) -> list[str]:
    return [block.text for block in doc.blocks]


def all_text(doc: ParsedDocument) -> str:
    return "\n".join(block_texts(doc))


def assert_one_line_reason(error: DocumentError) -> None:
    message = str(error)
    assert message.strip(), "a reason must be given"
    assert "\n" not in message
    assert len(message) < 300


def sections_by_text(doc: ParsedDocument) -> dict[str, tuple[str, ...]]:
    return {block.text: block.section_path for block in doc.blocks}


MENU = "".join(f'<li><a href="page{n}.html">Page {n}</a></li>' for n in range(12))


# libxslt's pages: the whole page is laid out in nested tables; the banner h1/h2 sit in one cell, the
# menus (a label, a search form, a list of links) in a side cell and the article in another.
LAYOUT_TABLE_PAGE = f"""<?xml version="1.0" encoding="ISO-8859-1"?>
<html><head><title>FAQ</title></head><body>
<table border="0" width="100%"><tr><td><img src="logo.png" alt="Logo"/></td>
<td><table><tr><td><table><tr><td align="center"><h1>The XSLT C library</h1><h2>FAQ</h2></td></tr>
</table></td></tr></table></td></tr></table>
<table><tr><td><table><tr><td valign="top" width="200"><table width="100%">
<tr><td><center><b>Main Menu</b></center></td></tr>
<tr><td><form action="search.php"><input name="query" type="text"/></form><ul>{MENU}</ul></td></tr>
</table></td>
<td valign="top"><table><tr><td><h3>Troubles linking programs</h3>
<p>Use <a href="x.html">xslt-config</a> to get the linker flags.</p>
<h3>Parameters on the command line</h3><p>Quote the value twice at the shell prompt.</p>
</td></tr></table></td></tr></table></td></tr></table></body></html>"""


def overstrike_bold(text: str) -> str:
    return "".join(f"{char}\b{char}" for char in text)


# `man grep > grep.txt` on a terminal that keeps formatting: overstruck bold headings, the running
# header and footer, .SS subsections at three spaces, text at seven, a word groff hyphenated with U+2010.
def man_page(bold: Callable[[str], str]) -> str:
    return f"""GREP(1)                          User Commands                         GREP(1)

{bold("NAME")}
       grep, egrep - print lines that match patterns

{bold("OPTIONS")}
   {bold("Generic Program Information")}
       {bold("--help")} Output a usage message and exit.

   {bold("Pattern Syntax")}
       {bold("-E")}, {bold("--extended-regexp")}
              Interpret  PATTERNS  as  extended regular expressions, which can be lo\u2010
              cated in a file.

GNU grep 3.8                      2022-09-02                          GREP(1)
"""


MAN_PAGE = man_page(overstrike_bold)


INFO_FILE = """This is grep.info, produced by makeinfo version 6.8 from grep.texi.

This manual is for grep, a pattern matching engine.
INFO-DIR-SECTION Text creation and manipulation
START-INFO-DIR-ENTRY
* grep: (grep).                 Print lines that match patterns.
END-INFO-DIR-ENTRY

\x1f
File: grep.info,  Node: Top,  Next: Introduction,  Up: (dir)

grep
****

grep prints lines that contain a match.

* Menu:

* Introduction::                Introduction.
* Invoking::                    Command-line options.

\x1f
File: grep.info,  Node: Introduction,  Next: Invoking,  Prev: Top,  Up: Top

1 Introduction
**************

Given one or more patterns, grep searches
input files for matches.

\x1f
File: grep.info,  Node: Matching Control,  Prev: Introduction,  Up: Invoking

2.1.2 Matching Control
----------------------

'-i' Ignore case distinctions.

\x1f
File: grep.info,  Node: Usage,  Prev: Matching Control,  Up: Top

Frequently asked questions about grep usage.

\x1f
Tag Table:
Node: Top\x7f216
Node: Introduction\x7f1018
\x1f
End Tag Table
"""


STAFF = [
    ["Name", "Office", "Extension", "Role"],
    ["Ada Lovelace", "London", "4411", "Analyst"],
    ["Grace Hopper", "Arlington", "5120", "Compiler lead"],
    ["Katherine Johnson", "Hampton", "7730", "Trajectory analysis"],
]


def tables_of(doc: ParsedDocument) -> list[str]:
    return [chunk.text for chunk in chunk_document(doc) if chunk.kind == "table"]


# Token-dense text: numbers, units and symbols take a token or more each, about 2 characters a token.
DENSE = " ".join(
    f"IL-{n}: 12.{n % 10} ± 0.{n % 7} ng/mL (p<0.0{n % 5 + 1}; 95% CI {n}.1-{n}.9)." for n in range(120)
)
