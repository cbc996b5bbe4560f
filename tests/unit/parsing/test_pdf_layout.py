"""A PDF without an outline gets its sections from its layout, and its paragraphs stay whole over
lines and pages (issue 46: such a PDF became 536 passages of one or two sentences)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from tests.support.documents import make_pdf, make_report_pdf
from winnow.parsing import parse_document
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_to_fit


def _prose(tag: str, sentences: int) -> str:
    return " ".join(
        f"The {tag} clause number {i} explains how the {tag} rule applies to each request that reaches "
        "the service."
        for i in range(sentences)
    )


_LIMITS = "Values: " + " ".join(f"{i:05d}={i * 7:06d}" for i in range(120))
REPORT = [
    (1, "Overview", [_prose("overview", 3), _prose("scope", 4)]),
    (2, "Retention", [_prose("retention", 70)]),  # runs over the page break
    (2, "Limits", [_LIMITS]),  # dense: many tokens a character
    (1, "Appendix", [_prose("appendix", 60)]),
]


def _tokens(texts: Sequence[str]) -> list[int]:
    """A tokenizer stand-in for which digits are dense: a token a word and a token a digit."""
    return [len(text.split()) + sum(char.isdigit() for char in text) for text in texts]


def test_headings_in_larger_type_become_sections_and_running_heads_go() -> None:
    doc = parse_document("acme/report.pdf", make_report_pdf(REPORT))
    paths = {block.section_path for block in doc.blocks}
    assert {("Retention",), ("Limits",), ("Appendix",)} <= paths
    assert all("Chapter 1: Report" not in block.text for block in doc.blocks)
    [retention] = [block for block in doc.blocks if "retention clause number 0 " in block.text]
    assert retention.section_path == ("Retention",)


def test_a_paragraph_that_runs_over_a_page_break_is_one_block_cited_where_it_starts() -> None:
    doc = parse_document("acme/report.pdf", make_report_pdf(REPORT))
    [retention] = [block for block in doc.blocks if "retention clause number 0 " in block.text]
    # the whole paragraph, from its first sentence to its last, though it ends on the next page
    assert retention.text == _prose("retention", 70)
    assert retention.page == 1
    [limits] = [block for block in doc.blocks if block.text.startswith("Values:")]
    assert limits.page == 2  # the paragraph before it did end on page 2


def test_an_outline_free_pdf_is_not_cut_into_sentence_sized_passages() -> None:
    doc = parse_document("acme/report.pdf", make_report_pdf(REPORT))
    chunks = chunk_to_fit(doc, ChunkingSettings(), _tokens, 256)
    prose = [chunk for chunk in chunks if chunk.section_path != ("Limits",)]
    # the dense section gets small passages; the prose keeps passages of many sentences
    assert statistics.median(len(chunk.text) for chunk in prose) >= 800
    assert all(chunk.text[0].isupper() for chunk in prose)  # at a sentence: none starts mid-sentence
    assert all(max(_tokens([chunk.embed_text])) <= 256 for chunk in chunks)


def test_a_pdf_of_even_type_gets_no_sections_from_its_layout() -> None:
    pages = ["Intro line one.\n\n" + _prose("plain", 5), _prose("second", 6)]
    doc = parse_document("acme/plain.pdf", make_pdf(pages))
    assert {block.section_path for block in doc.blocks} == {()}


def test_a_sentence_repeated_at_the_top_of_every_page_is_text_not_a_running_head() -> None:
    # a template's pages may open with the same sentence; a running head ends no sentence
    pages = [f"This report describes regional services.\n\n{_prose(f'page{n}', 4)}" for n in range(4)]
    doc = parse_document("acme/template.pdf", make_pdf(pages))
    assert sum(block.text == "This report describes regional services." for block in doc.blocks) == 4


def test_a_numbered_list_keeps_its_items_apart_and_with_their_introduction() -> None:
    # items nearly as long as a full line: read as running text, they ran together into one paragraph
    steps = [
        "1. Check the online turbidimeter against the bench instrument to rule out a sensor fault.",
        "2. Identify the filter or filters responsible from the individual filter turbidity readings.",
        "3. Take the affected filters out of service and start a backwash of each of them at once.",
    ]
    intro = "If the filtered water turbidity exceeds 1 NTU, the operator must take these actions in order:"
    report = [(1, "Overview", [_prose("overview", 3)]), (1, "High turbidity", [intro, *steps])]
    doc = parse_document("acme/manual.pdf", make_report_pdf(report))
    [listed] = [block for block in doc.blocks if "turbidimeter" in block.text]
    assert listed.text == "\n".join([intro, *steps])
    assert listed.head == intro and listed.section_path == ("High turbidity",)


def test_bulleted_items_without_closing_stops_stay_apart_and_a_title_line_leads_no_list() -> None:
    items = [
        "\u2022 MIME/globs (contains a mapping from names to MIME types) [deprecated for globs2]",
        "\u2022 MIME/aliases (contains a mapping from aliases to MIME types, one alias per line)",
        "\u2022 MIME/icons (contains a mapping from MIME types to the icons that stand for them)",
    ]
    report = [(1, "Overview", [_prose("overview", 3)]), (1, "Files", ["Shared MIME-info Database", *items])]
    doc = parse_document("acme/spec.pdf", make_report_pdf(report))
    texts = [block.text for block in doc.blocks if block.section_path == ("Files",)]
    # each item a line of its own (no sentence ends them), and the title line is not their head
    assert texts == ["Shared MIME-info Database", "\n".join(items)]
