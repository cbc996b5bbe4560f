"""The ``VectorStore`` and ``ActiveIndex`` on Qdrant Edge (``qdrant-edge-py``), an in-process Rust engine:
the embedded default's one engine, written against Edge's own API.

Why: qdrant-client's local mode (the embedded engine before Edge, read now only to move an old folder
to Edge once: ``migrate_local_mode``) evaluates filters and sparse dot products per point in Python; Edge runs
the same queries in Rust (training/NOTEBOOK.md). Never used with a Qdrant URL and never imported by the
search Lambda (``qdrant_edge`` is imported lazily and is not in the Lambda layer).

An Edge shard is one collection's points without a name, metadata or aliases, so ``EdgeFolder`` keeps
those beside the shards: ``<root>/edge/<collection>/shard`` (one ``EdgeShard`` per collection),
``<root>/edge/<collection>/collection.json`` (vector layout and metadata), ``<root>/edge/aliases.json``,
and ``<root>/edge/.lock`` held by the one process that owns the folder. Edge raises a bare ``Exception``
for every failure; the store checks its input first, so what reaches ``qdrant_errors`` is the engine's."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from winnow.adapters.qdrant_collection import (
    DENSE_VECTOR,
    SEARCH_PAYLOAD,
    SPARSE_VECTOR,
    CollectionFacts,
    CollectionStore,
    IndexSchema,
    QueryPlan,
    alias_name,
    collection_metadata,
    collection_name_for,
    profile_from_metadata,
)
from winnow.adapters.qdrant_errors import CollectionNotFound
from winnow.adapters.qdrant_points import payload_of
from winnow.errors import ConfigurationError, ProviderRejected
from winnow.observability import logger
from winnow.ports import ActiveIndex
from winnow_local.memory import (
    Gate,
    mapped_file_kb,
    release_mapped_pages,
    release_ranges,
    room,
    shared_mappings,
)

if TYPE_CHECKING:
    import qdrant_edge as E

    from winnow.models import ChunkPoint, EmbeddingProfile
    from winnow.settings import QdrantSettings

_SUBDIR = "edge"
_COLLECTION_FILE = "collection.json"
_ALIASES_FILE = "aliases.json"
_SHARD_DIR = "shard"
_MIGRATING = ".migrating"  # in <root>/edge while a local-mode index is moved in (migrate_local_mode)
_LOCAL_MODE_COLLECTIONS = "collection"  # qdrant-client's local mode: <root>/collection/<name>, meta.json
_LOCAL_MODE_BACKUP = "local-mode"
_FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
_MAPPED_SLACK_KB = 16 * 1024  # see ``EdgeFolder.searched``
_DENSE_FILES = "/vector_storage-dense/"  # Edge's folder of a segment's dense vectors
_SCORED_PER_READ = 60  # see ``EdgeVectorStore._rescored``
_HOLDING_NONE_KEPT = 256  # see ``EdgeFolder.holds_none``


class EdgeFolder:
    """The collections, their layouts and the aliases of one folder, or of ``:memory:`` (a throw-away temp
    folder). Thread-safe: Edge shards take their own locks; this object guards its registry of shards."""

    def __init__(self, location: str) -> None:
        import portalocker

        self._temporary = location == ":memory:"
        base = Path(tempfile.mkdtemp(prefix="winnow-edge-")) if self._temporary else Path(location)
        self.root = base / _SUBDIR
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

    def store(
        self,
        profile: EmbeddingProfile,
        settings: QdrantSettings,
        *,
        rrf_k: int = 60,
        collection_name: str | None = None,
    ) -> EdgeVectorStore:
        """The store of ``profile``'s collection in this folder (``qdrant_store.store_on``)."""
        return EdgeVectorStore(self, profile, settings, rrf_k=rrf_k, collection_name=collection_name)

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
                # What loading read (the log's replay, indexes mapped whole) a search will not read again;
                # released before any other thread can reach the shard (see ``write``).
                release_mapped_pages(self.root / name)
                self._mapped_mark = mapped_file_kb()
                self._shards[name] = shard
            return shard

    def sealed(self, name: str) -> bool:
        """Whether the collection was created to be sealed in steps (``segment_points`` in its layout)."""
        config = self.config(name)
        return bool(config and config.get("segment_points"))

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

    def searched(self, name: str) -> None:
        """After a search of a sealed collection: once the process holds 16 MB more pages of files than
        after the last release, release the shard's. Why: a search reads a few hundred original vectors
        and payloads of sealed segments, and every page fault maps up to 16 neighbouring pages the page
        cache holds, so a search process at 50,000 chunks came to map every vector and payload file of
        the shard (326 MB after 100 questions, against 206 MB after the first). The pages stay in the
        page cache; the next search maps back what it reads. Skipped while a write runs: the release is
        safe only while nothing maps or unmaps the shard's files, and a search must not wait for an
        ingest. The ranges are looked up once per write (about 3 ms) and released in about 1 ms."""
        if not self.sealed(name) or mapped_file_kb() - self._mapped_mark < _MAPPED_SLACK_KB:
            return
        with self._releasable(name) as releasable:
            if releasable:
                release_ranges(self._ranges(name))
                self._mapped_mark = mapped_file_kb()

    def release_vectors(self, name: str) -> None:
        """Within a search of a sealed collection: release the pages of the shard's dense vectors that
        this process maps. Why: every original vector a search reads maps up to 16 neighbouring pages, so
        the shortlist's originals, read at once, were the first question's peak (figures in
        training/NOTEBOOK.md); released between parts of that read, they never add up. Skipped while a
        write runs, as ``searched`` is."""
        with self._releasable(name) as releasable:
            if releasable:
                release_ranges(self._ranges(name, _DENSE_FILES))

    @contextmanager
    def _releasable(self, name: str) -> Iterator[bool]:
        """Holds writes off, without waiting for one, and the registry of shards; yields whether the
        shard's pages may be released now: no write runs (a write may map or unmap the shard's files) and
        the shard is open. A search must not wait for an ingest, so a running write means no release."""
        if not self._writes.acquire(blocking=False):
            yield False
            return
        try:
            with self._lock:
                yield not self.closed and name in self._shards
        finally:
            self._writes.release()

    def _ranges(self, name: str, part: str = "") -> list[tuple[int, int]]:
        """The address ranges of the shard's shared file mappings of at least 1 MB whose path holds
        ``part``, looked up once per write (about 3 ms); call with ``_writes`` and ``_lock`` held."""
        known = self._mapped.setdefault(name, {})
        if part not in known:
            known[part] = shared_mappings(self.root / name, min_bytes=1 << 20, part=part)
        return known[part]

    def _seal_if_due(self, name: str, shard: E.EdgeShard) -> None:
        """Run Edge's optimizer, which seals the appendable segment once its dense vectors pass the
        collection's ``segment_points`` (a no-op until then, about 27 us). Why seal: an appendable segment
        keeps its sparse index and payload index maps on the heap and is searched by reading every original
        vector, so a search process holding one of 50,000 points was far over its memory budget; sealing
        every few thousand points keeps each conversion (and its memory) small. When this process counts
        that many points written since the last step, the step runs in ``room()``, with the document
        model's session given back: the two together took an ingest past its 400 MB cap. The count is
        this process's (starting from ``_unsealed_points``), so Edge may seal before it says so (points
        the shard held before this process counted them): that step runs beside the model, as before
        ``room()``; a count that says so too early costs one needless ``room()`` per ``segment_points``
        points. The pages a step read and wrote are released after it: an ingest that seals many segments
        would otherwise hold every one of them resident. Only a collection created to be sealed is: on
        one created before (no ``segment_points`` in its layout), Edge's default optimizer would convert
        every point at once and build a graph, the very conversion an ingest has no memory for."""
        config = self.config(name)
        due = config is not None and self._written.get(name, 0) >= config["segment_points"]
        try:
            with room() if due else nullcontext(), self._reads.alone():
                sealed = shard.optimize()
        finally:
            if due:
                self._written[name] = 0  # also when the step failed: not again on every write
        if sealed:
            self._written[name] = 0
            with self._lock:  # nor a collection closed or deleted meanwhile
                release_mapped_pages(self.root / name)
                self._mapped_mark = mapped_file_kb()

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


class EdgeConditions:
    """Qdrant Edge's filter vocabulary (``qdrant_filters``)."""

    def match(self, path: str, value: str | int | bool) -> Any:
        import qdrant_edge as E

        if isinstance(value, bool):
            # qdrant-edge-py 0.9.0 turns a Python bool into the integer 1/0, which never matches a stored
            # boolean; numpy's bool is not an int subclass and arrives as a boolean.
            import numpy as np

            return E.FieldCondition(key=path, match=E.MatchValue(value=np.bool_(value)))  # type: ignore[arg-type]
        return E.FieldCondition(key=path, match=E.MatchValue(value=value))

    def match_any(self, path: str, values: list[str] | list[int]) -> Any:
        import qdrant_edge as E

        return E.FieldCondition(key=path, match=E.MatchAny(any=values))

    def range(self, path: str, gte: float | None, lte: float | None) -> Any:
        import qdrant_edge as E

        bounds = E.RangeFloat(gte=_float(gte), lte=_float(lte))
        return E.FieldCondition(key=path, range=bounds)

    def datetime_range(self, path: str, gte: str | None, lte: str | None) -> Any:
        import qdrant_edge as E

        return E.FieldCondition(key=path, range=E.RangeDateTime(gte=gte, lte=lte))

    def is_empty(self, path: str) -> Any:
        import qdrant_edge as E

        return E.IsEmptyCondition(key=path)

    def filter(
        self,
        must: list[Any] | None = None,
        should: list[Any] | None = None,
        must_not: list[Any] | None = None,
    ) -> Any:
        import qdrant_edge as E

        return E.Filter(must=must, should=should, must_not=must_not)


class EdgeVectorStore(CollectionStore):
    """``CollectionStore`` on an ``EdgeFolder``."""

    conditions = EdgeConditions()

    def __init__(
        self,
        folder: EdgeFolder,
        profile: EmbeddingProfile,
        settings: QdrantSettings,
        *,
        rrf_k: int = 60,
        collection_name: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.folder = folder
        super().__init__(profile, settings, rrf_k=rrf_k, collection_name=collection_name, sleep=sleep)

    def for_profile(self, profile: EmbeddingProfile) -> EdgeVectorStore:
        return EdgeVectorStore(self.folder, profile, self._settings, rrf_k=self._rrf_k, sleep=self._sleep)

    def close(self) -> None:
        self.folder.close()

    def active_index(self) -> EdgeActiveIndex:
        return EdgeActiveIndex(self.folder, self._settings)

    # --- the engine calls ---------------------------------------------------------------------------
    def _exists(self) -> bool:
        return self.folder.config(self._name) is not None

    def _create(self) -> None:
        self.folder.create(
            self._name,
            {DENSE_VECTOR: self._profile.dimension},
            [SPARSE_VECTOR],
            collection_metadata(self._profile),
            self._settings.edge_segment_points,
        )

    def _facts(self) -> CollectionFacts:
        config = self.folder.config(self._name)
        if config is None:
            raise CollectionNotFound(f"Qdrant Edge: collection {self._name} not found")
        dense = config["vectors"].get(DENSE_VECTOR)
        return CollectionFacts(
            metadata=config.get("metadata"),
            dense_size=int(dense["size"]) if dense else None,
            has_sparse=SPARSE_VECTOR in config["sparse_vectors"],
            indexed={
                name: str(index.data_type).rsplit(".", 1)[-1].lower()
                for name, index in self.folder.shard(self._name).info().payload_schema.items()
            },
        )

    def _create_index(self, field: str, schema: IndexSchema) -> None:
        import qdrant_edge as E

        kinds = {
            "keyword": E.PayloadSchemaType.Keyword,
            "integer": E.PayloadSchemaType.Integer,
            "float": E.PayloadSchemaType.Float,
            "bool": E.PayloadSchemaType.Bool,
            "datetime": E.PayloadSchemaType.Datetime,
        }
        params = E.KeywordIndexParams(is_tenant=True) if schema == "tenant" else kinds[schema]
        self._update(E.UpdateOperation.create_field_index(field, params))

    def _collection_names(self) -> list[str]:
        return self.folder.names()

    def _write(self, points: Sequence[ChunkPoint]) -> None:
        import qdrant_edge as E

        batch = [
            E.Point(
                p.point_id,
                {
                    DENSE_VECTOR: [float(x) for x in p.dense],
                    SPARSE_VECTOR: E.SparseVector(
                        list(p.sparse.indices), [float(v) for v in p.sparse.values]
                    ),
                },
                payload_of(p),
            )
            for p in points
        ]
        self._update(E.UpdateOperation.upsert_points(batch), points=len(batch))

    def _delete_ids(self, ids: list[str]) -> None:
        import qdrant_edge as E

        self._update(E.UpdateOperation.delete_points(list(ids)))

    def _delete_where(self, where: Any) -> None:
        import qdrant_edge as E

        self._update(E.UpdateOperation.delete_points_by_filter(where))

    def _set_payload_where(self, where: Any, payload: dict[str, Any], points: int) -> None:
        import qdrant_edge as E

        # The points change segment: the appendable one takes each (``EdgeFolder.write``'s count).
        self._update(E.UpdateOperation.set_payload_by_filter(where, payload, None), points=points)

    def _count_where(self, where: Any) -> int:
        import qdrant_edge as E

        with self.folder.reading():
            return int(self.folder.shard(self._name).count(E.CountRequest(exact=True, filter=where)))

    def _scroll_page(
        self, where: Any, with_payload: bool | list[str], with_dense: bool, limit: int, offset: Any
    ) -> tuple[list[Any], Any]:
        import qdrant_edge as E

        request = E.ScrollRequest(
            offset=offset,
            limit=limit,
            filter=where,
            with_payload=with_payload,
            with_vector=[DENSE_VECTOR] if with_dense else False,
        )
        with self.folder.reading():
            records, next_offset = self.folder.shard(self._name).scroll(request)
        return list(records), next_offset

    def _retrieve_dense(self, ids: list[str]) -> list[Any]:
        with self.folder.reading():
            return list(self.folder.shard(self._name).retrieve(list[Any](ids), False, [DENSE_VECTOR]))

    def _query(self, plans: list[QueryPlan]) -> list[list[Any]]:
        """The plans' answers; where the caller may read every point of the collection (``holds_none``
        of ``QueryPlan.unreadable``), without the filter that says so, provided no change of the points
        ran meanwhile: else again with it. The filters of a request are always kept."""
        version = self.folder.version(self._name)
        if version is not None and any(
            p.unreadable is not None and self.folder.holds_none(self._name, p.unreadable, version)
            for p in plans
        ):
            bare = [
                dataclasses.replace(p, where=None, idf_corpus=None) if p.unreadable is not None else p
                for p in plans
            ]
            lists = self._answers(bare)
            if self.folder.version(self._name) == version:
                return lists
        return self._answers(plans)

    def _answers(self, plans: list[QueryPlan]) -> list[list[Any]]:
        import qdrant_edge as E

        with self.folder.reading():
            shard = self.folder.shard(self._name)
            narrowed = [self._narrowed(p, shard) for p in plans]
            requests = [
                self._shortlist(p) if n else self._request(p) for p, n in zip(plans, narrowed, strict=True)
            ]
            found = shard.query_batch(E.QueryBatchRequest(requests))
            lists = [
                self._rescored(shard, p, list(hits)) if n else list(hits)
                for p, hits, n in zip(plans, found, narrowed, strict=True)
            ]
        self.folder.searched(self._name)
        return lists

    def _rescored(self, shard: E.EdgeShard, plan: QueryPlan, shortlist: list[Any]) -> list[Any]:
        """The best ``plan.limit`` of ``shortlist`` by their original vectors, ties by id (Edge's order
        among equal scores changes from call to call), with their payloads; or, when a point left off the
        shortlist could still beat them (``_shortlist_sufficed``), the answer of Edge's own re-scoring in
        every segment. The originals are read ``_SCORED_PER_READ`` at a time, the pages of what was read
        before released ahead of each part and of the payloads (``EdgeFolder.release_vectors``): one part's
        pages at most are ever on top of the process."""
        if not shortlist:
            return []
        scored = []
        for start in range(0, len(shortlist), _SCORED_PER_READ):
            self.folder.release_vectors(self._name)  # what the step before read
            scored += shard.query(self._scores_among(plan, shortlist[start : start + _SCORED_PER_READ]))
        self.folder.release_vectors(self._name)
        scored.sort(key=lambda hit: (-hit.score, str(hit.id)))
        best = scored[: plan.limit]
        if not _shortlist_sufficed(plan, shortlist, best, self._shortlist_size(plan)):
            return list(shard.query(self._request(plan)))
        records = {
            str(record.id): record
            for record in shard.retrieve(
                [hit.id for hit in best], SEARCH_PAYLOAD, [DENSE_VECTOR] if plan.with_dense else False
            )
        }
        return [
            ScoredRecord(record, hit.score)
            for hit in best
            if (record := records.get(str(hit.id))) is not None
        ]

    def _narrowed(self, plan: QueryPlan, shard: E.EdgeShard) -> bool:
        """Whether a dense query of a sealed collection is answered in two steps: a shortlist of the
        shard's best points by their int8 copies (``_shortlist``), then their scores by the original
        vectors (``_scores_among``), of which ``_rescored`` keeps the best. Why: Edge's own re-scoring
        reads ``oversampling`` x limit originals in every segment, and each one read from the mapped file
        maps 16 neighbouring pages; here only the shortlist's are read. Where the shortlist may have left
        out an answer, ``_rescored`` falls back to Edge's re-scoring (figures in training/NOTEBOOK.md)."""
        return (
            isinstance(plan.vector, list)
            and self._settings.quantization_rescore
            and self.folder.sealed(self._name)
            and shard.info().segments_count > 1  # a segment sealed: int8 copies to narrow by (22 us)
        )

    def _shortlist(self, plan: QueryPlan) -> E.QueryRequest:
        """The ids of the best ``_shortlist_size`` points by their int8 copies (exact in the appendable
        segment): no payload, no vector, no original read."""
        import qdrant_edge as E

        return E.QueryRequest(
            limit=self._shortlist_size(plan),
            query=E.Query.Nearest(_edge_vector(plan.vector), using=plan.using),
            filter=plan.where,
            with_payload=False,
            with_vector=False,
            params=E.SearchParams(quantization=E.QuantizationSearchParams(rescore=False)),
        )

    def _shortlist_size(self, plan: QueryPlan) -> int:
        """One and a half times the candidates Edge re-scores in each segment: a margin over int8's error
        wide enough that ``_shortlist_sufficed`` seldom sends a question back to Edge, and no wider, as
        every original read costs time and pages (training/NOTEBOOK.md)."""
        return max(plan.limit, math.ceil(1.5 * plan.limit * self._settings.quantization_oversampling))

    def _request(self, plan: QueryPlan) -> E.QueryRequest:
        """The Edge request of ``plan`` in one step."""
        import qdrant_edge as E

        return E.QueryRequest(
            limit=plan.limit,
            query=E.Query.Nearest(_edge_vector(plan.vector), using=plan.using),
            filter=plan.where,
            score_threshold=plan.score_threshold,
            with_payload=SEARCH_PAYLOAD,
            with_vector=[DENSE_VECTOR] if plan.with_dense else False,
            params=self._search_params(plan),
        )

    def _scores_among(self, plan: QueryPlan, shortlist: list[Any]) -> E.QueryRequest:
        """The scores by original vectors of every shortlisted point the filter still admits (a write
        between the steps may have changed who may read one), ids only."""
        import qdrant_edge as E

        ids = {hit.id for hit in shortlist}
        where = E.Filter(must=[E.HasIdCondition(ids), *([plan.where] if plan.where is not None else [])])
        return E.QueryRequest(
            limit=len(ids),
            query=E.Query.Nearest(_edge_vector(plan.vector), using=plan.using),
            filter=where,
            score_threshold=plan.score_threshold,
            with_payload=False,
            with_vector=False,
            params=_ORIGINALS_ONLY(),
        )

    def _search_params(self, plan: QueryPlan) -> E.SearchParams | None:
        """A dense query of a sealed collection not narrowed re-scores its int8 candidates with the original
        vectors, so a sealed segment ranks and scores as the appendable one does (Edge returns the int8
        scores otherwise); a sparse one may count its IDF over a subset of the points."""
        import qdrant_edge as E

        if isinstance(plan.vector, list):
            if not self.folder.sealed(self._name):
                return None  # no int8 copies to re-score
            rescore, oversampling = (
                self._settings.quantization_rescore,
                self._settings.quantization_oversampling,
            )
            return E.SearchParams(
                quantization=E.QuantizationSearchParams(rescore=rescore, oversampling=oversampling)
            )
        return None if plan.idf_corpus is None else E.SearchParams(idf=E.IdfParams(corpus=plan.idf_corpus))

    def _update(self, operation: E.UpdateOperation, points: int = 0) -> None:
        self.folder.write(self._name, operation, points)


class EdgeActiveIndex(ActiveIndex):
    """The ``<prefix>_active`` alias of an ``EdgeFolder``: as ``QdrantActiveIndex`` on a Qdrant server."""

    def __init__(self, folder: EdgeFolder, settings: QdrantSettings) -> None:
        self._folder = folder
        self._settings = settings
        self.alias = alias_name(settings)

    def collection_for(self, profile: EmbeddingProfile) -> str:
        return collection_name_for(self._settings, profile)

    def active_collection(self) -> str | None:
        return self._folder.aliases().get(self.alias)

    def active(self) -> EmbeddingProfile | None:
        name = self.active_collection()
        config = self._folder.config(name) if name is not None else None
        return profile_from_metadata(config.get("metadata")) if config is not None else None

    def activate(self, profile: EmbeddingProfile) -> None:
        name = self.collection_for(profile)
        try:
            self._folder.point_alias(self.alias, name)
        except CollectionNotFound:
            raise ConfigurationError(
                f"cannot point searches at {name}: the collection does not exist"
            ) from None

    def available(self) -> list[EmbeddingProfile]:
        prefix = f"{self._settings.collection_prefix}_"
        profiles = []
        for name in self._folder.names():
            config = self._folder.config(name) if name.startswith(prefix) else None
            profile = profile_from_metadata(config.get("metadata")) if config is not None else None
            if profile is not None:
                profiles.append(profile)
        return profiles


def _sealed_layout(dimension: int, segment_points: int) -> dict[str, Any]:
    """What a collection sealed every ``segment_points`` points is created with (none when 0): Edge's
    optimizer seals the appendable segment once its dense vectors pass that size (its thresholds are in KB
    of vectors), into a segment with no graph (search stays exact), int8 copies of the vectors kept in
    RAM that a search scans before it re-scores its candidates from the mapped originals, and its sparse
    index mapped (``Memory.Cold`` above). Merges are capped at one segment's size, so no optimization
    rebuilds much more than ``segment_points`` points: sealed segments are never merged into bigger ones."""
    import qdrant_edge as E

    if segment_points <= 0 or dimension <= 0:
        return {}
    kilobytes = max(1, segment_points * dimension * 4 // 1024)
    return {
        "hnsw_config": E.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
        "quantization_config": E.ScalarQuantizationConfig(type=E.ScalarType.Int8, always_ram=True),
        "optimizers": E.EdgeOptimizersConfig(
            indexing_threshold=kilobytes, max_segment_size=kilobytes, default_segment_number=2
        ),
    }


def _appendable_points(shard_dir: Path) -> int | None:
    """The dense vectors of the shard's appendable segment as it was last flushed (Edge 0.9 keeps the
    count in ``vectors/status.dat``, a little-endian u64, where a sealed segment has a matrix instead):
    where a process starts counting when the shard's counts read low (``_unsealed_points``). None when
    there is no such file or it cannot be read: the layout is Edge's, not a contract."""
    total, found = 0, False
    for status in shard_dir.glob(f"segments/*/vector_storage-{DENSE_VECTOR}/vectors/status.dat"):
        try:
            data = status.read_bytes()
        except OSError:
            return None
        if len(data) < 8:
            return None
        total += int.from_bytes(data[:8], "little")
        found = True
    return total if found else None


def _unsealed_points(shard: E.EdgeShard) -> int:
    """About the points whose dense vector is not in a sealed segment yet (about 22 us): where a process
    starts counting (``EdgeFolder._seal_if_due``). Every Winnow point has one dense and one sparse vector,
    and Edge counts every non-empty sparse vector as indexed, so what is not indexed is the appendable
    segment's dense vectors, plus the points whose sparse vector is empty, minus the replaced and deleted
    points sealed segments still count (so it can read low)."""
    info = shard.info()
    return max(0, 2 * info.points_count - info.indexed_vectors_count)


def _edge_vector(vector: list[float] | Any) -> Any:
    import qdrant_edge as E

    if isinstance(vector, list):
        return [float(x) for x in vector]
    return E.SparseVector(list(vector.indices), [float(v) for v in vector.values])


class ScoredRecord:
    """A point Edge retrieved (no score of its own) with the score the shortlist's second step gave it."""

    __slots__ = ("id", "payload", "score", "vector")

    def __init__(self, record: Any, score: float) -> None:
        self.id, self.payload, self.vector, self.score = record.id, record.payload, record.vector, score


# How far an int8 score may stray from the original vectors' cosine for ``_shortlist_sufficed``: about
# seven standard deviations of the error measured on 384-d vectors (training/NOTEBOOK.md, issue 28).
INT8_SCORE_SLACK = 0.01


def _shortlist_sufficed(plan: QueryPlan, shortlist: list[Any], best: list[Any], size: int) -> bool:
    """Whether no point left off ``shortlist`` (hits by int8 score, best first, ``size`` asked for) can
    belong in ``best`` (the shortlist's best by original vectors): the shortlist held every match, or its
    last int8 score is more than ``INT8_SCORE_SLACK`` under the score a point must beat (the last of a
    full answer, else the threshold). Otherwise (near-equal points crowd the shortlist, or a write took
    shortlisted points away between the steps) the answer must come from Edge's own re-scoring."""
    if len(shortlist) < size:
        return True
    if len(best) >= plan.limit:
        bar = best[-1].score
    elif plan.score_threshold is not None:
        bar = plan.score_threshold
    else:
        return False
    return float(shortlist[-1].score) + INT8_SCORE_SLACK < float(bar)


def _ORIGINALS_ONLY() -> E.SearchParams:
    """Search parameters that score by the original vectors, never their int8 copies."""
    import qdrant_edge as E

    return E.SearchParams(exact=True, quantization=E.QuantizationSearchParams(ignore=True))


def _float(value: float | None) -> float | None:
    return float(value) if value is not None else None


def _write_json(path: Path, value: Any) -> None:
    """Write to a temp file and rename it over the target, so a crash never leaves half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        json.dump(value, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


# --- the engine of a local folder ----------------------------------------------------------------------
# One Edge engine per local folder and process (it locks its folder).
_LOCAL_CLIENTS: dict[str, EdgeFolder] = {}
_LOCAL_CLIENTS_LOCK = threading.Lock()


def open_embedded(settings: QdrantSettings, local_path: Path) -> EdgeFolder:
    """Qdrant Edge at ``settings.path`` or ``local_path`` (``:memory:`` allowed): what
    ``make_qdrant_client`` opens without a URL (the ``qdrant`` entry point of ``winnow.embedded``). A local
    folder admits one engine per process, so they are shared by path."""
    location = settings.path or str(local_path)
    if location == ":memory:":
        return EdgeFolder(location)
    resolved = str(Path(location).expanduser().resolve())
    with _LOCAL_CLIENTS_LOCK:
        cached = _LOCAL_CLIENTS.get(resolved)
        if cached is not None and not cached.closed:
            return cached
        Path(resolved).mkdir(parents=True, exist_ok=True)
        try:
            migrate_if_needed(Path(resolved), settings)
            client = EdgeFolder(resolved)
        except RuntimeError as exc:  # portalocker: another process holds the folder
            raise ConfigurationError(
                f"Qdrant local storage {resolved} is in use by another process (a running `winnow serve`?): "
                "ask the server instead with --api-url http://127.0.0.1:3000 (its address), stop it, or give "
                "this command another state folder with WINNOW_HOME"
            ) from exc
        _LOCAL_CLIENTS[resolved] = client
        return client


def migrate_if_needed(folder: Path, settings: QdrantSettings) -> bool:
    """Move a folder that holds only an index made by qdrant-client's local mode (the embedded engine
    before Edge), or one whose move was cut short, to Edge (``migrate_local_mode``), so an upgrade never
    shows an empty index and never re-embeds. Returns whether it moved anything."""
    collections = folder / _LOCAL_MODE_COLLECTIONS
    edge = folder / _SUBDIR
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

    edge_root = folder / _SUBDIR
    shutil.rmtree(edge_root, ignore_errors=True)  # what a move cut short left
    edge_root.mkdir(parents=True)
    (edge_root / _MIGRATING).touch()
    client = QdrantClient(path=str(folder))
    target = EdgeFolder(str(folder))
    copied = 0
    try:
        for described in client.get_collections().collections:
            name = described.name
            profile = profile_from_metadata(client.get_collection(name).config.metadata)
            if profile is None:  # not a collection Winnow made
                continue
            store = target.store(profile, settings, collection_name=name)
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
