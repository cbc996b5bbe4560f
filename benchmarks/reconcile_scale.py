"""Reconcile over a large bucket in the AWS shape: objects/s and the memory the run itself needs.

``python -m benchmarks.reconcile_scale [--objects 100000] [--json]``

moto plays S3, DynamoDB (the ledger) and SQS (the ingest queue) over HTTP on loopback, in a child
process; Qdrant Edge holds the points in this process.
The bucket gets ``--objects`` documents under one tenant with planted drift: 90 % indexed and unchanged
(ledger record with the object's ETag, one point each), 5 % new (object only), 3 % modified (record of an
older ETag), 1 % deleted (record and point, no object) and 1 % orphans (points only). The child writes
the objects and records straight into moto's backends. The real ``Reconciler`` then runs the whole
bucket through the real adapters (``S3ObjectSource``, ``DynamoDbLedger``, ``SqsEventQueue``,
the store) while a consumer in the child drains the queue as the ingest function would (moto
walks the whole queue on every SendMessage, so an undrained queue made the run quadratic); the benchmark
checks that every planted case was found and that exactly the expected events, one per document, came
through the queue.

This process is the reconcile (and Qdrant Edge): ``cpu_seconds`` is its own CPU time, which grows with
the bucket when the reconcile is linear, whatever moto's pages cost (moto answers each ListObjectsV2 and
Query page by walking the whole bucket or table; AWS does not). Memory: the resident high-water mark is
reset just before the run (``/proc/self/clear_refs``), so ``run_peak_rss_mb`` is the peak *during*
reconcile and ``run_growth_mb`` what it added to the resident size the set-up left (Qdrant Edge's
points; moto's stored objects are in the child). Bounded memory shows as a growth that stays flat as
the bucket grows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import resource
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from benchmarks.common import AWS_TESTING, ChildProcess, Progress, machine, positive_int, rss_mb, table
from winnow.models import EmbeddingProfile

TENANT = "acme"
SHARES = {"unchanged": 90, "new": 5, "modified": 3, "deleted": 1, "orphans": 1}
PROFILE = EmbeddingProfile("synthetic", "reconcile-benchmark", 4)


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def plan(objects: int) -> dict[str, list[str]]:
    """Document keys per planted case; ``objects`` counts every key the run compares."""
    keys = [f"{TENANT}/docs/{n:07d}.md" for n in range(objects)]
    out: dict[str, list[str]] = {}
    start = 0
    for i, (case, share) in enumerate(SHARES.items()):
        end = objects if i == len(SHARES) - 1 else start + objects * share // 100
        out[case] = keys[start:end]
        start = end
    return out


def body(key: str) -> bytes:
    return f"# {key}\n\nA document of the benchmark.\n".encode()


def etag(key: str) -> str:
    return f'"{hashlib.md5(body(key)).hexdigest()}"'


def ledger_item(key: str, recorded_etag: str) -> dict[str, Any]:
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat(timespec="seconds")
    return {
        "pk": {"S": TENANT},
        "sk": {"S": key},
        "status": {"S": "indexed"},
        "etag": {"S": recorded_etag},
        "chunks": {"N": "1"},
        "profile": {"S": PROFILE.slug},
        "content_sha256": {"S": hashlib.sha256(key.encode()).hexdigest()},
        "updated_at": {"S": later},
        "created_at": {"S": later},
    }


# --- AWS (moto), in a child process --------------------------------------------------------------------
def _serve_moto(conn: Connection, objects: int, names: dict[str, str]) -> None:
    """moto's server with the bucket and the ledger seeded straight into its backends (over HTTP, 100,000
    PutObjects alone took most of an hour on a loaded 2-core machine), and a consumer that drains the
    ingest queue as the ingest function would, recording each event's key and kind."""
    import boto3
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.s3.models import s3_backends

    from winnow.adapters.ledger_dynamodb import table_definition

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    os.environ.update(AWS_TESTING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"

    def client(service: str) -> Any:
        return boto3.client(service, endpoint_url=url, region_name="us-east-1")

    cases = plan(objects)
    client("s3").create_bucket(Bucket=names["bucket"])
    client("dynamodb").create_table(**table_definition(names["table"]))
    sqs = client("sqs")
    queue_url = sqs.create_queue(QueueName=names["queue"])["QueueUrl"]
    s3_backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for key in cases["unchanged"] + cases["new"] + cases["modified"]:
        s3_backend.put_object(names["bucket"], key, body(key))
    recorded = [(k, etag(k)) for k in cases["unchanged"]]
    recorded += [(k, '"an-older-version"') for k in cases["modified"] + cases["deleted"]]
    ddb_backend = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    for key, recorded_etag in recorded:
        ddb_backend.put_item(names["table"], ledger_item(key, recorded_etag))

    events: Counter[tuple[str, str]] = Counter()
    draining = threading.Event()
    draining.set()

    def drain() -> None:
        while True:
            messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
                "Messages", []
            )
            if not messages and not draining.is_set():
                return
            for message in messages:
                for record in json.loads(message["Body"])["Records"]:
                    kind = "removed" if record["eventName"].startswith("ObjectRemoved") else "created"
                    events[(kind, unquote_plus(record["s3"]["object"]["key"]))] += 1
            if messages:
                entries = [
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
                ]
                sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)

    consumer = threading.Thread(target=drain, daemon=True)
    consumer.start()
    conn.send((url, queue_url))
    conn.recv()  # the run is over: drain what is left, then report
    draining.clear()
    consumer.join()
    conn.send(dict(events))
    server.stop()


def setup(
    moto: ChildProcess, names: dict[str, str], cases: dict[str, list[str]], home: Path, progress: Progress
) -> dict[str, Any]:
    import boto3

    from winnow.adapters.ledger_dynamodb import DynamoDbLedger
    from winnow.adapters.qdrant_store import make_qdrant_client, store_on
    from winnow.models import Chunk, ChunkPoint, SparseVector
    from winnow.settings import QdrantSettings

    def client(service: str) -> Any:
        return boto3.client(service, endpoint_url=moto.greeting[0], region_name="us-east-1")

    bucket, table = names["bucket"], names["table"]
    # The adapters read what boto3 reads: one object and one record through the API prove the direct
    # writes look right.
    in_bucket = cases["unchanged"] + cases["new"] + cases["modified"]
    probe = client("s3").head_object(Bucket=bucket, Key=in_bucket[0])
    assert probe["ETag"] == etag(in_bucket[0]), probe
    sample = DynamoDbLedger(table, client("dynamodb")).get(TENANT, cases["unchanged"][0])
    assert sample is not None and sample.chunks == 1 and sample.profile == PROFILE.slug, sample

    settings = QdrantSettings(path=str(home / "qdrant"))
    store = store_on(make_qdrant_client(settings, None, home / "qdrant"), PROFILE, settings)
    store.ensure_collection()
    with_points = cases["unchanged"] + cases["modified"] + cases["deleted"] + cases["orphans"]
    progress(f"upserting {len(with_points):,} points into Qdrant Edge")
    for start in range(0, len(with_points), 1024):
        store.upsert(
            [
                ChunkPoint(
                    point_id=str(uuid.uuid5(uuid.NAMESPACE_URL, key)),
                    tenant=TENANT,
                    key=key,
                    chunk=Chunk(index=0, text="text", title="t", section_path=(), page=None),
                    dense=[1.0, 0.0, 0.0, 0.0],
                    sparse=SparseVector([1], [1.0]),
                    metadata={},
                    source_type="markdown",
                    doc_version="v1",
                )
                for key in with_points[start : start + 1024]
            ]
        )
    return {"bucket": bucket, "table": table, "store": store, "client": client}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(objects: int, home: Path, progress: Progress) -> dict[str, Any]:
    from winnow.adapters.ledger_dynamodb import DynamoDbLedger
    from winnow.adapters.objects_s3 import S3ObjectSource
    from winnow.adapters.queue_sqs import SqsEventQueue
    from winnow.reconcile.service import Reconciler

    cases = plan(objects)
    os.environ.update(AWS_TESTING)
    progress(f"seeding moto (child process) with {objects:,} documents' objects and records")
    # moto in a child process, so this process's CPU time and memory are the reconcile's own (plus Qdrant
    # Edge's, which holds the points here).
    names = {kind: f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("bucket", "table", "queue")}
    moto = ChildProcess(_serve_moto, objects, names)
    try:
        world = setup(moto, names, cases, home, progress)
        client = world["client"]
        reconciler = Reconciler(
            S3ObjectSource(world["bucket"], client("s3")),
            DynamoDbLedger(world["table"], client("dynamodb")),
            world["store"],
            SqsEventQueue(moto.greeting[1], client("sqs")),
            world["store"].profile,
            bucket=world["bucket"],
        )
        progress(f"reconciling {objects:,} documents")
        before = rss_mb()
        reset = _reset_peak()
        cpu_before = _cpu_seconds()
        started = time.perf_counter()
        result = reconciler.run(TENANT)
        seconds = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu_before
        peak = rss_mb("VmHWM")
        events = moto.ask("finish")  # every event the consumer received, once the queue is drained
        world["store"].close()
    finally:
        moto.close()
    stats = result.totals
    found = {
        "unchanged": stats.unchanged,
        "new": stats.new,
        "modified": stats.modified,
        "deleted": stats.deleted,
        "orphans": stats.orphans_removed,
    }
    planted = {case: len(keys) for case, keys in cases.items()}
    expected_events = {("created", k): 1 for k in cases["new"] + cases["modified"]}
    expected_events |= {("removed", k): 1 for k in cases["deleted"]}
    return {
        "objects": objects,
        "seconds": round(seconds, 1),
        "objects_per_s": round(objects / seconds, 1),
        "count_run_size": reconciler.count_run_size,
        "cpu_seconds": round(cpu, 1),
        "cpu_ms_per_1000_objects": round(cpu * 1000 / objects * 1000, 1),
        "rss_before_mb": round(before, 1),
        "run_peak_rss_mb": round(peak, 1) if reset else None,
        "run_growth_mb": round(peak - before, 1) if reset else None,
        "found": found,
        "planted": planted,
        "queued": sum(events.values()),
        "events_as_planted": events == expected_events,
        "correct": found == planted and events == expected_events and stats.failed == 0,
        "machine": machine(),
    }


def render(result: dict[str, Any]) -> str:
    rows = [[case, str(result["planted"][case]), str(result["found"][case])] for case in SHARES]
    growth = result["run_growth_mb"]
    return "\n".join(
        [
            f"reconcile of {result['objects']:,} documents: {result['seconds']:.1f} s, "
            f"{result['objects_per_s']:,.0f} objects/s; this process's CPU {result['cpu_seconds']:.1f} s "
            f"({result['cpu_ms_per_1000_objects']:,.0f} ms per 1,000 objects)",
            table(["case", "planted", "found"], rows),
            f"events through SQS: {result['queued']:,} (exactly as planted: {result['events_as_planted']}); "
            f"all correct: {result['correct']}",
            f"memory: {result['rss_before_mb']:.0f} MB resident before the run, peak during it "
            + (f"{result['run_peak_rss_mb']:.0f} MB (+{growth:.1f} MB)" if growth is not None else "n/a"),
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reconcile_scale", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--objects", type=positive_int, default=100_000, help="documents compared")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.objects < 100:
        print("--objects must be at least 100 (each planted case needs a document)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="winnow-reconcile-") as tmp:
        result = run(args.objects, Path(tmp), Progress(args.quiet))
    print(json.dumps(result) if args.json else render(result))
    return 0 if result["correct"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
