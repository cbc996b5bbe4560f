"""``winnow search --filter`` parsing: the accepted forms become the API's ``filters`` object, anything
else is refused with a message that lists the accepted forms."""

from __future__ import annotations

import pytest

from winnow.rules import FIELD_NAME_RULE
from winnow_local.cli.filters import ACCEPTED_FORMS, FilterSyntaxError, parse_filters, parse_value


def test_equality_keeps_text_and_types_numbers_and_booleans() -> None:
    # Given filters with text, integer, decimal and boolean values
    specs = ["department=product", "year=2024", "version=1.5", "public=true"]
    # When they are parsed
    filters = parse_filters(specs)
    # Then each value has the JSON type the API compares against
    assert filters == {"department": "product", "year": 2024, "version": 1.5, "public": True}
    assert isinstance(filters["year"], int)


def test_repeated_field_becomes_any_of_list_without_duplicates() -> None:
    # Given the same field three times, once repeated
    filters = parse_filters(["team=a", "team=b", "team=a", "team=c"])
    # Then the values become one any-of list, in order
    assert filters == {"team": ["a", "b", "c"]}


def test_commas_and_equals_signs_stay_inside_the_value() -> None:
    # Given values that contain commas and '=' signs
    filters = parse_filters(["author=Smith, Jane", "expr=a=b"])
    # Then they are not split
    assert filters == {"author": "Smith, Jane", "expr": "a=b"}


def test_quotes_keep_a_numeric_looking_value_a_string() -> None:
    assert parse_filters(['code="007"', "zip='01234'"]) == {"code": "007", "zip": "01234"}
    assert parse_value("007") == 7


def test_range_bounds_combine_into_one_range() -> None:
    # Given a lower and an upper bound on the same field
    filters = parse_filters(["year>=2020", "year<=2024.5", "pages<=10"])
    # Then they form one closed range, and a lone bound an open one
    assert filters == {"year": {"gte": 2020, "lte": 2024.5}, "pages": {"lte": 10}}


def test_whitespace_around_operator_is_tolerated() -> None:
    assert parse_filters([" year >= 2020 ", "team = a"]) == {"year": {"gte": 2020}, "team": "a"}


@pytest.mark.parametrize(
    "spec",
    [
        "department",
        "=x",
        "year>2020",
        "year<2020",
        "team=",
        "_field=x",
        "-x=1",
        "year>=recent",
        "a b=c",
        "year=>5",
    ],
)
def test_bad_syntax_is_refused_with_the_accepted_forms(spec: str) -> None:
    # Given a filter none of the accepted forms matches
    # When it is parsed
    with pytest.raises(FilterSyntaxError) as raised:
        parse_filters([spec])
    # Then the one-line message names the filter and the accepted forms
    message = str(raised.value)
    assert repr(spec) in message
    assert "FIELD=VALUE" in message
    assert "FIELD>=NUMBER" in message
    assert "\n" not in message


def test_mixing_equality_and_range_on_one_field_is_refused() -> None:
    with pytest.raises(FilterSyntaxError, match="already has a range"):
        parse_filters(["year>=2020", "year=2021"])
    with pytest.raises(FilterSyntaxError, match="already has a value"):
        parse_filters(["year=2021", "year<=2024"])


def test_empty_range_is_refused() -> None:
    with pytest.raises(FilterSyntaxError, match="empty"):
        parse_filters(["year>=2025", "year<=2020"])


def test_accepted_forms_text_is_what_errors_show() -> None:
    with pytest.raises(FilterSyntaxError) as raised:
        parse_filters(["nope"])
    assert ACCEPTED_FORMS in str(raised.value)


@pytest.mark.parametrize("field", ["dept.team", "_private", "a" * 65])
def test_a_name_the_api_refuses_is_refused_here_with_the_rule(field: str) -> None:
    # Given a field name the search API would refuse (a dot reads as a path into nested metadata)
    # When it is given to --filter
    with pytest.raises(FilterSyntaxError) as raised:
        parse_filters([f"{field}=x"])
    # Then the CLI says so itself, with the field-name rule the API states, before any request is sent
    assert FIELD_NAME_RULE in str(raised.value)
