"""The move of an index made by qdrant-client's local mode (the embedded engine before Edge) into Qdrant
Edge, once, when a folder is opened (``qdrant_edge.open_embedded``): nothing is re-embedded, and the old
files are kept as a backup."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from winnow.adapters.qdrant_collection import DENSE_VECTOR, SPARSE_VECTOR, profile_from_metadata
from winnow.observability import logger

if TYPE_CHECKING:
    from winnow.settings import QdrantSettings

_MIGRATING = ".migrating"  # in <root>/edge while a local-mode index is moved in (migrate_local_mode)
_LOCAL_MODE_COLLECTIONS = "collection"  # qdrant-client's local mode: <root>/collection/<name>, meta.json
_LOCAL_MODE_BACKUP = "local-mode"


def migrate_if_needed(folder: Path, settings: QdrantSettings) -> bool:
    """Move a folder that holds only an index made by qdrant-client's local mode (the embedded engine
    before Edge), or one whose move was cut short, to Edge (``migrate_local_mode``), so an upgrade never
    shows an empty index and never re-embeds. Returns whether it moved anything."""
    from winnow_local.adapters.edge_folder import EDGE_SUBDIR

    collections = folder / _LOCAL_MODE_COLLECTIONS
    edge = folder / EDGE_SUBDIR
    unfinished = (edge / _MIGRATING).exists()
    if (unfinished or not edge.exists()) and collections.is_dir() and any(collections.iterdir()):
        migrate_local_mode(folder, settings)
        return True
    return False


def migrate_local_mode(folder: Path, settings: QdrantSettings) -> int:
    """Copy the local-mode index of ``folder`` into Qdrant Edge beside it, once: every collection Winnow
    made (whatever its prefix) with its points as stored (vectors and payloads, nothing re-embedded), its
    payload indexes, and the aliases. The local-mode files then move to ``<folder>/local-mode`` (a
    local-mode folder of their own, kept as the backup), so later opens see Edge only. A move cut short
    is redone from the start. Returns the number of points copied."""
    import qdrant_edge as E
    from qdrant_client import QdrantClient

    from winnow_local.adapters.edge_folder import EDGE_SUBDIR, EdgeShards
    from winnow_local.adapters.edge_store import EdgeVectorStore

    edge_root = folder / EDGE_SUBDIR
    shutil.rmtree(edge_root, ignore_errors=True)  # what a move cut short left
    edge_root.mkdir(parents=True)
    (edge_root / _MIGRATING).touch()
    client = QdrantClient(path=str(folder))
    target = EdgeShards(str(folder))
    copied = 0
    try:
        for described in client.get_collections().collections:
            name = described.name
            profile = profile_from_metadata(client.get_collection(name).config.metadata)
            if profile is None:  # not a collection Winnow made
                continue
            store = EdgeVectorStore(target, profile, settings, collection_name=name)
            store.ensure_collection()
            offset: Any = None
            while True:
                records, offset = client.scroll(
                    name, limit=256, offset=offset, with_payload=True, with_vectors=True
                )
                if records:
                    store._update(
                        E.UpdateOperation.upsert_points([_edge_point(r) for r in records]), len(records)
                    )
                copied += len(records)
                if offset is None:
                    break
        moved = set(target.names())
        aliases = client.get_aliases().aliases
        target.set_aliases({a.alias_name: a.collection_name for a in aliases if a.collection_name in moved})
    finally:
        client.close()
        target.close()
    backup = folder / _LOCAL_MODE_BACKUP
    backup.mkdir(exist_ok=True)
    for part in (_LOCAL_MODE_COLLECTIONS, "meta.json"):
        if (folder / part).exists():
            (folder / part).rename(backup / part)
    (edge_root / _MIGRATING).unlink()
    logger.info(
        "moved the local-mode index to Qdrant Edge; the old files are in local-mode/",
        extra={"folder": str(folder), "points": copied},
    )
    return copied


def _edge_point(record: Any) -> Any:
    """A local-mode record (``id``, ``vector`` by name, ``payload``) as an Edge point."""
    import qdrant_edge as E

    vectors = record.vector
    sparse = vectors[SPARSE_VECTOR]
    return E.Point(
        str(record.id),
        {
            DENSE_VECTOR: [float(x) for x in vectors[DENSE_VECTOR]],
            SPARSE_VECTOR: E.SparseVector(list(sparse.indices), [float(v) for v in sparse.values]),
        },
        record.payload or {},
    )
