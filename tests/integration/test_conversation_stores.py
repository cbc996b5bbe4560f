"""The ``ConversationStore`` contract, on SQLite and on DynamoDB (moto over HTTP, the table built from
the adapter's ``table_definition``): owners never see each other's turns or memories, turns come back
oldest first and the dropped ones go, expired items are never returned, deletes are for good. And the
DynamoDB table of template.yaml matches the adapter, which makes only the calls its role grants."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode.cfn_yaml import loads as load_cfn_yaml

from tests.support.aws import key_value_table
from winnow.adapters.conversations_dynamodb import TTL_ATTRIBUTE, DynamoDbConversationStore, table_definition
from winnow.conversations.store import ConversationStore, Memory, Owner, Turn
from winnow_local.adapters.conversations_sqlite import SqliteConversationStore

ROOT = Path(__file__).resolve().parents[2]
ALICE = Owner("acme", "alice")
BOB = Owner("acme", "bob")
ALICE_ELSEWHERE = Owner("globex", "alice")
NOW = 1_800_000_000.0
LATER = int(NOW) + 3600


def turn(question: str, at_ns: int, answer: str | None = None, keys: tuple[str, ...] = ()) -> Turn:
    return Turn(
        question, f"{question} used", answer, ("c1",) if answer else (), keys, "2027-01-15T08:00:00Z", at_ns
    )


def memory(
    question: str, at_ns: int, conversation: str = "conv-aaaa", vector: tuple[float, ...] = (1.0, 0.0)
) -> Memory:
    return Memory(
        f"m{at_ns}",
        conversation,
        question,
        f"answer to {question}",
        ("acme/a.md",),
        "2027-01-15T08:00:00Z",
        at_ns,
        "local-x-384",
        vector,
    )


@pytest.fixture
def dynamodb_table(aws_client: Callable[[str], Any]) -> str:
    return key_value_table(aws_client, "winnow-conversations")


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConversationStore]:
    if request.param == "sqlite":
        s = SqliteConversationStore(tmp_path / "conversations.sqlite3")
        yield s
        s.close()
    else:
        yield DynamoDbConversationStore(request.getfixturevalue("dynamodb_table"))


def test_turns_belong_to_their_owner_and_come_back_oldest_first(store: ConversationStore) -> None:
    store.add_turn(ALICE, "conv-aaaa", turn("first", 1), LATER)
    store.add_turn(ALICE, "conv-aaaa", turn("second", 2, answer="yes [1]", keys=("acme/a.md",)), LATER)
    store.add_turn(ALICE, "conv-bbbb", turn("other", 3), LATER)
    got = store.turns(ALICE, "conv-aaaa", 10, NOW)
    assert got is not None
    assert [(t.question, t.query_used, t.answer, t.cited, t.keys, t.at_ns) for t in got] == [
        ("first", "first used", None, (), (), 1),
        ("second", "second used", "yes [1]", ("c1",), ("acme/a.md",), 2),
    ]
    assert [t.question for t in store.turns(ALICE, "conv-aaaa", 1, NOW) or []] == ["second"]
    # Another user, or the same user id in another tenant, has no such conversation
    assert store.turns(BOB, "conv-aaaa", 10, NOW) is None
    assert store.turns(ALICE_ELSEWHERE, "conv-aaaa", 10, NOW) is None
    assert store.delete_conversation(BOB, "conv-aaaa") is False
    assert store.turns(ALICE, "conv-aaaa", 10, NOW) is not None


def test_dropped_and_expired_turns_are_never_returned(store: ConversationStore) -> None:
    store.add_turn(ALICE, "conv-aaaa", turn("one", 1), LATER)
    store.add_turn(ALICE, "conv-aaaa", turn("two", 2), LATER)
    store.add_turn(ALICE, "conv-aaaa", turn("three", 3), LATER, drop=[1])
    assert [t.question for t in store.turns(ALICE, "conv-aaaa", 10, NOW) or []] == ["two", "three"]
    assert store.turns(ALICE, "conv-aaaa", 10, LATER + 1) is None


def test_memories_are_per_owner_newest_first_and_deleted_with_their_conversation(
    store: ConversationStore,
) -> None:
    store.add_memory(ALICE, memory("leave", 1, vector=(0.25, -0.5)), LATER)
    store.add_memory(ALICE, memory("expenses", 2, conversation="conv-bbbb"), LATER)
    store.add_memory(BOB, memory("bob's", 3), LATER)
    got = store.memories(ALICE, NOW)
    assert [m.question for m in got] == ["expenses", "leave"]
    assert got[1].vector == (0.25, -0.5) and got[1].keys == ("acme/a.md",) and got[1].profile == "local-x-384"
    assert store.memories(ALICE_ELSEWHERE, NOW) == []
    store.add_turn(ALICE, "conv-aaaa", turn("leave?", 4), LATER)
    assert store.delete_conversation(ALICE, "conv-aaaa") is True
    assert [m.question for m in store.memories(ALICE, NOW)] == ["expenses"]
    assert store.turns(ALICE, "conv-aaaa", 10, NOW) is None
    assert [m.question for m in store.memories(BOB, NOW)] == ["bob's"]


def test_forget_removes_every_turn_and_memory_of_the_owner_only(store: ConversationStore) -> None:
    for i in range(30):  # past one BatchWriteItem of 25
        store.add_turn(ALICE, "conv-aaaa", turn(f"q{i}", i + 1), LATER)
    store.add_memory(ALICE, memory("leave", 100), LATER)
    store.add_memory(BOB, memory("bob's", 101), LATER)
    store.add_turn(BOB, "conv-cccc", turn("bob asks", 102), LATER)
    assert store.forget(ALICE) == 31
    assert store.turns(ALICE, "conv-aaaa", 100, NOW) is None and store.memories(ALICE, NOW) == []
    assert store.turns(BOB, "conv-cccc", 10, NOW) is not None and len(store.memories(BOB, NOW)) == 1


def test_a_write_begun_before_a_delete_that_concerns_it_is_not_kept(store: ConversationStore) -> None:
    """Issue 44, item 5: the request read the epoch, a delete came, then the request wrote."""
    store.add_turn(ALICE, "conv-aaaa", turn("first", 1), LATER)
    store.add_turn(ALICE, "conv-bbbb", turn("other", 2), LATER)
    before = store.epoch(ALICE)
    assert store.delete_conversation(ALICE, "conv-aaaa", LATER) is True
    # a turn and a memory of the deleted conversation: undone, and the conversation stays gone
    assert store.add_turn(ALICE, "conv-aaaa", turn("late", 3), LATER, epoch=before) is False
    assert store.add_memory(ALICE, memory("late", 4, "conv-aaaa"), LATER, epoch=before) is False
    assert store.turns(ALICE, "conv-aaaa", 10, NOW) is None and store.memories(ALICE, NOW) == []
    # of another conversation: kept; and an epoch read after the delete writes anything
    assert store.add_turn(ALICE, "conv-bbbb", turn("kept", 5), LATER, epoch=before) is True
    assert store.add_memory(ALICE, memory("kept", 6, "conv-bbbb"), LATER, epoch=store.epoch(ALICE)) is True
    # after a forget, nothing begun before it is kept, whatever its conversation
    before = store.epoch(ALICE)
    assert store.forget(ALICE, LATER) == 3
    assert store.add_turn(ALICE, "conv-cccc", turn("late", 7), LATER, epoch=before) is False
    assert store.add_memory(ALICE, memory("late", 8, "conv-cccc"), LATER, epoch=before) is False
    assert store.turns(ALICE, "conv-cccc", 10, NOW) is None and store.memories(ALICE, NOW) == []
    # and another user's writes never notice alice's deletes
    assert store.add_turn(BOB, "conv-aaaa", turn("bob", 9), LATER, epoch=store.epoch(BOB)) is True


def test_memories_past_those_kept_are_dropped_in_the_same_write(store: ConversationStore) -> None:
    first, second = memory("a", 1), memory("b", 2)
    store.add_memory(ALICE, first, LATER)
    store.add_memory(ALICE, second, LATER)
    store.add_memory(ALICE, memory("c", 3), LATER, drop=[first])
    assert [m.question for m in store.memories(ALICE, NOW)] == ["c", "b"]


@pytest.mark.parametrize("delete", ["forget", "conversation"])
def test_sqlite_leaves_no_deleted_text_in_its_files(tmp_path: Path, delete: str) -> None:
    """DELETE /memory and DELETE /conversations/{id} are for good on disk too, whatever the SQLite build's
    default: no byte of what went stays in the database or its write-ahead log while the store is open."""
    store = SqliteConversationStore(tmp_path / "conversations.sqlite3")
    try:
        for i in range(20):  # rows of both users share pages: freed cells must be wiped, not just unlinked
            store.add_turn(ALICE, "conv-aaaa", turn(f"q{i} Zanzibarco", i + 1, f"a{i} Zanzibarco"), LATER)
            store.add_turn(BOB, "conv-bbbb", turn(f"q{i} holiday", i + 1, f"a{i} Portmeirion"), LATER)
        store.add_memory(ALICE, memory("Zanzibarco merger?", 100), LATER)
        if delete == "forget":
            assert store.forget(ALICE) == 21
        else:
            assert store.delete_conversation(ALICE, "conv-aaaa") is True
        assert store.turns(BOB, "conv-bbbb", 50, NOW) is not None
        files = [p for p in tmp_path.iterdir() if p.is_file()]
        assert any(b"Portmeirion" in p.read_bytes() for p in files)  # what stays is on disk
        assert [p.name for p in files if b"Zanzibarco" in p.read_bytes()] == []
    finally:
        store.close()


# --- the AWS side --------------------------------------------------------------------------------------
def test_template_table_matches_the_adapter_and_the_role_grants_exactly_its_calls(
    dynamodb_table: str,
) -> None:
    template = load_cfn_yaml((ROOT / "template.yaml").read_text())
    props = template["Resources"]["ConversationsTable"]["Properties"]
    definition = table_definition("x")
    assert props["BillingMode"] == definition["BillingMode"] == "PAY_PER_REQUEST"
    assert props["KeySchema"] == definition["KeySchema"]
    assert props["AttributeDefinitions"] == definition["AttributeDefinitions"]
    assert props["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
    assert props["SSESpecification"] == {"SSEEnabled": True}
    search = template["Resources"]["SearchFunction"]["Properties"]
    assert search["Environment"]["Variables"]["WINNOW_CONVERSATION_TABLE"] == {"Ref": "ConversationsTable"}
    statements = [
        s for p in search["Policies"] if isinstance(p, dict) and "Statement" in p for s in p["Statement"]
    ]
    table_arn = {"Fn::GetAtt": ["ConversationsTable", "Arn"]}
    granted = {a for s in statements if s["Resource"] == table_arn for a in s["Action"]}
    assert granted == {"dynamodb:Query", "dynamodb:BatchWriteItem"}
    # Every call the adapter makes, on every path, is one of those
    store = DynamoDbConversationStore(dynamodb_table)
    made: set[str] = set()
    store.client.meta.events.register(
        "provide-client-params", lambda model, **_: made.add(f"dynamodb:{model.name}")
    )
    store.add_turn(ALICE, "conv-aaaa", turn("one", 1), LATER)
    store.add_turn(ALICE, "conv-aaaa", turn("two", 2), LATER, drop=[1], epoch=store.epoch(ALICE))
    store.turns(ALICE, "conv-aaaa", 5, NOW)
    store.add_memory(ALICE, memory("m", 3), LATER)
    store.memories(ALICE, NOW)
    store.delete_conversation(ALICE, "conv-aaaa", LATER)
    store.add_memory(ALICE, memory("late", 4), LATER, epoch=store.epoch(BOB))  # undone: a Query, a write
    store.forget(ALICE, LATER)
    assert made == granted


def test_dumps_are_json(store: ConversationStore) -> None:
    """Cited ids with quotes and non-ASCII text round-trip unchanged."""
    odd = Turn('say "hi" — ünïcode', "q", "a", ('id"1',), ("acme/é.md",), "2027-01-15T08:00:00Z", 5)
    store.add_turn(ALICE, "conv-aaaa", odd, LATER)
    (got,) = store.turns(ALICE, "conv-aaaa", 1, NOW) or []
    assert got == odd
    assert json.loads(json.dumps(list(got.cited))) == ['id"1']


def test_a_conversation_through_the_handler_on_dynamodb(
    dynamodb_table: str, tmp_path: Path, fake_voyage: Any
) -> None:
    """The search handler with the DynamoDB store (moto over HTTP): a first turn reads the delete markers,
    writes, and reads them again (3 calls), a follow-up reads the turns too (4); another user's id is 404."""
    from tests.support.stack import EmbeddedStack

    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    store = DynamoDbConversationStore(dynamodb_table)
    stack.container.conversation_store = store  # type: ignore[misc]
    try:
        leave = b"# Leave\n\n## Maternity\n\nBirth mothers receive twenty-six weeks of maternity leave.\n"
        assert stack.upload("acme/leave.md", leave)["status"] == "indexed"
        alice = {"sub": "alice"}
        status, _, first = stack.api("POST", "/search", {"query": "maternity leave weeks"}, claims=alice)
        assert status == 200 and store.calls == 3
        body = {"query": "and the pay?", "conversation_id": first["conversation_id"]}
        status, _, follow = stack.api("POST", "/search", body, claims=alice)
        assert status == 200, follow
        assert follow["query_used"] == "and the pay? maternity leave weeks" and store.calls == 7
        status, _, _ = stack.api("POST", "/search", body, claims={"sub": "bob"})
        assert status == 404
        turns = store.turns(Owner("acme", "alice"), first["conversation_id"], 10, time.time())
        assert [t.question for t in turns or []] == ["maternity leave weeks", "and the pay?"]
    finally:
        stack.close()


def test_a_store_outage_is_a_503_for_conversations_and_nothing_for_one_shot_requests(
    faulty_aws: Any, tmp_path: Path, fake_voyage: Any
) -> None:
    from tests.support.stack import EmbeddedStack

    faulty_aws.respond(500, '{"__type": "InternalServerError", "message": "boom"}')
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    stack.container.conversation_store = DynamoDbConversationStore("t", client=faulty_aws.client("dynamodb"))  # type: ignore[misc]
    try:
        assert (
            stack.upload("acme/leave.md", b"# Leave\n\nTwenty-six weeks of maternity leave.\n")["status"]
            == "indexed"
        )
        status, headers, body = stack.api(
            "POST", "/search", {"query": "maternity leave"}, claims={"sub": "alice"}
        )
        assert status == 503 and "Retry-After" in headers, body
        assert "boom" not in json.dumps(body) and "InternalServerError" not in json.dumps(body)
        status, _, body = stack.api("POST", "/search", {"query": "maternity leave"})
        assert status == 200 and body["results"]
    finally:
        stack.close()
