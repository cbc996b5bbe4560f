"""The ``ConversationStore`` on DynamoDB (the ``ConversationsTable`` of template.yaml): on-demand, TTL on
``ttl``, encrypted. Partition key ``pk`` = the owner (``tenant#user``), sort key ``sk``:
``T#<conversation>#<at_ns>`` for a turn, ``M#<at_ns>#<id>`` for a memory. So every read is one Query on
the owner's partition, and a follow-up costs one Query and one BatchWriteItem (its turn, and the oldest
turn past those kept). Errors become ours through ``_aws.translate``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from winnow.adapters import _aws
from winnow.conversations import owner_key
from winnow.conversations.store import (
    ConversationStore,
    Memory,
    Owner,
    Turn,
    pack_vector,
    unpack_vector,
)

T = TypeVar("T")
TTL_ATTRIBUTE = _aws.TTL_ATTRIBUTE
_BATCH = 25  # BatchWriteItem's limit


def _turn_prefix(conversation_id: str) -> str:
    return f"T#{conversation_id}#"


def _turn_sk(conversation_id: str, at_ns: int) -> str:
    return f"{_turn_prefix(conversation_id)}{at_ns:020d}"


def _memory_sk(memory: Memory) -> str:
    return f"M#{memory.at_ns:020d}#{memory.id}"


class DynamoDbConversationStore(ConversationStore):
    def __init__(self, table_name: str, client: Any = None) -> None:
        self._table = table_name
        self._client = client
        self.calls = 0

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _aws.make_client("dynamodb")
        return self._client

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        self.calls += 1
        try:
            return fn()
        except Exception as exc:
            error = _aws.translate(exc, what)
            if error is None:
                raise
            raise error from exc

    def _query(
        self,
        owner: Owner,
        prefix: str,
        *,
        newest_first: bool,
        limit: int | None = None,
        keys_only: bool = False,
        now: float | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The owner's items whose sort key starts with ``prefix``, page after page (until ``limit``)."""
        values: dict[str, Any] = {":pk": {"S": owner_key(owner.tenant, owner.user)}}
        condition = "pk = :pk"
        if prefix:  # begins_with refuses an empty prefix: no prefix is the whole partition
            condition += " AND begins_with(sk, :prefix)"
            values[":prefix"] = {"S": prefix}
        args: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": not newest_first,
        }
        if keys_only:
            args["ProjectionExpression"] = "pk, sk"
        if now is not None:  # DynamoDB deletes expired items lazily: never return one
            args["FilterExpression"] = "#ttl > :now"
            args["ExpressionAttributeNames"] = {"#ttl": TTL_ATTRIBUTE}
            args["ExpressionAttributeValues"][":now"] = {"N": str(int(now))}
        if limit is not None:
            args["Limit"] = limit
        seen = 0
        while True:
            page = self._call("conversation query", lambda: self.client.query(**args))
            for item in page.get("Items", []):
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            start = page.get("LastEvaluatedKey")
            if not start:
                return
            args["ExclusiveStartKey"] = start

    def _write(self, puts: list[dict[str, Any]], deletes: list[str], pk: str) -> None:
        requests = [{"PutRequest": {"Item": item}} for item in puts] + [
            {"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"S": sk}}}} for sk in deletes
        ]
        for start in range(0, len(requests), _BATCH):
            pending: dict[str, Any] = {self._table: requests[start : start + _BATCH]}
            for _ in range(5):  # unprocessed items: throttled; botocore already backed off
                answer: dict[str, Any] = self._call("conversation write", partial(self._batch_write, pending))
                pending = answer.get("UnprocessedItems") or {}
                if not pending:
                    break
            else:
                from winnow.errors import ProviderRateLimited

                raise ProviderRateLimited("conversation write: items left unprocessed")

    def _batch_write(self, items: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.client.batch_write_item(RequestItems=items)
        return answer

    # --- turns -------------------------------------------------------------------------------------
    def turns(self, owner: Owner, conversation_id: str, limit: int, now: float) -> list[Turn] | None:
        items = list(
            self._query(owner, _turn_prefix(conversation_id), newest_first=True, limit=limit, now=now)
        )
        if not items:
            return None
        return [
            Turn(
                question=i["q"]["S"],
                query_used=i["qu"]["S"],
                answer=i["a"]["S"] if "a" in i else None,
                cited=tuple(json.loads(i["cited"]["S"])),
                keys=tuple(json.loads(i["keys"]["S"])),
                at=i["at"]["S"],
                at_ns=int(i["sk"]["S"].rsplit("#", 1)[1]),
            )
            for i in reversed(items)
        ]

    def add_turn(
        self, owner: Owner, conversation_id: str, turn: Turn, expires: int, drop: Sequence[int] = ()
    ) -> None:
        pk = owner_key(owner.tenant, owner.user)
        item: dict[str, Any] = {
            "pk": {"S": pk},
            "sk": {"S": _turn_sk(conversation_id, turn.at_ns)},
            "q": {"S": turn.question},
            "qu": {"S": turn.query_used},
            "cited": {"S": json.dumps(list(turn.cited))},
            "keys": {"S": json.dumps(list(turn.keys))},
            "at": {"S": turn.at},
            TTL_ATTRIBUTE: {"N": str(expires)},
        }
        if turn.answer is not None:
            item["a"] = {"S": turn.answer}
        self._write([item], [_turn_sk(conversation_id, at_ns) for at_ns in drop], pk)

    def delete_conversation(self, owner: Owner, conversation_id: str) -> bool:
        pk = owner_key(owner.tenant, owner.user)
        keys = [
            i["sk"]["S"]
            for i in self._query(owner, _turn_prefix(conversation_id), newest_first=False, keys_only=True)
        ]
        keys += [_memory_sk(m) for m in self._memories(owner, None) if m.conversation_id == conversation_id]
        self._write([], keys, pk)
        return bool(keys)

    # --- memories ----------------------------------------------------------------------------------
    def add_memory(self, owner: Owner, memory: Memory, expires: int, drop: Sequence[Memory] = ()) -> None:
        pk = owner_key(owner.tenant, owner.user)
        item = {
            "pk": {"S": pk},
            "sk": {"S": _memory_sk(memory)},
            "cid": {"S": memory.conversation_id},
            "q": {"S": memory.question},
            "a": {"S": memory.answer},
            "keys": {"S": json.dumps(list(memory.keys))},
            "at": {"S": memory.at},
            "profile": {"S": memory.profile},
            "vec": {"B": pack_vector(memory.vector)},
            TTL_ATTRIBUTE: {"N": str(expires)},
        }
        self._write([item], [_memory_sk(m) for m in drop], pk)

    def memories(self, owner: Owner, now: float) -> list[Memory]:
        return self._memories(owner, now)

    def _memories(self, owner: Owner, now: float | None) -> list[Memory]:
        out = []
        for i in self._query(owner, "M#", newest_first=True, now=now):
            _, at_ns, memory_id = i["sk"]["S"].split("#", 2)
            out.append(
                Memory(
                    id=memory_id,
                    conversation_id=i["cid"]["S"],
                    question=i["q"]["S"],
                    answer=i["a"]["S"],
                    keys=tuple(json.loads(i["keys"]["S"])),
                    at=i["at"]["S"],
                    at_ns=int(at_ns),
                    profile=i["profile"]["S"],
                    vector=unpack_vector(bytes(i["vec"]["B"])),
                )
            )
        return out

    def forget(self, owner: Owner) -> int:
        keys = [i["sk"]["S"] for i in self._query(owner, "", newest_first=False, keys_only=True)]
        self._write([], keys, owner_key(owner.tenant, owner.user))
        return len(keys)


table_definition = _aws.key_value_table  # CreateTable arguments of this table
