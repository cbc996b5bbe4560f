"""The chunk cap through the deployed path: a document with more chunks than the cap fails alone, with
its one-line reason, as soon as chunking passes the cap (issue 31)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stack import EmbeddedStack
from winnow.ingest.events import s3_event
from winnow.models import DocumentStatus
from winnow.settings import IngestSettings
from winnow_fakes.fake_voyage import FakeVoyageServer

CAP = 50
# Alternating headings, each over a line long enough to be a passage of its own: 400 chunks.
OVER_THE_CAP = "".join(
    f"# {'ab'[n % 2]}\n\nRule {n} says what the team does when a request arrives late on a Friday. " * 2
    + "\n\n"
    for n in range(400)
).encode("utf-8")
GOOD = b"Travel expenses are reimbursed within fourteen days when submitted with receipts."


@pytest.fixture
def capped_stack(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, ingest=IngestSettings(max_chunks=CAP))
    yield stack
    stack.close()


def test_a_document_over_the_chunk_cap_fails_alone_with_its_reason(capped_stack: EmbeddedStack) -> None:
    stack = capped_stack
    # Given a batch with a document of 400 passages (cap 50) and a good one
    stack.put_object("acme/many.md", OVER_THE_CAP)
    stack.put_object("acme/good.txt", GOOD)
    batch = stack.sqs_batch(*(s3_event([stack.created_record(k)]) for k in ("acme/many.md", "acme/good.txt")))
    # When the batch reaches the ingest handler
    response = stack.invoke_ingest(batch)
    # Then the big document is failed for good, with the one-line reason, and nothing of it is stored
    assert response == {"batchItemFailures": []}
    record = stack.container.ledger.get("acme", "acme/many.md")
    assert record is not None and record.status == DocumentStatus.FAILED
    assert record.error == f"more than {CAP} chunks, over the {CAP} limit"
    assert stack.container.store.point_ids("acme", "acme/many.md") == set()
    # and the good document is indexed
    good = stack.container.ledger.get("acme", "acme/good.txt")
    assert good is not None and good.status == DocumentStatus.INDEXED
