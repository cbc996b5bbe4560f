"""The ``Ledger`` on DynamoDB. Table: partition key ``pk`` (S) = tenant, sort key ``sk`` (S) = object key,
on-demand billing, TTL on ``ttl`` (set on ``deleted`` tombstones only, 30 days out). Other attributes are
the ``LedgerRecord`` fields, plus ``seq_sort`` (the sequencer normalised so that string order is event
order), ``lease_owner`` and ``lease_until``.

Writes are conditional, in DynamoDB itself, so two Lambdas racing on one key cannot both win:
``put`` applies only when the stored ``seq_sort`` is absent or older (or equal, with ``same_event_ok``); a
record without a sequencer is written unconditionally and leaves the stored sequencer in place. Records
are written with ``UpdateItem`` so a lease held on the same item survives them.

Errors: ``ConditionalCheckFailedException`` means "stale" or "lease held" (False); throttling, 5xx and
connection errors become ``ProviderUnavailable`` after botocore's own retries."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from winnow.adapters import _aws
from winnow.adapters._ledger_common import (
    INT_FIELDS,
    RECORD_FIELDS,
    TOMBSTONE_TTL_SECONDS,
    check_identity,
    check_page_size,
    decode_cursor,
    encode_cursor,
)
from winnow.models import DocumentStatus, LedgerRecord
from winnow.ports import Ledger
from winnow.rules import now_iso, sequencer_sort_key

T = TypeVar("T")

_ALWAYS_KEPT = frozenset({"sequencer", "created_at", "updated_at"})  # handled explicitly in put


class DynamoDbLedger(Ledger):
    def __init__(
        self, table_name: str, client: Any = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._table = table_name
        self._client = client
        self._clock = clock

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _aws.make_client("dynamodb")
        return self._client

    # --- records -----------------------------------------------------------------------------------
    def get(self, tenant: str, key: str) -> LedgerRecord | None:
        response = self._call(
            "ledger get",
            lambda: self.client.get_item(TableName=self._table, Key=_key(tenant, key), ConsistentRead=True),
        )
        item = response.get("Item")
        return _record(item) if item and "status" in item else None

    def put(self, record: LedgerRecord, *, same_event_ok: bool = False) -> bool:
        return self._put(record, same_event_ok, None)

    def put_and_release(self, record: LedgerRecord, owner: str, *, same_event_ok: bool = False) -> bool:
        """One ``UpdateItem`` that writes the record and drops ``owner``'s lease, on condition that the
        sequencer is newer and the lease still ``owner``'s. When that fails, the two steps again, one by
        one, so the outcome is exactly ``put`` then ``release`` (a stale record, a lease lost to expiry)."""
        try:
            if self._put(record, same_event_ok, owner):
                return True
        except Exception:
            self.release(record.tenant, record.key, owner)  # as put, then release, would have
            raise
        try:
            return self.put(record, same_event_ok=same_event_ok)
        finally:
            self.release(record.tenant, record.key, owner)

    def _put(self, record: LedgerRecord, same_event_ok: bool, release_owner: str | None) -> bool:
        check_identity(record)
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        sets: list[str] = []
        removes: list[str] = []

        def name(attr: str) -> str:
            names[f"#{attr}"] = attr
            return f"#{attr}"

        for field in RECORD_FIELDS:
            if field in ("tenant", "key") or field in _ALWAYS_KEPT:
                continue
            value = getattr(record, field)
            if field == "status":
                value = DocumentStatus(value).value
            if value is None:
                removes.append(name(field))
            else:
                values[f":{field}"] = _attr(value)
                sets.append(f"{name(field)} = :{field}")

        now = now_iso()
        values[":updated_at"] = _attr(record.updated_at or now)
        sets.append(f"{name('updated_at')} = :updated_at")
        values[":created_at"] = _attr(record.created_at or now)
        if record.created_at:
            sets.append(f"{name('created_at')} = :created_at")
        else:
            sets.append(f"{name('created_at')} = if_not_exists({name('created_at')}, :created_at)")

        if DocumentStatus(record.status) == DocumentStatus.DELETED:
            values[":ttl"] = _attr(int(self._clock()) + TOMBSTONE_TTL_SECONDS)
            sets.append(f"{name('ttl')} = :ttl")
        else:
            removes.append(name("ttl"))

        condition: str | None = None
        if record.sequencer is not None:
            values[":sequencer"] = _attr(record.sequencer)
            values[":seq_sort"] = _attr(sequencer_sort_key(record.sequencer))
            sets.append(f"{name('sequencer')} = :sequencer")
            sets.append(f"{name('seq_sort')} = :seq_sort")
            # Mirrors _ledger_common.accepts: no stored sequencer, or an older one (equal when allowed).
            older = f"{name('seq_sort')} <= :seq_sort" if same_event_ok else f"{name('seq_sort')} < :seq_sort"
            condition = f"attribute_not_exists({name('seq_sort')}) OR {older}"
        if release_owner is not None:
            removes += ["lease_owner", "lease_until"]
            values[":owner"] = {"S": release_owner}
            condition = f"({condition}) AND lease_owner = :owner" if condition else "lease_owner = :owner"

        expression = "SET " + ", ".join(sets)
        if removes:
            expression += " REMOVE " + ", ".join(removes)
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": _key(record.tenant, record.key),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if condition:
            request["ConditionExpression"] = condition
        return self._conditional("ledger put", lambda: self.client.update_item(**request))

    def list(
        self, tenant: str, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[LedgerRecord], str | None]:
        """Pages by the last key returned (not DynamoDB's LastEvaluatedKey): the filter that hides
        lease-only items can leave DynamoDB pages short, and we still want full pages."""
        size = check_page_size(limit)
        after = decode_cursor(tenant, cursor) if cursor else None
        records: list[LedgerRecord] = []
        for item in self._query(tenant, after, page_limit=size + 1):
            records.append(_record(item))
            if len(records) > size:
                break
        next_cursor = encode_cursor(tenant, records[size - 1].key) if len(records) > size else None
        return records[:size], next_cursor

    def cursor_after(self, tenant: str, key: str) -> str:
        return encode_cursor(tenant, key)

    def scan(self, tenant: str | None = None) -> Iterator[LedgerRecord]:
        if tenant is not None:
            for item in self._query(tenant, None, page_limit=None):
                yield _record(item)
            return
        start: dict[str, Any] | None = None
        while True:
            request: dict[str, Any] = {
                "TableName": self._table,
                "ConsistentRead": True,
                "FilterExpression": "attribute_exists(#status)",
                "ExpressionAttributeNames": {"#status": "status"},
            }
            if start:
                request["ExclusiveStartKey"] = start
            response = self._call("ledger scan", lambda r=request: self.client.scan(**r))  # type: ignore[misc]
            for item in response.get("Items", []):
                yield _record(item)
            start = response.get("LastEvaluatedKey")
            if not start:
                return

    def _query(self, tenant: str, after: str | None, page_limit: int | None) -> Iterator[dict[str, Any]]:
        start: dict[str, Any] | None = None
        condition, values = "pk = :tenant", {":tenant": {"S": tenant}}
        if after is not None:
            condition, values = "pk = :tenant AND sk > :after", {**values, ":after": {"S": after}}
        while True:
            request: dict[str, Any] = {
                "TableName": self._table,
                "KeyConditionExpression": condition,
                "ExpressionAttributeValues": values,
                "FilterExpression": "attribute_exists(#status)",
                "ExpressionAttributeNames": {"#status": "status"},
                "ScanIndexForward": True,
                "ConsistentRead": True,
            }
            if page_limit is not None:
                request["Limit"] = page_limit
            if start:
                request["ExclusiveStartKey"] = start
            response = self._call("ledger query", lambda r=request: self.client.query(**r))  # type: ignore[misc]
            yield from response.get("Items", [])
            start = response.get("LastEvaluatedKey")
            if not start:
                return

    # --- leases ------------------------------------------------------------------------------------
    def acquire(self, tenant: str, key: str, owner: str, ttl_seconds: int) -> bool:
        return self._acquire(tenant, key, owner, ttl_seconds, read=False) is not None

    def acquire_and_get(
        self, tenant: str, key: str, owner: str, ttl_seconds: int
    ) -> tuple[bool, LedgerRecord | None]:
        """One ``UpdateItem`` that takes the lease and returns the item as it now is (a strongly
        consistent read, like ``get``'s), instead of ``UpdateItem`` then ``GetItem``."""
        item = self._acquire(tenant, key, owner, ttl_seconds, read=True)
        if item is None:
            return False, None
        return True, _record(item) if "status" in item else None

    def _acquire(
        self, tenant: str, key: str, owner: str, ttl_seconds: int, *, read: bool
    ) -> dict[str, Any] | None:
        """The item after taking the lease (empty unless ``read``), or None when another owner holds it."""
        now = self._clock()
        response = self._conditional_update(
            "ledger acquire",
            {
                "TableName": self._table,
                "Key": _key(tenant, key),
                "UpdateExpression": "SET lease_owner = :owner, lease_until = :until",
                "ConditionExpression": (
                    "attribute_not_exists(lease_until) OR lease_until < :now OR lease_owner = :owner"
                ),
                "ExpressionAttributeValues": {
                    ":owner": {"S": owner},
                    ":until": _attr(now + ttl_seconds),
                    ":now": _attr(now),
                },
                **({"ReturnValues": "ALL_NEW"} if read else {}),
            },
        )
        return None if response is None else dict(response.get("Attributes") or {})

    def release(self, tenant: str, key: str, owner: str) -> None:
        response = self._conditional_update(
            "ledger release",
            {
                "TableName": self._table,
                "Key": _key(tenant, key),
                "UpdateExpression": "REMOVE lease_owner, lease_until",
                "ConditionExpression": "lease_owner = :owner",
                "ExpressionAttributeValues": {":owner": {"S": owner}},
                "ReturnValues": "ALL_NEW",
            },
        )
        # The item as the release left it: one that holds a record needs no clean-up (the usual case, so
        # no DeleteItem whose condition is bound to fail).
        if response is not None and "status" not in (response.get("Attributes") or {}):
            # A lease taken on a key that never got a record leaves an empty item behind: drop it, but
            # only if nobody wrote a record or took the lease since.
            self._conditional(
                "ledger release",
                lambda: self.client.delete_item(
                    TableName=self._table,
                    Key=_key(tenant, key),
                    ConditionExpression="attribute_not_exists(#status) AND attribute_not_exists(lease_owner)",
                    ExpressionAttributeNames={"#status": "status"},
                ),
            )

    # --- plumbing ----------------------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], T]) -> T:
        return _aws.call(what, fn)

    def _conditional_update(self, what: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """``UpdateItem``'s response, or None when its condition failed."""
        return _aws.call_conditional(what, lambda: dict(self.client.update_item(**request)))

    def _conditional(self, what: str, fn: Callable[[], Any]) -> bool:
        """True when the write applied, False when its condition failed."""
        return _aws.call_conditional(what, fn) is not None


def _key(tenant: str, key: str) -> dict[str, Any]:
    return {"pk": {"S": tenant}, "sk": {"S": key}}


# Not boto3's TypeSerializer: the ledger holds only strings and numbers, and boto3's codec wants Decimal,
# so the conversions both ways would be as long as these two functions (training/NOTEBOOK.md).
def _attr(value: Any) -> dict[str, str]:
    if isinstance(value, bool):
        raise TypeError("booleans are not ledger values")
    if isinstance(value, int | float):
        return {"N": repr(value) if isinstance(value, float) else str(value)}
    return {"S": str(value)}


def _value(attr: dict[str, Any]) -> Any:
    if "S" in attr:
        return attr["S"]
    if "N" in attr:
        text = attr["N"]
        return float(text) if any(c in text for c in ".eE") else int(text)
    if "NULL" in attr:
        return None
    raise ValueError(f"unexpected DynamoDB attribute type {sorted(attr)}")


def _record(item: dict[str, Any]) -> LedgerRecord:
    values: dict[str, Any] = {"tenant": item["pk"]["S"], "key": item["sk"]["S"]}
    for field in RECORD_FIELDS:
        if field in ("tenant", "key"):
            continue
        attr = item.get(field)
        values[field] = _value(attr) if attr is not None else None
    values["status"] = DocumentStatus(values["status"])
    for field in INT_FIELDS:
        values[field] = int(values[field] or 0)
    return LedgerRecord(**values)


table_definition = _aws.key_value_table  # CreateTable arguments of this table


TTL_ATTRIBUTE = _aws.TTL_ATTRIBUTE
