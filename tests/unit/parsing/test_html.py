"""HTML into blocks: headings as section paths, the page's own text without scripts, navigation or
site frames (pages shaped like the ones this machine ships), tables, encodings, and nesting read
whole or failed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.documents import CP1252_SAMPLE, HTML_NOISE_MARKERS, make_html
from tests.support.samples import LAYOUT_TABLE_PAGE, MENU, all_text, block_texts, sections_by_text
from winnow.errors import CorruptDocument, EmptyDocument
from winnow.models import ParsedDocument
from winnow.parsing import parse_document


def test_html_headings_become_paths_and_scripts_styles_navigation_are_dropped(sample_html: bytes) -> None:
    doc = parse_document("acme/release.html", sample_html)
    assert doc.source_type == "html"
    assert doc.title == "Release notes"
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        ((), "What changed in this release."),
        (("Search",), "Hybrid search now fuses dense and sparse results."),
        (("Search", "Filters"), "Metadata filters apply before ranking."),
        (("Ingest",), "DOCX tables are kept as text rows."),
    ]
    text = all_text(doc).lower()
    for marker in HTML_NOISE_MARKERS:
        assert marker not in text


def test_html_title_falls_back_to_first_h1_and_article_header_is_kept() -> None:
    html = b"""<html><body><nav>Menu</nav><article><header><h1>Article heading</h1>
    <p class="byline">By the team</p></header><p>Body <b>bold</b> and <a href="#">link</a>.</p>
    <table><caption>Prices</caption><tr><th>Item</th><th>Cost</th></tr>
    <tr><td>Tea</td><td>2</td></tr></table>
    <pre>line one
        line two</pre><div style="display: none">invisible</div>
    <p>Line<br>break</p></article></body></html>"""
    doc = parse_document("acme/article.htm", html)
    assert doc.title == "Article heading"
    assert block_texts(doc) == [
        "By the team",
        "Body bold and link.",
        "Prices\nColumns: Item | Cost\nItem: Tea | Cost: 2",  # a table block: each row names its columns
        "line one\n        line two",  # preformatted: lines and indentation as written (issue 46)
        "Line break",
    ]


def test_html_header_row_of_th_cells_between_empty_td_spacers_is_a_header() -> None:
    # Given a table as Texinfo writes its index: header cells <th>, spacer cells empty <td>
    html = b"""<html><body><h1>Index</h1><table>
    <tr><td></td><th>Index Entry</th><td>&nbsp;</td><th>Section</th></tr>
    <tr><td></td><td>ABI</td><td>&nbsp;</td><td>Introduction</td></tr>
    <tr><td></td><td>closures</td><td>&nbsp;</td><td>The Closure API</td></tr></table></body></html>"""
    # When it is parsed
    [table] = [block.table for block in parse_document("acme/index.html", html).blocks if block.table]
    # Then its first row names the columns
    assert table.header == ("Index Entry", "Section")
    assert table.rows == (("ABI", "Introduction"), ("closures", "The Closure API"))


def test_html_one_cell_table_is_read_as_the_content_it_frames() -> None:
    # Given a page as DocBook writes one: a code listing framed by a one-cell table, and a table of
    # values inside another one-cell frame
    html = b"""<html><body><h1>Properties</h1>
    <table border="0"><tr><td><pre>  Property   Type
  family     String
  size       Double</pre></td></tr></table>
    <table><tr><td><table><tr><th>Name</th><th>Value</th></tr><tr><td>MATCH</td><td>1</td></tr></table>
    </td></tr></table></body></html>"""
    # When it is parsed
    doc = parse_document("acme/props.html", html)
    # Then the listing keeps its lines, and the framed table is a table of its own
    assert [block.text for block in doc.blocks if block.table is None] == [
        "Property   Type\nfamily     String\nsize       Double"  # a <pre>: its columns as drawn
    ]
    [table] = [block.table for block in doc.blocks if block.table is not None]
    assert table.header == ("Name", "Value") and table.rows == (("MATCH", "1"),)


def test_html_meta_charset_is_honoured_for_legacy_encodings() -> None:
    data = make_html("Caf\u00e9", [(1, "Men\u00fc", [CP1252_SAMPLE])], noise=False, encoding="windows-1252")
    doc = parse_document("acme/legacy.html", data)
    assert doc.title == "Caf\u00e9"
    assert block_texts(doc) == [CP1252_SAMPLE]
    assert doc.blocks[0].section_path == ("Men\u00fc",)


def test_html_in_utf16_with_bom_parses() -> None:
    data = b"\xff\xfe" + make_html(
        "Wide", [(2, "Part", ["Wide characters \u00e9\u00e8."])], encoding="utf-16-le"
    )
    assert block_texts(parse_document("acme/wide.html", data)) == ["Wide characters \u00e9\u00e8."]


def test_html_with_xml_declaration_and_unclosed_tags_still_parses() -> None:
    data = b'<?xml version="1.0" encoding="UTF-8"?><html><body><p>Unclosed <b>bold<p>Next <i>para'
    assert block_texts(parse_document("acme/messy.html", data)) == ["Unclosed bold", "Next para"]


@pytest.mark.parametrize(
    "data", [b"<html></html>", b"   \n ", b"<html><body><script>x()</script></body></html>"]
)
def test_html_without_visible_text_is_empty(data: bytes) -> None:
    with pytest.raises(EmptyDocument):
        parse_document("acme/blank.html", data)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _all_words(doc: ParsedDocument) -> set[str]:
    return {word for block in doc.blocks for word in _words(block.text)}


def test_a_page_laid_out_in_tables_is_read_as_a_page_with_its_sections() -> None:
    # Given a page whose layout, menus and article are all table cells
    doc = parse_document("acme/FAQ.html", LAYOUT_TABLE_PAGE.encode("latin-1"))
    sections = sections_by_text(doc)
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
<div role="navigation" id="column2" class="interior"><ul>{MENU}</ul></div>
<div id="column1" data-id="policy" class="interior">
<header class="header"><h1>Node.js v20 documentation</h1><ul>
<li class="picker-header"><a href="#">Index</a><div class="picker"><ul>{MENU}{MENU}</ul></div></li>
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
    sections = sections_by_text(doc)
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
    sections = sections_by_text(doc)
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
    texinfo = sections_by_text(parse_document("acme/Types.html", TEXINFO_NODE.encode()))
    assert texinfo == {"Types are described by ffi_type structures.": ("2.3 Types",)}
    sphinx = sections_by_text(parse_document("acme/policy.html", SPHINX_PAGE.encode()))
    assert sphinx == {"Packages must declare their Python dependencies.": ("Python Packaging",)}


def test_a_sphinx_single_page_keeps_the_chapters_inlined_in_its_toctree() -> None:
    # Given Sphinx's singlehtml output: every chapter sits inside a div.toctree-wrapper
    html = """<html><body><div class="body"><h1>Contents</h1><div class="toctree-wrapper compound">
    <section id="copyright"><h2>1. Copyright<a class="headerlink" href="#copyright">¶</a></h2>
    <p>Copyright 1999-2021, <a href="https://spi-inc.org">Software in the Public Interest</a>.</p>
    <p>Permission is granted to copy this document.</p></section></div></div></body></html>"""
    doc = parse_document("acme/python-policy.html", html.encode())
    assert sections_by_text(doc)["Permission is granted to copy this document."] == ("1. Copyright",)


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
    # Then the terms are kept without their marks (each leading its definition), and ordinary links keep
    # their words
    texts = [block.text for block in doc.blocks]
    assert "Data type: ffi_type Describes a complex type to libffi." in texts
    assert "-v Use the built-in verbose format." in texts
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
    texts = sections_by_text(doc)
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
    sections = sections_by_text(doc)
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
    sections = sections_by_text(parse_document("acme/returns.html", page.encode()))
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


def _nested_page(depth: int, *, closed: bool = True) -> bytes:
    opening = "<div>" * depth
    closing = "</div>" * depth if closed else ""
    return (
        "<html><head><title>Deep</title></head><body><p>Before the nesting.</p>"
        f"{opening}Inside the nesting.{closing}<p>After the nesting.</p></body></html>"
    ).encode()


@pytest.mark.parametrize("depth", [255, 256, 300, 1000, 2000])
def test_html_nested_deeper_than_libxml2s_default_limit_is_read_whole(depth: int) -> None:
    # Given a page whose text sits 255 to 2,000 elements deep, with more text after it
    # When it is parsed
    document = parse_document("acme/deep.html", _nested_page(depth))
    # Then every paragraph is there, the one after the deep part included
    assert [block.text for block in document.blocks] == [
        "Before the nesting.",
        "Inside the nesting.",
        "After the nesting.",
    ]


@pytest.mark.parametrize(("depth", "closed"), [(2100, True), (100_000, True), (5000, False)])
def test_html_nested_past_the_parsers_limit_fails_instead_of_being_indexed_truncated(
    depth: int, closed: bool
) -> None:
    # Given a page nested deeper than the parser can read (libxml2 would stop there and keep the start)
    # When it is parsed
    with pytest.raises(CorruptDocument) as raised:
        parse_document("acme/deeper.html", _nested_page(depth, closed=closed))
    # Then it fails with a one-line reason rather than being indexed without its end
    assert str(raised.value) == "HTML nests elements deeper than 2048 levels; cannot read it whole"


def test_a_definition_term_and_its_definition_are_never_chunked_apart() -> None:
    from winnow.settings import ChunkingSettings
    from winnow.text.chunking import chunk_document

    # Given a Sphinx-style reference: each signature in a <dt>, its description in the <dd>; one entry
    # with two terms, and a term whose definition never comes before the next heading
    entries = "".join(
        f"<dt>frobnicate{i}(value, *, strict=False)</dt><dd><p>Frobnicate the value number {i} and return"
        " it, raising ValueError when strict and the value cannot be frobnicated.</p><p>More.</p></dd>"
        for i in range(12)
    )
    page = (
        f"<html><body><h1>API</h1><dl>{entries}<dt>-v</dt><dt>--verbose</dt><dd>Say more.</dd>"
        "<dt>orphan</dt></dl><h2>Next</h2><p>Later text.</p></body></html>"
    )
    doc = parse_document("acme/api.html", page.encode())
    # Then every term leads its definition in one block, and the orphan term stays, on its own
    texts = block_texts(doc)
    assert "-v --verbose Say more." in texts and "orphan" in texts
    assert "frobnicate3(value, *, strict=False) Frobnicate the value number 3" in all_text(doc)
    # And however small the chunks, none ends with a term cut from what it defines
    chunks = chunk_document(doc, ChunkingSettings(target_chars=200, overlap_chars=0, min_chars=20))
    for i in range(12):
        signature = f"frobnicate{i}(value, *, strict=False)"
        holder = [chunk.text for chunk in chunks if signature in chunk.text]
        assert holder and all(f"{signature} Frobnicate the value number {i}" in text for text in holder)


def test_a_page_of_terms_alone_stays_linear_and_bounded() -> None:
    # Given 20,000 <dt>s and no <dd> (hostile or broken output)
    page = "<html><body><dl>" + "<dt>term word</dt>" * 20_000 + "</dl></body></html>"
    doc = parse_document("acme/terms.html", page.encode())
    # Then the held terms are released in blocks of bounded size, losing none
    assert max(len(block.text) for block in doc.blocks) <= 500
    assert sum(block.text.count("term word") for block in doc.blocks) == 20_000


def test_a_term_without_a_definition_does_not_lead_the_text_after_its_list() -> None:
    page = (
        "<html><body><h1>Glossary</h1><dl><dt>Deprecated terms</dt></dl>"
        "<p>Installation requires Python 3.11 and a running database server.</p></body></html>"
    )
    doc = parse_document("acme/glossary.html", page.encode())
    assert [(block.text, block.entry) for block in doc.blocks] == [
        ("Deprecated terms", False),
        ("Installation requires Python 3.11 and a running database server.", False),
    ]


def test_every_paragraph_of_a_definition_stays_with_its_term() -> None:
    from winnow.text.chunking import chunk_document

    # Given open() described in two paragraphs, then close()
    first = "Open the file at the given path and return a handle that reads it in text mode by default."
    second = "Raises OSError when the path does not exist, and PermissionError when it cannot be read at all."
    closing = (
        "Close the handle, flushing anything written, and release the descriptor back to the system now."
    )
    page = (
        f"<html><body><h1>API</h1><dl><dt>open(path)</dt><dd><p>{first}</p><p>{second}</p></dd>"
        f"<dt>close()</dt><dd><p>{closing}</p></dd></dl></body></html>"
    )
    doc = parse_document("acme/api.html", page.encode())
    # Then open's entry holds both paragraphs, and no chunk mixes the two entries
    assert [(block.text, block.entry) for block in doc.blocks] == [
        (f"open(path) {first}\n{second}", True),
        (f"close() {closing}", True),
    ]
    texts = [chunk.text for chunk in chunk_document(doc)]
    assert all(not ("open(path)" in text and "close()" in text) for text in texts)


def test_a_paragraph_long_term_is_text_not_a_term() -> None:
    term = "A heading-like definition term that goes on " * 15  # about 680 characters
    page = f"<html><body><dl><dt>{term}</dt><dd>Short.</dd></dl></body></html>"
    doc = parse_document("acme/long.html", page.encode())
    assert [block.entry for block in doc.blocks] == [False, False]


def test_a_long_definition_keeps_its_term_in_every_passage() -> None:
    # issue 46: a <dt>/<dd> entry longer than a passage lost its term after the first piece
    from winnow.settings import ChunkingSettings
    from winnow.text.chunking import chunk_document

    sentences = " ".join(f"Sentence {n} says what the retry option does in case {n}." for n in range(40))
    page = f"<html><body><h1>Options</h1><dl><dt>--retry-max NUMBER</dt><dd>{sentences}</dd></dl></body>"
    doc = parse_document("acme/options.html", page.encode())
    [entry] = doc.blocks
    assert entry.entry and entry.head == "--retry-max NUMBER"
    chunks = chunk_document(doc, ChunkingSettings(target_chars=400, overlap_chars=60, min_chars=80))
    assert len(chunks) >= 4
    assert all(chunk.text.startswith("--retry-max NUMBER\n") for chunk in chunks)
    assert all(chunk.text.split("\n", 1)[1].startswith("Sentence") for chunk in chunks)


def test_a_first_row_of_bold_cells_is_the_header_of_a_table_without_th() -> None:
    # Given a table as older pages and word processors write one: no <th>, the header row in bold
    html = b"""<html><body><h1>Plans</h1><table>
    <tr><td><b>Plan</b></td><td><strong>Price</strong></td><td><b>Seats</b></td></tr>
    <tr><td>Starter</td><td>$9</td><td><b>1</b></td></tr>
    <tr><td>Team</td><td>$49</td><td>10</td></tr></table></body></html>"""
    # When it is parsed
    [table] = [block.table for block in parse_document("acme/plans.html", html).blocks if block.table]
    # Then its first row names the columns, as a <th> row would
    assert table.header == ("Plan", "Price", "Seats")
    assert table.rows == (("Starter", "$9", "1"), ("Team", "$49", "10"))


@pytest.mark.parametrize(
    "rows",
    [
        # every row bold: bold says nothing about the first
        "<tr><td><b>a</b></td><td><b>b</b></td></tr><tr><td><b>c</b></td><td><b>d</b></td></tr>",
        # the first row only partly bold
        "<tr><td><b>Name</b> (legal)</td><td><b>Age</b></td></tr><tr><td>Ann</td><td>30</td></tr>",
    ],
)
def test_bold_first_rows_that_do_not_set_a_header_apart_are_rows(rows: str) -> None:
    html = f"<html><body><h1>T</h1><table>{rows}</table></body></html>".encode()
    [table] = [block.table for block in parse_document("acme/t.html", html).blocks if block.table]
    assert table.header == ()
    assert len(table.rows) == 2
