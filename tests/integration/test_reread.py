"""Reading again what an older reader made (after an upgrade that improved parsing or chunking): ingest
reads such a document again on its next event, reusing the vectors of the passages whose text did not
change, and ``winnow reconcile --reread`` sends them all, on demand only.

Real parts: the ingest handler over the folder bucket, the SQLite ledger and Qdrant local mode, with the
real Voyage REST adapter against the loopback fake Voyage server (whose request log counts embedding
calls); the ``winnow`` command in process. The Lambda's paged run on DynamoDB and SQS is in
tests/integration/test_reconcile.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.integration.test_ingest_handler import HANDBOOK
from tests.support.cli import InProcessWinnow
from tests.support.stack import EmbeddedStack
from winnow.ingest.events import s3_event
from winnow.ingest.reading import READER_VERSION
from winnow.models import Chunk, DocumentStatus, LedgerRecord
from winnow.ports import Ledger
from winnow_local.adapters.ledger_sqlite import SqliteLedger

KEY = "acme/handbook.md"


def made_by_an_older_reader(ledger: Ledger, tenant: str, key: str) -> None:
    """The record as a Winnow from before the upgrade left it (written before ``reader`` existed)."""
    record = ledger.get(tenant, key)
    assert record is not None and record.reader == READER_VERSION
    # without a sequencer: the stored one stays, as for any record ingest did not write for an S3 event
    assert ledger.put(replace(record, reader=0, sequencer=None))


def test_an_older_readers_document_sent_again_is_read_again_reusing_every_vector(
    stack: EmbeddedStack,
) -> None:
    # Given a document indexed by an older reader, with the event that indexed it kept
    stack.put_object(KEY, HANDBOOK)
    original = s3_event([stack.created_record(KEY)])
    first = stack.invoke_ingest(original)["results"][0]
    assert first["status"] == "indexed"
    ledger = stack.container.ledger
    made_by_an_older_reader(ledger, "acme", KEY)
    calls, points = stack.embed_calls(), stack.container.store.point_ids("acme", KEY)
    # When that event is delivered again, then it is still a duplicate: skipped, nothing read
    assert stack.invoke_ingest(original)["results"][0]["status"] == "skipped"
    assert (ledger.get("acme", KEY) or first).reader == 0
    # When the same bytes are uploaded again (a new event)
    result = stack.upload(KEY, HANDBOOK)
    # Then the document is read again, not answered "unchanged", and its unchanged passages keep their
    # vectors: nothing is embedded
    assert result["status"] == "indexed", result
    assert result["chunks"] == first["chunks"]
    assert (result["embedded"], result["reused"]) == (0, first["chunks"])
    assert stack.embed_calls() == calls
    assert stack.container.store.point_ids("acme", KEY) == points
    # and the ledger says this reader made its passages, so the next identical upload is unchanged
    record = ledger.get("acme", KEY)
    assert record is not None and record.status == DocumentStatus.INDEXED
    assert (record.reader, record.embedded, record.reused) == (READER_VERSION, 0, first["chunks"])
    assert stack.upload(KEY, HANDBOOK)["status"] == "unchanged"


def test_a_reread_embeds_only_the_passages_the_new_reader_changed(
    stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a document indexed by an older reader
    first = stack.upload(KEY, HANDBOOK)
    made_by_an_older_reader(stack.container.ledger, "acme", KEY)
    texts = stack.embedded_texts()
    # and a newer chunker that reads one passage differently (the last one gains a word)
    from winnow.text import chunking

    def improved(make: object) -> object:
        def chunk(*args: object, **kwargs: object) -> list[Chunk]:
            chunks: list[Chunk] = make(*args, **kwargs)  # type: ignore[operator]
            return [*chunks[:-1], replace(chunks[-1], text=chunks[-1].text + " Always.")]

        return chunk

    monkeypatch.setattr(chunking, "chunk_to_fit", improved(chunking.chunk_to_fit))
    monkeypatch.setattr(chunking, "chunk_document", improved(chunking.chunk_document))
    # When the same bytes are sent again
    result = stack.upload(KEY, HANDBOOK)
    # Then only the changed passage is embedded
    assert result["status"] == "indexed"
    assert (result["embedded"], result["reused"]) == (1, first["chunks"] - 1)
    assert stack.embedded_texts() - texts == 1
    _, body = stack.search("report lost devices to the security desk", relevance_threshold=0)
    assert any(r["text"].endswith("Always.") for r in body["results"])


def test_cli_reconcile_rereads_only_when_asked_and_then_has_nothing_left(tmp_path: Path) -> None:
    # Given two documents indexed with the command, one of them by an older reader
    winnow = InProcessWinnow(tmp_path / "home")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ferry.md").write_text(
        "# Ferry timetable\n\nThe first ferry to Lundy leaves Bideford quay at 08:15 on Tuesdays.\n"
    )
    (tmp_path / "docs" / "bus.md").write_text(
        "# Bus timetable\n\nThe number 21 bus leaves the harbour every hour.\n"
    )
    assert winnow("ingest", str(tmp_path / "docs"), "--tenant", "recon").code == 0
    path = winnow.home / "ledger.sqlite3"
    ledger = SqliteLedger(path)
    try:
        made_by_an_older_reader(ledger, "recon", "recon/ferry.md")
    finally:
        ledger.close()

    def reconcile(*flags: str) -> dict[str, object]:
        run = winnow("reconcile", "--tenant", "recon", "--json", *flags)
        assert run.code == 0, run.stderr
        [stats] = run.json_lines()
        return stats

    def record_of(key: str) -> LedgerRecord:
        ledger = SqliteLedger(path)
        try:
            record = ledger.get("recon", key)
        finally:
            ledger.close()
        assert record is not None
        return record

    # When reconcile runs without --reread, then the older reader's document stays unchanged
    stats = reconcile()
    assert (stats["unchanged"], stats["reread"]) == (2, 0)
    assert record_of("recon/ferry.md").reader == 0
    # When it runs with --reread --dry-run, then it counts it and changes nothing
    stats = reconcile("--reread", "--dry-run")
    assert (stats["dry_run"], stats["unchanged"], stats["reread"]) == (True, 1, 1)
    assert record_of("recon/ferry.md").reader == 0
    # When it runs with --reread, then it sends it, and ingest reads it again
    run = winnow("reconcile", "--tenant", "recon", "--reread")
    assert run.code == 0, run.stderr
    assert "1 unchanged" in run.stdout and "1 reread" in run.stdout
    record = record_of("recon/ferry.md")
    assert (record.reader, record.embedded, record.reused) == (READER_VERSION, 0, record.chunks)
    # and a second run finds nothing left to read again
    stats = reconcile("--reread")
    assert (stats["unchanged"], stats["reread"]) == (2, 0)
