"""Qdrant filters from Winnow's tenant, document and metadata filters, written once for both engines.

The rules (the tenant is always the first ``must`` and no user filter can replace it; user filters
address ``meta.<name>`` unless they name a reserved top-level field; how mixed value lists are grouped)
live here. Each engine brings its own vocabulary (``qdrant_client`` models, or Qdrant Edge's classes)
through the small ``Conditions`` protocol."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from winnow.access import GROUPS_FIELD, OPEN_FIELD, USERS_FIELD, ReadScope
from winnow.errors import BadRequest
from winnow.ports import FilterValue, RangeFilter
from winnow.rules import (
    FIELD_NAME_RULE,
    FieldType,
    FilterableField,
    is_field_name,
    is_tenant,
    undeclared_field_message,
)

# Filter names that address top-level payload fields; every other name addresses ``meta.<name>``.
_RESERVED = (
    FilterableField("key", "keyword"),
    FilterableField("source_type", "keyword"),
    FilterableField("title", "keyword"),
    FilterableField("kind", "keyword"),
    FilterableField("ocr", "bool"),
)
RESERVED_FILTER_FIELDS = {f.path: f for f in _RESERVED}
# Every payload field a query of Winnow's own filters on, with the index that serves it (Qdrant Cloud's
# strict mode refuses a filter on a field without one): the tenant and access fields of every read, a
# document's chunks by position (``context: neighbours|section``, ``GET /documents``) and version.
STORE_FIELDS: tuple[FilterableField, ...] = (
    FilterableField("tenant", "tenant"),
    *_RESERVED,
    FilterableField("chunk_index", "integer"),
    FilterableField("doc_version", "keyword"),
    FilterableField(USERS_FIELD, "keyword"),
    FilterableField(GROUPS_FIELD, "keyword"),
    FilterableField(OPEN_FIELD, "bool"),
)


def index_fields(declared: Mapping[str, FieldType]) -> tuple[FilterableField, ...]:
    """Every field that gets a payload index: Winnow's own, then each declared metadata field."""
    return STORE_FIELDS + tuple(FilterableField(f"meta.{name}", t) for name, t in declared.items())


def typed_value(kind: FieldType, value: Any) -> Any:
    """``value`` as a field of ``kind`` holds it (S3 user metadata arrives as strings: ``"2024"`` is the
    integer 2024 for an integer field); ValueError when it cannot be one."""
    if kind == "keyword":
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    elif kind == "integer":
        if isinstance(value, bool):
            raise ValueError(kind)
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
            return int(value)
    elif kind == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and len(value) < 40:
            return float(value)
    elif kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif kind == "datetime" and isinstance(value, str) and len(value) < 40:
        datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        return value.strip()
    raise ValueError(kind)


def typed_metadata(metadata: Mapping[str, Any], declared: Mapping[str, FieldType]) -> dict[str, Any]:
    """User metadata with each declared field's values as its type holds them, so its payload index
    serves them; a value that cannot be one is kept as is (no filter on the field finds it)."""
    out = dict(metadata)
    for name, kind in declared.items():
        if name not in out:
            continue
        value = out[name]
        with contextlib.suppress(ValueError, OverflowError):
            out[name] = (
                [typed_value(kind, v) for v in value] if isinstance(value, list) else typed_value(kind, value)
            )
    return out


class Conditions(Protocol):
    """An engine's filter vocabulary."""

    def match(self, path: str, value: str | int | bool) -> Any: ...

    def match_any(self, path: str, values: list[str] | list[int]) -> Any: ...

    def range(self, path: str, gte: float | None, lte: float | None) -> Any: ...

    def datetime_range(self, path: str, gte: str | None, lte: str | None) -> Any: ...

    def is_empty(self, path: str) -> Any: ...

    def filter(
        self,
        must: list[Any] | None = None,
        should: list[Any] | None = None,
        must_not: list[Any] | None = None,
    ) -> Any: ...


class QdrantConditions:
    """``qdrant_client`` models (Qdrant Cloud and local mode)."""

    def match(self, path: str, value: str | int | bool) -> Any:
        from qdrant_client.http import models as qm

        return qm.FieldCondition(key=path, match=qm.MatchValue(value=value))

    def match_any(self, path: str, values: list[str] | list[int]) -> Any:
        from qdrant_client.http import models as qm

        return qm.FieldCondition(key=path, match=qm.MatchAny(any=values))

    def range(self, path: str, gte: float | None, lte: float | None) -> Any:
        from qdrant_client.http import models as qm

        return qm.FieldCondition(key=path, range=qm.Range(gte=gte, lte=lte))

    def datetime_range(self, path: str, gte: str | None, lte: str | None) -> Any:
        from qdrant_client.http import models as qm

        return qm.FieldCondition(key=path, range=qm.DatetimeRange(gte=_datetime(gte), lte=_datetime(lte)))

    def is_empty(self, path: str) -> Any:
        from qdrant_client.http import models as qm

        return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=path))

    def filter(
        self,
        must: list[Any] | None = None,
        should: list[Any] | None = None,
        must_not: list[Any] | None = None,
    ) -> Any:
        from qdrant_client.http import models as qm

        return qm.Filter(must=must, should=should, must_not=must_not)


def _datetime(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


def tenant_condition(c: Conditions, tenant: str) -> Any:
    if not is_tenant(tenant):
        raise ValueError("a valid tenant is required")
    return c.match("tenant", tenant)


def tenant_filter(c: Conditions, tenant: str | None) -> Any:
    """Every point of one tenant, or None (no filter) for all tenants."""
    return c.filter(must=[tenant_condition(c, tenant)]) if tenant is not None else None


def document_filter(c: Conditions, tenant: str, key: str) -> Any:
    if not tenant or not key:
        raise ValueError("tenant and key are required")
    return c.filter(must=[tenant_condition(c, tenant), c.match("key", key)])


def read_condition(c: Conditions, scope: ReadScope) -> Any | None:
    """What a caller may read, as one condition beside the tenant (None: everything, the admins).

    A point is readable when it is open (``access_open``; a point written before access lists existed
    has no such field and stays open), lists the caller's user, or one of their groups. A caller who
    may read nothing gets a condition no point meets, never an empty ``should`` (which Qdrant ignores)."""
    if scope.everything:
        return None
    should: list[Any] = []
    if scope.open_documents:
        should += [c.match(OPEN_FIELD, True), c.is_empty(OPEN_FIELD)]
    if scope.users:
        should.append(c.match_any(USERS_FIELD, list(scope.users)))
    if scope.groups:
        should.append(c.match_any(GROUPS_FIELD, list(scope.groups)))
    if not should:
        return c.filter(must=[c.match(OPEN_FIELD, True), c.match(OPEN_FIELD, False)])
    return c.filter(should=should)


def unreadable_filters(c: Conditions, tenant: str, scope: ReadScope) -> tuple[Any, ...] | None:
    """Filters that between them hold every point this caller may not read (and maybe some they may):
    when none holds a point, the caller may read every point of the collection. None when that cannot be
    shown this way: a caller who reads only the documents listing them."""
    others = c.filter(must_not=[tenant_condition(c, tenant)])
    if scope.everything:
        return (others,)
    if not scope.open_documents:
        return None
    # Open documents are readable (``read_condition``), so only a restricted one can be left out.
    return (others, c.filter(must=[c.match(OPEN_FIELD, False)]))


def readable_filter(c: Conditions, tenant: str, scope: ReadScope, *more: Any) -> Any:
    """The tenant's points this caller may read, narrowed by ``more`` conditions."""
    must: list[Any] = [tenant_condition(c, tenant)]
    condition = read_condition(c, scope)
    if condition is not None:
        must.append(condition)
    return c.filter(must=must + list(more))


def search_filter(
    c: Conditions,
    tenant: str,
    scope: ReadScope,
    filters: dict[str, FilterValue],
    declared: Mapping[str, FieldType] | None = None,
    *,
    strict: bool = False,
) -> Any:
    """The tenant first, the caller's read condition, then one condition per user filter. A user filter
    can only ever narrow these points: its name addresses ``meta.<name>`` (or a reserved top-level
    field), never ``tenant`` or an access field. A declared field's condition is written for its type;
    ``strict`` (a Qdrant server, which refuses a filter on a field without a fitting index, as Qdrant
    Cloud does) refuses an undeclared field, else (the embedded engine) its condition follows the value."""
    must: list[Any] = [tenant_condition(c, tenant)]
    condition = read_condition(c, scope)
    if condition is not None:
        must.append(condition)
    for name, value in filters.items():
        if not is_field_name(name):
            raise BadRequest(f"filter field {str(name)[:40]!r} is not a field name: use {FIELD_NAME_RULE}")
        field = filter_field(name, declared or {}, strict)
        if field is None:
            path = name if name in RESERVED_FILTER_FIELDS else f"meta.{name}"
            must.append(_condition(c, path, name, value))
        else:
            must.append(_typed_condition(c, field, name, value))
    return c.filter(must=must)


def filter_field(name: str, declared: Mapping[str, FieldType], strict: bool) -> FilterableField | None:
    """The declared field a filter name addresses; None for an undeclared one where that is allowed."""
    reserved = RESERVED_FILTER_FIELDS.get(name)
    if reserved is not None:
        return reserved
    kind = declared.get(name)
    if kind is not None:
        return FilterableField(f"meta.{name}", kind)
    if strict:
        raise BadRequest(undeclared_field_message(name))
    return None


_WANTS = {
    "keyword": "a string or a list of strings",
    "integer": "an integer, a list of integers or a range",
    "float": "a number, a list of numbers or a range",
    "bool": "true or false",
    "datetime": "an RFC 3339 date-time, a list of them, or a range of them",
}


def _typed_condition(c: Conditions, field: FilterableField, name: str, value: FilterValue) -> Any:
    kind = field.value_type
    wrong = BadRequest(f"filter {name!r} is a {kind} field: give {_WANTS[kind]}")
    if isinstance(value, RangeFilter):
        if value.gte is None and value.lte is None:
            raise BadRequest(f"filter {name!r}: a range needs gte or lte")
        low, high = value.gte, value.lte
        if kind in ("integer", "float") and not isinstance(low, str) and not isinstance(high, str):
            return c.range(field.path, low, high)
        if kind == "datetime":
            return c.datetime_range(field.path, _moment(name, value.gte), _moment(name, value.lte))
        raise wrong
    values = value if isinstance(value, list) else [value]
    if not values:
        raise BadRequest(f"filter {name!r}: the list of values is empty")
    try:
        typed = list(dict.fromkeys(typed_value(kind, v) for v in values))
    except (ValueError, TypeError, OverflowError):
        raise wrong from None
    if kind in ("keyword", "integer"):
        return c.match(field.path, typed[0]) if len(typed) == 1 else c.match_any(field.path, typed)
    if kind == "bool":
        conditions = [c.match(field.path, v) for v in typed]
    elif kind == "float":
        conditions = [c.range(field.path, v, v) for v in typed]
    else:
        conditions = [c.datetime_range(field.path, v, v) for v in typed]
    return conditions[0] if len(conditions) == 1 else c.filter(should=conditions)


def _condition(c: Conditions, path: str, name: str, value: FilterValue) -> Any:
    if isinstance(value, RangeFilter):
        if value.gte is None and value.lte is None:
            raise BadRequest(f"filter {name!r}: a range needs gte or lte")
        if isinstance(value.gte, str) or isinstance(value.lte, str):
            return c.datetime_range(path, _moment(name, value.gte), _moment(name, value.lte))
        return c.range(path, value.gte, value.lte)
    if isinstance(value, list):
        return _any_of(c, path, name, value)
    if isinstance(value, bool | str | int):
        return c.match(path, value)
    if isinstance(value, float):
        if value.is_integer():  # 2020.0 matches a stored 2020
            return c.match(path, int(value))
        return c.range(path, value, value)
    raise BadRequest(f"filter {name!r}: unsupported value type {type(value).__name__}")


def _any_of(c: Conditions, path: str, name: str, value: list[Any]) -> Any:
    if not value:
        raise BadRequest(f"filter {name!r}: the list of values is empty")
    if all(isinstance(v, str) for v in value):
        return c.match_any(path, [str(v) for v in value])
    if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return c.match_any(path, [int(v) for v in value])
    # Mixed types: one MatchAny per kind (each condition costs a payload lookup per point in local mode:
    # 20 fields x 100 mixed values took seconds as one condition per value), then what only a condition of
    # its own can match (booleans, fractional floats).
    words = list(dict.fromkeys(v for v in value if isinstance(v, str)))
    numbers = list(dict.fromkeys(int(v) for v in value if _integral(v)))
    seen: set[tuple[type, object]] = set()
    others: list[Any] = []
    for v in value:  # 1 == 1.0 == True: keep each (kind, value) once without merging kinds
        if not isinstance(v, str) and not _integral(v) and (type(v), v) not in seen:
            seen.add((type(v), v))
            others.append(v)
    grouped: list[Any] = []
    if words:
        grouped.append(c.match_any(path, words))
    if numbers:
        grouped.append(c.match_any(path, numbers))
    coarse = list(grouped)  # the conditions that are matches, not ranges
    for v in others:
        grouped.append(_condition(c, path, name, v))
        if isinstance(v, bool):
            coarse.append(grouped[-1])
    if len(grouped) == 1:
        return grouped[0]
    fractions = [float(v) for v in others if isinstance(v, float)]
    if len(fractions) < 2:
        return c.filter(should=grouped)
    # Fractional floats need a condition each; a point whose value is in no group and outside their span
    # fails on the coarse test first, so most points cost a few conditions, not one per value.
    coarse.append(c.range(path, min(fractions), max(fractions)))
    return c.filter(must=[c.filter(should=coarse)], should=grouped)


def _moment(name: str, bound: float | str | None) -> str | None:
    try:
        return None if bound is None else typed_value("datetime", bound)
    except ValueError:
        raise BadRequest(f"filter {name!r}: a range of date-times needs RFC 3339 bounds") from None


def _integral(value: object) -> bool:
    """An int, or a float with an integer value (2020.0 matches a stored 2020); never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
