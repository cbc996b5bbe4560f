"""Clean extraction from documents as generators write them: each fixture copies the shape of real
pages and files this machine ships (libxslt's table-laid-out pages, Node.js API pages, DocBook and
Texinfo manuals, Sphinx pages, man pages, GNU info files), generated here so the test needs nothing
beside the repository."""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from winnow.errors import EmptyDocument
from winnow.models import ParsedDocument
from winnow.parsing import parse_document


def _sections(doc: ParsedDocument) -> dict[str, tuple[str, ...]]:
    return {block.text: block.section_path for block in doc.blocks}


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _all_words(doc: ParsedDocument) -> set[str]:
    return {word for block in doc.blocks for word in _words(block.text)}


# --- HTML -----------------------------------------------------------------------------------------------
_MENU = "".join(f'<li><a href="page{n}.html">Page {n}</a></li>' for n in range(12))

# libxslt's pages: the whole page is laid out in nested tables; the banner h1/h2 sit in one cell, the
# menus (a label, a search form, a list of links) in a side cell and the article in another.
LAYOUT_TABLE_PAGE = f"""<?xml version="1.0" encoding="ISO-8859-1"?>
<html><head><title>FAQ</title></head><body>
<table border="0" width="100%"><tr><td><img src="logo.png" alt="Logo"/></td>
<td><table><tr><td><table><tr><td align="center"><h1>The XSLT C library</h1><h2>FAQ</h2></td></tr>
</table></td></tr></table></td></tr></table>
<table><tr><td><table><tr><td valign="top" width="200"><table width="100%">
<tr><td><center><b>Main Menu</b></center></td></tr>
<tr><td><form action="search.php"><input name="query" type="text"/></form><ul>{_MENU}</ul></td></tr>
</table></td>
<td valign="top"><table><tr><td><h3>Troubles linking programs</h3>
<p>Use <a href="x.html">xslt-config</a> to get the linker flags.</p>
<h3>Parameters on the command line</h3><p>Quote the value twice at the shell prompt.</p>
</td></tr></table></td></tr></table></td></tr></table></body></html>"""


def test_a_page_laid_out_in_tables_is_read_as_a_page_with_its_sections() -> None:
    # Given a page whose layout, menus and article are all table cells
    doc = parse_document("acme/FAQ.html", LAYOUT_TABLE_PAGE.encode("latin-1"))
    sections = _sections(doc)
    # Then the article's headings are sections (not one table cell holding the whole page)
    assert sections["Use xslt-config to get the linker flags."][-1] == "Troubles linking programs"
    assert sections["Quote the value twice at the shell prompt."][-1] == "Parameters on the command line"
    assert all(block.table is None for block in doc.blocks)
    # And headings in one cell stay separate words ("library FAQ", never "libraryFAQ")
    assert "The XSLT C library" in sections["Quote the value twice at the shell prompt."]
    assert "libraryfaq" not in _all_words(doc)
    # And the menu goes, label included
    assert not {"main", "menu", "page"} & _all_words(doc)


def test_words_in_separate_block_elements_of_a_table_cell_are_not_glued() -> None:
    # Given a data table whose cells hold paragraphs and line breaks, as Sphinx writes them
    html = """<html><body><h1>Limits</h1><table><thead><tr><th><p>Setting</p></th><th><p>Meaning</p></th>
    </tr></thead><tbody><tr><td><p>max_rows</p></td><td><p>Rows per sheet.</p><p>Counted over all sheets.</p>
    </td></tr><tr><td>depth<br/>limit</td><td>Nesting</td></tr></tbody></table></body></html>"""
    (block,) = parse_document("acme/limits.html", html.encode()).blocks
    # Then each cell's paragraphs keep a space between them
    assert block.table is not None
    assert block.table.rows[0] == ("max_rows", "Rows per sheet. Counted over all sheets.")
    assert block.table.rows[1] == ("depth limit", "Nesting")


def test_a_data_table_cell_that_is_only_links_keeps_its_place_in_the_row() -> None:
    # Given a Node.js table whose last cell lists the methods to implement, each a link
    html = """<html><body><h2>API for stream implementers</h2><table><thead><tr><th>Use-case</th>
    <th>Class</th><th>Method(s) to implement</th></tr></thead><tbody>
    <tr><td>Reading and writing</td><td><a href="#duplex">Duplex</a></td><td><a href="#r">_read()</a>,
    <a href="#w">_write()</a>, <a href="#v">_writev()</a>, <a href="#f">_final()</a></td></tr></tbody></table>
    </body></html>"""
    (block,) = parse_document("acme/stream.html", html.encode()).blocks
    # Then no cell is taken for a menu: the row keeps every value under its own column
    assert block.table is not None
    assert block.table.rows == (("Reading and writing", "Duplex", "_read(), _write(), _writev(), _final()"),)


def test_a_list_of_links_inside_a_data_table_cell_is_the_cells_value() -> None:
    html = """<html><body><table><tr><th>Module</th><th>See also</th></tr><tr><td>fs</td><td><ul>
    <li><a href="path.html">path</a></li><li><a href="os.html">os</a></li></ul></td></tr></table>
    </body></html>"""
    (block,) = parse_document("acme/modules.html", html.encode()).blocks
    assert block.table is not None and block.table.rows == (("fs", "path os"),)


# Node.js API pages: a permalink "#" inside a span in every heading, a side column of ~100 links, a
# version picker, a table of contents in <details>, and on some pages two short paragraphs of content.
NODE_PAGE = f"""<!doctype html><html><head><title>Policies | Node.js Documentation</title></head>
<body class="alt apidoc"><a href="#apicontent" class="skip-to-content">Skip to content</a>
<div id="content" class="clearfix">
<div role="navigation" id="column2" class="interior"><ul>{_MENU}</ul></div>
<div id="column1" data-id="policy" class="interior">
<header class="header"><h1>Node.js v20 documentation</h1><ul>
<li class="picker-header"><a href="#">Index</a><div class="picker"><ul>{_MENU}{_MENU}</ul></div></li>
</ul></header><hr/>
<details role="navigation" id="toc" open><summary>Table of contents</summary><ul><li><a href="#p">Policies</a>
</li></ul></details>
<div id="apicontent">
<h2>Policies<span><a class="mark" href="#policies" id="policies">#</a></span><a class="legacy" id="p">
</a></h2>
<div class="api_stability api_stability_1"><a href="documentation.html#stability-index">Stability: 1</a>
 - Experimental</div>
<p>The former Policies documentation is now at <a href="permissions.html">Permissions documentation</a>.</p>
</div></div></div></body></html>"""


def test_a_short_page_inside_a_heavy_site_frame_keeps_its_content_and_a_clean_section() -> None:
    # Given a Node.js API page: two sentences of content inside a frame of menus
    doc = parse_document("acme/policy.html", NODE_PAGE.encode())
    sections = _sections(doc)
    # Then the content is kept under its heading, without the "#" permalink
    assert sections["The former Policies documentation is now at Permissions documentation."] == ("Policies",)
    assert sections["Stability: 1 - Experimental"] == ("Policies",)
    # And none of the frame is indexed
    assert not {"page", "skip", "contents", "index"} & _all_words(doc)


# DocBook (valgrind's manual): a table of contents as a <dl> of one link per entry, headed by a label.
DOCBOOK_CHAPTER = """<html><head><title>9. Massif: a heap profiler</title></head><body>
<div class="navheader"><table class="nav" width="100%"><tr><td><a accesskey="p" href="a.html">
<img src="left.png" alt="Prev"/></a></td><td><a href="b.html"><img src="up.png" alt="Up"/></a></td>
<th align="center">Valgrind User Manual</th></tr></table></div>
<div class="chapter"><div class="titlepage"><h1 class="title"><a name="ms-manual"></a>9. Massif</h1></div>
<div class="toc"><p><b>Table of Contents</b></p><dl class="toc">
<dt><span class="sect1"><a href="#ms-manual.overview">9.1. Overview</a></span></dt>
<dt><span class="sect1"><a href="#ms-manual.using">9.2. Using Massif and ms_print</a></span></dt>
<dd><dl><dt><span class="sect2"><a href="#ms-manual.anexample">9.2.1. An Example Program</a></span></dt>
</dl></dd></dl></div>
<p>To use this tool, you must specify <code>--tool=massif</code> on the Valgrind command line.</p>
<div class="sect1"><h2 class="title"><a name="ms-manual.overview"></a>9.1. Overview</h2>
<p>Massif is a heap profiler.</p></div></div></body></html>"""


def test_a_docbook_table_of_contents_is_not_indexed() -> None:
    doc = parse_document("acme/ms-manual.html", DOCBOOK_CHAPTER.encode())
    sections = _sections(doc)
    assert sections["Massif is a heap profiler."] == ("9. Massif", "9.1. Overview")
    assert sections["To use this tool, you must specify --tool=massif on the Valgrind command line."] == (
        "9. Massif",
    )
    assert not any("Table of Contents" in text or text.startswith("9.2") for text in sections)


# makeinfo --html (libffi's manual): a "Next: … Previous: … Up: … [Index]" bar, a one-heading page,
# and a node whose body is a list of its subsections.
TEXINFO_NODE = """<html><head><title>Types (libffi)</title></head><body lang="en">
<div class="section" id="Types"><div class="header"><p>
Next: <a href="Multiple-ABIs.html" rel="next">Multiple ABIs</a>, Previous: <a href="Simple-Example.html"
rel="prev">Simple Example</a>, Up: <a href="Using-libffi.html" rel="up">Using libffi</a> &nbsp; [<a
href="Index.html" rel="index">Index</a>]</p></div><hr/>
<span id="Types-1"></span><h3 class="section">2.3 Types</h3>
<p>Types are described by <code>ffi_type</code> structures.</p>
<ul class="section-toc"><li><a href="Primitive-Types.html">Primitive Types</a></li>
<li><a href="Structures.html">Structures</a></li></ul></div></body></html>"""

# Sphinx: a pilcrow permalink in each heading, a sidebar, a related-pages bar and a footer.
SPHINX_PAGE = """<html><head><title>Policy &#8212; Debian Python Policy</title></head><body>
<div class="related" role="navigation"><ul><li><a href="genindex.html">index</a></li>
<li><a href="next.html">next</a> |</li></ul></div>
<div class="document"><div class="body" role="main"><section id="policy">
<h1>Python Packaging<a class="headerlink" href="#policy" title="Permalink to this heading">¶</a></h1>
<p>Packages must declare their Python dependencies.</p></section></div>
<div class="sphinxsidebar" role="navigation"><h3>Quick search</h3></div></div>
<div class="footer">&#169;1999-2021, Software in the Public Interest.</div></body></html>"""


def test_texinfo_and_sphinx_pages_lose_their_link_bars_and_permalinks_and_keep_their_one_section() -> None:
    texinfo = _sections(parse_document("acme/Types.html", TEXINFO_NODE.encode()))
    assert texinfo == {"Types are described by ffi_type structures.": ("2.3 Types",)}
    sphinx = _sections(parse_document("acme/policy.html", SPHINX_PAGE.encode()))
    assert sphinx == {"Packages must declare their Python dependencies.": ("Python Packaging",)}


def test_a_sphinx_single_page_keeps_the_chapters_inlined_in_its_toctree() -> None:
    # Given Sphinx's singlehtml output: every chapter sits inside a div.toctree-wrapper
    html = """<html><body><div class="body"><h1>Contents</h1><div class="toctree-wrapper compound">
    <section id="copyright"><h2>1. Copyright<a class="headerlink" href="#copyright">¶</a></h2>
    <p>Copyright 1999-2021, <a href="https://spi-inc.org">Software in the Public Interest</a>.</p>
    <p>Permission is granted to copy this document.</p></section></div></div></body></html>"""
    doc = parse_document("acme/python-policy.html", html.encode())
    assert _sections(doc)["Permission is granted to copy this document."] == ("1. Copyright",)


def test_permalink_marks_after_definition_terms_are_not_indexed() -> None:
    # Given makeinfo 7 output: a "¶" link after each defined term, outside any heading
    page = """<html><body><h2>2.3 Complex Types</h2><dl class="first-deftp">
    <dt id="index-ffi_type"><span class="category">Data type: </span><span><strong>ffi_type</strong>
    <a href="#index-ffi_type" class="copiable-anchor"> &para;</a></span></dt>
    <dd><p>Describes a complex type to libffi.</p></dd></dl>
    <dl><dt><span><code>-v</code><a class="copiable-link" href="#index-_002dv"> &para;</a></span></dt>
    <dd><p>Use the built-in verbose format.</p></dd></dl>
    <p>See <a href="#s5">&sect;</a> 5 and <a href="other.html">the section on types</a>.</p></body></html>"""
    doc = parse_document("acme/Complex.html", page.encode())
    # Then the terms are kept without their marks, and ordinary links keep their words
    texts = [block.text for block in doc.blocks]
    assert "Data type: ffi_type" in texts and "-v" in texts
    assert not any(mark in text for text in texts for mark in "¶§")
    assert "See 5 and the section on types." in texts


# makeinfo's one-page manual (GNU time's): a concept index closing the page, with a "Jump to:" bar of
# letter links above and below it, each in a table of its own whose label is a header cell.
_LETTERS = "".join(f'<a class="summary-letter" href="#I-{c}"><b>{c}</b></a>\n &nbsp; \n' for c in "BCFPRV")
_LETTER_BAR = f'<table><tr><th valign="top">Jump to: &nbsp; </th><td>{_LETTERS}</td></tr></table>'
INDEXED_MANUAL = f"""<html><head><title>Time</title></head><body>
<div class="chapter" id="Resources"><h2 class="chapter">1 Measuring Program Resource Use</h2>
<p>The time command runs another program, then displays information about the resources used.</p></div>
<div class="unnumbered" id="Concept-index"><h2 class="unnumbered">Concept index</h2>
{_LETTER_BAR}
<table class="index-cp" border="0"><tr><td></td><th align="left">Index Entry</th><th> Section</th></tr>
<tr><th id="I-B">B</th></tr><tr><td></td><td><a href="#Resources">bugs, reporting</a></td>
<td><a href="#Resources">Resources</a></td></tr><tr><th id="I-C">C</th></tr><tr><td></td>
<td><a href="#Resources">CPU time</a></td><td><a href="#Resources">Resources</a></td></tr></table>
{_LETTER_BAR}</div></body></html>"""


def test_an_index_pages_jump_to_letter_bar_is_not_indexed() -> None:
    # Given a manual closing with an index and its "Jump to: B C F P R V" letter bars
    doc = parse_document("acme/time.html", INDEXED_MANUAL.encode())
    # Then the prose and the index entries are kept and no letter bar is indexed
    texts = _sections(doc)
    prose = "The time command runs another program, then displays information about the resources used."
    assert texts[prose] == ("1 Measuring Program Resource Use",)
    assert "CPU time" in " ".join(texts)
    assert "jump" not in _all_words(doc)
    assert not any(re.search(r"\bB C F P R V\b", text) for text in texts)


def test_a_page_that_is_only_navigation_says_so() -> None:
    # Given a makeinfo node whose body is only the list of its subsections, under a link bar
    page = """<html><body><div class="header"><p>Next: <a href="n.html">Multiple ABIs</a>, Previous:
    <a href="p.html">Simple Example</a>, Up: <a href="u.html">Using libffi</a></p></div>
    <h3>2.3 Types</h3><ul class="section-toc"><li><a href="a.html">Primitive Types</a></li>
    <li><a href="b.html">Structures</a></li><li><a href="c.html">Size and Alignment</a></li></ul>
    </body></html>"""
    # When it is parsed, the reason says why nothing is left
    with pytest.raises(EmptyDocument, match="no text besides navigation"):
        parse_document("acme/Types.html", page.encode())


# A blog or product page: its one h1 in the page's <header>, beside the site name and a menu.
HEADER_H1_PAGE = """<!DOCTYPE html><html><head>{title}</head><body>
<header class="masthead"><a href="/" class="brand">Acme Outfitters</a><h1>Returns policy</h1>
<p class="tagline">Gear for every trail</p></header>
<div class="content"><p>Unworn items may be returned within thirty days of delivery for a full refund.</p>
<p>Send them back with the label printed from your order page.</p></div>
<footer>Copyright Acme Outfitters</footer></body></html>"""


@pytest.mark.parametrize("title", ["<title>Acme Outfitters</title>", ""])
def test_a_pages_only_h1_in_its_page_header_still_names_the_page(title: str) -> None:
    # Given a page whose only h1 sits in a <header> outside <article>/<main>
    doc = parse_document("acme/returns.html", HEADER_H1_PAGE.format(title=title).encode())
    sections = _sections(doc)
    # Then the heading names the page: its section, and its title when the page has no <title>
    refund = "Unworn items may be returned within thirty days of delivery for a full refund."
    assert sections[refund] == ("Returns policy",)
    assert doc.title == ("Acme Outfitters" if title else "Returns policy")
    # And the rest of the header (site name, tagline) is still dropped, the heading not indexed as text
    assert not {"gear", "trail", "outfitters", "returns"} & _all_words(doc)


def test_a_site_header_h1_is_no_section_when_the_page_has_its_own_h1() -> None:
    page = HEADER_H1_PAGE.format(title="").replace(
        '<div class="content">', '<div class="content"><h1>Refunds</h1>'
    )
    sections = _sections(parse_document("acme/returns.html", page.encode()))
    assert set(sections.values()) == {("Refunds",)}  # the header's h1 went with the header


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(_WORD, min_size=4, max_size=14), st.lists(_WORD, max_size=2), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.lists(_WORD, min_size=1, max_size=3), min_size=4, max_size=12),
)
def test_cleaning_html_keeps_every_paragraph_and_adds_no_word(
    paragraphs: list[tuple[list[str], list[str], bool]], menu: list[list[str]]
) -> None:
    # Given prose paragraphs (some with a link or two inside) between a menu and a link bar
    body = []
    for words, linked, in_table_cell in paragraphs:
        links = " ".join(f'<a href="#{w}">{w}</a>' for w in linked)
        paragraph = f"<p>{' '.join(words[:2])} {links} {' '.join(words[2:])}</p>"
        body.append(
            f"<table><tr><td><h3>Part</h3>{paragraph}</td></tr></table>" if in_table_cell else paragraph
        )
    items = "".join(f'<li><a href="p{n}.html">{" ".join(item)}</a></li>' for n, item in enumerate(menu))
    page = (
        f'<html><body><div><b>Menu</b><ul>{items}</ul></div><div class="header"><p>Next: <a href="n.html">'
        f"next</a>, Up: <a href='u.html'>up</a></p></div><h1>Title</h1>{''.join(body)}</body></html>"
    )
    # When it is cleaned
    doc = parse_document("acme/page.html", page.encode())
    kept = _all_words(doc)
    # Then every word of every paragraph survives and no word appears that the page does not have
    for words, linked, _ in paragraphs:
        assert set(words) | set(linked) <= kept
    assert kept <= set(_words(page))


# --- manual pages saved as text -------------------------------------------------------------------------
def _bold(text: str) -> str:
    return "".join(f"{char}\b{char}" for char in text)


# `man grep > grep.txt` on a terminal that keeps formatting: overstruck bold headings, the running
# header and footer, .SS subsections at three spaces, text at seven, a word groff hyphenated with U+2010.
def _man_page(bold: Callable[[str], str]) -> str:
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


MAN_PAGE = _man_page(_bold)


def _sgr_bold(text: str) -> str:
    return f"\x1b[1m{text}\x1b[0m"


@pytest.mark.parametrize(
    "page", [MAN_PAGE, _man_page(_sgr_bold), _man_page(str)], ids=["overstrike", "ansi", "plain"]
)
def test_a_manual_page_saved_as_text_gets_its_sections_without_header_footer_or_hyphens(page: str) -> None:
    doc = parse_document("acme/grep.txt", page.encode())
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        (("NAME",), "grep, egrep - print lines that match patterns"),
        (("OPTIONS", "Generic Program Information"), "--help Output a usage message and exit."),
        (
            ("OPTIONS", "Pattern Syntax"),
            "-E, --extended-regexp Interpret PATTERNS as extended regular expressions, which can be located"
            " in a file.",
        ),
    ]


def test_text_that_only_mentions_a_manual_page_is_plain_text() -> None:
    text = "See grep(1) for patterns.\nNOTES\n   indented line\n"
    doc = parse_document("acme/notes.txt", text.encode())
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        ((), "See grep(1) for patterns. NOTES indented line")
    ]


# --- GNU info files -------------------------------------------------------------------------------------
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


def test_a_gzipped_info_file_is_read_by_node_without_its_navigation() -> None:
    import gzip

    # Given grep.info.gz as /usr/share/info holds it
    doc = parse_document("acme/grep.info.gz", gzip.compress(INFO_FILE.encode()))
    # Then headings are sections, a node without a heading is named by its node, and nothing of the
    # node lines, menus, directory entry or tag table is indexed
    assert doc.title == "grep"
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        ((), "This manual is for grep, a pattern matching engine."),
        ((), "grep prints lines that contain a match."),
        (("1 Introduction",), "Given one or more patterns, grep searches input files for matches."),
        (("1 Introduction", "2.1.2 Matching Control"), "'-i' Ignore case distinctions."),
        (("Usage",), "Frequently asked questions about grep usage."),
    ]


def test_the_parts_of_a_split_info_manual_are_info_files_too() -> None:
    doc = parse_document("acme/find.info-1", INFO_FILE.encode())
    assert not any("Node:" in block.text or "Menu" in block.text for block in doc.blocks)


def test_gzip_is_inflated_within_the_object_limit_and_refused_when_it_is_not_one() -> None:
    import gzip

    from winnow.errors import CorruptDocument, OversizedDocument, UnsupportedDocument
    from winnow.settings import IngestSettings

    # A gzip bomb stops at the object size limit
    bomb = gzip.compress(b"a" * 2_000_000)
    with pytest.raises(OversizedDocument, match="gzip"):
        parse_document("acme/notes.txt.gz", bomb, IngestSettings(max_object_bytes=1_000_000))
    # A changelog.gz is text once inflated (no extension: sniffed)
    assert parse_document("acme/changelog.gz", gzip.compress(b"Fixed the parser.\n")).blocks[0].text == (
        "Fixed the parser."
    )
    with pytest.raises(UnsupportedDocument, match="not gzip"):
        parse_document("acme/notes.txt.gz", b"plain text")
    with pytest.raises(CorruptDocument, match="corrupt gzip"):
        parse_document("acme/notes.txt.gz", gzip.compress(b"some text to cut short")[:-12])
    with pytest.raises(UnsupportedDocument, match="archive"):
        parse_document("acme/src.tar.gz", gzip.compress(b"x" * 600))


# --- reStructuredText as Sphinx and CMake write it ------------------------------------------------------
CMAKE_RST = """\
CPACK_RPM_PACKAGE_RELEASE
-------------------------

.. note::

 This is the string that goes into the RPM ``Release:`` field, see :variable:`CPACK_RPM_DIST`.

.. variable:: CPACK_RPM_DIST

 .. versionadded:: 3.6

 The dist tag that is added to the RPM ``Release:`` field.

``CPACK_APPLE_PKG_INSTALLER_CONTENT``
  .. versionadded:: 3.23

  This contains all the XML elements that specify installer-wide options [#]_.

  .. __: https://example.org/installer

.. code-block:: cmake

  set(CPACK_RPM_DIST "el9")

.. [#] Footnotes are part of the text.

.. |name| replace:: never shown
.. A comment that is never shown.
"""


def test_rst_directives_nested_at_any_indentation_keep_their_prose_and_lose_their_markup() -> None:
    doc = parse_document("acme/rpm.rst", CMAKE_RST.encode())
    texts = [block.text for block in doc.blocks]
    assert texts == [
        "This is the string that goes into the RPM Release: field, see CPACK_RPM_DIST.",
        "CPACK_RPM_DIST",
        "versionadded 3.6",
        "The dist tag that is added to the RPM Release: field.",
        "CPACK_APPLE_PKG_INSTALLER_CONTENT",
        "versionadded 3.23",
        "This contains all the XML elements that specify installer-wide options.",
        'set(CPACK_RPM_DIST "el9")',
        "Footnotes are part of the text.",
    ]
    assert all(block.section_path == ("CPACK_RPM_PACKAGE_RELEASE",) for block in doc.blocks)


# --- plain text with the headings READMEs draw -------------------------------------------------------------
README = """\
XZ Utils for Debian
===================

Contents:
 1. History
 2. Configuration

History
-------

XZ Utils should have been called LZMA Utils 4.42,
but it came too late.

=====================
Configuration
=====================

The memory usage of xz can vary.
---------------------------------
Set XZ_DEFAULTS in your environment.
"""


def test_a_readme_without_extension_gets_sections_from_its_underlined_headings() -> None:
    doc = parse_document("acme/README", README.encode())
    assert doc.title == "XZ Utils for Debian"
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        ((), "Contents: 1. History 2. Configuration"),
        (("History",), "XZ Utils should have been called LZMA Utils 4.42, but it came too late."),
        (("Configuration",), "The memory usage of xz can vary. Set XZ_DEFAULTS in your environment."),
    ]


DEBIAN_CHANGELOG = """bash (5.2.15-2) unstable; urgency=medium

  * Remove one more pdf file without source. Closes: #1024598.

 -- Matthias Klose <doko@debian.org>  Mon, 02 Jan 2023 13:06:21 +0100

bash (5.2-3) unstable; urgency=medium

  * Apply upstream patches 003 - 015.
  * Enable all hardening flags (Christian Göttsche). Closes: #1021082.

 -- Matthias Klose <doko@debian.org>  Sat, 31 Dec 2022 11:32:01 +0100
"""


def test_a_debian_changelogs_entries_are_the_sections_of_their_items() -> None:
    # Given a changelog.Debian.gz as every Debian package ships one
    doc = parse_document("acme/changelog.Debian.gz", gzip.compress(DEBIAN_CHANGELOG.encode()))
    sections = _sections(doc)
    # Then each item is filed under its version's entry, and the file keeps its name as title
    assert doc.title == "changelog.Debian"
    assert sections[
        "* Apply upstream patches 003 - 015. * Enable all hardening flags (Christian Göttsche)."
        " Closes: #1021082."
    ] == ("bash (5.2-3) unstable; urgency=medium",)
    assert sections["* Remove one more pdf file without source. Closes: #1024598."] == (
        "bash (5.2.15-2) unstable; urgency=medium",
    )


def test_a_heading_deep_inside_a_text_file_is_a_section_not_its_title() -> None:
    # Given a Debian copyright file: fields first, a licence's underlined name far below
    text = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nLicense: UFL-1.0\n"
    text += " ----------------\n UBUNTU FONT LICENCE\n ----------------\n .\n Preamble text.\n"
    doc = parse_document("acme/copyright", text.encode())
    assert doc.title == "copyright"
    assert doc.blocks[-1].section_path == ("UBUNTU FONT LICENCE",)


# --- text in legacy encodings other than Western ----------------------------------------------------------
RUSSIAN = "Русский текст о погоде. Завтра в городе будет тёплый день и лёгкий ветер с юга.\n" * 12  # noqa: RUF001
JAPANESE = "日本語のテキストです。明日の天気は晴れで、南から穏やかな風が吹きます。\n" * 12
CHINESE = "这是中文文本。明天城里天气晴朗，南风轻拂，气温适中。\n" * 12  # noqa: RUF001


@pytest.mark.parametrize(
    ("text", "encoding"),
    [(RUSSIAN, "cp1251"), (RUSSIAN, "koi8-r"), (JAPANESE, "shift_jis"), (CHINESE, "gbk")],
)
def test_text_saved_in_a_legacy_encoding_of_another_script_is_read_not_garbled(
    text: str, encoding: str
) -> None:
    # Given a text file an older tool saved in its locale's encoding (not UTF-8, not Western)
    doc = parse_document("acme/notes.txt", text.encode(encoding))
    # Then its words are read as written (they were mojibake, or refused as "binary")
    assert doc.blocks[0].text.startswith(text.split("\n")[0])


def test_western_text_stays_western_and_random_bytes_stay_binary() -> None:
    import random

    from winnow.errors import UnsupportedDocument

    western = "Größere Änderungen für Übersicht, Straße und Café crème.\n" * 5
    assert parse_document("acme/de.txt", western.encode("cp1252")).blocks[0].text.startswith("Größere")
    generator = random.Random(7)
    with pytest.raises(UnsupportedDocument, match="binary"):
        parse_document("acme/noise.txt", bytes(generator.randrange(128, 256) for _ in range(4096)))


# A README of short Markdown headings: too few words for letter frequencies, so a detector's best guess
# was Mac Cyrillic (every capital a dash) or nothing (cp1252 mojibake, "Æóðíàë").
SHORT_HEADINGS = [
    "# Журнал\n\n## Понедельник\n\nбег\n\n## Вторник\n\nплавание\n\n## Среда\n\nотдых\n",  # noqa: RUF001
    "### Проект\n\nошибки\n\n# Люди\n\nплан\n\n# Цели\n\nрост\n",  # noqa: RUF001
    "### Среда запуск\n\n# Сад запуск\n\n## Сеть еда\n\n\nСеть кот журнал настройка расходы руководство.\n",  # noqa: RUF001
]


@pytest.mark.parametrize("encoding", ["cp1251", "koi8-r"])
@pytest.mark.parametrize("text", SHORT_HEADINGS)
def test_a_file_of_short_cyrillic_headings_is_read_as_cyrillic(text: str, encoding: str) -> None:
    # Given a Markdown file of short Russian headings saved in a legacy Cyrillic encoding
    doc = parse_document("acme/plan.md", text.encode(encoding))
    # Then its headings read as written
    headings = [part for block in doc.blocks for part in block.section_path] + [doc.title or ""]
    words = set(re.findall(r"\w+", " ".join(headings + [block.text for block in doc.blocks])))
    assert words and words <= set(re.findall(r"\w+", text))


def test_high_bytes_without_spaces_stay_binary_though_they_decode_as_cp1251() -> None:
    from winnow.errors import UnsupportedDocument

    generator = random.Random(11)
    noise = bytes(generator.choice([b for b in range(128, 256) if b != 0x98]) for _ in range(4096))
    with pytest.raises(UnsupportedDocument, match="binary"):
        parse_document("acme/noise.txt", noise)
