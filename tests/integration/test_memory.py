"""Long-term memory through the real search handler (embedded stack, fake Voyage, the Bedrock adapter
against the loopback fake): an answered turn becomes a memory, ``/answer`` shows the model the most
similar ones marked as what the user said before (never as passages), ``memory: false`` turns it off,
GET/DELETE /memory and DELETE /conversations/{id}, memories whose documents the user can no longer read
are not recalled, and (property test) no memory of one user ever reaches another user's prompt or results."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.answer import bedrock_settings, stack_with
from tests.support.stack import EmbeddedStack
from winnow_fakes.fake_bedrock import FakeBedrockServer
from winnow_fakes.fake_voyage import FakeVoyageServer

DOCS = {
    "acme/people/parental.md": b"# Parental leave\n\n## Maternity\n\nBirth mothers receive twenty-six weeks "
    b"of maternity leave at full pay.\n\n## Adoption\n\nAdoptive parents receive twenty weeks of adoption "
    b"leave, which may be split into two blocks.\n",
    "acme/finance/expenses.md": b"# Expenses policy\n\n## Travel\n\nTravel expenses are reimbursed within "
    b"fourteen days when submitted with receipts through the finance portal.\n",
    "globex/finance/expenses.md": b"# Globex expenses\n\n## Travel\n\nGlobex reimburses travel expenses "
    b"within thirty days of the trip, receipts required.\n",
}
ALICE = {"sub": "alice"}
BOB = {"sub": "bob"}
MATERNITY = "How many weeks of maternity leave do birth mothers receive?"


@pytest.fixture
def stack(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fake_bedrock: FakeBedrockServer
) -> Iterator[EmbeddedStack]:
    s = stack_with(tmp_path / "home", fake_voyage, bedrock_settings(fake_bedrock))
    for key, data in DOCS.items():
        assert s.upload(key, data)["status"] == "indexed"
    s.container.settings.conversations.memory_floor = -1.0  # every memory is a candidate: nothing hides
    yield s
    s.close()


def answer(stack: EmbeddedStack, query: str, claims: Any = ALICE, tenant: str = "acme", **fields: Any) -> Any:
    status, _, body = stack.api("POST", "/answer", {"query": query, **fields}, tenant=tenant, claims=claims)
    assert status == 200, body
    return body


def last_user_prompt(fake: FakeBedrockServer) -> str:
    return "\n".join(b["text"] for b in fake.converse_requests()[-1].body["messages"][0]["content"])


def memories_block(prompt: str) -> str:
    found = re.search(r"<memories>(.*?)</memories>", prompt, re.DOTALL)
    return found.group(1) if found else ""


def test_an_answered_turn_is_remembered_and_recalled_in_a_new_conversation(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    first = answer(stack, MATERNITY)
    assert first["citations"]
    status, _, listed = stack.api("GET", "/memory", tenant="acme", claims=ALICE)
    assert status == 200
    (remembered,) = listed["memories"]
    assert remembered["question"] == MATERNITY and remembered["answer"] == first["answer"]
    assert remembered["conversation_id"] == first["conversation_id"]
    # A new conversation: the model sees the memory, marked as what the user said before, without markers
    second = answer(stack, "How long is adoption leave for adoptive parents?")
    assert second["conversation_id"] != first["conversation_id"]
    prompt = last_user_prompt(fake_bedrock)
    block = memories_block(prompt)
    assert f"<asked>{MATERNITY}</asked>" in block
    assert "[1]" not in block and "<passage " not in block
    system = fake_bedrock.converse_requests()[-1].body["system"][0]["text"]
    assert "never cite them" in system
    # never citable: citations name only results
    assert {c["chunk_id"] for c in second["citations"]} <= {r["chunk_id"] for r in second["results"]}


def test_memory_false_neither_reads_nor_adds(stack: EmbeddedStack, fake_bedrock: FakeBedrockServer) -> None:
    answer(stack, MATERNITY)
    answer(stack, "How long is adoption leave for adoptive parents?", memory=False)
    assert "<memories>" not in last_user_prompt(fake_bedrock)
    _, _, listed = stack.api("GET", "/memory", tenant="acme", claims=ALICE)
    assert [m["question"] for m in listed["memories"]] == [MATERNITY]


def test_only_the_memory_limit_is_recalled(stack: EmbeddedStack, fake_bedrock: FakeBedrockServer) -> None:
    stack.container.settings.conversations.memory_limit = 1
    answer(stack, MATERNITY)
    answer(stack, "When are travel expenses reimbursed?")
    answer(stack, "How long is adoption leave?")
    assert memories_block(last_user_prompt(fake_bedrock)).count("<memory>") == 1


def test_the_answer_prompt_recalls_at_most_its_budget_of_words(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    # Given a conversation of five turns, each question padded to about 60 words, and a recall budget of
    # 100 words
    stack.container.settings.conversations.max_recall_tokens = 100
    padding = " ".join(["please"] * 55)
    first = answer(stack, f"{MATERNITY} {padding}")
    for _ in range(4):
        answer(stack, f"{MATERNITY} {padding}", conversation_id=first["conversation_id"])
    # When one more follow-up is answered
    answer(stack, "How long is adoption leave?", conversation_id=first["conversation_id"])
    # Then what the answer prompt recalls (earlier turns and memories) holds at most 100 words
    prompts = [
        "\n".join(b["text"] for b in r.body["messages"][0]["content"])
        for r in fake_bedrock.converse_requests()
    ]
    prompt = [p for p in prompts if "<question>" in p][-1]
    assert "adoption leave" in prompt
    recalled = re.findall(r"<(earlier_turns|memories)>(.*?)</\1>", prompt, re.DOTALL)
    assert recalled, "the follow-up recalls its earlier turns"
    text = " ".join(re.sub(r"<[^>]+>", " ", body) for _, body in recalled)
    assert 0 < len(re.findall(r"\w+", text)) <= 100


def test_delete_memory_and_delete_conversation_are_for_good(stack: EmbeddedStack) -> None:
    first = answer(stack, MATERNITY)
    answer(stack, "When are travel expenses reimbursed?")
    answer(stack, MATERNITY, claims=BOB)
    status, _, body = stack.api("DELETE", f"/conversations/{first['conversation_id']}", claims=ALICE)
    assert status == 200, body
    _, _, listed = stack.api("GET", "/memory", claims=ALICE)
    assert [m["question"] for m in listed["memories"]] == ["When are travel expenses reimbursed?"]
    status, _, body = stack.api("DELETE", "/memory", claims=ALICE)
    assert status == 200 and body["deleted"] >= 2
    assert stack.api("GET", "/memory", claims=ALICE)[2] == {"memories": []}
    # bob's memory is untouched; a caller without a user id has no memory to list
    assert len(stack.api("GET", "/memory", claims=BOB)[2]["memories"]) == 1
    for method, path in (("GET", "/memory"), ("DELETE", "/memory"), ("DELETE", "/conversations/abcdefgh")):
        status, _, body = stack.api(method, path, claims=None)
        assert status == 400 and "no user id" in body["error"]["message"], (path, body)
        assert "conversation_id" not in body["error"]["message"]  # a body field these requests do not have


def test_a_memory_of_a_document_no_longer_readable_is_not_recalled(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    secret = b"# Board minutes\n\n## Merger\n\nThe board approved the merger with Initech on Tuesday.\n"
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["alice"]}}')
    assert stack.upload("acme/board/minutes.md", secret)["status"] == "indexed"
    answer(stack, MATERNITY)  # before the minutes: an answer written with their memory in view hides too
    first = answer(stack, "What did the board approve about the merger?")
    assert [c["key"] for c in first["citations"]] == ["acme/board/minutes.md"]
    answer(stack, "How fast are travel expenses reimbursed?")
    assert "merger" in memories_block(last_user_prompt(fake_bedrock))
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["carol"]}}')
    stack.upload("acme/board/minutes.md", secret)
    calls = len(fake_bedrock.converse_requests())
    assert answer(stack, "How many weeks of adoption leave do adoptive parents receive?")["citations"]
    assert len(fake_bedrock.converse_requests()) == calls + 1
    block = memories_block(last_user_prompt(fake_bedrock))
    assert "merger" not in block and MATERNITY in block


# --- isolation, as a property ------------------------------------------------------------------------
OWNERS = [("acme", "alice"), ("acme", "bob"), ("globex", "alice"), ("globex", "carol")]
TOPICS = ["travel expenses reimbursed", "maternity leave weeks", "adoption leave split", "receipts trip"]


@settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.sampled_from(OWNERS), st.sampled_from(TOPICS)), min_size=2, max_size=6))
def test_no_memory_of_one_user_reaches_another_users_prompt_or_results(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer, asks: list[tuple[tuple[str, str], str]]
) -> None:
    for tenant, user in OWNERS:  # each example starts with nobody remembering anything
        stack.api("DELETE", "/memory", tenant=tenant, claims={"sub": user})
    for (tenant, user), topic in asks:
        marker = f"ref{tenant}{user}"
        before = len(fake_bedrock.converse_requests())
        body = answer(stack, f"{topic} {marker}", claims={"sub": user}, tenant=tenant)
        assert all(r["key"].startswith(f"{tenant}/") for r in body["results"])
        assert all("ref" not in r["text"] for r in body["results"])  # memories never become results
        if len(fake_bedrock.converse_requests()) > before:
            asked = re.findall(r"<asked>(.*?)</asked>", memories_block(last_user_prompt(fake_bedrock)))
            assert all(a.endswith(marker) for a in asked), (marker, asked)
        _, _, listed = stack.api("GET", "/memory", tenant=tenant, claims={"sub": user})
        assert all(m["question"].endswith(marker) for m in listed["memories"])


def test_a_memory_of_a_rewrite_drawn_from_a_document_no_longer_readable_is_not_recalled(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    """A follow-up's memory keeps the model's standalone rewrite as its question, and the rewrite read the
    earlier turns' answers: the memory is recalled only while their documents too stay readable."""
    secret = b"# Board minutes\n\n## Merger\n\nThe board approved the merger with Initech on Tuesday.\n"
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["alice"]}}')
    assert stack.upload("acme/board/minutes.md", secret)["status"] == "indexed"
    first = answer(stack, "What did the board approve about the merger?")
    assert [c["key"] for c in first["citations"]] == ["acme/board/minutes.md"]
    # The rewrite carries what the earlier answer said; this answer cites the parental policy only
    fake_bedrock.script(
        "How many weeks of maternity leave do birth mothers receive after the Initech merger?"
    )
    follow = answer(stack, "and maternity leave then?", conversation_id=first["conversation_id"])
    assert "Initech" in follow["query_used"]
    assert [c["key"] for c in follow["citations"]] == ["acme/people/parental.md"]
    # alice loses the minutes: a new question recalls nothing drawn from them
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["carol"]}}')
    stack.upload("acme/board/minutes.md", secret)
    answer(stack, MATERNITY)
    assert "Initech" not in last_user_prompt(fake_bedrock)


def test_get_memory_never_shows_an_answer_from_a_document_no_longer_readable(stack: EmbeddedStack) -> None:
    """Issue 26 item 4 on GET /memory: a remembered answer quoting a document the user lost is not listed
    (DELETE /memory still removes it for good)."""
    secret = b"# Board minutes\n\n## Merger\n\nThe board approved the merger with Initech on Tuesday.\n"
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["alice"]}}')
    assert stack.upload("acme/board/minutes.md", secret)["status"] == "indexed"
    answer(stack, MATERNITY)  # before the minutes: an answer written with their memory in view hides too
    first = answer(stack, "What did the board approve about the merger?")
    assert "Initech" in first["answer"]
    listed = stack.api("GET", "/memory", claims=ALICE)[2]["memories"]
    assert any("Initech" in m["answer"] for m in listed)
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["carol"]}}')
    stack.upload("acme/board/minutes.md", secret)
    listed = stack.api("GET", "/memory", claims=ALICE)[2]["memories"]
    assert [m["question"] for m in listed] == [MATERNITY]
    assert stack.api("DELETE", "/memory", claims=ALICE)[2]["deleted"] >= 2


@pytest.mark.parametrize("shown", ["earlier turn", "memory"])
def test_an_answer_repeating_what_it_was_shown_hides_with_the_documents_behind_it(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer, shown: str
) -> None:
    """An answer is written with earlier answers and memories in front of the model, and may repeat them
    while citing another document: once the user loses a document behind what it was shown, that answer
    (as an earlier turn, a recalled memory, or in GET /memory) is gone with it."""
    secret = b"# Board minutes\n\n## Merger\n\nThe board approved the merger with Initech on Tuesday.\n"
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["alice"]}}')
    assert stack.upload("acme/board/minutes.md", secret)["status"] == "indexed"
    first = answer(stack, "What did the board approve about the merger?")
    assert [c["key"] for c in first["citations"]] == ["acme/board/minutes.md"]
    # The next answer cites the expenses policy only, but repeats what the first answer said
    more = {"conversation_id": first["conversation_id"]} if shown == "earlier turn" else {}
    if more:  # a follow-up: the model rewrites it first
        fake_bedrock.script("How fast are travel expenses reimbursed?")
    fake_bedrock.script("Travel is reimbursed within fourteen days [1], after the Initech merger.")
    second = answer(
        stack, "How fast are travel expenses reimbursed?", filters={"key": "acme/finance/expenses.md"}, **more
    )
    assert "Initech" in last_user_prompt(fake_bedrock)  # what the model was shown
    assert [c["key"] for c in second["citations"]] == ["acme/finance/expenses.md"]
    assert "Initech" in second["answer"]
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["carol"]}}')
    stack.upload("acme/board/minutes.md", secret)
    listed = stack.api("GET", "/memory", claims=ALICE)[2]["memories"]
    assert not any("Initech" in m["answer"] for m in listed), listed
    answer(stack, "travel receipts reimbursed", filters={"key": "acme/finance/expenses.md"}, **more)
    assert "Initech" not in last_user_prompt(fake_bedrock)
