"""How many S3 and DynamoDB requests ingest makes per document. In a bulk ingest every request costs the
Lambda's CPU (botocore signs, serialises and parses each one), so the count per document is what bounds
documents per second per instance (training/NOTEBOOK.md, bulk ingest)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from winnow_fakes.fake_voyage import FakeVoyageServer


class RequestCounter:
    """Counts the operations a boto3 client sends (botocore's ``before-call``: once per call, retries
    not included) while ``counting``."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._active = False

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.endpoint_prefix
        client.meta.events.register("before-call", self._before(service))

    def _before(self, service: str) -> Callable[..., None]:
        def record(model: Any, **_: Any) -> None:
            if self._active:
                self.calls[f"{service}:{model.name}"] += 1

        return record

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self.calls.clear()
        self._active = True
        try:
            yield self.calls
        finally:
            self._active = False


def test_a_new_document_costs_four_aws_requests_and_a_changed_one_five(
    tmp_path: Path, s3_bucket: str, ledger_table: str, fake_voyage: FakeVoyageServer
) -> None:
    from tests.support.stack import EmbeddedStack
    from winnow.adapters.ledger_dynamodb import DynamoDbLedger
    from winnow.adapters.objects_s3 import S3ObjectSource
    from winnow.ingest.events import s3_event

    # Given the ingest service on S3 and the DynamoDB ledger (moto), with its requests counted
    objects, ledger = S3ObjectSource(s3_bucket), DynamoDbLedger(ledger_table)
    counter = RequestCounter()
    counter.attach(objects.client)
    counter.attach(ledger.client)
    stack = EmbeddedStack(tmp_path, fake_voyage, objects=objects, ledger=ledger)
    stack.bucket = s3_bucket
    text = b"# Leave\n\nEvery employee receives twenty-eight days of paid holiday per year.\n"
    try:
        # When a document the ledger has never seen arrives (no sidecar)
        stack.put_object("acme/leave.md", text)
        event = s3_event([stack.created_record("acme/leave.md")], s3_bucket)
        with counter.counting() as calls:
            out = stack.invoke_ingest(event)
        # Then it is indexed with four requests: the lease that returns the record, one GET for the
        # object's headers and bytes, the sidecar's HEAD, the record written with the lease's release
        assert out["results"][0]["status"] == "indexed"
        assert calls == {
            "dynamodb:UpdateItem": 2,
            "s3:GetObject": 1,
            "s3:HeadObject": 1,
        }, calls
        # When the document changes
        stack.put_object("acme/leave.md", text + b"\nAnd five more.\n")
        event = s3_event([stack.created_record("acme/leave.md")], s3_bucket)
        with counter.counting() as calls:
            out = stack.invoke_ingest(event)
        # Then its HEAD comes first (an unchanged ETag would need no GET): one request more
        assert out["results"][0]["status"] == "indexed"
        assert calls == {"dynamodb:UpdateItem": 2, "s3:GetObject": 1, "s3:HeadObject": 2}, calls
    finally:
        stack.close()
