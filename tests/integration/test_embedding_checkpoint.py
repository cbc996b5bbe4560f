"""A large document's finished embedding groups survive a retry: stopped half way by Voyage's rate
limit, its message comes back and only the groups not yet embedded are sent (and billed) again. The
checkpoint lives in the ledger's DynamoDB table (moto over HTTP); Voyage is the stand-in at 2 requests a
minute on a stepped clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import EmbeddedStack, voyage_settings
from winnow.adapters.checkpoint_dynamodb import DynamoDbVectorCheckpoint
from winnow.adapters.ledger_dynamodb import DynamoDbLedger
from winnow.ingest.checkpoint import embed_checkpointed, group_key
from winnow_fakes.fake_voyage import FakeVoyageServer, RateLimit, VoyageSimulation, embed_text


class SteppedClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def large_markdown(sections: int) -> bytes:
    """Sections of ~1,100 characters: each chunk is a Voyage request of its own under a 1,000-token budget."""
    body = "Inspection of the gearbox bearing shows wear on the outer race and the seal. " * 14
    return ("# Manual\n\n" + "".join(f"## Part {i}\n\n{i}: {body}\n\n" for i in range(sections))).encode()


@pytest.fixture
def throttled(fake_voyage: FakeVoyageServer) -> SteppedClock:
    clock = SteppedClock()
    fake_voyage.set_simulation(
        VoyageSimulation(
            base_latency_seconds=0,
            per_token_latency_seconds=0,
            limits={"voyage-3.5": RateLimit(2, None)},
            clock=clock,
            sleep=lambda _s: None,
        )
    )
    return clock


def test_a_redelivered_large_document_embeds_only_the_groups_left(
    tmp_path: Path, fake_voyage: FakeVoyageServer, ledger_table: str, throttled: SteppedClock
) -> None:
    # Given the ingest path on a DynamoDB ledger with its checkpoint, one request per chunk
    stack = EmbeddedStack(tmp_path, fake_voyage, ledger=DynamoDbLedger(ledger_table))
    stack.container.settings.voyage = voyage_settings(fake_voyage, max_batch_tokens=1000)
    stack.container.vector_checkpoint = DynamoDbVectorCheckpoint(ledger_table)
    try:
        data = large_markdown(4)
        # When the first delivery is stopped after two of its four requests (Voyage: 2 a minute)
        first = stack.upload("acme/manual.md", data)
        assert first.get("status") != "indexed"
        billed_first = fake_voyage.usage["embeddings"].texts
        assert billed_first == 2
        # And the message comes back a minute later
        throttled.now += 61
        second = stack.upload("acme/manual.md", data)
    finally:
        stack.close()
    # Then it is indexed with only the two groups left embedded: nothing was billed twice
    assert second["status"] == "indexed"
    assert second["chunks"] == 4
    assert fake_voyage.usage["embeddings"].texts == 4
    assert fake_voyage.usage["embeddings"].throttled >= 1


def test_vectors_come_back_exactly_and_split_over_items(ledger_table: str) -> None:
    checkpoint = DynamoDbVectorCheckpoint(ledger_table)
    vectors = [[i + j / 7 for j in range(2048)] for i in range(40)]  # 40 x 2048 x 8 bytes: 3 items
    key = group_key("voyage/voyage-3.5/2048", ["a", "b"])
    assert checkpoint.load(key) is None
    checkpoint.save(key, vectors)
    assert checkpoint.load(key) == vectors


def test_a_group_half_written_reads_as_missing(ledger_table: str, aws_client: Any) -> None:
    # Parts are written last-first: without part 0 (which counts them) nothing is loaded
    checkpoint = DynamoDbVectorCheckpoint(ledger_table)
    key = group_key("p", ["x"])
    checkpoint.save(key, [[0.5] * 2048] * 40)
    client = aws_client("dynamodb")
    client.delete_item(
        TableName=ledger_table, Key={"pk": {"S": f"_embedding-checkpoint#{key[:4]}"}, "sk": {"S": f"{key}#1"}}
    )
    assert checkpoint.load(key) is None


def test_checkpoint_items_are_not_ledger_records(ledger_table: str, fake_voyage: FakeVoyageServer) -> None:
    # The ledger's scan (reconcile) and lists never see them
    DynamoDbVectorCheckpoint(ledger_table).save(group_key("p", ["x"]), [[0.1, 0.2]])
    assert list(DynamoDbLedger(ledger_table).scan()) == []


def test_without_a_checkpoint_the_retry_would_embed_everything_again(
    fake_voyage: FakeVoyageServer, voyage_settings: Any
) -> None:
    # The baseline: the same groups through embed_checkpointed with a checkpoint that keeps nothing
    from winnow.adapters.voyage import VoyageEmbedder
    from winnow.ports import VectorCheckpoint

    class Forgetful(VectorCheckpoint):
        def load(self, key: str) -> list[list[float]] | None:
            return None

        def save(self, key: str, vectors: Any) -> None:
            return None

    texts = [f"{i}: " + "word " * 250 for i in range(3)]
    embedder = VoyageEmbedder(
        voyage_settings.model_copy(update={"max_batch_tokens": 1000}), fake_voyage.api_key
    )
    for _ in range(2):
        assert embed_checkpointed(embedder, Forgetful(), texts) == [embed_text(t, 1024) for t in texts]
    assert fake_voyage.usage["embeddings"].texts == 6
