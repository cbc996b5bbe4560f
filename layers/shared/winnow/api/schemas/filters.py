"""A search's ``filters``: the values and ranges a caller may filter on, what one search's filters may
cost, and the mapping to the store's filters. Validation errors name the caller's field path."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictStr,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from winnow.api.schemas.common import StrictFloat, StrictInt
from winnow.ports import FilterValue, RangeFilter


def _scalar_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "str"
    if isinstance(value, int):
        return "int"
    return "float" if isinstance(value, float) else None


# Unions are tagged by the JSON type the caller sent, so a wrong value gets one message about the member
# it was meant for, not one complaint per member.
Scalar = Annotated[
    Annotated[str, Field(strict=True, max_length=256), Tag("str")]
    | Annotated[StrictInt, Tag("int")]
    | Annotated[StrictFloat, Tag("float")]
    | Annotated[bool, Tag("bool")],
    # anyOf, not the oneOf a tagged union documents: an integer is also a JSON Schema "number".
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "maxLength": 256},
                {"type": "integer"},
                {"type": "number"},
                {"type": "boolean"},
            ]
        }
    ),
    Discriminator(
        _scalar_kind,
        custom_error_type="filter_value",
        custom_error_message="a filter value must be a string, a number or a boolean "
        '(a filter takes one value, a list of values or a range {"gte": 1, "lte": 2})',
    ),
]


def _is_moment(text: str) -> bool:
    """An RFC 3339 date-time (``2024-01-31T00:00:00Z``) or date: never a number written as a string."""
    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return False
    return "-" in text


class RangeCondition(BaseModel):
    """A range of numbers, or of RFC 3339 date-times (for a datetime field); either bound may be
    omitted, not both."""

    model_config = ConfigDict(extra="forbid")

    gte: StrictFloat | Annotated[StrictStr, Field(max_length=40)] | None = None
    lte: StrictFloat | Annotated[StrictStr, Field(max_length=40)] | None = None

    @field_validator("gte", "lte")
    @classmethod
    def _number_or_moment(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, str) and not _is_moment(value):
            raise ValueError("a bound is a number, or an RFC 3339 date-time such as 2024-01-31T00:00:00Z")
        return value

    @model_validator(mode="after")
    def _one_bound(self) -> RangeCondition:
        if self.gte is None and self.lte is None:
            raise ValueError("a range needs gte, lte or both")
        bounds = [b for b in (self.gte, self.lte) if b is not None]
        if len({isinstance(b, str) for b in bounds}) > 1:
            raise ValueError("a range's bounds are both numbers or both date-times")
        if len(bounds) == 2 and not isinstance(bounds[0], str) and bounds[0] > bounds[1]:  # type: ignore[operator]
            raise ValueError("gte must not be greater than lte")
        return self


# What one search's filters may cost, the same rule in AWS and on `winnow serve` (training/NOTEBOOK.md,
# "Search cost"): the engine checks a list's values per point. Past 50 values a list cost 20 x more on
# Qdrant Edge (20 lists of 100 strings 163 ms, of 50 7 ms, at 300 chunks), and a fractional number in a
# list is a range condition of its own (about 7 ms each there; an integer or a string joins one MatchAny).
# An explicit range {"gte", "lte"} and a single fractional value are range conditions too, so they count
# against the same bound (issue 44: 20 ranges cost 11.1 s per search at 9,653 chunks, 7 ms without).
MAX_FILTER_VALUES = 50
MAX_FILTER_FRACTIONS = 10


def _fractional(value: Any) -> bool:
    return isinstance(value, float) and not value.is_integer()


def range_conditions(filters: dict[str, Any]) -> int:
    """How many range conditions these filters make: each explicit range, each fractional number alone
    or in a list (an integer, a string or a boolean joins a match instead)."""
    count = 0
    for condition in filters.values():
        if isinstance(condition, RangeCondition | dict):
            count += 1
        elif isinstance(condition, list):
            count += sum(1 for item in condition if _fractional(item))
        elif _fractional(condition):
            count += 1
    return count


def _condition_kind(value: Any) -> str:
    if isinstance(value, dict | RangeCondition):
        return "range"
    return "list" if isinstance(value, list) else "value"


FilterCondition = Annotated[
    Annotated[Scalar, Tag("value")]
    | Annotated[list[Scalar], Field(min_length=1, max_length=MAX_FILTER_VALUES), Tag("list")]
    | Annotated[RangeCondition, Tag("range")],
    Discriminator(_condition_kind),
]


def error_path(loc: tuple[int | str, ...]) -> list[str]:
    """A validation error's location as the caller's field path: ``body.filters.year.range.gte`` is
    ``filters.year.gte`` (the resolver's ``body`` and the union tags above are ours, not the caller's)."""
    parts = [str(p) for p in (loc[1:] if loc[:1] == ("body",) else loc)]
    if len(parts) > 2 and parts[0] == "filters":
        tag, rest = parts[2], parts[3:]
        if tag == "value":
            rest = []  # the scalar's own tag
        elif tag == "list":
            rest = rest[:1]  # the index; drop the scalar's tag after it
        parts = parts[:2] + rest
    return parts


def port_filters(filters: dict[str, Any]) -> dict[str, FilterValue]:
    """The request's filters in the store's terms: a range becomes a ``RangeFilter``."""
    out: dict[str, FilterValue] = {}
    for name, value in filters.items():
        out[name] = RangeFilter(gte=value.gte, lte=value.lte) if isinstance(value, RangeCondition) else value
    return out
