"""Contract tests of the Ledger port, run against both adapters: SQLite (embedded default) and DynamoDB
(moto over HTTP). Same rules for both: stale and duplicate S3 events never overwrite newer state, pages
never leak another tenant, and a per-document lease is held by one worker at a time."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.aws import FaultyAws
from winnow.adapters.ledger_dynamodb import DynamoDbLedger
from winnow.errors import (
    BadRequest,
    ConfigurationError,
    DocumentError,
    ProviderRateLimited,
    ProviderUnavailable,
)
from winnow.models import DocumentStatus, LedgerRecord
from winnow.ports import Ledger
from winnow.rules import sequencer_is_newer
from winnow_local.adapters.ledger_sqlite import SqliteLedger


class Clock:
    """A clock the test moves by hand, to expire leases without sleeping."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["sqlite", "dynamodb"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Ledger]:
    if request.param == "sqlite":
        sqlite = SqliteLedger(tmp_path / "ledger.sqlite3", clock=clock)
        yield sqlite
        sqlite.close()
    else:
        table = request.getfixturevalue("ledger_table")
        yield DynamoDbLedger(table, clock=clock)


def record(
    key: str = "handbook.pdf", sequencer: str | None = "0055AED6DCD90281E5", **fields: Any
) -> LedgerRecord:
    values: dict[str, Any] = {
        "tenant": "acme",
        "key": key,
        "status": DocumentStatus.INDEXED,
        "content_sha256": "a" * 64,
        "etag": '"0123456789abcdef0123456789abcdef"',
        "sequencer": sequencer,
        "chunks": 12,
        "embedded": 12,
        "reused": 0,
        "title": "Handbook",
        "source_type": "pdf",
        "profile": "local-minilm-384",
    }
    values.update(fields)
    return LedgerRecord(**values)


# --- records and sequencers -----------------------------------------------------------------------------
def test_a_record_round_trips_with_timestamps(ledger: Ledger) -> None:
    # Given a record with every field set
    original = record(
        version_id="v1",
        error=None,
        metadata_sha256="m" * 64,
        access='{"users":["ann"],"groups":[]}',
        reader=3,
    )
    # When it is stored and read back
    assert ledger.put(original) is True
    stored = ledger.get("acme", "handbook.pdf")
    # Then every field survives, and the ledger stamped created/updated times
    assert stored is not None
    assert replace(stored, created_at=None, updated_at=None) == original
    assert stored.created_at and stored.updated_at
    assert ledger.get("acme", "other.pdf") is None
    assert ledger.get("other-tenant", "handbook.pdf") is None


def test_an_older_or_duplicate_event_never_overwrites_newer_state(ledger: Ledger) -> None:
    # Given a document indexed by the event with sequencer ...E5
    assert ledger.put(record(sequencer="0055AED6DCD90281E5", chunks=12))
    # When a late event (older sequencer) or a duplicate delivery (same sequencer) tries to write
    stale = ledger.put(record(sequencer="0055AED6DCD90281E4", status=DocumentStatus.DELETED, chunks=0))
    duplicate = ledger.put(record(sequencer="0055AED6DCD90281E5", status=DocumentStatus.FAILED, chunks=0))
    # Then both are refused and the stored state is unchanged
    assert (stale, duplicate) == (False, False)
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.status == DocumentStatus.INDEXED and stored.chunks == 12
    # And a newer event is accepted
    assert ledger.put(record(sequencer="0055AED6DCD90281E6", status=DocumentStatus.DELETED, chunks=0))
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.status == DocumentStatus.DELETED
    assert stored.sequencer == "0055AED6DCD90281E6"


def test_the_worker_of_an_event_may_rewrite_its_own_record(ledger: Ledger) -> None:
    # Given the record written by the event ...E5
    assert ledger.put(record(sequencer="0055AED6DCD90281E5", metadata_sha256="old"))
    # When the same event's worker writes again with same_event_ok
    assert ledger.put(record(sequencer="0055AED6DCD90281E5", metadata_sha256="new"), same_event_ok=True)
    # Then it applies; but an older event stays refused even with same_event_ok
    assert (
        ledger.put(record(sequencer="0055AED6DCD90281E4", metadata_sha256="old"), same_event_ok=True) is False
    )
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.metadata_sha256 == "new"


@pytest.mark.parametrize(
    ("stored", "incoming", "accepted"),
    [
        ("00AB", "00ac", True),  # case does not matter: hex
        ("00AC", "00ab", False),  # plain string order would accept ("a" > "A")
        ("ABC", "ABC0", False),  # padded, these are the same event: plain order would accept
        ("ABC0", "ABC", False),
        ("0055AED6DCD90281E5", "0055AED6DCD902820", True),  # shorter but later
        ("0055AED6DCD902820", "0055AED6DCD90281E5", False),  # longer but earlier
        ("09", "0A", True),
    ],
)
def test_sequencers_of_different_length_and_case_compare_as_s3_prescribes(
    ledger: Ledger, stored: str, incoming: str, accepted: bool
) -> None:
    # Given a record stored with one sequencer
    assert ledger.put(record(sequencer=stored))
    # When an event with another arrives, Then it is accepted exactly when it is newer once padded
    assert ledger.put(record(sequencer=incoming, chunks=99)) is accepted
    assert sequencer_is_newer(incoming, stored) is accepted  # the domain's rule says the same
    stored_record = ledger.get("acme", "handbook.pdf")
    assert stored_record is not None and (stored_record.chunks == 99) is accepted


_fresh = itertools.count()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    first=st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=24),
    second=st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=24),
)
def test_acceptance_matches_the_domain_rule_for_any_pair_of_sequencers(
    ledger: Ledger, first: str, second: str
) -> None:
    # Given any two hex sequencers, written in order to a fresh key
    key = f"doc-{next(_fresh)}.txt"
    assert ledger.put(record(key=key, sequencer=first))
    # Then the second write applies exactly when rules.sequencer_is_newer says so
    assert ledger.put(record(key=key, sequencer=second)) is sequencer_is_newer(second, first)


def test_a_record_without_sequencer_is_written_but_keeps_the_newest_sequencer(ledger: Ledger) -> None:
    # Given a record from event ...E5
    assert ledger.put(record(sequencer="0055AED6DCD90281E5", chunks=1))
    # When reconcile writes without a sequencer
    assert ledger.put(record(sequencer=None, chunks=2))
    stored = ledger.get("acme", "handbook.pdf")
    # Then it applies, the stored sequencer stays, so a late older event is still refused
    assert stored is not None and stored.chunks == 2 and stored.sequencer == "0055AED6DCD90281E5"
    assert ledger.put(record(sequencer="0055AED6DCD90281E4", chunks=3)) is False


@pytest.mark.parametrize("sequencer", ["not-hex", "0A\n", ""])
def test_a_malformed_sequencer_is_a_permanent_error(ledger: Ledger, sequencer: str) -> None:
    with pytest.raises(DocumentError):
        ledger.put(record(sequencer=sequencer))
    assert ledger.get("acme", "handbook.pdf") is None


def test_created_at_survives_rewrites(ledger: Ledger) -> None:
    # Given a record created at a known time
    assert ledger.put(record(sequencer="01", created_at="2024-01-01T00:00:00.000Z"))
    # When a newer event rewrites it without a creation time
    assert ledger.put(record(sequencer="02", created_at=None))
    stored = ledger.get("acme", "handbook.pdf")
    # Then the original creation time stays
    assert stored is not None and stored.created_at == "2024-01-01T00:00:00.000Z"


def test_racing_writers_leave_the_newest_event(ledger: Ledger) -> None:
    # Given 24 events for one key delivered concurrently in scrambled order
    sequencers = [f"{n:04X}" for n in range(1, 25)]
    scrambled = sequencers[::2][::-1] + sequencers[1::2]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def deliver(batch: list[str]) -> None:
        try:
            barrier.wait()
            for seq in batch:
                ledger.put(record(sequencer=seq, chunks=int(seq, 16)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=deliver, args=(scrambled[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then the stored record is the newest event's, whatever the interleaving
    assert not errors
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.sequencer == "0018" and stored.chunks == 24


# --- listing --------------------------------------------------------------------------------------------
KEYS = ["Z.pdf", "a b.pdf", "a+b.pdf", "a-c.txt", "a/b.pdf", "a/c/d.md", "é.pdf", "zz.txt", "a.pdf"]


def test_list_pages_in_key_order_and_never_shows_another_tenant(ledger: Ledger) -> None:
    # Given tenant acme's documents and another tenant's documents with interleaving keys
    for key in KEYS:
        assert ledger.put(record(key=key))
    for key in ["a b.pdf", "b.pdf", "secret.pdf", "zzz.pdf"]:
        assert ledger.put(record(key=key, tenant="globex", title="Globex only"))
    # When acme pages through with 2 per page
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = ledger.list("acme", limit=2, cursor=cursor)
        pages += 1
        assert len(page) <= 2
        seen += [r.key for r in page]
        assert all(r.tenant == "acme" and r.title == "Handbook" for r in page)
        if cursor is None:
            break
    # Then it sees each of its keys once, in UTF-8 byte order (S3's order), and nothing else
    assert seen == sorted(KEYS, key=lambda k: k.encode("utf-8"))
    assert pages == 5  # 9 keys, 2 per page: no empty trailing page


def test_a_cursor_is_bound_to_its_tenant_and_validated(ledger: Ledger) -> None:
    for key in KEYS:
        ledger.put(record(key=key))
    ledger.put(record(key="b.pdf", tenant="globex"))
    _, cursor = ledger.list("acme", limit=3)
    assert cursor is not None
    # When another tenant replays acme's cursor, or sends garbage, Then it is a bad request
    with pytest.raises(BadRequest):
        ledger.list("globex", limit=3, cursor=cursor)
    with pytest.raises(BadRequest):
        ledger.list("acme", limit=3, cursor="not a cursor!")
    with pytest.raises(BadRequest):
        ledger.list("acme", limit=0)
    # And the last page has no cursor
    page, last = ledger.list("acme", limit=len(KEYS))
    assert len(page) == len(KEYS) and last is None


def test_scan_streams_one_tenant_or_all(ledger: Ledger) -> None:
    for key in KEYS:
        ledger.put(record(key=key))
    ledger.put(record(key="b.pdf", tenant="globex"))
    assert sorted(r.key for r in ledger.scan("acme")) == sorted(KEYS)
    everything = {(r.tenant, r.key) for r in ledger.scan()}
    assert everything == {("acme", k) for k in KEYS} | {("globex", "b.pdf")}
    assert list(ledger.scan("nobody")) == []


def test_scan_tolerates_writes_while_streaming(ledger: Ledger) -> None:
    # Given more records than one internal SQLite page holds (500); DynamoDB's pages are 1 MB, which
    # a test cannot reach cheaply on moto, so it gets fewer
    total = 520 if isinstance(ledger, SqliteLedger) else 60
    for n in range(total):
        ledger.put(record(key=f"doc-{n:04d}.txt"))
    # When the consumer rewrites each record while iterating (as reconcile does)
    count = 0
    for item in ledger.scan("acme"):
        ledger.put(replace(item, sequencer=None, chunks=item.chunks + 1))
        count += 1
    # Then every record was seen exactly once
    assert count == total
    assert all(r.chunks == 13 for r in ledger.scan("acme"))


# --- leases ---------------------------------------------------------------------------------------------
def test_a_lease_is_exclusive_until_released_or_expired(ledger: Ledger, clock: Clock) -> None:
    # Given worker-a holds the lease of a document
    assert ledger.acquire("acme", "handbook.pdf", "worker-a", ttl_seconds=60)
    # Then worker-b cannot take it, and worker-b cannot release it
    assert ledger.acquire("acme", "handbook.pdf", "worker-b", ttl_seconds=60) is False
    ledger.release("acme", "handbook.pdf", "worker-b")
    assert ledger.acquire("acme", "handbook.pdf", "worker-b", ttl_seconds=60) is False
    # And worker-a may renew it; other documents and tenants are unaffected
    assert ledger.acquire("acme", "handbook.pdf", "worker-a", ttl_seconds=60)
    assert ledger.acquire("acme", "other.pdf", "worker-b", ttl_seconds=60)
    assert ledger.acquire("globex", "handbook.pdf", "worker-b", ttl_seconds=60)
    # When worker-a releases, Then worker-b gets it
    ledger.release("acme", "handbook.pdf", "worker-a")
    assert ledger.acquire("acme", "handbook.pdf", "worker-b", ttl_seconds=60)
    # When worker-b's lease expires (a crashed worker), Then worker-c gets it
    clock.now += 61
    assert ledger.acquire("acme", "handbook.pdf", "worker-c", ttl_seconds=60)


def test_a_lease_alone_is_not_a_document(ledger: Ledger) -> None:
    # Given a lease on a key that has no record yet
    assert ledger.acquire("acme", "new.pdf", "worker-a", ttl_seconds=60)
    # Then the key is not a document: not in get, list or scan, before and after release
    assert ledger.get("acme", "new.pdf") is None
    assert ledger.list("acme") == ([], None)
    ledger.release("acme", "new.pdf", "worker-a")
    assert ledger.get("acme", "new.pdf") is None
    assert list(ledger.scan()) == []


def test_writing_the_record_keeps_the_lease(ledger: Ledger) -> None:
    # Given worker-a holds the lease and writes the document's record
    assert ledger.acquire("acme", "handbook.pdf", "worker-a", ttl_seconds=60)
    assert ledger.put(record())
    # Then the lease still holds
    assert ledger.acquire("acme", "handbook.pdf", "worker-b", ttl_seconds=60) is False
    # And releasing it leaves the record
    ledger.release("acme", "handbook.pdf", "worker-a")
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.status == DocumentStatus.INDEXED


def test_taking_the_lease_reads_the_record_under_it(ledger: Ledger) -> None:
    # Given a document with a record, and a key with none
    assert ledger.put(record())
    # When worker-a takes the document's lease and reads in one step
    acquired, current = ledger.acquire_and_get("acme", "handbook.pdf", "worker-a", ttl_seconds=60)
    # Then it holds the lease and has the record as stored
    assert acquired and current == ledger.get("acme", "handbook.pdf")
    # And worker-b gets neither the lease nor the record
    assert ledger.acquire_and_get("acme", "handbook.pdf", "worker-b", ttl_seconds=60) == (False, None)
    # And a key without a record is leased with nothing to read, and is no document afterwards
    assert ledger.acquire_and_get("acme", "new.pdf", "worker-b", ttl_seconds=60) == (True, None)
    ledger.release("acme", "new.pdf", "worker-b")
    assert [r.key for r in ledger.scan()] == ["handbook.pdf"]


def test_the_last_write_under_a_lease_releases_it_with_the_same_conditions(ledger: Ledger) -> None:
    # Given worker-a holds the lease of a new document
    assert ledger.acquire("acme", "handbook.pdf", "worker-a", ttl_seconds=60)
    # When it writes the record and releases in one step
    assert ledger.put_and_release(record(sequencer="02"), "worker-a")
    # Then the record is stored and the lease is free
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.sequencer == "02"
    assert ledger.acquire("acme", "handbook.pdf", "worker-b", ttl_seconds=60)
    # When worker-b writes an older event's record the same way
    assert ledger.put_and_release(record(sequencer="01", chunks=1), "worker-b") is False
    # Then the newer record stays, and the lease is released all the same
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and (stored.sequencer, stored.chunks) == ("02", 12)
    assert ledger.acquire("acme", "handbook.pdf", "worker-c", ttl_seconds=60)
    # When worker-a, whose lease is long gone, writes a newer record
    assert ledger.put_and_release(record(sequencer="03"), "worker-a")
    # Then the record is written (as put alone would) and worker-c's lease is left alone
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.sequencer == "03"
    assert ledger.acquire("acme", "handbook.pdf", "worker-d", ttl_seconds=60) is False


def _race_for_lease(ledger: Ledger, key: str, workers: int) -> list[str]:
    barrier = threading.Barrier(workers)
    winners: list[str] = []
    lock = threading.Lock()

    def contend(owner: str) -> None:
        barrier.wait()
        if ledger.acquire("acme", key, owner, ttl_seconds=60):
            with lock:
                winners.append(owner)

    threads = [threading.Thread(target=contend, args=(f"worker-{i}",)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return winners


def test_only_one_of_racing_workers_gets_the_lease(ledger: Ledger) -> None:
    # Given 8 workers that try to take the same lease at the same moment, 5 rounds
    for round_number in range(5):
        winners = _race_for_lease(ledger, f"race-{round_number}.pdf", workers=8)
        # Then exactly one wins each round
        assert len(winners) == 1, winners


# --- adapter specifics ------------------------------------------------------------------------------------
def test_sqlite_ledger_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "ledger.sqlite3"
    first = SqliteLedger(path)
    assert first.put(record())
    first.close()
    second = SqliteLedger(path)
    stored = second.get("acme", "handbook.pdf")
    assert stored is not None and stored.chunks == 12
    assert second.put(record(sequencer="0055AED6DCD90281E4")) is False
    second.close()


def test_a_sqlite_ledger_from_before_access_lists_gains_the_column(tmp_path: Path) -> None:
    # A ledger file whose table has no ``access`` column: its records read as having no list, and new
    # records keep theirs
    path = tmp_path / "ledger.sqlite3"
    first = SqliteLedger(path)
    assert first.put(record())
    first.close()
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE documents DROP COLUMN access")
    second = SqliteLedger(path)
    stored = second.get("acme", "handbook.pdf")
    assert stored is not None and stored.access is None and stored.chunks == 12
    assert second.put(record("new.pdf", access='{"users":[],"groups":["hr"]}'))
    assert (second.get("acme", "new.pdf") or record()).access == '{"users":[],"groups":["hr"]}'
    second.close()


def test_a_sqlite_ledger_from_before_reader_versions_gains_the_column(tmp_path: Path) -> None:
    # A ledger file whose table has no ``reader`` column (written before the field existed): its records
    # read as made by reader 0, so ingest and ``reconcile --reread`` read them again; new ones keep theirs
    path = tmp_path / "ledger.sqlite3"
    first = SqliteLedger(path)
    assert first.put(record())
    first.close()
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE documents DROP COLUMN reader")
    second = SqliteLedger(path)
    stored = second.get("acme", "handbook.pdf")
    assert stored is not None and stored.reader == 0 and stored.chunks == 12
    assert second.put(record("new.pdf", reader=2))
    assert (second.get("acme", "new.pdf") or record()).reader == 2
    second.close()
    with sqlite3.connect(path) as db:
        columns = {row[1]: row for row in db.execute("PRAGMA table_info(documents)")}
    assert columns["reader"][3] == 1 and columns["reader"][4] == "0"  # NOT NULL DEFAULT 0


def test_sqlite_ledger_in_memory_is_shared_by_threads() -> None:
    ledger = SqliteLedger(":memory:")
    done = threading.Event()

    def write() -> None:
        ledger.put(record(key="from-thread.pdf"))
        done.set()

    threading.Thread(target=write).start()
    assert done.wait(5)
    assert ledger.get("acme", "from-thread.pdf") is not None


def test_dynamodb_tombstones_expire_and_live_records_do_not(
    ledger_table: str, aws_client: Callable[[str], Any], clock: Clock
) -> None:
    ledger = DynamoDbLedger(ledger_table, clock=clock)
    raw = aws_client("dynamodb")

    def item() -> dict[str, Any]:
        return raw.get_item(TableName=ledger_table, Key={"pk": {"S": "acme"}, "sk": {"S": "handbook.pdf"}})[
            "Item"
        ]

    # Given a deleted document, Then its tombstone expires 30 days later
    assert ledger.put(record(sequencer="01", status=DocumentStatus.DELETED))
    assert int(item()["ttl"]["N"]) == int(clock.now) + 30 * 24 * 3600
    # When it is indexed again, Then the record no longer expires
    assert ledger.put(record(sequencer="02"))
    assert "ttl" not in item()
    assert item()["seq_sort"]["S"] == "02".ljust(64, "0")


def test_a_dynamodb_record_from_before_reader_versions_reads_as_reader_zero(
    ledger_table: str, aws_client: Callable[[str], Any]
) -> None:
    # Given an item written before the ``reader`` attribute existed
    ledger = DynamoDbLedger(ledger_table)
    assert ledger.put(record(reader=1))
    aws_client("dynamodb").update_item(
        TableName=ledger_table,
        Key={"pk": {"S": "acme"}, "sk": {"S": "handbook.pdf"}},
        UpdateExpression="REMOVE reader",
    )
    # Then it reads as made by reader 0 (an int, as the other counts), the rest unchanged
    stored = ledger.get("acme", "handbook.pdf")
    assert stored is not None and stored.reader == 0 and stored.chunks == 12


def test_dynamodb_release_drops_an_item_that_only_held_a_lease(
    ledger_table: str, aws_client: Callable[[str], Any]
) -> None:
    ledger = DynamoDbLedger(ledger_table)
    assert ledger.acquire("acme", "new.pdf", "worker-a", ttl_seconds=60)
    ledger.release("acme", "new.pdf", "worker-a")
    assert aws_client("dynamodb").scan(TableName=ledger_table)["Count"] == 0


def test_dynamodb_missing_table_is_a_configuration_error(aws_endpoint: str) -> None:
    ledger = DynamoDbLedger("no-such-table")
    with pytest.raises(ConfigurationError):
        ledger.get("acme", "handbook.pdf")


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            400,
            '{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow"}',
            ProviderRateLimited,
        ),
        (
            400,
            '{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"x"}',
            ProviderRateLimited,
        ),
        (
            500,
            '{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"x"}',
            ProviderUnavailable,
        ),
        (503, "", ProviderUnavailable),
    ],
)
def test_dynamodb_throttling_and_outages_are_transient(
    faulty_aws: FaultyAws, status: int, body: str, expected: type[Exception]
) -> None:
    # Given DynamoDB answers with a throttle or a server error
    faulty_aws.respond(status, body, {"Content-Type": "application/x-amz-json-1.0"})
    ledger = DynamoDbLedger("ledger", client=faulty_aws.client("dynamodb"))
    # Then every operation raises a transient error, never a botocore one
    with pytest.raises(expected):
        ledger.get("acme", "handbook.pdf")
    with pytest.raises(expected):
        ledger.put(record())
    with pytest.raises(expected):
        ledger.acquire("acme", "handbook.pdf", "worker-a", 60)


def test_dynamodb_unreachable_endpoint_is_transient() -> None:
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "dynamodb",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    attempts: list[object] = []
    client.meta.events.register("before-send.dynamodb", lambda **_: attempts.append(1))
    with pytest.raises(ProviderUnavailable):
        DynamoDbLedger("ledger", client=client).get("acme", "handbook.pdf")
    # and it is given up after the attempts the client allows (the first and the one retry botocore's
    # max_attempts=1 means), never retried by the ledger on top
    assert len(attempts) == 2
