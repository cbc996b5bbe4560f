"""The parse budget through the deployed path: an SQS batch through the ingest handler, where one
document needs more memory than the budget allows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stack import EmbeddedStack
from winnow.ingest.events import s3_event
from winnow.models import DocumentStatus
from winnow.settings import IngestSettings
from winnow_fakes.fake_voyage import FakeVoyageServer

MEMORY_HOG = b"a\n\n" * 8_000_000  # each one-letter paragraph becomes a block: several hundred MB
GOOD = {
    "acme/before.md": b"# Holidays\n\nEvery employee receives twenty-eight days of paid holiday per year.\n",
    "acme/after.txt": b"Travel expenses are reimbursed within fourteen days when submitted with receipts.",
}


@pytest.fixture
def budget_stack(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, ingest=IngestSettings(parse_memory_mb=128))
    yield stack
    stack.close()


def test_a_document_over_the_memory_budget_fails_alone_and_its_message_is_acknowledged(
    budget_stack: EmbeddedStack,
) -> None:
    stack = budget_stack
    # Given a batch of three messages: a good document, one whose parse needs more than 128 MB, and
    # another good one
    for key, data in GOOD.items():
        stack.put_object(key, data)
    stack.put_object("acme/hog.txt", MEMORY_HOG)
    keys = ["acme/before.md", "acme/hog.txt", "acme/after.txt"]
    batch = stack.sqs_batch(*(s3_event([stack.created_record(key)]) for key in keys))
    # When the batch reaches the ingest handler
    response = stack.invoke_ingest(batch)
    # Then no message is handed back for retry: the failure is permanent and recorded
    assert response == {"batchItemFailures": []}
    record = stack.container.ledger.get("acme", "acme/hog.txt")
    assert record is not None and record.status == DocumentStatus.FAILED
    assert record.error == "parsing needs more than the 128 MB memory budget"
    assert stack.container.store.point_ids("acme", "acme/hog.txt") == set()
    # and its lease was released: another worker can take it at once
    assert stack.container.ledger.acquire("acme", "acme/hog.txt", "next-worker", 60)
    # and the documents on either side of it are indexed and searchable
    for key in GOOD:
        good = stack.container.ledger.get("acme", key)
        assert good is not None and good.status == DocumentStatus.INDEXED, key
        assert len(stack.container.store.point_ids("acme", key)) == good.chunks >= 1
    status, body = stack.search("how are travel expenses reimbursed", relevance_threshold=0)
    assert status == 200 and body["results"][0]["key"] == "acme/after.txt"
