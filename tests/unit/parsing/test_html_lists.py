"""HTML lists and definition lists in passages (issue 46, item 1): an ``<ol>``/``<ul>`` stays with the
paragraph that introduces it, and a definition longer than one entry block keeps its term, however the
chunker splits them. The pages are shaped like the ones Sphinx and texinfo write."""

from __future__ import annotations

import pytest

from winnow.models import Chunk, ParsedDocument
from winnow.parsing import parse_document
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document

SMALL = ChunkingSettings(target_chars=400, overlap_chars=60, min_chars=80)
INTRO = "The exit status is one of:"
STATUSES = [
    f"{code} The transfer stopped because condition number {code} was met before the end of the file."
    for code in range(12)
]


def _page(body: str) -> bytes:
    return (
        "<!DOCTYPE html><html><head><title>fetch(1)</title></head><body><main>"
        "<h1>fetch</h1><h2>Exit status</h2>"
        "<p>Fetch downloads files from web servers and retries a transfer that fails on the way.</p>"
        f"{body}<p>Scripts should test for zero rather than for any particular failure.</p>"
        "</main></body></html>"
    ).encode()


def _holding(chunks: list[Chunk], text: str) -> list[str]:
    return [chunk.text for chunk in chunks if text in chunk.text]


def _items(tag: str, texts: list[str], inner: str = "{}") -> str:
    return f"<{tag}>" + "".join(f"<li>{inner.format(text)}</li>" for text in texts) + f"</{tag}>"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(f"<p>{INTRO}</p>\n" + _items("ol", STATUSES), id="paragraph then ol"),
        pytest.param(  # Sphinx: each item's text in a <p>
            f'<p>{INTRO}</p>\n<ul class="simple">' + _items("ul", STATUSES, "<p>{}</p>")[4:],
            id="sphinx ul of paragraphs",
        ),
        pytest.param(  # the introduction as a div's own text, and a nested list inside the last item
            f"<div>{INTRO}"
            + _items("ul", STATUSES[:-1])[:-5]
            + f"<li>{STATUSES[-1]}<ul><li>11a A nested detail.</li></ul></li></ul></div>",
            id="div text then nested ul",
        ),
    ],
)
def test_an_html_list_stays_with_the_sentence_that_introduces_it(body: str) -> None:
    # Given a page whose exit statuses are a list introduced by a sentence
    doc = parse_document("acme/fetch.html", _page(body))
    # Then the introduction and the items are one block led by it
    [listing] = [block for block in doc.blocks if INTRO in block.text]
    assert listing.entry and listing.head == INTRO
    assert listing.text.startswith("\n".join([INTRO, *STATUSES]))
    # And however small the passages, each one that holds a status starts with the introduction
    chunks = chunk_document(doc, SMALL)
    for status in STATUSES:
        holders = _holding(chunks, status[:40])
        assert holders and all(text.startswith(INTRO + "\n") for text in holders), status
    assert len({text for status in STATUSES for text in _holding(chunks, status[:40])}) >= 3
    # And the paragraphs around the list are still text of their own, never joined to it
    assert not any("Fetch downloads" in text and INTRO in text for text in (c.text for c in chunks))


def _entries(doc: ParsedDocument) -> list[tuple[str, bool, str]]:
    return [(block.text, block.entry, block.head) for block in doc.blocks]


def test_a_list_without_an_introduction_or_inside_a_definition_stays_as_it_was() -> None:
    # Given a list right under a heading, and a list inside a <dd> after a list that has an introduction
    page = (
        "<html><body><h1>Modes</h1><ul><li>first mode</li><li>second mode</li></ul>"
        f"<p>{INTRO}</p><ol><li>0 Success.</li><li>1 Failure.</li></ol>"
        "<dl><dt>--mode M</dt><dd><p>One of:</p><ul><li>fast</li><li>slow</li></ul></dd></dl>"
        "</body></html>"
    )
    doc = parse_document("acme/modes.html", page.encode())
    # Then only the introduced list is joined: the first stays items, the third stays its entry's
    assert _entries(doc) == [
        ("first mode", False, ""),
        ("second mode", False, ""),
        (f"{INTRO}\n0 Success.\n1 Failure.", True, INTRO),
        ("--mode M One of:\nfast\nslow", True, "--mode M"),
    ]


def test_a_definition_longer_than_one_entry_keeps_its_term_in_every_passage() -> None:
    # Given a <dd> of many paragraphs, several thousand characters in all (curl's --write-out is so)
    paragraphs = [
        f"Variable number {n} names one figure of the transfer, written where the format says,"
        f" and the figure {n} is always counted in bytes or in seconds as the manual states."
        for n in range(60)
    ]
    page = (
        "<html><body><h1>Options</h1><dl><dt>-w, --write-out FORMAT</dt><dd>"
        + "".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
        + "</dd><dt>-v</dt><dd>Say more.</dd></dl></body></html>"
    )
    doc = parse_document("acme/curl.html", page.encode())
    # Then every paragraph lies in a block led by the term
    assert all(
        any(paragraph in block.text and block.head == "-w, --write-out FORMAT" for block in doc.blocks)
        for paragraph in paragraphs
    )
    # And every passage holding one of them starts with the term
    chunks = chunk_document(doc, SMALL)
    for paragraph in paragraphs:
        holders = _holding(chunks, paragraph[:30])
        assert holders and all(text.startswith("-w, --write-out FORMAT\n") for text in holders)


def test_an_ordered_lists_items_keep_their_numbers() -> None:
    # Given steps in an <ol> (plain, and Sphinx's items of paragraphs), one starting at 4, one whose
    # items carry their own numbers
    page = (
        "<html><body><h1>Bread</h1><p>On the baking day, follow these steps:</p>"
        "<ol><li>Mix flour and water.</li><li><p>Add the levain and the <em>salt</em>.</p></li>"
        "<li>Retard the loaves in the refrigerator for 12 hours.</li></ol>"
        '<h2>Baking</h2><p>Then bake it:</p><ol start="4"><li>Preheat the pot.</li><li>Bake.</li></ol>'
        "<h2>Exit status</h2><p>The exit status is one of:</p><ol><li>0 Success.</li><li>1 Failure.</li></ol>"
        "</body></html>"
    )
    doc = parse_document("acme/bread.html", page.encode())
    # Then "step 3" can be found and read as the page shows it
    assert [block.text for block in doc.blocks] == [
        "On the baking day, follow these steps:\n1. Mix flour and water.\n2. Add the levain and the salt.\n"
        "3. Retard the loaves in the refrigerator for 12 hours.",
        "Then bake it:\n4. Preheat the pot.\n5. Bake.",
        "The exit status is one of:\n0 Success.\n1 Failure.",
    ]
