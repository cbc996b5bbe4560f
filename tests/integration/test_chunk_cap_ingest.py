"""The chunk cap through the deployed path: a document with more chunks than the cap fails alone, with
its one-line reason, as soon as chunking passes the cap (issue 31)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stack import EmbeddedStack
from winnow.ingest.events import s3_event
from winnow.models import DocumentStatus
from winnow.settings import EMBEDDED_MAX_CHUNKS, IngestSettings, QdrantSettings
from winnow.wiring import Settings
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


def _sections(n: int) -> bytes:
    """``n`` sections under alternating headings, each a passage of its own (as ``OVER_THE_CAP``)."""
    return "".join(
        f"# {'ab'[k % 2]}\n\n"
        + f"Rule {k} says what the team does when a request arrives late on a Friday. " * 2
        + "\n\n"
        for k in range(n)
    ).encode()


def test_the_embedded_default_refuses_a_document_past_its_memory_cap(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    """Issue 44: at 20,000 chunks the embedded ingest process (Qdrant Edge and the local model in it)
    peaks near 550 MB; the embedded default accepts ``EMBEDDED_MAX_CHUNKS``, whose peak is within 400 MB."""
    # Given the embedded default with no chunk cap set
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    try:
        assert stack.container.settings.ingest.max_chunks == EMBEDDED_MAX_CHUNKS < 20_000
        # When a document of more chunks than that cap is uploaded
        result = stack.upload("acme/rules.md", _sections(EMBEDDED_MAX_CHUNKS + 50))
        # Then it fails alone with the cap's one-line reason, before a text is embedded or a point written
        assert result["status"] == "failed"
        assert (
            result["error"] == f"more than {EMBEDDED_MAX_CHUNKS} chunks, over the {EMBEDDED_MAX_CHUNKS} limit"
        )
        assert stack.container.store.point_ids("acme", "acme/rules.md") == set()
        assert not stack.fake or not stack.fake.requests_to("embeddings")
        # and one of fewer chunks is indexed
        assert stack.upload("acme/short.md", _sections(40))["status"] == "indexed"
    finally:
        stack.close()


def test_the_cap_stays_20000_with_qdrant_cloud_and_as_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a Qdrant URL (AWS: no engine, no model in the ingest process), the cap is the 20,000 default
    assert Settings(qdrant=QdrantSettings(url="https://q.example")).ingest.max_chunks == 20_000
    # and a cap set explicitly wins in the embedded default, from the environment or in code
    monkeypatch.setenv("WINNOW_INGEST_MAX_CHUNKS", "12000")
    assert Settings().ingest.max_chunks == 12_000
    assert Settings(ingest=IngestSettings(max_chunks=300)).ingest.max_chunks == 300
