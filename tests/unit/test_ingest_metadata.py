"""Metadata sidecars: one nested deep is InvalidMetadata, never a RecursionError."""

from __future__ import annotations

import json

import pytest

from winnow.errors import InvalidMetadata
from winnow.ingest.metadata import parse_sidecar


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
