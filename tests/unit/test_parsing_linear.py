"""Every pattern that reads uploaded text runs in linear time, whatever the line.

A backtracking regex is quadratic (or worse) on a line built to defeat it: ``# a`` + 64,000 spaces +
``b`` took 26 s in the old ATX-heading pattern, a 1 MB line of that shape hours. These tests feed the
parsers and the chunker lines of a megabyte (known bad shapes) or 200 KB (shapes Hypothesis builds from
the syntax characters), each in a forked child given a generous deadline. Linear work finishes such
a line in about a second; a quadratic pattern needs minutes to hours, so the deadline catches it
without asserting on a time. (A pytest timeout could not: a regex holds the GIL and ignores signals
until it returns.)
"""

from __future__ import annotations

import multiprocessing
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from winnow.errors import EmptyDocument
from winnow.models import Block, ParsedDocument
from winnow.parsing import markdown, parse_document
from winnow.parsing.html import _META_CHARSET
from winnow.parsing.pdf import _join_lines
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document

MEGABYTE = 1_000_000
# Shapes built to make a backtracking pattern retry at every character; all but four of them took
# minutes to hours in the patterns these rewrote.
ADVERSARIAL_LINES = {
    "atx heading, spaces then a non-space": "# a" + " " * MEGABYTE + "b",
    "table delimiter, whitespace then a non-space": " " * MEGABYTE + "x",
    "table delimiter, a pipe then whitespace": "|" + " " * MEGABYTE + "x",
    "unclosed images": "![" * (MEGABYTE // 2),
    "images without a closing parenthesis": "![a](" * (MEGABYTE // 5),
    "links without a closing parenthesis": "[a](" * (MEGABYTE // 4),
    "unclosed links": "[" * MEGABYTE,
    "unclosed html comments": "<!--" * (MEGABYTE // 4),
    "a run of dots not followed by a space": "." * MEGABYTE + "x",
    "sentence ends without whitespace": ".)" * (MEGABYTE // 2) + "x",
    "closing brackets after a stop": '."' + ")" * MEGABYTE + "x",
    "thematic break that is not one": "* " * (MEGABYTE // 2) + "x",
}


# Linear work on these lines takes about a second even on a loaded 2-core machine.
DEADLINE_SECONDS = 90.0


def _finishes(work: Callable[..., Any], *args: Any) -> bool:
    """Whether ``work(*args)`` returns without error within the deadline, in a forked child (killed
    when late, so a quadratic regression fails the test instead of hanging it)."""
    child = multiprocessing.get_context("fork").Process(target=work, args=args)
    child.start()
    child.join(DEADLINE_SECONDS)
    if child.is_alive():
        child.kill()
        child.join()
        return False
    return child.exitcode == 0


def _parse_and_chunk_both(text: str) -> None:
    _parse_and_chunk("t/x.md", text)
    _parse_and_chunk("t/x.txt", text)


def _parse_and_chunk(key: str, text: str) -> None:
    try:
        document = parse_document(key, text.encode("utf-8"))
    except EmptyDocument:
        return
    chunk_document(document)


@pytest.mark.parametrize("line", ADVERSARIAL_LINES.values(), ids=list(ADVERSARIAL_LINES))
def test_a_megabyte_line_of_a_backtracking_shape_is_parsed_and_chunked_in_linear_time(line: str) -> None:
    # Given one line of about a megabyte shaped to make a backtracking pattern retry at every character
    # When it is parsed as Markdown and as plain text, and chunked
    # Then it finishes well within the deadline (a quadratic pattern would need hours)
    assert _finishes(_parse_and_chunk_both, line + "\n")


def _front_matter_title(text: str) -> None:
    assert parse_document("t/guide.md", text.encode()).title.startswith("Guide")


def test_a_front_matter_title_with_a_megabyte_of_spaces_is_read_in_linear_time() -> None:
    # Given YAML front matter whose title line ends in a megabyte of spaces before a stray character
    text = "---\ntitle: Guide" + " " * MEGABYTE + "x\n---\n\nBody text.\n"
    # When it is parsed
    # Then the title is read within the deadline
    assert _finishes(_front_matter_title, text)


def _no_charset(head: bytes) -> None:
    assert _META_CHARSET.search(head) is None


def test_a_head_full_of_meta_tags_is_scanned_for_its_charset_in_linear_time() -> None:
    # Given the start of an HTML page that repeats an unfinished "<meta charset=" many times
    head = b"<meta charset=" * (MEGABYTE // 14)
    # When the charset declaration is looked for (the parser looks in the first 4 KiB; here in all)
    # Then the scan finishes within the deadline, and a real declaration after the noise is found
    assert _finishes(_no_charset, head)
    assert _META_CHARSET.search(head[-200:] + b'<meta charset="latin-1">').group(1) == b"latin-1"  # type: ignore[union-attr]


def _parse_html(data: bytes) -> None:
    assert parse_document("acme/deep.html", data).blocks


def test_links_nested_two_thousand_levels_deep_are_judged_as_furniture_in_linear_time() -> None:
    # Given 250 link bars, each at the bottom of 2,000 nested divs (5.5 MB), a depth the HTML parser
    # accepts: judging each div by a recursive rescan of its subtree failed such a page ("nested too
    # deeply") and cost depth² per bar (9 s for 1 MB at depth 200); one bottom-up walk reads it
    bar = "<div>" * 2000 + '<a href="a">x</a>' * 3 + "</div>" * 2000
    page = f"<html><body>{bar * 250}<p>The end.</p></body></html>"
    assert _finishes(_parse_html, page.encode())


def _joins_every_line(lines: list[str]) -> None:
    assert _join_lines(lines).count("example words") == len(lines) // 2


def test_a_pdf_paragraph_of_many_lines_is_joined_in_linear_time() -> None:
    # Given a paragraph of 200,000 lines, half of them ending in a hyphenated word
    lines = ["exam-", "ple words"] * 100_000
    # When the lines are joined
    # Then hyphenated words are joined again, every line is there, within the deadline
    assert _finishes(_joins_every_line, lines)


# Hypothesis builds a repeating unit from the characters Markdown and sentence splitting care about.
_SYNTAX = ["#", " ", "\t", "|", "-", ":", "[", "]", "(", ")", "!", ".", "?", "<!--", "-->", "`", "~"]
_SYNTAX += ["*", "_", "=", ">", "'", '"', "a", "1", "\u3002", "\u2026"]
_UNITS = st.lists(st.sampled_from(_SYNTAX), min_size=1, max_size=6).map("".join)
_LONG = 200_000


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix=_UNITS, unit=_UNITS, suffix=_UNITS)
@example(prefix="# a", unit=" ", suffix="b")
@example(prefix="", unit="[a](", suffix="")
def test_long_lines_built_from_markdown_syntax_are_parsed_and_chunked_in_linear_time(
    prefix: str, unit: str, suffix: str
) -> None:
    # Given a 200 KB line: a prefix, one unit of syntax characters repeated, a suffix
    line = prefix + unit * (_LONG // len(unit)) + suffix
    # When it is parsed as Markdown and as text and chunked
    # Then it finishes within the deadline: the work is linear in the line's length
    assert _finishes(_parse_and_chunk_both, line)


def test_chunking_a_long_block_keeps_every_character_whatever_the_punctuation() -> None:
    # Given a block made of punctuation runs that look like sentence ends and ones that do not
    text = ("word... " * 50) + ("." * 3000) + "x " + ("end.) " * 200)
    document = ParsedDocument(title="T", blocks=[Block(text=text.strip())], source_type="text")
    # When it is chunked
    chunks = chunk_document(document, ChunkingSettings(target_chars=400, overlap_chars=0, min_chars=50))
    # Then the chunks, end to end, hold every non-space character of the block
    assert "".join("".join(c.text.split()) for c in chunks) == "".join(text.split())


# The ATX rule from CommonMark, written as a reference the scanner must agree with.
_ATX_REFERENCE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*")


def _reference_atx(line: str) -> tuple[int, str] | None:
    match = _ATX_REFERENCE.fullmatch(line)
    if match is None:
        return None
    return len(match.group(1)), (match.group(2) or "").strip(" \t")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="# \ta", max_size=14))
def test_the_atx_scanner_agrees_with_the_commonmark_rule_on_short_lines(line: str) -> None:
    # Given a short line of hashes, spaces, tabs and letters
    # When the scanner and a reference regex (fine on short lines) read it
    # Then they agree on the level and the heading text
    assert markdown._atx_heading(line) == _reference_atx(line)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="|-: \ta", max_size=16))
def test_the_table_delimiter_check_agrees_with_the_pattern_it_replaced(line: str) -> None:
    # Given a short line of table syntax
    old = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$")
    # Then the linear check and the old pattern (fine on short lines) agree
    assert markdown._is_table_delimiter_row(line) == bool(old.match(line))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <!-- hidden --> b", "a  b"),
        ("a <!-- one --> b <!-- two --> c", "a  b  c"),
        ("a <!-- never closed", "a <!-- never closed"),
        ("a <!--> b --> c", "a  c"),
        ("no comment", "no comment"),
    ],
)
def test_html_comments_are_removed_like_the_lazy_pattern_did(text: str, expected: str) -> None:
    assert markdown._strip_html_comments(text) == expected
    assert re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL) == expected
