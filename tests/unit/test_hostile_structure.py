"""Deeply nested inputs: HTML is read whole or failed, never indexed truncated; a sidecar nested deep
is InvalidMetadata, never a RecursionError."""

from __future__ import annotations

import json

import pytest

from winnow.errors import CorruptDocument, InvalidMetadata
from winnow.ingest.metadata import parse_sidecar
from winnow.parsing import parse_document


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


@pytest.mark.parametrize("opener", ["[", '{"a":'])
@pytest.mark.parametrize("where", ["top", "value"])
def test_a_sidecar_nested_a_thousand_deep_is_invalid_metadata(opener: str, where: str) -> None:
    # Given a 6 KB sidecar nested about 1,000 levels deep (at the top, or inside a field's value)
    closer = "]" if opener == "[" else "}"
    nested = opener * 1000 + "1" + closer * 1000
    text = nested if where == "top" else '{"metadataAttributes": {"dept": ' + nested + "}}"
    # When it is validated
    with pytest.raises(InvalidMetadata) as raised:
        parse_sidecar(text.encode(), 10 * 1024 * 1024)
    # Then it is a one-line InvalidMetadata (never a RecursionError that aborts the run)
    assert str(raised.value) == "sidecar nests deeper than 3 levels (an object of fields, a list of strings)"


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    # Given a valid sidecar whose strings are full of brackets and escaped quotes
    attributes = {"title": '[[[{{{ \\" ]]]', "tags": ["a[b", "}{"], "year": 2024}
    # When it is validated
    # Then it is read as it is
    assert parse_sidecar(json.dumps({"metadataAttributes": attributes}).encode(), 10_000) == attributes


def test_a_sidecar_at_the_deepest_allowed_shape_is_read() -> None:
    # Given the deepest valid shape: object > object > list
    data = b'{"metadataAttributes": {"tags": ["x", "y"]}}'
    # Then it is valid
    assert parse_sidecar(data, 1000) == {"tags": ["x", "y"]}
