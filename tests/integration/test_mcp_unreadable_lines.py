"""``winnow mcp`` keeps serving whatever a line on its stdin holds: each line it cannot read is answered
with a JSON-RPC error, however deep or large (issue 44, item 7: 1,500 levels of nesting ended the server
through a ``RecursionError`` in ``unreadable_reply``). Fuzzed through the real server over stdin."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.mcp_stdio import StdioServer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServer]:
    running = StdioServer(tmp_path_factory.mktemp("mcp-fuzz-home"))
    try:
        yield running
    finally:
        running.close()


def nested(depth: int, opener: str) -> str:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "{":
        return '{"a":' * depth + "1" + closer * depth
    return opener * depth + closer * depth


def as_line(depth: int, opener: str, wrapped: bool, request_id: int) -> str:
    value = nested(depth, opener)
    if not wrapped:
        return value
    call = f'{{"name":"search","arguments":{value}}}'
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{call}}}'


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    depth=st.integers(min_value=1, max_value=120_000),
    opener=st.sampled_from(["[", "{"]),
    wrapped=st.booleans(),
)
@example(depth=1_500, opener="[", wrapped=False)
@example(depth=1_500, opener="{", wrapped=True)
@example(depth=100_000, opener="[", wrapped=False)
@example(depth=100_000, opener="{", wrapped=True)
def test_any_nesting_depth_is_answered_and_the_server_goes_on(
    server: StdioServer, depth: int, opener: str, wrapped: bool
) -> None:
    # When an agent sends one line nested ``depth`` deep, bare or as a request's arguments
    server.next_id += 1
    request_id = server.next_id
    replies = server.replies_to(as_line(depth, opener, wrapped, request_id))
    # Then the server is still serving (a ping is answered: ``replies_to``), and the line was answered
    assert len(replies) == 1, replies
    (reply,) = replies
    if wrapped and depth < 50 and "result" in reply:  # shallow arguments: an ordinary tool call
        assert reply["id"] == request_id
        return
    # with a JSON-RPC error, carrying the request's id where one could be read
    assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] in (-32700, -32600, -32602), reply
    assert reply["id"] in (None, request_id), reply


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.text(alphabet=st.characters(blacklist_characters="\r\n\x85\u2028\u2029"), max_size=300))
def test_any_line_of_text_gets_at_most_one_answer_and_the_server_goes_on(
    server: StdioServer, line: str
) -> None:
    # When an agent sends any one line of text
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    replies = server.replies_to(line)
    # Then a notification is not answered; anything else gets one reply; and the server goes on serving
    notification = isinstance(message, dict) and "id" not in message
    assert len(replies) == (0 if notification else 1), (line, replies)
