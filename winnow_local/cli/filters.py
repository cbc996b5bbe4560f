"""``--filter`` arguments of ``winnow search`` turned into the API's ``filters`` object.

Accepted forms, one per ``--filter``:
- ``FIELD=VALUE``: equality. Repeat the same field for any-of (``--filter team=a --filter team=b``).
  Commas are not separators, so values may contain them.
- ``FIELD>=NUMBER`` / ``FIELD<=NUMBER``: a range; give both for a closed range.
Values that look like numbers become numbers, ``true``/``false`` become booleans; quote a value
(``FIELD="2024"``) to keep it a string, or to start it with ``<`` or ``>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from winnow.rules import FIELD_NAME_RULE, is_field_name

ACCEPTED_FORMS = "use FIELD=VALUE (repeat for any-of), FIELD>=NUMBER or FIELD<=NUMBER"

# The field is whatever comes before the operator; winnow.rules says whether it may name a field.
_FILTER = re.compile(r"^\s*(?P<field>[^<>=\s]+)\s*(?P<op>>=|<=|=)\s*(?P<value>.*?)\s*$")
_INTEGER = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


class FilterSyntaxError(ValueError):
    """A ``--filter`` argument none of the accepted forms matches; the message says which are."""


def _number(text: str) -> int | float | None:
    if _INTEGER.match(text):
        return int(text)
    if _DECIMAL.match(text):
        return float(text)
    return None


def parse_value(text: str) -> str | int | float | bool:
    """A filter value as the API expects it: numbers and booleans typed, quoted text kept verbatim."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    number = _number(text)
    if number is not None:
        return number
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def parse_filters(specs: Iterable[str]) -> dict[str, Any]:
    """Parse every ``--filter`` argument into ``{field: value | [values] | {"gte": n, "lte": n}}``."""
    filters: dict[str, Any] = {}
    for spec in specs:
        found = _FILTER.match(spec)
        if not found or not found.group("value"):
            raise FilterSyntaxError(f"bad filter {spec!r}: {ACCEPTED_FORMS}")
        field, op, raw = found.group("field"), found.group("op"), found.group("value")
        if not is_field_name(field):
            raise FilterSyntaxError(
                f"bad filter {spec!r}: {field[:40]!r} is not a field name ({FIELD_NAME_RULE}); "
                f"{ACCEPTED_FORMS}"
            )
        current = filters.get(field)
        if op == "=":
            if raw[0] in "<>":  # ``year=>5`` is a typo of ``year>=5`` far more often than a value
                raise FilterSyntaxError(
                    f"bad filter {spec!r}: quote a value that starts with < or >; {ACCEPTED_FORMS}"
                )
            if isinstance(current, dict):
                raise FilterSyntaxError(f"bad filter {spec!r}: {field} already has a range; {ACCEPTED_FORMS}")
            value = parse_value(raw)
            if current is None:
                filters[field] = value
            elif isinstance(current, list):
                if value not in current:
                    current.append(value)
            elif current != value:
                filters[field] = [current, value]
            continue
        bound = _number(raw)
        if bound is None:
            raise FilterSyntaxError(f"bad filter {spec!r}: a range needs a number; {ACCEPTED_FORMS}")
        if current is not None and not isinstance(current, dict):
            raise FilterSyntaxError(f"bad filter {spec!r}: {field} already has a value; {ACCEPTED_FORMS}")
        limits = current if isinstance(current, dict) else {}
        limits["gte" if op == ">=" else "lte"] = bound
        if "gte" in limits and "lte" in limits and limits["gte"] > limits["lte"]:
            raise FilterSyntaxError(f"bad filter {spec!r}: {field}>= is above {field}<=; the range is empty")
        filters[field] = limits
    return filters
