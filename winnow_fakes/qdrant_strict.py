"""Qdrant's strict-mode rules for filters, as the server applies them (qdrant/qdrant, Aug 2026):
``lib/collection/src/problems/unindexed_field.rs`` (which index types a condition can use),
``lib/collection/src/operations/verification/mod.rs`` (the refusal and its text) and
``src/common/update.rs`` (``max_payload_index_count``).

A condition needs an index whose capabilities include one of the types it can use: a string match a
keyword index (or uuid, when every string is a UUID), an integer match an integer index, a bool match a
bool index, a numeric range an integer or float index, a datetime range a datetime index, ``is_empty``,
``is_null`` and ``values_count`` any index. An empty ``any``/``except`` list needs none. Conditions on ids
and vectors need none. Kept apart from the server so the rules read as the source does."""

from __future__ import annotations

import uuid
from typing import Any

# Qdrant's FieldIndexType, by the schema name each maps back to in the error text.
KEYWORD, INTEGER, FLOAT, BOOL, UUID, DATETIME, TEXT, GEO = (
    "keyword",
    "integer",
    "float",
    "bool",
    "uuid",
    "datetime",
    "text",
    "geo",
)
ANY_INDEX = (KEYWORD, INTEGER, FLOAT, BOOL, UUID, DATETIME, TEXT, GEO)
# What an index of each schema can serve (``schema_capabilities``): integer serves match and range,
# float serves ranges only (a float index cannot serve an integer match).
CAPABILITIES: dict[str, frozenset[str]] = {
    KEYWORD: frozenset({"keyword"}),
    INTEGER: frozenset({"int_match", "int_range"}),
    FLOAT: frozenset({"float_range"}),
    BOOL: frozenset({"bool"}),
    UUID: frozenset({"uuid"}),
    DATETIME: frozenset({"datetime"}),
    TEXT: frozenset({"text"}),
    GEO: frozenset({"geo"}),
}
# Each required capability and the schema the error names for it (``From<FieldIndexType>``).
_SCHEMA_OF = {
    "keyword": KEYWORD,
    "int_match": INTEGER,
    "int_range": INTEGER,
    "float_range": FLOAT,
    "bool": BOOL,
    "uuid": UUID,
    "datetime": DATETIME,
    "text": TEXT,
    "geo": GEO,
}
_ALL = tuple(_SCHEMA_OF)


def strict_error(error: str, solution: str) -> str:
    """The text of ``CollectionError::strict_mode`` as REST reports it (a ``StorageError::BadRequest``)."""
    return f"Bad request: {error}. Help: {solution}"


def unindexed_message(key: str, required: list[str]) -> str:
    schemas = ", ".join(sorted({_SCHEMA_OF[r] for r in required}))
    return strict_error(
        f'Index required but not found for "{key}" of one of the following types: [{schemas}]',
        "Create an index for this key or use a different filter.",
    )


def index_limit_message(limit: int) -> str:
    return strict_error(
        f"Collection already has the maximum number of payload indices ({limit})",
        "Please delete an existing index before creating a new one.",
    )


def schema_name(field_schema: Any) -> str:
    """The schema of a ``create_payload_index`` body: a type name, or params with a ``type``."""
    if isinstance(field_schema, str):
        return field_schema
    value = getattr(field_schema, "type", None) or getattr(field_schema, "value", None)
    return str(getattr(value, "value", value))


def capabilities(field_schema: Any) -> frozenset[str]:
    name = schema_name(field_schema)
    caps = set(CAPABILITIES.get(name, frozenset()))
    if name == INTEGER:  # IntegerIndexParams may switch either side off
        if getattr(field_schema, "lookup", None) is False:
            caps.discard("int_match")
        if getattr(field_schema, "range", None) is False:
            caps.discard("int_range")
    return frozenset(caps)


def unindexed_key(where: Any, indexes: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The first key of ``where`` (a ``qdrant_client`` ``Filter``) without an index that fits, with the
    capabilities it could use; None when every key is served."""
    for key, required in _requirements(where, None):
        if not required:
            continue
        schema = indexes.get(key)
        if schema is None or not (capabilities(schema) & set(required)):
            return key, list(required)
    return None


def _requirements(where: Any, prefix: str | None) -> list[tuple[str, tuple[str, ...]]]:
    found: list[tuple[str, tuple[str, ...]]] = []
    if where is None:
        return found
    groups = [where.must, where.should, where.must_not]
    if getattr(where, "min_should", None) is not None:
        groups.append(where.min_should.conditions)
    for group in groups:
        if group is None:
            continue
        for condition in group if isinstance(group, list) else [group]:
            found += _condition(condition, prefix)
    return found


def _condition(condition: Any, prefix: str | None) -> list[tuple[str, tuple[str, ...]]]:
    from qdrant_client.http import models as qm

    def full(key: str) -> str:
        return f"{prefix}.{key}" if prefix else key

    if isinstance(condition, qm.Filter):
        return _requirements(condition, prefix)
    if isinstance(condition, qm.NestedCondition):
        return _requirements(condition.nested.filter, full(f"{condition.nested.key}[]"))
    if isinstance(condition, qm.IsEmptyCondition):
        return [(full(condition.is_empty.key), _ALL)]
    if isinstance(condition, qm.IsNullCondition):
        return [(full(condition.is_null.key), _ALL)]
    if isinstance(condition, qm.FieldCondition):
        return [(full(condition.key), tuple(_field_requirement(condition)))]
    return []  # has_id, has_vector: no index needed


def _field_requirement(fc: Any) -> list[str]:
    from qdrant_client.http import models as qm

    required: list[str] = []
    match = fc.match
    if isinstance(match, qm.MatchValue):
        required += _value_requirement(match.value)
    elif isinstance(match, qm.MatchAny | qm.MatchExcept):
        values = match.any if isinstance(match, qm.MatchAny) else match.except_
        required += _any_requirement(list(values))
    elif isinstance(match, qm.MatchText | qm.MatchTextAny):
        required.append("text")
    elif match is not None:
        required.append("text")  # phrase and prefix need text/keyword-prefix indexes Winnow never makes
    if isinstance(fc.range, qm.DatetimeRange):
        required.append("datetime")
    elif isinstance(fc.range, qm.Range):
        required += ["float_range", "int_range"]
    if fc.geo_bounding_box or fc.geo_radius or fc.geo_polygon:
        required.append("geo")
    if fc.values_count is not None or fc.is_empty is not None or fc.is_null is not None:
        required += list(_ALL)
    return required


def _value_requirement(value: Any) -> list[str]:
    if isinstance(value, bool):
        return ["bool"]
    if isinstance(value, int):
        return ["int_match"]
    return (["uuid"] if _is_uuid(str(value)) else []) + ["keyword"]


def _any_requirement(values: list[Any]) -> list[str]:
    if not values:
        return []
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return ["int_match"]
    return (["uuid"] if all(_is_uuid(str(v)) for v in values) else []) + ["keyword"]


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
