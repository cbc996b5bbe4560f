"""Reconcile over a large bucket in the AWS shape: objects/s and the memory the run itself needs.

``python -m benchmarks.reconcile_scale [--objects 100000] [--json]``

moto plays S3, DynamoDB (the ledger) and SQS (the ingest queue) over HTTP on loopback (a thread of this
process); Qdrant Edge holds the points in this process.
The bucket gets ``--objects`` documents under one tenant with planted drift: 90 % indexed and unchanged
(ledger record with the object's ETag, one point each), 5 % new (object only), 3 % modified (record of an
older ETag), 1 % deleted (record and point, no object) and 1 % orphans (points only). The real
``Reconciler`` then runs the whole bucket through the real adapters (``S3ObjectSource``,
``DynamoDbLedger``, ``SqsEventQueue``, ``QdrantVectorStore``), and the benchmark checks that every
planted case was found and every queued event reached SQS.

Memory: the process's resident high-water mark is reset just before the run (``/proc/self/clear_refs``),
so ``run_peak_rss_mb`` is the peak *during* reconcile, and ``run_growth_mb`` what it added to the
resident size the set-up left (moto's stored objects are in the "before" figure; its per-request garbage
and the queued SQS messages are in the growth). Bounded memory shows as a growth that stays flat from
10k to 100k objects.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import Progress, machine, positive_int, table

TENANT = "acme"
SHARES = {"unchanged": 90, "new": 5, "modified": 3, "deleted": 1, "orphans": 1}


def _rss(field: str) -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's server on a free loopback port, in a thread of this process: the set-up writes its
    100,000 objects and records straight into moto's backends (over HTTP that alone took most of an
    hour on a loaded 2-core machine); the reconcile run talks to it over HTTP like Lambda to AWS."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


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


def setup(url: str, cases: dict[str, list[str]], home: Path, progress: Progress) -> dict[str, Any]:
    import boto3

    from winnow.adapters.ledger_dynamodb import table_definition
    from winnow.adapters.qdrant_store import make_qdrant_client, store_on
    from winnow.models import Chunk, ChunkPoint, EmbeddingProfile, SparseVector
    from winnow.settings import QdrantSettings

    def client(service: str) -> Any:
        return boto3.client(service, endpoint_url=url, region_name="us-east-1")

    bucket, table = f"bench-{uuid.uuid4().hex[:8]}", f"ledger-{uuid.uuid4().hex[:8]}"
    s3, dynamodb = client("s3"), client("dynamodb")
    s3.create_bucket(Bucket=bucket)
    dynamodb.create_table(**table_definition(table))
    queue_url = client("sqs").create_queue(QueueName=f"ingest-{uuid.uuid4().hex[:8]}")["QueueUrl"]

    def body(key: str) -> bytes:
        return f"# {key}\n\nA document of the benchmark.\n".encode()

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends
    from moto.s3.models import s3_backends

    in_bucket = cases["unchanged"] + cases["new"] + cases["modified"]
    progress(f"putting {len(in_bucket):,} objects into moto S3")
    s3_backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for key in in_bucket:
        s3_backend.put_object(bucket, key, body(key))
    # The adapter reads what boto3 reads: one object through the API proves the direct writes look right.
    probe = s3.head_object(Bucket=bucket, Key=in_bucket[0])
    assert probe["ETag"] == f'"{hashlib.md5(body(in_bucket[0])).hexdigest()}"', probe

    profile = EmbeddingProfile("synthetic", "reconcile-benchmark", 4)
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat(timespec="seconds")

    def item(key: str, etag: str) -> dict[str, Any]:
        return {
            "pk": {"S": TENANT},
            "sk": {"S": key},
            "status": {"S": "indexed"},
            "etag": {"S": etag},
            "chunks": {"N": "1"},
            "profile": {"S": profile.slug},
            "content_sha256": {"S": hashlib.sha256(key.encode()).hexdigest()},
            "updated_at": {"S": later},
            "created_at": {"S": later},
        }

    recorded = [(k, f'"{hashlib.md5(body(k)).hexdigest()}"') for k in cases["unchanged"]]
    recorded += [(k, '"an-older-version"') for k in cases["modified"] + cases["deleted"]]
    progress(f"writing {len(recorded):,} ledger records into moto DynamoDB")
    ddb_backend = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    for key, etag in recorded:
        ddb_backend.put_item(table, item(key, etag))
    from winnow.adapters.ledger_dynamodb import DynamoDbLedger

    sample = DynamoDbLedger(table, dynamodb).get(TENANT, recorded[0][0])
    assert sample is not None and sample.chunks == 1 and sample.profile == profile.slug, sample

    settings = QdrantSettings(path=str(home / "qdrant"), local_engine="edge")
    store = store_on(make_qdrant_client(settings, None, home / "qdrant"), profile, settings)
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
    return {"bucket": bucket, "table": table, "queue_url": queue_url, "store": store, "client": client}


def run(objects: int, home: Path, progress: Progress) -> dict[str, Any]:
    from winnow.adapters.ledger_dynamodb import DynamoDbLedger
    from winnow.adapters.objects_s3 import S3ObjectSource
    from winnow.adapters.queue_sqs import SqsEventQueue
    from winnow.reconcile.service import Reconciler

    cases = plan(objects)
    with moto_server() as url:
        os.environ.update(
            {
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1",
            }
        )
        world = setup(url, cases, home, progress)
        client = world["client"]
        reconciler = Reconciler(
            S3ObjectSource(world["bucket"], client("s3")),
            DynamoDbLedger(world["table"], client("dynamodb")),
            world["store"],
            SqsEventQueue(world["queue_url"], client("sqs")),
            world["store"].profile,
            bucket=world["bucket"],
        )
        progress(f"reconciling {objects:,} documents")
        before = _rss("VmRSS")
        reset = _reset_peak()
        started = time.perf_counter()
        result = reconciler.run(TENANT)
        seconds = time.perf_counter() - started
        peak = _rss("VmHWM")
        queued = int(
            client("sqs").get_queue_attributes(
                QueueUrl=world["queue_url"], AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]["ApproximateNumberOfMessages"]
        )
        world["store"].close()
    stats = result.totals
    found = {
        "unchanged": stats.unchanged,
        "new": stats.new,
        "modified": stats.modified,
        "deleted": stats.deleted,
        "orphans": stats.orphans_removed,
    }
    planted = {case: len(keys) for case, keys in cases.items()}
    expected_queue = planted["new"] + planted["modified"] + planted["deleted"]
    return {
        "objects": objects,
        "seconds": round(seconds, 1),
        "objects_per_s": round(objects / seconds, 1),
        "rss_before_mb": round(before, 1),
        "run_peak_rss_mb": round(peak, 1) if reset else None,
        "run_growth_mb": round(peak - before, 1) if reset else None,
        "found": found,
        "planted": planted,
        "queued": queued,
        "correct": found == planted and queued == expected_queue and stats.failed == 0,
        "machine": machine(),
    }


def render(result: dict[str, Any]) -> str:
    rows = [[case, str(result["planted"][case]), str(result["found"][case])] for case in SHARES]
    growth = result["run_growth_mb"]
    return "\n".join(
        [
            f"reconcile of {result['objects']:,} documents: {result['seconds']:.1f} s, "
            f"{result['objects_per_s']:,.0f} objects/s",
            table(["case", "planted", "found"], rows),
            f"queued to SQS: {result['queued']:,}; all correct: {result['correct']}",
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
