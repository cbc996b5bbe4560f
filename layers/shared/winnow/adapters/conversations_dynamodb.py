"""The ``ConversationStore`` on DynamoDB (the ``ConversationsTable`` of template.yaml): on-demand, TTL on
``ttl``, encrypted. Partition key ``pk`` = the owner (``tenant#user``), sort key ``sk``:
``T#<conversation>#<at_ns>`` for a turn, ``M#<at_ns>#<id>`` for a memory, ``T#<conversation>#~`` for a
deleted conversation's tombstone (after its turns, so the turns' Query meets it first), ``F#g`` and
``F#f`` for the delete markers (moved by every delete; by a forget). So every read is one Query on the
owner's partition; a write is one BatchWriteItem, then one strongly consistent Query of the markers (a
second, of the tombstone, only when a delete came meanwhile): a delete writes its markers before it reads
what to delete, so a write either is seen and deleted by it or sees its markers and undoes itself.
Errors become ours through ``_aws.translate``."""

from __future__ import annotations

import json
import uuid
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
    epoch_of,
    pack_vector,
    unpack_vector,
    write_holds,
)

T = TypeVar("T")
TTL_ATTRIBUTE = _aws.TTL_ATTRIBUTE
_BATCH = 25  # BatchWriteItem's limit


_MARKERS = "F#"
_ANY_DELETE, _FORGET = "F#g", "F#f"
_TOMBSTONE = "~"  # sorts after every at_ns


def _tombstone_sk(conversation_id: str) -> str:
    return f"{_turn_prefix(conversation_id)}{_TOMBSTONE}"


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
        return _aws.call(what, fn)

    def _query(
        self,
        owner: Owner,
        prefix: str,
        *,
        newest_first: bool,
        limit: int | None = None,
        keys_only: bool = False,
        now: float | None = None,
        consistent: bool = False,
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
        if consistent:  # what a delete removes, and what a write checks, must include the latest writes
            args["ConsistentRead"] = True
        if keys_only:
            args["ProjectionExpression"] = "pk, sk"
        if now is not None:  # DynamoDB deletes expired items lazily: never return one
            args["FilterExpression"] = "attribute_not_exists(#ttl) OR #ttl > :now"
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
        if not items or items[0]["sk"]["S"] == _tombstone_sk(conversation_id):
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
        self,
        owner: Owner,
        conversation_id: str,
        turn: Turn,
        expires: int,
        drop: Sequence[int] = (),
        epoch: str | None = None,
    ) -> bool:
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
        return self._holds(owner, conversation_id, epoch, item["sk"]["S"])

    # --- deletes that a racing write cannot outlive ----------------------------------------------------
    def epoch(self, owner: Owner) -> str:
        found = {
            i["sk"]["S"]: i["v"]["S"]
            for i in self._query(owner, _MARKERS, newest_first=False, consistent=True)
        }
        return epoch_of(found.get(_ANY_DELETE, ""), found.get(_FORGET, ""))

    def _holds(self, owner: Owner, conversation_id: str, epoch: str | None, written: str) -> bool:
        """Whether the item just ``written`` may stay (``write_holds``); else it is deleted again (a
        delete running now may delete it too: no matter)."""
        if epoch is None:
            return True
        tombstone = _tombstone_sk(conversation_id)

        def deleted() -> bool:
            return any(self._query(owner, tombstone, newest_first=False, consistent=True))

        if write_holds(epoch, self.epoch(owner), deleted):
            return True
        self._write([], [written], owner_key(owner.tenant, owner.user))
        return False

    def _mark(self, owner: Owner, sks: Sequence[str], expires: int | None) -> list[dict[str, Any]]:
        pk = owner_key(owner.tenant, owner.user)
        items = []
        for sk in sks:
            item: dict[str, Any] = {"pk": {"S": pk}, "sk": {"S": sk}, "v": {"S": uuid.uuid4().hex}}
            if expires is not None:
                item[TTL_ATTRIBUTE] = {"N": str(expires)}
            items.append(item)
        return items

    def delete_conversation(self, owner: Owner, conversation_id: str, expires: int | None = None) -> bool:
        pk = owner_key(owner.tenant, owner.user)
        # The markers first, then what to delete (strongly consistent): see the module's docstring.
        self._write(self._mark(owner, [_ANY_DELETE, _tombstone_sk(conversation_id)], expires), [], pk)
        prefix = _turn_prefix(conversation_id)
        keys = [
            i["sk"]["S"]
            for i in self._query(owner, prefix, newest_first=False, keys_only=True, consistent=True)
            if i["sk"]["S"] != _tombstone_sk(conversation_id)
        ]
        keys += [
            _memory_sk(m)
            for m in self._memories(owner, None, consistent=True)
            if m.conversation_id == conversation_id
        ]
        self._write([], keys, pk)
        return bool(keys)

    # --- memories ----------------------------------------------------------------------------------
    def add_memory(
        self,
        owner: Owner,
        memory: Memory,
        expires: int,
        drop: Sequence[Memory] = (),
        epoch: str | None = None,
    ) -> bool:
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
        return self._holds(owner, memory.conversation_id, epoch, _memory_sk(memory))

    def memories(self, owner: Owner, now: float) -> list[Memory]:
        return self._memories(owner, now)

    def _memories(self, owner: Owner, now: float | None, consistent: bool = False) -> list[Memory]:
        out = []
        for i in self._query(owner, "M#", newest_first=True, now=now, consistent=consistent):
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

    def forget(self, owner: Owner, expires: int | None = None) -> int:
        pk = owner_key(owner.tenant, owner.user)
        self._write(self._mark(owner, [_ANY_DELETE, _FORGET], expires), [], pk)  # first: as for a delete
        found = self._query(owner, "", newest_first=False, keys_only=True, consistent=True)
        keys = [i["sk"]["S"] for i in found if not i["sk"]["S"].startswith(_MARKERS)]
        self._write([], keys, pk)
        return sum(1 for k in keys if not k.endswith(f"#{_TOMBSTONE}"))


table_definition = _aws.key_value_table  # CreateTable arguments of this table
