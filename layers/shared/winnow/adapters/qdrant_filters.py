"""Qdrant filters from Winnow's tenant, document and metadata filters, written once for both engines.

The rules (the tenant is always the first ``must`` and no user filter can replace it; user filters
address ``meta.<name>`` unless they name a reserved top-level field; how mixed value lists are grouped)
live here. Each engine brings its own vocabulary (``qdrant_client`` models, or Qdrant Edge's classes)
through the small ``Conditions`` protocol."""

from __future__ import annotations

from typing import Any, Protocol

from winnow.access import GROUPS_FIELD, OPEN_FIELD, USERS_FIELD, ReadScope
from winnow.errors import BadRequest
from winnow.ports import FilterValue, RangeFilter
from winnow.rules import FIELD_NAME_RULE, is_field_name, is_tenant

# Filter names that address top-level payload fields; every other name addresses ``meta.<name>``.
RESERVED_FILTER_FIELDS = frozenset({"key", "source_type", "title", "kind", "ocr"})


class Conditions(Protocol):
    """An engine's filter vocabulary."""

    def match(self, path: str, value: str | int | bool) -> Any: ...

    def match_any(self, path: str, values: list[str] | list[int]) -> Any: ...

    def range(self, path: str, gte: float | None, lte: float | None) -> Any: ...

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


def search_filter(c: Conditions, tenant: str, scope: ReadScope, filters: dict[str, FilterValue]) -> Any:
    """The tenant first, the caller's read condition, then one condition per user filter. A user filter
    can only ever narrow these points: its name addresses ``meta.<name>`` (or a reserved top-level
    field), never ``tenant`` or an access field."""
    must: list[Any] = [tenant_condition(c, tenant)]
    condition = read_condition(c, scope)
    if condition is not None:
        must.append(condition)
    for name, value in filters.items():
        if not is_field_name(name):
            raise BadRequest(f"filter field {str(name)[:40]!r} is not a field name: use {FIELD_NAME_RULE}")
        path = name if name in RESERVED_FILTER_FIELDS else f"meta.{name}"
        must.append(_condition(c, path, name, value))
    return c.filter(must=must)


def _condition(c: Conditions, path: str, name: str, value: FilterValue) -> Any:
    if isinstance(value, RangeFilter):
        if value.gte is None and value.lte is None:
            raise BadRequest(f"filter {name!r}: a range needs gte or lte")
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


def _integral(value: object) -> bool:
    """An int, or a float with an integer value (2020.0 matches a stored 2020); never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
