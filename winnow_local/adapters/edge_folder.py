"""The folder of the embedded engine: an Edge shard is one collection's points without a name, metadata or
aliases, so ``EdgeShards`` keeps those beside the shards: ``<root>/edge/<collection>/shard`` (one
``EdgeShard`` per collection), ``<root>/edge/<collection>/collection.json`` (vector layout and metadata),
``<root>/edge/aliases.json``, and ``<root>/edge/.lock`` held by the one process that owns the folder.
Writes, versions and reads are guarded here; sealing and pages are ``edge_pages``'."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from winnow.adapters.qdrant_errors import CollectionNotFound
from winnow.errors import ProviderRejected
from winnow_local.adapters.edge_pages import ShardPages, _appendable_points, _sealed_layout, _unsealed_points
from winnow_local.memory import Gate

if TYPE_CHECKING:
    import qdrant_edge as E

EDGE_SUBDIR = "edge"
_COLLECTION_FILE = "collection.json"
_ALIASES_FILE = "aliases.json"
_SHARD_DIR = "shard"
_FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
_HOLDING_NONE_KEPT = 256  # see ``EdgeFolder.holds_none``


class EdgeShards(ShardPages):
    """The collections, their layouts and the aliases of one folder, or of ``:memory:`` (a throw-away temp
    folder); ``EdgeFolder`` (``qdrant_edge``) adds the stores on them. Thread-safe: Edge shards take
    their own locks; this object guards its registry of shards."""

    def __init__(self, location: str) -> None:
        import portalocker

        self._temporary = location == ":memory:"
        base = Path(tempfile.mkdtemp(prefix="winnow-edge-")) if self._temporary else Path(location)
        self.root = base / EDGE_SUBDIR
        if self._temporary:  # a ":memory:" folder nobody closes still leaves nothing behind
            weakref.finalize(self, shutil.rmtree, str(base), True)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._writes = threading.Lock()  # see ``write``
        self._written: dict[str, int] = {}  # see ``_seal_if_due``
        self._reads = Gate()  # see ``reading``
        self._mapped: dict[str, dict[str, list[tuple[int, int]]]] = {}  # see ``_ranges``
        self._mapped_mark = 0
        self._versions: dict[str, int] = {}  # see ``changing``
        self._changes_in_flight: dict[str, int] = {}
        self._versions_lock = threading.Lock()
        self._holding_none: dict[tuple[str, int, str], bool] = {}  # see ``holds_none``
        self._shards: dict[str, E.EdgeShard] = {}
        self._configs: dict[str, dict[str, Any]] = {}
        self.closed = False
        self._flock = (self.root / ".lock").open("w")
        try:
            portalocker.lock(
                self._flock, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException as exc:
            self._flock.close()
            # What qdrant-client's local mode raises too (opened to move an old folder): one handler for both.
            raise RuntimeError(
                f"Qdrant Edge storage {self.root} is already accessed by another process"
            ) from exc

    def close(self) -> None:
        import portalocker

        with self._lock:
            if self.closed:
                return
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()
            self._mapped.clear()
            self.closed = True
            portalocker.unlock(self._flock)
            self._flock.close()
            if self._temporary:
                shutil.rmtree(self.root.parent, ignore_errors=True)

    # --- collections --------------------------------------------------------------------------------
    def names(self) -> list[str]:
        self._check_open()
        return sorted(p.parent.name for p in self.root.glob(f"*/{_COLLECTION_FILE}"))

    def config(self, name: str) -> dict[str, Any] | None:
        """The collection's layout and metadata (``collection.json``), or None when it does not exist."""
        with self._lock:
            self._check_open()
            cached = self._configs.get(name)
            if cached is not None:
                return cached
            path = self.root / name / _COLLECTION_FILE
            if not _NAME.match(name) or not path.exists():
                return None
            config: dict[str, Any] = json.loads(path.read_text())
            self._configs[name] = config
            return config

    def create(
        self,
        name: str,
        dense: dict[str, int],
        sparse: Sequence[str],
        metadata: dict[str, Any] | None,
        segment_points: int = 0,
    ) -> None:
        """A collection with cosine ``dense`` vectors of the given sizes and IDF-weighted ``sparse`` ones;
        with ``segment_points``, its appendable segment is sealed at that many points (``_sealed_layout``)."""
        import qdrant_edge as E

        if not _NAME.match(name):
            raise ProviderRejected(f"Qdrant Edge: collection name {name!r} is not allowed")
        config = {
            "format": _FORMAT,
            "vectors": {n: {"size": size, "distance": "Cosine"} for n, size in dense.items()},
            "sparse_vectors": {n: {"modifier": "idf"} for n in sparse},
            "metadata": metadata,
            **({"segment_points": segment_points} if segment_points > 0 else {}),
        }
        edge_config = E.EdgeConfig(
            vectors={
                # Cold: mapped, read in as searched, not loaded whole at open (a new shard's first chunk
                # is 32 MB however few its vectors; training/NOTEBOOK.md, issue 28).
                n: E.EdgeVectorParams(size=size, distance=E.Distance.Cosine, memory=E.Memory.Cold)
                for n, size in dense.items()
            },
            sparse_vectors={
                n: E.EdgeSparseVectorParams(
                    modifier=E.Modifier.Idf, memory=E.Memory.Cold if segment_points > 0 else None
                )
                for n in sparse
            },
            **_sealed_layout(max(dense.values(), default=0), segment_points),
        )
        with self._lock, self.changing(name):
            self._check_open()
            folder = self.root / name
            if (folder / _COLLECTION_FILE).exists():
                raise ProviderRejected(f"Qdrant Edge: collection {name} already exists")
            shutil.rmtree(folder, ignore_errors=True)  # a half-made collection from a crash
            folder.mkdir(parents=True)
            try:
                shard = E.EdgeShard.create(str(folder / _SHARD_DIR), edge_config)
            except Exception:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            self._shards[name] = shard
            # Written last: the collection exists for readers only once its layout is on disk.
            _write_json(folder / _COLLECTION_FILE, config)
            self._configs[name] = config

    def delete(self, name: str) -> bool:
        with self._lock, self.changing(name):
            if self.config(name) is None:
                return False
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
            self._configs.pop(name, None)
            self._written.pop(name, None)
            self._mapped.pop(name, None)
            folder = self.root / name
            (folder / _COLLECTION_FILE).unlink()
            shutil.rmtree(folder, ignore_errors=True)
            self.set_aliases({a: c for a, c in self.aliases().items() if c != name})
        return True

    def shard(self, name: str) -> E.EdgeShard:
        shard = self._shards.get(name)
        if shard is not None and not self.closed:
            return shard
        import qdrant_edge as E

        with self._lock:
            if self.config(name) is None:
                raise CollectionNotFound(f"Qdrant Edge: collection {name} not found")
            shard = self._shards.get(name)
            if shard is None:
                shard = E.EdgeShard.load(str(self.root / name / _SHARD_DIR))
                self._loaded(name)
                self._shards[name] = shard
            return shard

    def write(self, name: str, operation: E.UpdateOperation, points: int = 0) -> None:
        """Apply ``operation`` to the collection, then let Edge's optimizer seal its appendable segment if
        it is due (``_seal_if_due``); ``points``: how many points the operation puts in the appendable
        segment (an upsert's, a payload change's). Writes to a sealed collection go one at a time (Edge
        applies a shard's updates one at a time anyway), so that ``release_mapped_pages`` after a sealing
        step runs while no write can unmap a file of the shard and let its addresses be reused: advice on
        a range that had become another mapping would drop that mapping's pages. Other collections write
        as before."""
        if not self.sealed(name):
            with self.changing(name):
                self.shard(name).update(operation)
            return
        with self._writes, self.changing(name):
            self._mapped.pop(name, None)  # a write may map or unmap the shard's files
            shard = self.shard(name)
            if name not in self._written:
                stored = _appendable_points(self.root / name / _SHARD_DIR)
                self._written[name] = max(_unsealed_points(shard), stored or 0)
            shard.update(operation)
            self._written[name] += points
            self._seal_if_due(name, shard)

    @contextmanager
    def changing(self, name: str) -> Iterator[None]:
        """Around every change of a collection's points (a write, its creation or deletion): its version
        moves when the change starts and again when it ends, and ``version`` reads None in between, so a
        search that found the same version before and after it ran saw no change (``holds_none``)."""
        with self._versions_lock:
            self._changes_in_flight[name] = self._changes_in_flight.get(name, 0) + 1
            self._versions[name] = self._versions.get(name, 0) + 1
        try:
            yield
        finally:
            with self._versions_lock:
                self._changes_in_flight[name] -= 1
                self._versions[name] += 1

    def version(self, name: str) -> int | None:
        """The collection's version, None while a change of its points runs (``changing``)."""
        with self._versions_lock:
            return self._version(name)

    def _version(self, name: str) -> int | None:
        """``version``; call with ``_versions_lock`` held."""
        return None if self._changes_in_flight.get(name) else self._versions.get(name, 0)

    def holds_none(self, name: str, filters: tuple[Any, ...], version: int) -> bool:
        """Whether no point of the collection as it is at ``version`` passes any of ``filters``: counted
        once per version and filters (about 1-3 ms at 50,000 points, each filter answered from a payload
        index), so that a search whose caller may read every point (one tenant, nothing restricted: the
        embedded default's usual home) can skip a filter that would leave every point in but cost the
        shortlist and the IDF count a check per point (figures in training/NOTEBOOK.md). False when the
        collection changed meanwhile."""
        import qdrant_edge as E

        key = (name, version, repr(filters))
        known = self._holding_none.get(key)
        if known is not None:
            return known
        with self.reading():
            shard = self.shard(name)
            known = all(shard.count(E.CountRequest(exact=True, filter=f)) == 0 for f in filters)
        with self._versions_lock:
            if self._version(name) != version:
                return False
            if len(self._holding_none) >= _HOLDING_NONE_KEPT:
                self._holding_none.clear()  # old versions' and other callers' answers
            self._holding_none[key] = known
        return known

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Around a read of a shard (search, scroll, retrieve, count): a sealing step waits for the reads
        in flight and holds new ones, so no read still holds a segment the step replaces when the step
        returns. The replaced segment's files are then unmapped under the write lock, where a release of
        pages (``searched``) cannot be looking at them, whatever threads Edge drops segments on."""
        with self._reads.shared():
            yield

    # --- aliases ------------------------------------------------------------------------------------
    def aliases(self) -> dict[str, str]:
        with self._lock:
            self._check_open()
            path = self.root / _ALIASES_FILE
            if not path.exists():
                return {}
            return {str(a): str(c) for a, c in json.loads(path.read_text()).items()}

    def point_alias(self, alias: str, name: str) -> None:
        """Point ``alias`` at the collection ``name`` in one step (``CollectionNotFound`` when missing)."""
        with self._lock:
            if self.config(name) is None:
                raise CollectionNotFound(f"Qdrant Edge: collection {name} not found")
            self.set_aliases({**self.aliases(), alias: name})

    def set_aliases(self, aliases: dict[str, str]) -> None:
        """Replace every alias at once: the file is replaced in one rename."""
        with self._lock:
            self._check_open()
            _write_json(self.root / _ALIASES_FILE, aliases)

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("the Qdrant Edge folder is closed")


def _write_json(path: Path, value: Any) -> None:
    """Write to a temp file and rename it over the target, so a crash never leaves half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        json.dump(value, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
