"""Reconcile's comparison of bucket, ledger and points, and its paging, on real local parts: the folder
bucket, the SQLite ledger and Qdrant in local mode. The queue records what it is given (ingest is
exercised end to end in tests/integration/test_reconcile.py)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from winnow.adapters.qdrant_store import QdrantVectorStore
from winnow.errors import BadRequest, EnqueueFailed
from winnow.ingest.events import ObjectEvent
from winnow.ingest.reading import READER_VERSION
from winnow.ingest.service import point_id
from winnow.models import Chunk, ChunkPoint, DocumentStatus, EmbeddingProfile, LedgerRecord, SparseVector
from winnow.ports import EventQueue
from winnow.reconcile.service import (
    OutOfOrderListing,
    Reconciler,
    decode_token,
    encode_token,
    merge_by_key,
)
from winnow.reconcile.stats import ReconcileStats
from winnow.settings import QdrantSettings
from winnow_local.adapters.ledger_sqlite import SqliteLedger
from winnow_local.adapters.objects_local import LocalObjectSource

PROFILE = EmbeddingProfile("test", "unit-model", 4)
OLD_PROFILE = EmbeddingProfile("test", "older-model", 4)


class RecordingQueue(EventQueue):
    def __init__(self, fail_keys: Sequence[str] = ()) -> None:
        self.sent: list[ObjectEvent] = []
        self.fail_keys = set(fail_keys)

    def send(self, events: Sequence[ObjectEvent]) -> None:
        failed = [e.key for e in events if e.key in self.fail_keys]
        self.sent += [e for e in events if e.key not in self.fail_keys]
        if failed:
            raise EnqueueFailed("refused", keys=failed)


@dataclass
class World:
    objects: LocalObjectSource
    ledger: SqliteLedger
    store: QdrantVectorStore

    def reconciler(self, queue: EventQueue, **kwargs: object) -> Reconciler:
        return Reconciler(self.objects, self.ledger, self.store, queue, PROFILE, **kwargs)  # type: ignore[arg-type]


def _later() -> str:
    return (datetime.now(UTC) + timedelta(minutes=5)).isoformat(timespec="seconds")


def _points(tenant: str, key: str, n: int) -> list[ChunkPoint]:
    out = []
    for i in range(n):
        chunk = Chunk(index=i, text=f"{key} chunk {i}", title="t", section_path=(), page=None)
        out.append(
            ChunkPoint(
                point_id=point_id(tenant, key, chunk.content_hash, 0),
                tenant=tenant,
                key=key,
                chunk=chunk,
                dense=[1.0, float(i), 0.5, 0.25],
                sparse=SparseVector([1], [1.0]),
                metadata={},
                source_type="markdown",
                doc_version="v1",
            )
        )
    return out


def _indexed(world: World, key: str, chunks: int = 2, **overrides: object) -> None:
    tenant = key.split("/", 1)[0]
    info = world.objects.head(key) if overrides.pop("exists", True) else None
    values: dict[str, object] = {
        "tenant": tenant,
        "key": key,
        "status": DocumentStatus.INDEXED,
        "etag": info.etag if info else '"gone"',
        "content_sha256": hashlib.sha256(key.encode()).hexdigest(),
        "chunks": chunks,
        "profile": PROFILE.slug,
        "updated_at": _later(),
    }
    values.update(overrides)
    world.ledger.put(LedgerRecord(**values))  # type: ignore[arg-type]


@pytest.fixture
def world(tmp_path: Path) -> World:
    from qdrant_client import QdrantClient

    store = QdrantVectorStore(QdrantClient(location=":memory:"), PROFILE, QdrantSettings())
    store.ensure_collection()
    return World(LocalObjectSource(tmp_path / "bucket"), SqliteLedger(":memory:"), store)


def _drifted(world: World) -> None:
    """One document per case reconcile distinguishes, over four tenants and the bucket root."""
    o, s = world.objects, world.store
    for key in ("acme/a.md", "acme/b.md", "acme/c.md", "acme/d.md", "acme/g.md", "acme/h.md", "globex/x.md"):
        o.put(key, f"# {key}\n\nbody of {key}".encode())
    o.put("acme/a.md.metadata.json", b'{"metadataAttributes": {"year": 2024}}')
    o.put("readme.txt", b"not in any tenant")
    _indexed(world, "acme/a.md")
    s.upsert(_points("acme", "acme/a.md", 2))  # unchanged
    _indexed(world, "acme/c.md", etag='"an-older-version"')  # modified
    s.upsert(_points("acme", "acme/c.md", 2))
    _indexed(world, "acme/d.md")
    s.upsert(_points("acme", "acme/d.md", 1))  # repaired: one of two points lost
    _indexed(world, "acme/e.md", exists=False)
    s.upsert(_points("acme", "acme/e.md", 2))  # deleted: the object is gone
    s.upsert(_points("acme", "acme/f.md", 3))  # orphans: nobody owns these
    _indexed(world, "acme/g.md", status=DocumentStatus.FAILED, error="corrupt")  # failed, same version
    _indexed(world, "acme/h.md", profile=OLD_PROFILE.slug)  # modified: other embedding profile
    _indexed(world, "initech/gone.md", exists=False)  # a tenant whose objects are all gone
    s.upsert(_points("umbrella", "umbrella/z.md", 2))  # a tenant with points only


def test_every_kind_of_drift_is_classified_and_sent_once(world: World) -> None:
    # Given a bucket, ledger and store that disagree in every way reconcile knows
    _drifted(world)
    queue = RecordingQueue()
    # When the whole bucket is reconciled
    result = world.reconciler(queue, ledger_page_size=2).run()
    # Then the statistics count each case once
    stats = result.totals
    assert result.continuation is None and stats.complete
    assert stats.counters() == {
        "scanned": 8,  # a b c d g h, globex/x.md, readme.txt
        "new": 2,  # b, globex/x.md
        "modified": 2,  # c (ETag), h (profile)
        "unchanged": 1,
        "deleted": 2,  # e, initech/gone.md
        "failed": 2,  # g (recorded failed), readme.txt (no tenant)
        "orphans_removed": 5,  # f (3), umbrella/z.md (2)
        "repaired": 1,
        "metadata_scanned": 1,
        "metadata_modified": 0,
        "reread": 0,  # records of an older reader stay unchanged unless a run asks for reread
    }
    # and the queue got one synthetic event per document to (re)index or remove, without sequencer
    sent = sorted((e.action, e.key) for e in queue.sent)
    assert sent == [
        ("created", "acme/b.md"),
        ("created", "acme/c.md"),
        ("created", "acme/d.md"),
        ("created", "acme/h.md"),
        ("created", "globex/x.md"),
        ("removed", "acme/e.md"),
        ("removed", "initech/gone.md"),
    ]
    assert all(e.sequencer is None for e in queue.sent)
    created_b = next(e for e in queue.sent if e.key == "acme/b.md")
    assert created_b.etag == world.objects.head("acme/b.md").etag.strip('"')
    # and orphan points are gone while owned points stay
    counts = world.store.count_by_document()
    assert ("acme", "acme/f.md") not in counts and ("umbrella", "umbrella/z.md") not in counts
    assert counts[("acme", "acme/a.md")] == 2 and counts[("acme", "acme/e.md")] == 2


def test_dry_run_reports_the_same_and_changes_nothing(world: World) -> None:
    # Given the same drift
    _drifted(world)
    before = world.store.count_by_document()
    queue = RecordingQueue()
    # When it is reconciled with dry_run
    stats = world.reconciler(queue).run(dry_run=True).totals
    # Then it reports what it would do, sends nothing and deletes nothing
    assert stats.dry_run
    assert (stats.new, stats.modified, stats.deleted, stats.repaired, stats.orphans_removed) == (
        2,
        2,
        2,
        1,
        5,
    )
    assert queue.sent == []
    assert world.store.count_by_document() == before


def test_paged_run_resumes_where_it_stopped_and_matches_a_single_run(world: World, tmp_path: Path) -> None:
    # Given the drift, and a run that must stop after every third document
    _drifted(world)
    queue = RecordingQueue()
    reconciler = world.reconciler(queue, ledger_page_size=2, batch_size=4)
    # When it runs, page after page, each resuming from the previous continuation token
    result, invocations = _run_paged(reconciler, per_invocation=3)
    # Then it took several invocations, and totals and events are those of one uninterrupted run
    assert invocations > 3
    assert result.totals.invocations == invocations
    assert result.totals.counters()["new"] == 2 and result.totals.counters()["deleted"] == 2
    assert result.totals.orphans_removed == 5 and result.totals.scanned == 8
    keys = sorted(e.key for e in queue.sent)
    assert keys == sorted(set(keys)), "a document was sent twice"
    assert len(keys) == 7


def test_reread_sends_what_an_older_reader_made_only_when_asked_across_pages(world: World) -> None:
    # Given five indexed documents, complete and current, three of them read by an older reader
    for name in "abcde":
        key = f"acme/{name}.md"
        world.objects.put(key, f"# {name}\n\nbody".encode())
        _indexed(world, key, reader=READER_VERSION if name in "ab" else READER_VERSION - 1)
        world.store.upsert(_points("acme", key, 2))
    older = ["acme/c.md", "acme/d.md", "acme/e.md"]
    # When reconciled without reread, then nothing is sent: re-reading is never done by default
    queue = RecordingQueue()
    stats = world.reconciler(queue).run().totals
    assert (stats.unchanged, stats.reread, queue.sent) == (5, 0, [])
    # When a dry run asks for reread, then it counts them and sends nothing
    stats = world.reconciler(queue).run(dry_run=True, reread=True).totals
    assert (stats.unchanged, stats.reread, queue.sent) == (2, 3, [])
    # When a run with reread stops after every document and each invocation resumes from the token
    # alone (as the chained Lambda does: only the continuation is passed on)
    result, invocations = _run_paged(world.reconciler(queue), per_invocation=1, reread=True)
    # Then the flag held in every invocation: the older reader's documents were sent once each
    assert invocations >= 5
    assert (result.totals.unchanged, result.totals.reread, result.totals.scanned) == (2, 3, 5)
    assert sorted(e.key for e in queue.sent) == older
    assert all(e.action == "created" and e.sequencer is None for e in queue.sent)


def test_events_that_cannot_be_queued_count_as_failed(world: World) -> None:
    # Given two new objects, one of which the queue refuses
    world.objects.put("acme/one.md", b"# one\n\ntext")
    world.objects.put("acme/two.md", b"# two\n\ntext")
    queue = RecordingQueue(fail_keys=["acme/two.md"])
    # When reconciled
    stats = world.reconciler(queue).run(tenant="acme").totals
    # Then the refused one is failed, the other new
    assert (stats.new, stats.failed) == (1, 1)
    assert [e.key for e in queue.sent] == ["acme/one.md"]


def test_tenant_scope_leaves_other_tenants_alone(world: World) -> None:
    _drifted(world)
    queue = RecordingQueue()
    stats = world.reconciler(queue).run(tenant="globex").totals
    assert (stats.scanned, stats.new, stats.deleted, stats.orphans_removed) == (1, 1, 0, 0)
    assert [e.key for e in queue.sent] == ["globex/x.md"]
    assert ("umbrella", "umbrella/z.md") in world.store.count_by_document()


def test_a_sidecar_newer_than_its_record_resends_the_document(world: World) -> None:
    # Given an indexed document whose record predates its sidecar (the sidecar's event was lost)
    world.objects.put("acme/a.md", b"# a\n\nbody")
    _indexed(world, "acme/a.md", updated_at="2000-01-01T00:00:00+00:00")
    world.store.upsert(_points("acme", "acme/a.md", 2))
    world.objects.put("acme/a.md.metadata.json", b'{"metadataAttributes": {"year": 2024}}')
    queue = RecordingQueue()
    # When reconciled
    stats = world.reconciler(queue).run().totals
    # Then the document (not the sidecar) is re-sent once, counted as a metadata change
    assert stats.metadata_modified == 1 and stats.metadata_scanned == 1
    assert [(e.action, e.key) for e in queue.sent] == [("created", "acme/a.md")]


def test_merge_walks_three_sorted_streams_and_rejects_disorder() -> None:
    from winnow.models import ObjectInfo

    objs = iter([ObjectInfo("t/a", 1, "e"), ObjectInfo("t/c", 1, "e")])
    recs = iter(
        [LedgerRecord("t", "t/b", DocumentStatus.INDEXED), LedgerRecord("t", "t/c", DocumentStatus.INDEXED)]
    )
    counts = iter([("t/a", 2), ("t/d", 1)])
    merged = [(k, o is not None, r is not None, n) for k, o, r, n in merge_by_key(objs, recs, counts)]
    assert merged == [
        ("t/a", True, False, 2),
        ("t/b", False, True, 0),
        ("t/c", True, True, 0),
        ("t/d", False, False, 1),
    ]
    backwards = iter([ObjectInfo("t/b", 1, "e"), ObjectInfo("t/a", 1, "e")])
    with pytest.raises(OutOfOrderListing):
        list(merge_by_key(backwards, iter([]), iter([])))


def test_continuation_token_round_trips_and_rejects_garbage() -> None:
    from winnow.reconcile.tokens import Position

    totals = ReconcileStats(scanned=5, new=2, tenant="acme")
    token = encode_token("acme", True, Position("objects", "acme", "acme/k.md", "cursor"), totals)
    resumed = decode_token(token)
    position = resumed.position
    assert (resumed.scope, resumed.dry_run) == ("acme", True)
    assert (position.after, position.ledger_page) == ("acme/k.md", "cursor")
    assert resumed.totals.counters() == totals.counters()
    with pytest.raises(BadRequest):
        decode_token("not-a-token")
    with pytest.raises(BadRequest):
        decode_token(token[:-4])


def test_continuation_token_carries_the_reread_flag_and_reads_older_tokens() -> None:
    from winnow.reconcile.tokens import Position

    totals = ReconcileStats(scanned=3, reread=2)
    # A run with reread keeps it across invocations, and its reread count with its totals
    resumed = decode_token(encode_token(None, False, Position("leftover"), totals, reread=True))
    assert (resumed.reread, resumed.dry_run, resumed.position.phase) == (True, False, "leftover")
    assert resumed.totals.reread == 2
    assert decode_token(encode_token(None, False, Position(), totals)).reread is False
    # A token written before the flag existed (no "reread" key) resumes a run without it
    body = {
        "v": 1,
        "scope": "acme",
        "dry_run": True,
        "position": {"phase": "objects", "tenant": "acme", "after": "acme/k.md", "ledger_page": None},
        "totals": {"scanned": 4, "unchanged": 4},
    }
    old = base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    resumed = decode_token(old)
    assert (resumed.scope, resumed.dry_run, resumed.reread) == ("acme", True, False)
    assert (resumed.position.after, resumed.totals.unchanged) == ("acme/k.md", 4)
    # A flag that is not a boolean is a bad token, not a run that silently re-reads
    body["reread"] = "yes"
    with pytest.raises(BadRequest):
        decode_token(base64.urlsafe_b64encode(json.dumps(body).encode()).decode())


def test_point_counts_spilled_to_disk_give_the_same_reconcile(world: World) -> None:
    # Given the drift, and point counts sorted in runs of one key (every run spills to a file)
    _drifted(world)
    queue = RecordingQueue()
    # When the whole bucket is reconciled
    stats = world.reconciler(queue, ledger_page_size=2, count_run_size=1).run().totals
    # Then it finds exactly what the in-memory comparison finds
    assert (stats.unchanged, stats.repaired, stats.orphans_removed, stats.deleted, stats.new) == (
        1,
        1,
        5,
        2,
        2,
    )
    assert sorted(e.key for e in queue.sent) == [
        "acme/b.md",
        "acme/c.md",
        "acme/d.md",
        "acme/e.md",
        "acme/h.md",
        "globex/x.md",
        "initech/gone.md",
    ]


def _run_paged(reconciler: Any, per_invocation: int, **first: Any) -> tuple[Any, int]:
    """Run ``reconciler`` (with ``first``'s options) stopping after ``per_invocation`` documents, then
    resume from each continuation token alone, as the chained Lambda does; the last result and how many
    invocations it took."""
    budget = {"left": per_invocation}

    def should_stop() -> bool:
        budget["left"] -= 1
        return budget["left"] < 0

    result = reconciler.run(should_stop=should_stop, **first)
    invocations = 1
    while result.continuation is not None:
        budget["left"] = per_invocation
        result = reconciler.run(continuation=result.continuation, should_stop=should_stop)
        invocations += 1
        assert invocations < 50
    return result, invocations
