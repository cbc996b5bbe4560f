"""What a stored turn or memory depends on (issue 44, items 4 and 6), through the real search handler
(embedded stack, fake Voyage, the Bedrock adapter against the loopback fake): every document whose text
reached the model for it, cited or not, so it is shown again only while all stay readable; and at most
``MAX_RECALLED_DOCUMENTS`` documents recalled from earlier answers and memories, however long the chain."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_memory import DOCS, answer
from tests.support.stack import EmbeddedStack
from winnow.conversations.followup import MAX_RECALLED_DOCUMENTS
from winnow.conversations.store import Memory, Owner
from winnow.ingest.events import s3_event
from winnow_fakes.fake_bedrock import FakeBedrockServer

ALICE = {"sub": "alice"}
SECRET = b"# Board minutes\n\n## Merger\n\nThe board approved the merger with Initech on Tuesday.\n"
WIDE = {"top_k": 5, "relevance_threshold": 0}


@pytest.fixture
def stack(bedrock_stack: EmbeddedStack) -> EmbeddedStack:
    for key, data in DOCS.items():
        assert bedrock_stack.upload(key, data)["status"] == "indexed"
    bedrock_stack.container.settings.conversations.memory_floor = -1.0  # every memory is a candidate
    return bedrock_stack


def prompts_since(fake: FakeBedrockServer, start: int) -> str:
    return json.dumps([r.body for r in fake.converse_requests()[start:]])


def test_an_uncited_passage_the_answer_repeats_hides_the_turn_and_memory_once_unreadable(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    # Given a document only alice reads, sent to the model beside an open one
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["alice"]}}')
    assert stack.upload("acme/board/minutes.md", SECRET)["status"] == "indexed"
    query = "How long is adoption leave, and what did the board approve about the merger?"
    status, found = stack.search(query, claims=ALICE, **WIDE)
    assert status == 200, found
    ranks = {r["key"]: r["rank"] for r in found["results"]}
    assert {"acme/people/parental.md", "acme/board/minutes.md"} <= set(ranks), ranks
    # and an answer that cites only the open passage but repeats the restricted one (a model may)
    fake_bedrock.script(
        f"Adoptive parents receive twenty weeks [{ranks['acme/people/parental.md']}]. "
        "The board approved the merger with Initech."
    )
    first = answer(stack, query, **WIDE)
    assert [c["key"] for c in first["citations"]] == ["acme/people/parental.md"], first
    assert "Initech" in first["answer"]
    # When alice loses access to the restricted document
    stack.put_object("acme/board/minutes.md.metadata.json", b'{"access": {"users": ["carol"]}}')
    out = stack.invoke_ingest(s3_event([stack.created_record("acme/board/minutes.md.metadata.json")]))
    assert out["results"][0]["status"] == "indexed"
    # Then GET /memory no longer shows the exchange
    status, _, listed = stack.api("GET", "/memory", claims=ALICE)
    assert status == 200 and "Initech" not in json.dumps(listed), listed
    # and neither a follow-up (rewrite prompt, earlier turns) nor a new conversation (recalled memories)
    # sends the restricted text to the model, nor returns it as query_used
    start = len(fake_bedrock.converse_requests())
    fake_bedrock.script("How long is adoption leave?")
    follow = answer(stack, "and maternity leave?", conversation_id=first["conversation_id"])
    fresh = answer(stack, "What did the board approve about the merger of the company?")
    assert "Initech" not in prompts_since(fake_bedrock, start)
    assert "Initech" not in str(follow["query_used"]) and "Initech" not in str(fresh["query_used"])


def test_what_a_memory_depends_on_stays_bounded_however_many_it_recalls(
    stack: EmbeddedStack, fake_bedrock: FakeBedrockServer
) -> None:
    # Given 80 documents, and 10 memories recalled at once, each depending on 8 of them (80 in all)
    keys = [f"acme/n/d{n:02d}.md" for n in range(80)]
    for key in keys:
        stack.put_object(key, f"# Note {key}\n\nA short note about the pantry rota.\n".encode())
    out = stack.invoke_ingest(s3_event([stack.created_record(k) for k in keys]))
    assert {r["status"] for r in out["results"]} == {"indexed"}
    stack.container.settings.conversations.memory_limit = 10
    conversations = stack.container.conversation_store
    owner = Owner("acme", "alice")
    profile = stack.container.search_service().embedder.profile.slug
    for n in range(10):
        memory = Memory(
            id=f"m{n}",
            conversation_id="c0000000000",
            question=f"pantry question {n}",
            answer=f"pantry answer {n}",
            keys=tuple(keys[8 * n : 8 * n + 8]),
            at="2026-01-01T00:00:00Z",
            at_ns=n + 1,
            profile=profile,
            vector=(1.0,),
        )
        conversations.add_memory(owner, memory, expires=2**40)
    # When alice asks, recalling them
    fresh = answer(stack, "How many weeks of maternity leave do birth mothers receive?")
    assert fresh["citations"]
    # Then the new memory depends on its own passages' documents and at most MAX_RECALLED_DOCUMENTS more
    newest = conversations.memories(owner, 0)[0]
    assert newest.conversation_id == fresh["conversation_id"]
    own = {r["key"] for r in fresh["results"]}
    assert own <= set(newest.keys)
    assert len(set(newest.keys) - own) <= MAX_RECALLED_DOCUMENTS, len(newest.keys)
    # and the model was shown only the memories whose documents it depends on
    prompt = fake_bedrock.converse_requests()[-1].body["messages"][0]["content"][0]["text"]
    shown = [n for n in range(10) if f"pantry answer {n}<" in prompt or f"pantry answer {n} " in prompt]
    assert 0 < len(shown) < 10, prompt
    assert all(set(keys[8 * n : 8 * n + 8]) <= set(newest.keys) for n in shown)
