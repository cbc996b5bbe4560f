"""Reading a search request's body (winnow.api.body) and the schema's text check: which media types are
JSON, a nesting bound measured before the parser runs, and strings that are not valid Unicode."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from winnow.api.body import MAX_BODY_CHARS, MAX_DEPTH, check_media_type, decode_json_body
from winnow.api.schemas.search import SearchRequest
from winnow.errors import BodyTooLarge, MalformedBody, UnsupportedMediaType
from winnow.jsonbounds import nesting_depth

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=20,
)


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    return 0


# --- media types ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "",
        "application/json",
        "APPLICATION/JSON",
        " application/json ; charset=UTF-8",
        "application/ld+json",
    ],
)
def test_json_media_types(content_type: str | None) -> None:
    check_media_type(content_type)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/json",
        "application/jsonp",
        "application/+json",
        "json",
        "application/json; charset=utf-16",
    ],
)
def test_other_media_types(content_type: str) -> None:
    with pytest.raises(UnsupportedMediaType, match=r"application/json|UTF-8"):
        check_media_type(content_type)


# --- nesting ------------------------------------------------------------------------------------------------
@given(value=json_values)
def test_nesting_depth_is_the_depth_of_the_document(value: Any) -> None:
    # Brackets, quotes and backslashes inside strings do not count
    assert nesting_depth(json.dumps(value)) == depth_of(value)
    assert nesting_depth(json.dumps(value, ensure_ascii=False, indent=1)) == depth_of(value)


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('["[[[", "\\"[["]', 1),
        ('{"a": "\\\\"}', 1),  # an escaped backslash ends before the closing quote
        ('"unterminated [[[', 0),
        ("[[[", 3),
        ("[[]][[[", 3),
        ("]]][[", 0),  # a parser stops at the first stray closer
    ],
)
def test_nesting_depth_of_odd_text(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth


@settings(max_examples=20, deadline=None)
@given(unit=st.sampled_from(['"\\"', '"', "\\", "[", "[]", '"[', '\\"', "{", '{"a":']))
def test_the_depth_scan_finishes_on_a_megabyte_of_any_repeated_shape(unit: str) -> None:
    # A scan that backtracked (say, retrying a string match at every quote) would take hours here; the
    # possessive string pattern and the bracket pass read each character once.
    text = unit * (MAX_BODY_CHARS // len(unit))
    assert nesting_depth(text) >= 0


# --- decoding ------------------------------------------------------------------------------------------
def test_a_body_at_the_depth_bound_decodes_and_one_deeper_does_not() -> None:
    assert decode_json_body("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(MalformedBody, match=f"more than {MAX_DEPTH} deep"):
        decode_json_body("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


def test_a_very_deep_body_is_refused_before_the_parser_recurses() -> None:
    with pytest.raises(MalformedBody, match="deep") as refused:
        decode_json_body("[" * 200_000 + "]" * 200_000)
    assert refused.value.__cause__ is None  # not a RecursionError caught late


@pytest.mark.parametrize(
    "text",
    ['"\\ud800"', '{"q": "a\\udc00b"}', '{"\\udbff": 1}', '["ok", ["\\ud800"]]', '"\ud800"'],
)
def test_lone_surrogates_are_refused(text: str) -> None:
    with pytest.raises(MalformedBody, match="surrogate"):
        decode_json_body(text)


def test_a_surrogate_pair_is_text() -> None:
    assert decode_json_body('{"query": "\\ud83d\\ude00"}') == {"query": "\U0001f600"}


@pytest.mark.parametrize(
    ("body", "error", "says"),
    [
        ("{", MalformedBody, "not valid JSON"),
        ("", MalformedBody, "not valid JSON"),
        (b"\xff", MalformedBody, "not UTF-8"),
        ("1" * 5000, MalformedBody, "too long"),
        (" " * (MAX_BODY_CHARS + 1), BodyTooLarge, "KiB"),
    ],
)
def test_unreadable_bodies_say_what_to_send(body: str | bytes, error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says) as refused:
        decode_json_body(body)
    assert 'send a JSON object such as {"query"' in str(refused.value)


# --- the schema ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields",
    [
        {"query": "\ud800"},
        {"query": "fine", "filters": {"department": "\udfff"}},
        {"query": "fine", "filters": {"department": ["ok", "\ud800"]}},
    ],
)
def test_the_schema_refuses_text_that_is_not_unicode(fields: dict[str, Any]) -> None:
    # Whatever builds a request (the handler, the CLI, a test), its text must encode as UTF-8
    with pytest.raises(ValidationError, match=r"(?i)unicode"):
        SearchRequest.model_validate(fields)
