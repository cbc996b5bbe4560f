"""A delete racing an answer leaves nothing behind (issue 44, item 5): ``DELETE /memory`` or
``DELETE /conversations/{id}`` while the same user's ``/answer`` is generating. The answer runs through the
real search handler in a thread, its model call held at a gate (no sleeps); the delete runs meanwhile on
its own ``ConversationService`` over the same store, as a second Lambda would. On SQLite and on DynamoDB
(moto over HTTP)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.answer import bedrock_settings, stack_with
from tests.support.aws import key_value_table
from tests.support.stack import EmbeddedStack
from winnow.access import Caller
from winnow.adapters.conversations_dynamodb import DynamoDbConversationStore
from winnow.conversations.store import Owner
from winnow.ports import Generation, Generator, Prompt
from winnow_fakes.fake_bedrock import FakeBedrockServer
from winnow_fakes.fake_voyage import FakeVoyageServer

LEAVE = b"# Leave\n\n## Maternity\n\nBirth mothers receive twenty-six weeks of maternity leave at full pay.\n"
ALICE = {"sub": "alice"}
OWNER = Owner("acme", "alice")


class Gate(Generator):
    """The real generator, but once ``armed`` every call waits for ``release`` after saying it began."""

    def __init__(self, real: Generator) -> None:
        self.real = real
        self.armed = False
        self.began = threading.Event()
        self.release = threading.Event()

    @property
    def model(self) -> str:
        return self.real.model

    def generate(self, prompt: Prompt, deadline: float | None = None) -> Generation:
        if self.armed:
            self.began.set()
            assert self.release.wait(timeout=120), "the test never released the model call"
        return self.real.generate(prompt, deadline=deadline)


@pytest.fixture(params=["sqlite", "dynamodb"])
def stack(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    fake_voyage: FakeVoyageServer,
    fake_bedrock: FakeBedrockServer,
) -> Iterator[EmbeddedStack]:
    s = stack_with(tmp_path / "home", fake_voyage, bedrock_settings(fake_bedrock))
    if request.param == "dynamodb":
        aws_client: Callable[[str], Any] = request.getfixturevalue("aws_client")
        table = key_value_table(aws_client, "winnow-conversations")
        s.container.conversation_store = DynamoDbConversationStore(table)  # type: ignore[misc]
    assert s.upload("acme/leave.md", LEAVE)["status"] == "indexed"
    s.container.__dict__["generator"] = Gate(s.container.generator)  # the cached generator, gated
    yield s
    s.close()


def answer(stack: EmbeddedStack, **fields: Any) -> Any:
    body = {"query": "How many weeks of maternity leave do birth mothers receive?", **fields}
    status, _, answered = stack.api("POST", "/answer", body, claims=ALICE)
    assert status == 200, answered
    return answered


def racing(stack: EmbeddedStack, delete: Callable[[], object], **fields: Any) -> Any:
    """``/answer`` in a thread, ``delete`` while its model call is held; the answer's body."""
    gate = stack.container.generator
    assert isinstance(gate, Gate)
    gate.armed = True
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.update(body=answer(stack, **fields)))
    worker.start()
    assert gate.began.wait(timeout=120), "the answer never reached its model"
    delete()
    gate.release.set()
    worker.join(timeout=120)
    assert not worker.is_alive()
    return out["body"]


def another_lambda(stack: EmbeddedStack) -> Any:
    from winnow.conversations.service import ConversationService

    c = stack.container
    return ConversationService(c.search_service(), c.conversation_store, c.settings.conversations)


def test_delete_memory_while_answering_leaves_no_turn_and_no_memory(stack: EmbeddedStack) -> None:
    earlier = answer(stack)
    assert stack.container.conversation_store.memories(OWNER, 0)
    # When alice deletes her memory while a new conversation's answer is being written
    fresh = racing(stack, lambda: another_lambda(stack).forget(Caller("acme", "alice")))
    # Then she still gets the answer, but nothing of it or before it is stored
    assert fresh["citations"], fresh
    store = stack.container.conversation_store
    assert store.memories(OWNER, 0) == []
    for conversation in (earlier["conversation_id"], fresh["conversation_id"]):
        assert store.turns(OWNER, conversation, 50, 0) is None
    status, _, listed = stack.api("GET", "/memory", claims=ALICE)
    assert status == 200 and listed["memories"] == []


def test_delete_conversation_while_answering_a_follow_up_leaves_nothing_of_it(stack: EmbeddedStack) -> None:
    first = answer(stack)
    conversation = first["conversation_id"]
    # When alice deletes the conversation while its follow-up is being answered
    caller = Caller("acme", "alice")
    follow = racing(
        stack, lambda: another_lambda(stack).delete(caller, conversation), conversation_id=conversation
    )
    assert follow["conversation_id"] == conversation
    # Then no turn and no memory of it is left, and it takes no follow-up
    store = stack.container.conversation_store
    assert store.turns(OWNER, conversation, 50, 0) is None
    assert [m for m in store.memories(OWNER, 0) if m.conversation_id == conversation] == []
    body = {"query": "and the pay?", "conversation_id": conversation}
    status, _, _ = stack.api("POST", "/search", body, claims=ALICE)
    assert status == 404


def test_a_delete_of_another_conversation_does_not_undo_an_answer(stack: EmbeddedStack) -> None:
    other = answer(stack)["conversation_id"]
    kept = racing(stack, lambda: another_lambda(stack).delete(Caller("acme", "alice"), other))
    store = stack.container.conversation_store
    assert store.turns(OWNER, other, 50, 0) is None
    assert store.turns(OWNER, kept["conversation_id"], 50, 0) is not None
    assert [m.conversation_id for m in store.memories(OWNER, 0)] == [kept["conversation_id"]]
