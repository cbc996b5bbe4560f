"""``winnow mcp``: driven by the MCP Python SDK's own client over stdio, as an agent's host runs it.

Locally: documents are ingested with ``winnow ingest`` into a temporary ``WINNOW_HOME``, then the client
spawns ``winnow mcp --tenant acme``, initializes, lists the tools and calls them. Against a deployed API:
a loopback stand-in for API Gateway's JWT authorizer (bearer token → tenant claim, 401 otherwise) turns
each request into a payload v2 event for the real search handler (``EmbeddedStack``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import pytest

from tests.support.mcp_stdio import StdioServer, clean_env
from tests.support.stack import EmbeddedStack
from tests.support.tokens import counting_token_command
from winnow_fakes.fake_ollama import FakeOllamaServer
from winnow_local.invoke import ROOT

HANDBOOK = """# Employee handbook

## Holidays

Every employee receives twenty-eight days of paid holiday per year, booked with their manager. Unused
holiday days may be carried over into the first quarter of the following year, up to a maximum of five
days, with the approval of the manager. Public holidays are granted on top of the annual allowance, and
part-time employees receive a share of the allowance that matches their contracted hours. Holiday
requests of more than two weeks in a row are made at least a month ahead so that cover can be arranged.

## Expenses

Travel expenses are reimbursed within fourteen days when submitted with receipts through the finance
portal. Meals during business travel are covered up to a daily allowance set by the finance team, and
hotel bookings go through the travel desk, which negotiates the corporate rates. Mileage for private cars
used on company business is paid at the rate published each January, and taxis are reimbursed when no
public transport runs at that hour or when carrying equipment for a customer visit.
"""
SECURITY = "# Security policy\n\nLaptops use full-disk encryption and lock the screen after five minutes.\n"
GLOBEX = "# Globex secrets\n\nGlobex employees receive ninety days of paid holiday per year.\n"


def winnow(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "winnow_local", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


Session = Any  # mcp.ClientSession


def with_mcp_client(
    args: list[str],
    env: dict[str, str],
    body: Callable[[Session], Awaitable[None]],
    *,
    cwd: Path = ROOT,
    errlog_path: str = os.devnull,
) -> None:
    """Spawn ``winnow mcp ARGS`` (in ``cwd``, its stderr to ``errlog_path``) and run ``body`` with an
    initialized SDK client session on it."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "winnow_local", "mcp", *args], env=env, cwd=str(cwd)
    )

    async def run() -> None:
        with open(errlog_path, "w") as errlog:  # the server's logs; the protocol is on stdout
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.server_info.name == "winnow"
                await body(session)

    anyio.run(run)


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WINNOW_HOME with two acme documents and one of another tenant, ingested by the CLI."""
    home = tmp_path_factory.mktemp("mcp-home")
    docs = home.parent / "mcp-docs"
    (docs / "acme").mkdir(parents=True)
    (docs / "globex").mkdir()
    (docs / "acme" / "handbook.md").write_text(HANDBOOK)
    (docs / "acme" / "security.md").write_text(SECURITY)
    (docs / "globex" / "secrets.md").write_text(GLOBEX)
    env = clean_env(WINNOW_HOME=str(home))
    for tenant in ("acme", "globex"):
        proc = winnow(["ingest", str(docs / tenant), "--tenant", tenant], env)
        assert proc.returncode == 0, proc.stderr
    return home


def test_an_agent_lists_the_tools_and_searches_local_documents_with_citations(home: Path) -> None:
    async def body(session: Session) -> None:
        # When the client lists the tools
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        # Then search, answer, list_documents and get_document are there, search taking query, top_k,
        # filters, mode
        assert set(tools) == {"search", "answer", "list_documents", "get_document"}
        fields = {"query", "top_k", "filters", "mode", "conversation_id"}
        assert set(tools["answer"].input_schema["properties"]) == fields
        schema = tools["search"].input_schema
        assert set(schema["properties"]) == fields
        assert schema["required"] == ["query"]
        assert schema["properties"]["mode"]["enum"] == ["hybrid", "dense", "sparse"]
        assert tools["get_document"].input_schema["required"] == ["key"]
        # and every description reads as prose, without the source's indentation
        for tool in tools.values():
            lines = (tool.description or "").splitlines()
            assert len(lines) > 1 and not [line for line in lines if line.startswith(" ")], tool.name

        # When it searches the ingested documents
        result = await session.call_tool("search", {"query": "how many days of paid holiday", "top_k": 3})
        # Then the best passage is the handbook's holiday section, with a citation to find it again
        assert not result.is_error, text_of(result)
        found = result.structured_content
        assert found["relevant"] is True
        top = found["passages"][0]
        assert top["key"] == "acme/handbook.md" and "twenty-eight days" in top["text"]
        assert top["citation"] == 'Employee handbook (acme/handbook.md), section "Holidays"'
        assert "twenty-eight days" in text_of(
            result
        )  # the same answer as text, for clients without structure
        # and the sentence that answers is quoted first, ahead of the passage's text, where it lies in it
        assert "twenty-eight days" in top["highlights"][0]
        assert top["highlights"] == [top["text"][h["start"] : h["end"]] for h in top["highlight"]]
        as_text = text_of(result)
        assert as_text.index(json.dumps(top["highlights"][0])[1:-1]) < as_text.index('"text"')
        # and another tenant's document never comes back, whatever the query
        leak = await session.call_tool("search", {"query": "Globex ninety days of paid holiday", "top_k": 10})
        assert "globex" not in json.dumps(leak.structured_content).lower()

        # When it filters on a value no document has, then nothing relevant is said plainly
        none = await session.call_tool(
            "search", {"query": "paid holiday", "filters": {"department": "nowhere"}, "mode": "dense"}
        )
        assert not none.is_error and none.structured_content["relevant"] is False
        assert none.structured_content["passages"] == []

        # When it lists the documents and asks for one, then only acme's are there, indexed
        listed = await session.call_tool("list_documents", {})
        keys = sorted(d["key"] for d in listed.structured_content["documents"])
        assert keys == ["acme/handbook.md", "acme/security.md"]
        one = await session.call_tool("get_document", {"key": "handbook.md"})
        assert one.structured_content["key"] == "acme/handbook.md"
        assert one.structured_content["status"] == "indexed"

        # When a call is invalid or names an unknown document, then the API's message is the tool error
        bad = await session.call_tool("search", {"query": "holiday", "top_k": 0})
        assert bad.is_error and "HTTP 422" in text_of(bad) and "top_k" in text_of(bad)
        missing = await session.call_tool("get_document", {"key": "globex/secrets.md"})
        assert missing.is_error and "HTTP 404" in text_of(missing)
        assert "Traceback" not in text_of(bad) + text_of(missing)

    with_mcp_client(["--tenant", "acme"], clean_env(WINNOW_HOME=str(home)), body)


def test_a_lone_surrogate_in_arguments_is_answered_with_an_error_and_the_server_goes_on(home: Path) -> None:
    """Issue 31: ``"\\ud800"`` is valid JSON but not text; the SDK dropped such a request unanswered."""
    server = StdioServer(home)  # initialized
    try:
        # When an agent sends a lone surrogate in search's query and in get_document's key
        calls = [("search", {"query": "holiday \ud800"}), ("get_document", {"key": "\ud800.md"})]
        for number, (tool, arguments) in enumerate(calls, start=2):
            call = {"name": tool, "arguments": arguments}
            # (json.dumps escapes: the surrogate goes as \ud800)
            answer = server.ask({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": call})[-1]
            # Then each request gets its JSON-RPC error, saying what is wrong
            assert answer["id"] == number and answer["error"]["code"] == -32602, answer
            assert "Unicode" in answer["error"]["message"]
        # and the next, valid call is served as before
        call = {"name": "search", "arguments": {"query": "how many days of paid holiday"}}
        found = server.ask({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call})[-1]
        assert found["id"] == 9 and found["result"]["structuredContent"]["relevant"] is True, found
    finally:
        server.close()


def test_an_agent_gets_a_grounded_answer_citing_the_passages(
    home: Path, fake_ollama: FakeOllamaServer
) -> None:
    async def body(session: Session) -> None:
        # When the agent asks a question the handbook answers
        result = await session.call_tool("answer", {"query": "how many days of paid holiday", "top_k": 3})
        # Then the answer cites the handbook's passage, and the citation says where to find it
        assert not result.is_error, text_of(result)
        answer = result.structured_content
        assert answer["relevant"] is True and "[1]" in answer["answer"]
        assert answer["citations"][0]["key"] == "acme/handbook.md"
        assert answer["citations"][0]["citation"].endswith('section "Holidays"')
        # And a question nothing answers gets no model call
        calls = len(fake_ollama.chat_requests())
        none = await session.call_tool("answer", {"query": "paid holiday", "filters": {"department": "x"}})
        assert not none.is_error and none.structured_content["relevant"] is False
        assert none.structured_content["answer"] is None and len(fake_ollama.chat_requests()) == calls

    # Given the local stack with a (fake) Ollama server
    with_mcp_client(["--tenant", "acme"], clean_env(WINNOW_HOME=str(home), OLLAMA_HOST=fake_ollama.url), body)


def test_an_agent_continues_a_conversation_by_its_id(home: Path) -> None:
    async def body(session: Session) -> None:
        # When a user's agent searches, the result carries a conversation id
        first = await session.call_tool("search", {"query": "how many days of paid holiday"})
        conversation = first.structured_content["conversation_id"]
        assert first.structured_content["query_used"] == "how many days of paid holiday"
        # Then a follow-up passed with it is read in the conversation's context
        follow = await session.call_tool(
            "search", {"query": "can they be carried over?", "conversation_id": conversation}
        )
        assert not follow.is_error, text_of(follow)
        assert follow.structured_content["conversation_id"] == conversation
        assert "holiday" in follow.structured_content["query_used"]
        assert follow.structured_content["passages"][0]["key"] == "acme/handbook.md"
        # And an id that is not this user's is a tool error that says so
        bad = await session.call_tool("search", {"query": "and?", "conversation_id": "0" * 32})
        assert bad.is_error and "no such conversation" in text_of(bad)

    with_mcp_client(["--tenant", "acme", "--user", "ann"], clean_env(WINNOW_HOME=str(home)), body)


def test_without_a_model_the_answer_tool_says_how_to_enable_it(home: Path) -> None:
    async def body(session: Session) -> None:
        # When the agent asks for an answer and no generator is configured
        result = await session.call_tool("answer", {"query": "how many days of paid holiday"})
        # Then the tool error is the API's 501, which says how to turn answers on
        assert result.is_error and "HTTP 501" in text_of(result) and "OLLAMA_HOST" in text_of(result)

    with_mcp_client(["--tenant", "acme"], clean_env(WINNOW_HOME=str(home)), body)


class FakeApiGateway:
    """What API Gateway does in front of the search function: a JWT authorizer (here a token → tenant
    table) and a payload v2 event per request; the function is the real handler of ``stack``."""

    def __init__(self, stack: EmbeddedStack, tokens: dict[str, str]) -> None:
        self.seen: list[tuple[str, str, str | None]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                auth = self.headers.get("authorization")
                owner.seen.append((self.command, self.path, auth))
                tenant = tokens.get((auth or "").removeprefix("Bearer "))
                if tenant is None:
                    status, payload = 401, {"message": "Unauthorized"}
                else:
                    url = urlsplit(self.path)
                    status, _, payload = stack.api(
                        self.command,
                        url.path,
                        json.loads(raw) if raw else None,
                        tenant=tenant,
                        query=dict(parse_qsl(url.query)),
                    )
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def gateway(stack: EmbeddedStack) -> Iterator[FakeApiGateway]:
    stack.upload("acme/handbook.md", HANDBOOK.encode())
    stack.upload("globex/secrets.md", GLOBEX.encode())
    api = FakeApiGateway(stack, {"token-of-an-acme-user": "acme"})
    try:
        yield api
    finally:
        api.close()


def test_started_from_another_folder_it_says_where_it_looked_for_documents(tmp_path: Path) -> None:
    # Given `winnow mcp --tenant t` started from a folder with no state, without WINNOW_HOME
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    errlog = tmp_path / "stderr.txt"
    env = clean_env(PYTHONPATH=os.pathsep.join([str(ROOT / "layers" / "shared"), str(ROOT)]))
    expected = f"no documents for tenant t in {(elsewhere / '.winnow').resolve()} (WINNOW_HOME)"

    async def body(session: Session) -> None:
        # When the agent searches and asks
        found = await session.call_tool("search", {"query": "how many days of paid holiday"})
        # Then the tool result says there are no documents and where it looked, not "nothing relevant"
        assert found.is_error and expected in text_of(found)
        assert "winnow ingest PATH --tenant t" in text_of(found)

    with_mcp_client(["--tenant", "t"], env, body, cwd=elsewhere, errlog_path=str(errlog))
    # And the server said so on stderr when it started, where the agent's host shows it
    assert f"winnow mcp: {expected}" in errlog.read_text()
    # And it left no empty state folder behind
    assert not (elsewhere / ".winnow").exists()


def test_against_a_deployed_api_the_bearer_token_comes_from_the_environment(gateway: FakeApiGateway) -> None:
    async def body(session: Session) -> None:
        result = await session.call_tool("search", {"query": "how many days of paid holiday"})
        assert not result.is_error, text_of(result)
        assert result.structured_content["passages"][0]["key"] == "acme/handbook.md"
        listed = await session.call_tool("list_documents", {"limit": 10})
        assert [d["key"] for d in listed.structured_content["documents"]] == ["acme/handbook.md"]

    env = clean_env(WINNOW_API_TOKEN="token-of-an-acme-user")
    with_mcp_client(["--api-url", gateway.url], env, body)
    # Every request carried the token from the environment; the token never appears in the command line
    assert gateway.seen and {auth for _, _, auth in gateway.seen} == {"Bearer token-of-an-acme-user"}
    assert ("GET", "/documents?limit=10", "Bearer token-of-an-acme-user") in gateway.seen


def test_a_token_from_a_command_is_fetched_again_when_refused_and_stderr_stays_quiet(
    stack: EmbeddedStack, tmp_path: Path
) -> None:
    stack.upload("acme/handbook.md", HANDBOOK.encode())
    api = FakeApiGateway(stack, {"token-2": "acme"})  # token-1 has expired by the time it is used
    errlog = tmp_path / "stderr.txt"

    async def body(session: Session) -> None:
        result = await session.call_tool("search", {"query": "how many days of paid holiday"})
        assert not result.is_error, text_of(result)
        failed = await session.call_tool("get_document", {"key": "acme/nothing.md"})
        assert failed.is_error and "404" in text_of(failed)

    try:
        with_mcp_client(
            ["--api-url", api.url, "--token-command", counting_token_command(tmp_path)],
            clean_env(),
            body,
            errlog_path=str(errlog),
        )
    finally:
        api.close()
    assert [auth for _, _, auth in api.seen] == ["Bearer token-1", "Bearer token-2", "Bearer token-2"]
    # Neither each HTTP request nor each failed call is written to the host's log
    assert errlog.read_text() == ""


def test_a_rejected_token_is_a_tool_error_that_says_so(gateway: FakeApiGateway) -> None:
    async def body(session: Session) -> None:
        result = await session.call_tool("search", {"query": "holiday"})
        assert result.is_error
        assert "HTTP 401: Unauthorized (the token is missing, expired or not for this API)" in text_of(result)

    env = clean_env(MY_TOKEN="expired-token")
    with_mcp_client(["--api-url", gateway.url, "--token-env", "MY_TOKEN"], env, body)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--api-url", "https://api.example.com"],
            "set WINNOW_API_TOKEN to a bearer token for https://api.example.com",
        ),
        (["--api-url", "http://api.example.com"], "use https://"),
    ],
)
def test_remote_mode_refuses_to_start_without_a_token_or_over_plain_http(
    args: list[str], message: str
) -> None:
    proc = winnow(["mcp", *args], clean_env())
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("winnow: ") and message in line, line


def test_the_mcp_sdk_is_a_local_extra_never_in_the_lambda_layer() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in project["dependencies"]}
    assert "mcp" not in names
    assert any(r.startswith("mcp") for r in project["optional-dependencies"]["local"])
    layer = (ROOT / "layers" / "shared" / "requirements.txt").read_text().lower()
    assert not [line for line in layer.splitlines() if line.strip().startswith("mcp")]
