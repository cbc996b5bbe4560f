"""Conversations through the real search handler (embedded stack, fake Voyage, SQLite store; the Bedrock
adapter against the loopback fake for answers and rewrites): starting and continuing, ownership (404 for
another user's or tenant's id, 400 without a user id), stored turns, the rule's ``query_used``, one-shot
requests that never touch the store, and access that holds inside a conversation."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.answer import bedrock_settings, stack_with
from tests.support.stack import EmbeddedStack
from winnow.conversations.store import Owner
from winnow_fakes.fake_bedrock import FakeBedrockServer
from winnow_fakes.fake_model import ModelFault
from winnow_fakes.fake_voyage import FakeVoyageServer
from winnow_local.adapters.conversations_sqlite import SqliteConversationStore

DOCS = {
    "acme/people/parental.md": b"# Parental leave\n\n## Maternity\n\nBirth mothers receive twenty-six weeks "
    b"of maternity leave at full pay.\n\n## Adoption\n\nAdoptive parents receive twenty weeks of adoption "
    b"leave, which may be split into two blocks.\n",
    "acme/finance/expenses.md": b"# Expenses policy\n\n## Travel\n\nTravel expenses are reimbursed within "
    b"fourteen days when submitted with receipts through the finance portal.\n",
    "acme/it/security.md": b"# Security policy\n\n## Laptops\n\nLaptops must use full-disk encryption and "
    b"lock the screen after five minutes of inactivity.\n",
}
ALICE = {"sub": "alice"}
BOB = {"sub": "bob"}


def load(stack: EmbeddedStack) -> EmbeddedStack:
    for key, data in DOCS.items():
        assert stack.upload(key, data)["status"] == "indexed"
    return stack


@pytest.fixture
def chat(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    """No generator: follow-ups go through the rule."""
    s = EmbeddedStack(tmp_path / "home", fake_voyage)
    yield load(s)
    s.close()


@pytest.fixture
def answering(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fake_bedrock: FakeBedrockServer
) -> Iterator[EmbeddedStack]:
    s = stack_with(tmp_path / "home", fake_voyage, bedrock_settings(fake_bedrock))
    yield load(s)
    s.close()


def post(
    stack: EmbeddedStack, route: str, query: str, claims: Any = ALICE, tenant: str = "acme", **fields: Any
) -> tuple[int, Any]:
    status, _, body = stack.api("POST", route, {"query": query, **fields}, tenant=tenant, claims=claims)
    return status, body


def store(stack: EmbeddedStack) -> SqliteConversationStore:
    found = stack.container.conversation_store
    assert isinstance(found, SqliteConversationStore)
    return found


# --- starting, continuing, ownership ------------------------------------------------------------------
def test_a_user_starts_a_conversation_and_a_follow_up_continues_it(chat: EmbeddedStack) -> None:
    status, first = post(chat, "/search", "How long is maternity leave?")
    assert status == 200, first
    conversation = first["conversation_id"]
    assert isinstance(conversation, str) and len(conversation) == 32
    assert first["query_used"] == "How long is maternity leave?"
    status, follow = post(chat, "/search", "and for adoptions?", conversation_id=conversation)
    assert status == 200, follow
    assert follow["conversation_id"] == conversation
    assert follow["query"] == "and for adoptions?"
    # The rule: the follow-up, then the earlier question's content words
    assert follow["query_used"] == "and for adoptions? long maternity leave"
    assert follow["results"][0]["key"] == "acme/people/parental.md"
    assert follow["usage"] is None  # no model was called
    turns = store(chat).turns(Owner("acme", "alice"), conversation, 10, now=chat_now())
    assert turns is not None
    assert [(t.question, t.query_used, t.answer) for t in turns] == [
        ("How long is maternity leave?", "How long is maternity leave?", None),
        ("and for adoptions?", "and for adoptions? long maternity leave", None),
    ]
    assert turns[0].at.endswith("Z") and turns[0].at_ns < turns[1].at_ns


def chat_now() -> float:
    import time

    return time.time()


def test_another_users_or_tenants_conversation_id_is_not_found(chat: EmbeddedStack) -> None:
    _, first = post(chat, "/search", "How long is maternity leave?")
    conversation = first["conversation_id"]
    status, body = post(chat, "/search", "and adoptions?", claims=BOB, conversation_id=conversation)
    assert status == 404, body
    assert body["error"]["code"] == "not_found"
    assert "no such conversation" in body["error"]["message"]
    status, body = post(chat, "/search", "and adoptions?", tenant="globex", conversation_id=conversation)
    assert status == 404, body
    # And neither request left a turn in alice's conversation
    turns = store(chat).turns(Owner("acme", "alice"), conversation, 10, now=chat_now())
    assert turns is not None and len(turns) == 1


def test_an_unknown_or_malformed_conversation_id(chat: EmbeddedStack) -> None:
    status, body = post(chat, "/search", "leave", conversation_id="0" * 32)
    assert status == 404, body
    status, body = post(chat, "/search", "leave", conversation_id="../../etc")
    assert status == 422, body
    assert body["error"]["details"][0]["field"] == "conversation_id"
    assert "8-64 letters" in body["error"]["details"][0]["message"]


def test_a_caller_without_a_user_id_is_one_shot_and_never_touches_the_store(chat: EmbeddedStack) -> None:
    calls = store(chat).calls
    status, body = post(chat, "/search", "How long is maternity leave?", claims=None)
    assert status == 200
    assert body["conversation_id"] is None and body["query_used"] == "How long is maternity leave?"
    assert body["results"][0]["key"] == "acme/people/parental.md"
    assert store(chat).calls == calls
    # And sending an id without a user id is a 400 that says what to send
    status, body = post(chat, "/search", "and adoptions?", claims=None, conversation_id="a" * 32)
    assert status == 400, body
    assert "without conversation_id" in body["error"]["message"]
    assert store(chat).calls == calls


def test_cold_start_loads_nothing_of_conversations() -> None:
    """The search function's import (its cold start) loads no conversation module and no store adapter."""
    code = "import sys, functions.search.app\nprint(sorted(m for m in sys.modules if 'conversation' in m))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_only_the_newest_turns_are_kept(tmp_path: Path, fake_voyage: FakeVoyageServer) -> None:
    s = load(EmbeddedStack(tmp_path / "home", fake_voyage))
    try:
        s.container.settings.conversations.turns_kept = 3
        _, first = post(s, "/search", "maternity leave")
        conversation = first["conversation_id"]
        for question in ("adoption?", "split?", "pay?", "weeks?"):
            assert post(s, "/search", question, conversation_id=conversation)[0] == 200
        turns = store(s).turns(Owner("acme", "alice"), conversation, 50, now=chat_now())
        assert turns is not None
        assert [t.question for t in turns] == ["split?", "pay?", "weeks?"]
    finally:
        s.close()


def test_expired_turns_end_the_conversation(chat: EmbeddedStack) -> None:
    _, first = post(chat, "/search", "maternity leave")
    conversation = first["conversation_id"]
    service = chat.container.conversation_service()
    later = chat_now() + 31 * 86_400
    assert service.store.turns(Owner("acme", "alice"), conversation, 10, now=later) is None
    assert service.store.turns(Owner("acme", "alice"), conversation, 10, now=chat_now()) is not None


def test_delete_conversation_removes_its_turns_for_good(chat: EmbeddedStack) -> None:
    _, first = post(chat, "/search", "maternity leave")
    conversation = first["conversation_id"]
    status, _, body = chat.api("DELETE", f"/conversations/{conversation}", tenant="acme", claims=BOB)
    assert status == 404, body
    status, _, body = chat.api("DELETE", f"/conversations/{conversation}", tenant="acme", claims=ALICE)
    assert status == 200, body
    assert body == {"conversation_id": conversation, "status": "deleted"}
    assert post(chat, "/search", "adoption?", conversation_id=conversation)[0] == 404
    status, _, body = chat.api("DELETE", f"/conversations/{conversation}", tenant="acme", claims=ALICE)
    assert status == 404


# --- access holds inside a conversation -----------------------------------------------------------
def test_every_turn_searches_with_the_callers_current_access(chat: EmbeddedStack) -> None:
    secret = b"# Board minutes\n\n## Merger\n\nThe board approved the merger with Globex on Tuesday.\n"
    sidecar = b'{"access": {"users": ["alice"]}}'
    chat.put_object("acme/board/minutes.md.metadata.json", sidecar)
    assert chat.upload("acme/board/minutes.md", secret)["status"] == "indexed"
    _, first = post(chat, "/search", "What did the board approve about the merger?")
    assert first["results"][0]["key"] == "acme/board/minutes.md"
    # alice loses access; the follow-up in the same conversation no longer finds the minutes
    chat.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["carol"]}}')
    assert chat.upload("acme/board/minutes.md", secret)["status"] in ("indexed", "unchanged")
    _, follow = post(chat, "/search", "when was it approved?", conversation_id=first["conversation_id"])
    assert "merger" in follow["query_used"]
    assert all(r["key"] != "acme/board/minutes.md" for r in follow["results"])


# --- answers and the generator's rewrite ---------------------------------------------------------------
def test_a_follow_up_answer_is_rewritten_by_the_model_and_its_tokens_counted(
    answering: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    status, first = post(answering, "/answer", "How long is maternity leave?")
    assert status == 200 and first["answer"], first
    fake_bedrock.script("How long is adoption leave for adoptive parents?")
    status, follow = post(
        answering, "/answer", "and for adoptions?", conversation_id=first["conversation_id"]
    )
    assert status == 200, follow
    assert follow["query_used"] == "How long is adoption leave for adoptive parents?"
    assert "twenty weeks" in follow["answer"]
    rewrite, answer = fake_bedrock.converse_requests()[-2:]
    rewrite_user = rewrite.body["messages"][0]["content"][0]["text"]
    assert "<asked>How long is maternity leave?</asked>" in rewrite_user
    assert "<follow_up>\nand for adoptions?\n</follow_up>" in rewrite_user
    # The answer prompt asks the rewritten question and shows the earlier turn, not as a passage
    answer_user = answer.body["messages"][0]["content"][0]["text"]
    assert "<question>\nHow long is adoption leave for adoptive parents?\n</question>" in answer_user
    assert "<earlier_turns>" in answer_user and "[1]" not in answer_user.split("<passages>")[0]
    # usage counts both calls
    assert follow["usage"]["input_tokens"] > first["usage"]["input_tokens"]
    turns = store(answering).turns(Owner("acme", "alice"), first["conversation_id"], 10, now=chat_now())
    assert turns is not None and turns[-1].answer == follow["answer"]
    assert turns[-1].cited == tuple(c["chunk_id"] for c in follow["citations"])


def test_a_model_fault_on_the_rewrite_falls_back_to_the_rule(
    answering: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    _, first = post(answering, "/search", "How long is maternity leave?")
    fake_bedrock.inject(*[ModelFault.unavailable()] * 3)  # every attempt of the rewrite fails
    status, follow = post(
        answering, "/search", "and for adoptions?", conversation_id=first["conversation_id"]
    )
    assert status == 200, follow
    assert follow["query_used"] == "and for adoptions? long maternity leave"
    assert follow["results"][0]["key"] == "acme/people/parental.md"
    assert follow["usage"] is None


def test_an_unusable_rewrite_falls_back_to_the_rule_but_its_tokens_count(
    answering: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    _, first = post(answering, "/search", "How long is maternity leave?")
    fake_bedrock.script("   \n  ")
    status, follow = post(
        answering, "/search", "and for adoptions?", conversation_id=first["conversation_id"]
    )
    assert status == 200, follow
    assert follow["query_used"] == "and for adoptions? long maternity leave"
    assert follow["usage"]["input_tokens"] > 0


def test_a_first_turn_builds_no_model_client(
    answering: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    _, first = post(answering, "/search", "How long is maternity leave?")
    assert "generator" not in answering.container.__dict__  # no boto3 client for a turn with no history
    post(answering, "/search", "and for adoptions?", conversation_id=first["conversation_id"])
    assert "generator" in answering.container.__dict__ and len(fake_bedrock.converse_requests()) == 1


def test_a_rewrite_never_reads_an_earlier_answer_the_user_can_no_longer_read(
    answering: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    """Issue 26 item 4: an earlier answer citing a document the caller lost access to never reaches the
    rewrite prompt (whose output comes back to the caller as query_used)."""
    secret = b"# Board minutes\n\n## Merger\n\nThe board approved the merger with Initech on Tuesday.\n"
    answering.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["alice"]}}')
    assert answering.upload("acme/board/minutes.md", secret)["status"] == "indexed"
    status, first = post(answering, "/answer", "What did the board approve about the merger?")
    assert status == 200 and [c["key"] for c in first["citations"]] == ["acme/board/minutes.md"], first
    assert "Initech" in first["answer"]
    answering.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["carol"]}}')
    assert answering.upload("acme/board/minutes.md", secret)["status"] in ("indexed", "unchanged")
    for route in ("/search", "/answer"):
        fake_bedrock.script("How long is adoption leave?")
        before = len(fake_bedrock.converse_requests())
        status, follow = post(
            answering, route, "and adoption leave?", conversation_id=first["conversation_id"]
        )
        assert status == 200, follow
        rewrite = fake_bedrock.converse_requests()[before]
        rewrite_user = rewrite.body["messages"][0]["content"][0]["text"]
        assert "<follow_up>" in rewrite_user
        assert "Initech" not in rewrite_user, (route, rewrite_user)
