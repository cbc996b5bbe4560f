"""``VectorCheckpoint`` in the ledger's DynamoDB table.

Why there: ingest already reads and writes that table (GetItem/UpdateItem, no new permission), its TTL
expires what a finished or abandoned document leaves behind, and, unlike the bucket, writing to it does
not notify ingest. The items never meet the ledger's: their partition key starts with ``_`` (no tenant
does) and they have no ``status`` (the ledger's scan and list skip them). A group's vectors are stored
exactly (float64) and split into items under DynamoDB's 400 KB; part 0 says how many parts there are
and is written last, so a group half written reads as missing."""

from __future__ import annotations

import sys
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from winnow.adapters import _aws
from winnow.adapters._aws import TTL_ATTRIBUTE
from winnow.observability import logger
from winnow.ports import VectorCheckpoint

PART_BYTES = 300_000  # under DynamoDB's 400 KB per item, with room for the keys and attributes
TTL_SECONDS = 24 * 3600  # longer than SQS's receives of one message; a day of storage is cents
_PREFIX = "_embedding-checkpoint#"


class DynamoDbVectorCheckpoint(VectorCheckpoint):
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

    def load(self, key: str) -> list[list[float]] | None:
        try:
            first = self._get(key, 0)
            if first is None:
                return None
            parts, dimension = int(first["parts"]["N"]), int(first["dim"]["N"])
            blobs = [first["v"]["B"]]
            for part in range(1, parts):
                item = self._get(key, part)
                if item is None:
                    return None
                blobs.append(item["v"]["B"])
        except Exception as exc:  # a checkpoint that cannot be read is a miss, never a failure
            logger.warning("embedding checkpoint unreadable", extra={"error": type(exc).__name__})
            return None
        values = array("d")
        for blob in blobs:
            values.frombytes(blob)
        if sys.byteorder != "little":
            values.byteswap()
        flat = values.tolist()
        return [flat[i : i + dimension] for i in range(0, len(flat), dimension)]

    def save(self, key: str, vectors: Sequence[Sequence[float]]) -> None:
        if not vectors:
            return
        dimension = len(vectors[0])
        per_part = max(1, PART_BYTES // (8 * dimension))
        chunks = [vectors[i : i + per_part] for i in range(0, len(vectors), per_part)]
        expires = int(self._clock()) + TTL_SECONDS
        try:
            for part in [*range(1, len(chunks)), 0]:  # part 0, which counts the parts, last
                values = array("d", (x for vector in chunks[part] for x in vector))
                if sys.byteorder != "little":
                    values.byteswap()
                self.client.update_item(
                    TableName=self._table,
                    Key=_key(key, part),
                    UpdateExpression="SET v = :v, dim = :d, parts = :p, #ttl = :t",
                    ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
                    ExpressionAttributeValues={
                        ":v": {"B": values.tobytes()},
                        ":d": {"N": str(dimension)},
                        ":p": {"N": str(len(chunks))},
                        ":t": {"N": str(expires)},
                    },
                )
        except Exception as exc:  # the document goes on; only a retry's savings are lost
            logger.warning("embedding checkpoint not saved", extra={"error": type(exc).__name__})

    def _get(self, key: str, part: int) -> dict[str, Any] | None:
        response = self.client.get_item(TableName=self._table, Key=_key(key, part), ConsistentRead=True)
        item = response.get("Item")
        return item if isinstance(item, dict) else None


def _key(key: str, part: int) -> dict[str, Any]:
    return {"pk": {"S": f"{_PREFIX}{key[:4]}"}, "sk": {"S": f"{key}#{part}"}}
