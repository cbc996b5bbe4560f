"""A document's points: built as they are written, the new version's first, then the old version's
leftovers deleted (a search during re-indexing never sees the document vanish)."""

from __future__ import annotations

import itertools
import uuid
from array import array
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from winnow.models import Chunk, ChunkPoint, ObjectInfo
from winnow.ports import VectorStore

if TYPE_CHECKING:
    from winnow.text.sparse import Bm25Encoder

POINT_NAMESPACE = uuid.UUID("6f0b1d55-7c1e-4f43-9b7e-1f5f0c3a9e21")
WRITE_BATCH = 256  # points per upsert: what one document holds at once past its vectors (issue 44)


def point_id(tenant: str, key: str, content_hash: str, occurrence: int) -> str:
    """Deterministic: the same chunk content of the same document always lands on the same point."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{tenant}\n{key}\n{content_hash}\n{occurrence}"))


class PointWriter:
    def __init__(self, store: VectorStore, sparse: Bm25Encoder) -> None:
        self.store = store
        self.sparse = sparse

    def points(
        self,
        tenant: str,
        key: str,
        chunks: list[Chunk],
        vectors: dict[str, array[float]],
        metadata: dict[str, Any],
        source_type: str,
        info: ObjectInfo,
    ) -> Iterator[ChunkPoint]:
        """The document's points, built as they are written (a point's vector as a list, its sparse
        vector: a few KB each, held ``WRITE_BATCH`` at a time)."""
        doc_version = info.version_id or info.etag
        occurrences: dict[str, int] = {}
        for chunk in chunks:
            n = occurrences.get(chunk.content_hash, 0)
            occurrences[chunk.content_hash] = n + 1
            yield ChunkPoint(
                point_id=point_id(tenant, key, chunk.content_hash, n),
                tenant=tenant,
                key=key,
                chunk=chunk,
                dense=vectors[chunk.content_hash].tolist(),
                sparse=self.sparse.encode_document(chunk.embed_text),
                metadata=metadata,
                source_type=source_type,
                doc_version=doc_version,
            )

    def write(self, tenant: str, key: str, points: Iterable[ChunkPoint], known: bool) -> None:
        """The new version's points first, ``WRITE_BATCH`` an upsert, then the old version's leftovers
        (see the module's note)."""
        old_ids = self.store.point_ids(tenant, key) if known else set()
        written: set[str] = set()
        points = iter(points)
        while batch := list(itertools.islice(points, WRITE_BATCH)):
            self.store.upsert(batch)
            written.update(p.point_id for p in batch)
        leftovers = old_ids - written
        if leftovers:
            self.store.delete_points(sorted(leftovers))
