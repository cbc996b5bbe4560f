"""Bulk ingest in the AWS shape: documents/s per Lambda instance, concurrent batches against today's
sequential schedule, in the same run.

``python -m benchmarks.ingest_scale [--docs 1000] [--long 10] [--concurrency 10] [--json]``

Each document is put into S3 and its S3 notification into SQS, one message per object as S3 sends them;
a poller then plays Lambda's SQS event source: it receives up to 10 messages, invokes the real ingest
handler (``functions/ingest/app.py``) with them, deletes what succeeded and leaves the failed messages
to come back after the visibility timeout, until the queue is empty. S3, SQS and DynamoDB (the ledger)
are moto's server and Voyage is the fake server with its simulation on (default latency, the tier's
rate limits); both run in child processes, since in AWS their work is not on the Lambda's CPU. Qdrant
is Qdrant Edge, in memory, in this process. The schedule is run twice on fresh ledger tables and
collections: ``WINNOW_INGEST_BATCH_CONCURRENCY=1`` (one document at a time, a Voyage request each: the
schedule before batches were gathered) and ``--concurrency`` (documents at once, their texts gathered
into shared requests, ``winnow.ingest.gather``).

Docs/s per instance is the documents over the seconds the handler ran: receiving and deleting messages
and waiting for failed ones to come back are the event source's work, not the instance's (moto's
``ReceiveMessage`` walks the whole queue, and its time grew with the queue). The wall-clock rate, poller
included, is printed beside it. The S3 and DynamoDB requests the handler sends are counted per document.

Checked per run: every document ends ``indexed`` with exactly its chunk count of points (else ``lost``),
no document was embedded twice or holds extra points (else ``duplicated``), and no record failed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote_plus

from benchmarks.common import (
    AWS_TESTING,
    ChildProcess,
    Progress,
    machine,
    moto_server,
    positive_int,
    quiet_known_warnings,
    table,
)

TENANT = "acme"
DEFAULT_SCIFACT = Path(__file__).resolve().parents[1] / ".." / "shared" / "eval" / "scifact"
BUNDLED_SCIFACT = Path(__file__).resolve().parents[1] / "tests" / "data" / "scifact"
ABSTRACTS_PER_LONG_DOCUMENT = 40
VISIBILITY_TIMEOUT_SECONDS = 2


# --- documents ---------------------------------------------------------------------------------------
def load_documents(folder: Path, count: int, long_count: int) -> list[tuple[str, bytes]]:
    """``count`` SciFact abstracts as text files, plus ``long_count`` Markdown documents of
    ``ABSTRACTS_PER_LONG_DOCUMENT`` abstracts each (one section per abstract), cycling when short."""
    abstracts: list[tuple[str, str]] = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                row = json.loads(line)
                title = str(row.get("title") or "").strip()
                abstracts.append((str(row["_id"]), f"{title}\n\n{row.get('text') or ''}".strip()))
    if not abstracts:
        raise ValueError(f"{folder}/corpus.jsonl holds no documents")
    docs = [
        (
            f"{TENANT}/scifact/{abstracts[i % len(abstracts)][0]}-{i}.txt",
            abstracts[i % len(abstracts)][1].encode(),
        )
        for i in range(count)
    ]
    for n in range(long_count):
        parts = [f"# Collected abstracts {n}\n"]
        for j in range(ABSTRACTS_PER_LONG_DOCUMENT):
            doc_id, text = abstracts[(n * ABSTRACTS_PER_LONG_DOCUMENT + j) % len(abstracts)]
            parts.append(f"## Abstract {doc_id}\n\n{text}\n")
        docs.append((f"{TENANT}/long/collection-{n}.md", "\n".join(parts).encode()))
    return docs


# --- the services, in child processes ----------------------------------------------------------------
def _serve_voyage(conn: Connection, simulation: dict[str, Any]) -> None:
    from winnow_fakes.fake_voyage import FakeVoyageServer, VoyageSimulation

    with FakeVoyageServer(simulation=VoyageSimulation(**simulation)) as fake:
        conn.send((fake.base_url, fake.api_key))
        while True:
            command = conn.recv()
            if command == "usage":  # usage is read over the pipe
                conn.send({name: vars(usage) for name, usage in fake.usage.items()})
            elif command == "reset":
                fake.reset()
                conn.send(True)
            else:
                conn.send(True)
                return


# --- one run -----------------------------------------------------------------------------------------
def _sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": "us-east-1",
    }


def run_schedule(
    world: dict[str, Any],
    docs: list[tuple[str, bytes]],
    concurrency: int,
    home: Path,
    voyage: ChildProcess,
    progress: Progress,
) -> dict[str, Any]:
    from pydantic import SecretStr

    from functions.ingest import app as ingest_app
    from winnow.adapters.ledger_dynamodb import table_definition
    from winnow.factory import Container, Settings, set_container
    from winnow.ingest.events import s3_event
    from winnow.settings import (
        IngestSettings,
        ProviderSettings,
        QdrantSettings,
        StorageSettings,
        VoyageSettings,
    )
    from winnow_local.context import LocalLambdaContext

    client = world["client"]
    sqs, dynamodb = client("sqs"), client("dynamodb")
    table = f"ledger-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(**table_definition(table))
    queue_url = sqs.create_queue(
        QueueName=f"ingest-{uuid.uuid4().hex[:8]}",
        Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS)},
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    for start in range(0, len(docs), 10):
        entries = []
        for n, (key, _) in enumerate(docs[start : start + 10]):
            info = world["heads"][key]
            body = s3_event(
                [("ObjectCreated:Put", key, info[0], info[1], f"{start + n + 1:016X}")], world["bucket"]
            )
            entries.append({"Id": str(n), "MessageBody": json.dumps(body)})
        sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)

    settings = Settings(
        storage=StorageSettings(home=home, bucket=world["bucket"], ledger_table=table),
        qdrant=QdrantSettings(path=":memory:"),  # in AWS Qdrant is remote: no local disk writes
        voyage=VoyageSettings(api_key=SecretStr(voyage.greeting[1]), base_url=voyage.greeting[0]),
        providers=ProviderSettings(embedder="voyage", reranker="none"),
        ingest=IngestSettings(batch_concurrency=concurrency),
    )
    container = Container(settings)
    set_container(container)
    container.store.ensure_collection()  # the warm container's collection exists before the clock starts
    aws_requests = count_requests(cast(Any, container.objects).client, cast(Any, container.ledger).client)
    voyage.ask("reset")
    progress(f"ingesting {len(docs):,} documents, {concurrency} at a time per batch")
    invocations = failed_records = 0
    handler_seconds = 0.0
    acknowledged: Counter[str] = Counter()
    started = time.perf_counter()
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
            "Messages", []
        )
        if not messages:
            attributes = sqs.get_queue_attributes(
                QueueUrl=queue_url,
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
            if not any(int(v) for v in attributes.values()):
                break
            time.sleep(0.2)  # failed messages come back after the visibility timeout
            continue
        event = {"Records": [_sqs_record(m, queue_arn) for m in messages]}
        invoked = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # Powertools' metric blobs, not results
            response = ingest_app.handler(event, LocalLambdaContext())
        handler_seconds += time.perf_counter() - invoked
        invocations += 1
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        failed_records += len(failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        before = sum(acknowledged.values())
        acknowledged.update(
            unquote_plus(json.loads(m["Body"])["Records"][0]["s3"]["object"]["key"]) for m in done
        )
        if before // 200 != sum(acknowledged.values()) // 200:
            progress(f"  {sum(acknowledged.values()):,} of {len(docs):,} acknowledged")
    seconds = time.perf_counter() - started
    requests = dict(aws_requests)
    usage = voyage.ask("usage")["embeddings"]
    check = verify(container, docs, acknowledged)
    set_container(None)
    container.close()
    return {
        "concurrency": concurrency,
        "seconds": round(seconds, 2),
        "handler_seconds": round(handler_seconds, 2),
        "docs_per_s": round(len(docs) / handler_seconds, 2),
        "wall_docs_per_s": round(len(docs) / seconds, 2),
        "invocations": invocations,
        "failed_records": failed_records,
        "voyage_requests": usage["requests"],
        "requests_per_doc": round(usage["requests"] / len(docs), 3),
        "throttled": usage["throttled"],
        "aws_requests_per_doc": round(sum(requests.values()) / len(docs), 2),
        "aws_requests": requests,
        "embedded_texts": usage["texts"],
        **check,
    }


def count_requests(*clients: Any) -> Counter[str]:
    """The S3 and DynamoDB operations the handler sends through these boto3 clients (botocore's
    ``before-call`` event, once per call; retries are not counted), by operation."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    for client in clients:
        service = client.meta.service_model.endpoint_prefix

        def count(model: Any, service: str = service, **_: Any) -> None:
            with lock:
                counts[f"{service}:{model.name}"] += 1

        client.meta.events.register("before-call", count)
    return counts


def verify(container: Any, docs: list[tuple[str, bytes]], acknowledged: Counter[str]) -> dict[str, Any]:
    """Lost: never acknowledged, not ``indexed``, or fewer points than chunks. Duplicated: acknowledged
    more than once (indexed twice) or more points than chunks."""
    ledger, store = container.ledger, container.store
    lost = duplicated = chunks = embedded = 0
    for key, _ in docs:
        record = ledger.get(TENANT, key)
        points = len(store.point_ids(TENANT, key))
        if acknowledged[key] == 0 or record is None or record.status != "indexed" or points < record.chunks:
            lost += 1
            continue
        chunks += record.chunks
        embedded += record.embedded
        if acknowledged[key] > 1 or points > record.chunks:
            duplicated += 1
    return {"lost": lost, "duplicated": duplicated, "chunks": chunks, "recorded_embedded": embedded}


def run(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    import boto3

    docs = load_documents(args.scifact, args.docs, args.long)
    simulation: dict[str, Any] = {"base_latency_seconds": args.base_latency, "tier": 1}
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.environ.update(AWS_TESTING)
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "WinnowBenchmark")
    os.environ["POWERTOOLS_LOG_LEVEL"] = os.environ.get("POWERTOOLS_LOG_LEVEL", "ERROR")
    voyage, moto = ChildProcess(_serve_voyage, simulation), ChildProcess(moto_server)
    try:
        url = moto.greeting
        with tempfile.TemporaryDirectory(prefix="winnow-ingest-scale-") as tmp:
            os.environ["AWS_ENDPOINT_URL"] = url

            def client(service: str) -> Any:
                return boto3.client(service, endpoint_url=url, region_name="us-east-1")

            bucket = f"bench-{uuid.uuid4().hex[:8]}"
            s3 = client("s3")
            s3.create_bucket(Bucket=bucket)
            progress(f"putting {len(docs):,} documents into S3 (moto)")
            heads: dict[str, tuple[int, str]] = {}
            for key, data in docs:
                etag = s3.put_object(Bucket=bucket, Key=key, Body=data)["ETag"]
                heads[key] = (len(data), etag)
            world = {"client": client, "bucket": bucket, "heads": heads}
            baseline = run_schedule(world, docs, 1, Path(tmp) / "baseline", voyage, progress)
            progress(f"baseline: {baseline['docs_per_s']} docs/s")
            concurrent = run_schedule(
                world, docs, args.concurrency, Path(tmp) / "concurrent", voyage, progress
            )
    finally:
        for child in (voyage, moto):
            child.ask("stop")
            child.close()
    speedup = concurrent["docs_per_s"] / baseline["docs_per_s"]
    wall_speedup = concurrent["wall_docs_per_s"] / baseline["wall_docs_per_s"]
    return {
        "docs": len(docs),
        "long_docs": args.long,
        "concurrency": args.concurrency,
        "docs_per_s": concurrent["docs_per_s"],
        "baseline_docs_per_s": baseline["docs_per_s"],
        "speedup": round(speedup, 2),
        "wall_docs_per_s": concurrent["wall_docs_per_s"],
        "baseline_wall_docs_per_s": baseline["wall_docs_per_s"],
        "wall_speedup": round(wall_speedup, 2),
        "requests_aws_per_doc": concurrent["aws_requests_per_doc"],
        "requests_per_doc": concurrent["requests_per_doc"],
        "baseline_requests_per_doc": baseline["requests_per_doc"],
        "throttled": concurrent["throttled"],
        "baseline_throttled": baseline["throttled"],
        "lost": concurrent["lost"] + baseline["lost"],
        "duplicated": concurrent["duplicated"] + baseline["duplicated"],
        "failed_records": concurrent["failed_records"] + baseline["failed_records"],
        "runs": {"baseline": baseline, "concurrent": concurrent},
        "simulation": simulation,
        "meets_goal": speedup >= 4.0 and concurrent["lost"] + concurrent["duplicated"] == 0,
        "machine": machine(),
    }


def render(result: dict[str, Any]) -> str:
    rows = []
    for name in ("baseline", "concurrent"):
        r = result["runs"][name]
        rows.append(
            [
                f"{name} ({r['concurrency']} at a time)",
                f"{r['docs_per_s']:.2f}",
                f"{r['wall_docs_per_s']:.2f}",
                f"{r['requests_per_doc']:.3f}",
                f"{r['aws_requests_per_doc']:.2f}",
                str(r["throttled"]),
                str(r["failed_records"]),
                str(r["lost"]),
                str(r["duplicated"]),
                f"{r['handler_seconds']:.1f}",
                f"{r['seconds']:.1f}",
            ]
        )
    sim = result["simulation"]
    return "\n".join(
        [
            f"bulk ingest of {result['docs']:,} documents ({result['long_docs']} long) in SQS batches of 10, "
            f"one Lambda instance; Voyage simulated: {sim['base_latency_seconds']} s a request (plus its "
            f"per-token default), tier {sim['tier']}",
            table(
                [
                    "schedule",
                    "docs/s (handler)",
                    "docs/s (wall)",
                    "Voyage req/doc",
                    "AWS req/doc",
                    "429s",
                    "failed records",
                    "lost",
                    "duplicated",
                    "handler s",
                    "wall s",
                ],
                rows,
            ),
            f"speedup per instance (handler time): {result['speedup']:.2f}x (goal >= 4x): "
            f"{'met' if result['meets_goal'] else 'NOT met'}; with the poller's time (wall clock): "
            f"{result['wall_speedup']:.2f}x",
            f"Voyage requests per document: {result['runs']['concurrent']['requests_per_doc']:.3f} against "
            f"{result['runs']['baseline']['requests_per_doc']:.3f} one at a time (goal <= 0.2)",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ingest_scale", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--docs", type=positive_int, default=1000, help="SciFact abstracts to ingest")
    parser.add_argument(
        "--long", type=int, default=10, help=f"long documents ({ABSTRACTS_PER_LONG_DOCUMENT} abstracts each)"
    )
    parser.add_argument("--concurrency", type=positive_int, default=10, help="documents of a batch at once")
    parser.add_argument(
        "--scifact", type=Path, default=None, help="SciFact folder (default ../shared/eval/scifact)"
    )
    parser.add_argument("--base-latency", type=float, default=None, help="simulated seconds per request")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from winnow_fakes.fake_voyage import DEFAULT_BASE_LATENCY_SECONDS

    args = parse_args(argv)
    quiet_known_warnings()
    if args.long < 0:
        print("--long must be 0 or more", file=sys.stderr)
        return 2
    if args.scifact is None:
        args.scifact = DEFAULT_SCIFACT if (DEFAULT_SCIFACT / "corpus.jsonl").is_file() else BUNDLED_SCIFACT
    if args.base_latency is None:
        args.base_latency = DEFAULT_BASE_LATENCY_SECONDS
    saved = dict(os.environ)
    try:
        result = run(args, Progress(args.quiet))
    finally:  # the AWS endpoint and log level set for the run must not outlive it (tests run in-process)
        os.environ.clear()
        os.environ.update(saved)
    print(json.dumps(result) if args.json else render(result))
    return 0 if result["lost"] == 0 and result["duplicated"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
