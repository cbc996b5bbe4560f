"""Sealing a Qdrant Edge shard in steps and giving back the pages of its files: the memory side of
``EdgeFolder`` (``qdrant_edge``), which a search or ingest process of the embedded default stays within.

A collection created with ``segment_points`` has its appendable segment sealed every that many points
(``_sealed_layout``, ``ShardPages._seal_if_due``); pages a load, a sealing step or a search mapped are
released once they add up (figures in training/NOTEBOOK.md, issue 28)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from winnow.adapters.qdrant_collection import DENSE_VECTOR
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

_MAPPED_SLACK_KB = 16 * 1024  # see ``ShardPages.searched``
_DENSE_FILES = "/vector_storage-dense/"  # Edge's folder of a segment's dense vectors


class ShardPages:
    """Sealing steps and page releases of the shards of an ``EdgeFolder`` (its base: the folder's lock,
    write lock, read gate and registry of shards are the folder's)."""

    root: Path
    closed: bool
    _lock: threading.RLock
    _writes: threading.Lock
    _reads: Gate
    _written: dict[str, int]
    _mapped: dict[str, dict[str, list[tuple[int, int]]]]
    _mapped_mark: int
    _shards: dict[str, E.EdgeShard]

    def config(self, name: str) -> dict[str, Any] | None:
        raise NotImplementedError  # the folder's

    def sealed(self, name: str) -> bool:
        """Whether the collection was created to be sealed in steps (``segment_points`` in its layout)."""
        config = self.config(name)
        return bool(config and config.get("segment_points"))

    def _loaded(self, name: str) -> None:
        """After a shard is loaded: what loading read (the log's replay, indexes mapped whole) a search
        will not read again is released, before any other thread can reach the shard (see ``write``)."""
        release_mapped_pages(self.root / name)
        self._mapped_mark = mapped_file_kb()

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
