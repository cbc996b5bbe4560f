"""``winnow mcp``: Winnow as an MCP server over stdio, built on the official MCP Python SDK, so an agent can
search a document collection and cite what it found.

Tools: ``search`` (query, top_k, filters, mode → passages with citations), ``answer`` (the same, plus a
grounded answer citing those passages, when a generator is configured), ``list_documents`` and
``get_document``. Every call is a request to the search API: by default through the local handlers on the
embedded default (``WINNOW_HOME``, one tenant), or over HTTPS to a deployed API (``--api-url``) with a
bearer token read from an environment variable, never from the command line. The API's own validation and
tenant rules apply unchanged; its error messages come back to the agent as tool errors."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import quote

from winnow_local.api_client import (
    DEFAULT_TOKEN_ENV,
    ApiUnavailable,
    HttpBackend,
    add_api_arguments,
    check_api_url,
    token_for,
)
from winnow_local.highlights import spans

INSTRUCTIONS = (
    "Search the user's documents with `search`; answer from the passages it returns and cite each one by "
    "its `citation`. When `relevant` is false, say that nothing relevant was found instead of guessing. "
    "`answer` writes an answer from the same passages, citing them as [n]; when it says nothing relevant "
    "was found, trust it. `list_documents` shows what is indexed and its status; `get_document` one "
    "document's status."
)


class Backend(Protocol):
    """Where the API requests go: ``(status, JSON body)`` for one request."""

    def request(
        self, method: str, path: str, *, body: Any = None, query: Mapping[str, Any] | None = None
    ) -> tuple[int, Any]: ...

    def why_nothing(self) -> str | None:
        """When a search found nothing for a reason other than relevance (no documents at all), that
        reason; None otherwise."""
        ...


class LocalBackend:
    """The search handler in this process, as ``winnow search`` calls it, for one tenant."""

    def __init__(self, tenant: str, user: str | None = None, groups: Sequence[str] = ()) -> None:
        from winnow_local.runtime import LocalRuntime

        self.tenant = tenant
        self.user = user
        self.groups = tuple(groups)
        self._runtime = LocalRuntime()

    def request(
        self, method: str, path: str, *, body: Any = None, query: Mapping[str, Any] | None = None
    ) -> tuple[int, Any]:
        if not self._has_state():  # asking would create an empty state folder where the agent started us
            from winnow_local.runtime import no_documents

            raise ApiUnavailable(no_documents(self.tenant))
        response = self._runtime.call_api(
            method, path, body=body, query=query, tenant=self.tenant, user=self.user, groups=self.groups
        )
        try:
            return response.status, response.json()
        except ValueError:
            return response.status, response.body.decode("utf-8", "replace")

    def why_nothing(self) -> str | None:
        from winnow_local.runtime import no_documents

        if self._has_state() and self._runtime.has_documents(self.tenant):
            return None
        return no_documents(self.tenant)

    @staticmethod
    def _has_state() -> bool:
        """Whether the embedded index exists at all (always, for a Qdrant server)."""
        from winnow_local.runtime import local_qdrant_path

        path = local_qdrant_path()
        return path is None or path.expanduser().exists()


def error_message(status: int, payload: Any) -> str:
    """The API's ``error.message`` (it says what to send), with the status; never a stack trace."""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        message = str(payload["error"].get("message") or payload["error"].get("code") or "")
    elif isinstance(payload, dict) and payload.get("message"):  # API Gateway's own 401/403/429 bodies
        message = str(payload["message"])
    else:
        message = ""
    hint = {401: " (the token is missing, expired or not for this API)", 429: " (rate limited: retry later)"}
    return f"HTTP {status}: {message or 'request failed'}{hint.get(status, '')}"


def citation(result: Mapping[str, Any]) -> str:
    """``Title (key), page 3, section "Holidays"``: enough to find the passage again."""
    key = str(result.get("key") or "")
    title = result.get("title")
    parts = [f"{title} ({key})" if title and title != key else key]
    if result.get("page") is not None:
        parts.append(f"page {result['page']}")
    if result.get("section"):
        parts.append(f'section "{result["section"]}"')
    return ", ".join(parts)


def _source(result: Mapping[str, Any]) -> dict[str, Any]:
    """Where a passage comes from, as both tools show it: a search result's or an answer's citation."""
    return {
        "rank": result.get("rank"),
        "citation": citation(result),
        "key": result.get("key"),
        "page": result.get("page"),
        "section": result.get("section"),
    }


def _passage(result: Mapping[str, Any]) -> dict[str, Any]:
    """A search result as the ``search`` tool gives it: the highlighted sentences quoted before the text
    (an agent reads the tool's JSON in order), their offsets into ``text`` after it."""
    text = str(result.get("text") or "")
    kept = spans(text, result.get("highlight"))
    return _source(result) | {
        "highlights": [text[start:end] for start, end in kept],
        "score": result.get("score"),
        "text": result.get("text"),
        "title": result.get("title"),
        "metadata": result.get("metadata") or {},
        "highlight": [{"start": start, "end": end} for start, end in kept],
    }


def _search_body(
    query: str, top_k: int, filters: dict[str, Any] | None, mode: str, conversation_id: str | None = None
) -> dict[str, Any]:
    """The request body ``/search`` and ``/answer`` share."""
    body: dict[str, Any] = {"query": query, "top_k": top_k, "mode": mode}
    if filters:
        body["filters"] = filters
    if conversation_id:
        body["conversation_id"] = conversation_id
    return body


def _conversation(payload: Mapping[str, Any]) -> dict[str, Any]:
    """What a conversation adds to a tool's result (nothing for a caller without a user id)."""
    if not payload.get("conversation_id"):
        return {}
    return {"conversation_id": payload["conversation_id"], "query_used": payload.get("query_used")}


@dataclass
class WinnowTools:
    """The tools, over any backend (so they are the same locally and against AWS)."""

    backend: Backend

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            status, payload = self.backend.request(method, path, **kwargs)
        except ApiUnavailable as exc:
            raise ToolError(str(exc)) from exc
        if status >= 400:
            raise ToolError(error_message(status, payload))
        return payload

    def _nothing_found(self) -> None:
        """The CLI's rule: nothing found for a tenant without documents is an error saying where this
        server looked, not "nothing relevant"."""
        from mcp.server.mcpserver.exceptions import ToolError

        reason = self.backend.why_nothing()
        if reason:
            raise ToolError(reason)

    def search(
        self,
        query: str,
        top_k: int = 5,
        filters: dict[str, Any] | None = None,
        mode: Literal["hybrid", "dense", "sparse"] = "hybrid",
        conversation_id: str | None = None,
    ) -> dict[str, Any]:
        """Search the documents; nothing when the best passage is under the relevance threshold, else the
        few passages that clear the relevance floor, best first, each with its text, score and citation
        (document, page, section), and `highlights`: the passage's sentences that best answer the query,
        quoted, best first (read them first; their offsets into `text` are in `highlight`). `top_k` 1-50;
        `filters` maps a metadata field to a value, a list of values (any of) or {"gte": n, "lte": n};
        `mode` hybrid (default), dense or sparse. `relevant: false` means nothing relevant was found.
        With a user id the result carries a `conversation_id`: pass it back with a follow-up question
        ("and for adoptions?") and the search reads it in the conversation's context (`query_used` says
        what was searched)."""
        body = _search_body(query, top_k, filters, mode, conversation_id)
        payload = self._call("POST", "/search", body=body)
        passages = [_passage(r) for r in payload.get("results") or []]
        if not passages:
            self._nothing_found()
        return {
            "relevant": bool(payload.get("relevant")),
            "message": payload.get("message"),
            "passages": passages,
        } | _conversation(payload)

    def answer(
        self,
        query: str,
        top_k: int = 5,
        filters: dict[str, Any] | None = None,
        mode: Literal["hybrid", "dense", "sparse"] = "hybrid",
        conversation_id: str | None = None,
    ) -> dict[str, Any]:
        """Answer a question from the documents only: the same search as `search`, then a model writes an
        answer citing the passages as [1], [2] (`citations` says which document, page and section each
        is). `relevant: false` means nothing relevant was found and no answer was written. An error says
        how to enable answers when no model is configured. `conversation_id` (from an earlier result)
        continues a conversation: follow-ups are read in its context."""
        body = _search_body(query, top_k, filters, mode, conversation_id)
        payload = self._call("POST", "/answer", body=body)
        if payload.get("answer") is None:
            self._nothing_found()
        return {
            "relevant": bool(payload.get("relevant")),
            "answer": payload.get("answer"),
            "message": payload.get("message"),
            "citations": [_source(c) for c in payload.get("citations") or []],
            "model": payload.get("model"),
        } | _conversation(payload)

    def list_documents(self, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """The indexed documents and their ingest status (indexed, failed with a reason, deleted), a page at
        a time: pass `next_cursor` back as `cursor` for the next page (limit 1-100) until it is null; a page
        may be short or empty before that (one request reads at most 1,000 records)."""
        query: dict[str, Any] = {"limit": limit}
        if cursor:
            query["cursor"] = cursor
        payload = self._call("GET", "/documents", query=query)
        return {"documents": payload.get("documents") or [], "next_cursor": payload.get("next_cursor")}

    def get_document(self, key: str) -> dict[str, Any]:
        """One document's status by its key (as `list_documents` or a search citation shows it, with or
        without the tenant prefix): status, chunks, title, error, metadata."""
        payload: dict[str, Any] = self._call("GET", "/documents/" + quote(key, safe=""))
        return payload


def build_server(tools: WinnowTools, log_level: Literal["INFO", "WARNING"] = "WARNING") -> Any:
    """The MCP server with its tools, their descriptions written for an agent. Its log goes to stderr,
    which an agent's host shows: at WARNING a failed tool call (already the agent's tool error) and each
    HTTP request stay out of it; ``winnow -v mcp`` shows them."""
    import inspect

    from mcp.server.mcpserver import MCPServer

    import winnow

    server = MCPServer(
        name="winnow", version=winnow.__version__, instructions=INSTRUCTIONS, log_level=log_level
    )

    # One definition per tool: ``WinnowTools``' methods, their docstrings what the agent reads (dedented:
    # the SDK would send them as written in the source, every line after the first indented).
    for function in (tools.search, tools.answer, tools.list_documents, tools.get_document):
        server.tool(description=inspect.cleandoc(function.__doc__ or ""))(function)
    return server


# --- the command ---------------------------------------------------------------------------------------
def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "mcp",
        help="serve search to AI agents over MCP (stdio)",
        description="An MCP server on stdin/stdout with the tools search, answer, list_documents and "
        "get_document. "
        "By default it searches the embedded default in WINNOW_HOME as one tenant; with --api-url it calls a "
        f"deployed API with the bearer token in ${DEFAULT_TOKEN_ENV} (or --token-env), or one that "
        "--token-command prints and prints again when it expires.",
    )
    parser.add_argument(
        "--tenant",
        default=None,
        help="local tenant (default 'default'); with --api-url, "
        "sent as x-winnow-tenant for a local `winnow serve` instead of a token",
    )
    parser.add_argument(
        "--user", default=None, help="local user id (the token's user claim); without it: anonymous"
    )
    parser.add_argument(
        "--groups", default="", help="local groups, comma-separated (the token's groups claim)"
    )
    add_api_arguments(parser, what="search")
    parser.set_defaults(func=cmd_mcp)


def split_groups(text: str | None) -> list[str]:
    """``--groups hr,legal`` as a list (the CLI's and MCP's one reading of the flag)."""
    return [g.strip() for g in (text or "").split(",") if g.strip()]


def backend_for(args: Any, environ: Mapping[str, str] | None = None) -> Backend:
    from winnow_local.errors import CliError

    env = os.environ if environ is None else environ
    user, groups = getattr(args, "user", None), split_groups(getattr(args, "groups", ""))
    if args.api_url is None:
        return LocalBackend(args.tenant or "default", user, groups)
    check_api_url(args.api_url)
    token = token_for(args, env)
    if token is None and args.tenant is None:
        raise CliError(
            f"set {args.token_env} to a bearer token for {args.api_url} (or name another variable with "
            "--token-env, or give --token-command); for a local `winnow serve`, pass --tenant instead"
        )
    return HttpBackend(args.api_url, token, args.tenant, user, groups)


# Deeper than any request the tools take: json.loads recurses once per level (``winnow.jsonbounds``).
MAX_LINE_DEPTH = 64


def unreadable_reply(error: Exception) -> Any:
    """The JSON-RPC error for a line the SDK could not read, or None when none is owed (a notification).
    The SDK drops such lines, so a request holding a lone surrogate (``"\\ud800"``, valid JSON to Python
    but not to pydantic, and not text) was never answered: the agent waited forever. A line nested deeper
    than ``MAX_LINE_DEPTH`` is measured, never parsed, so no depth ends the server."""
    import json

    from mcp_types import JSONRPCError
    from mcp_types.jsonrpc import ErrorData
    from pydantic import ValidationError

    from winnow.jsonbounds import nesting_depth

    def invalid(
        request_id: str | int | None = None, code: int = -32600, text: str = "Invalid Request"
    ) -> Any:
        return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text))

    line = (
        next((e.get("input") for e in error.errors()), None) if isinstance(error, ValidationError) else None
    )
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    if not isinstance(line, str):
        return invalid(code=-32700, text="Parse error")
    if nesting_depth(line) > MAX_LINE_DEPTH:
        return invalid(text=f"Invalid Request: JSON nested deeper than {MAX_LINE_DEPTH} levels")
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return invalid(code=-32700, text="Parse error")
    if isinstance(message, dict) and "id" not in message:
        return None
    raw_id = message.get("id") if isinstance(message, dict) else None
    request_id = raw_id if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        text = "Invalid params: text must be valid Unicode (a lone UTF-16 surrogate such as \\ud800 is not)"
        return invalid(request_id, -32602, text)
    return invalid(request_id)


async def serve_stdio(server: Any) -> None:
    """``MCPServer.run_stdio_async``, plus an answer to every request the SDK cannot read (it has no hook
    for those: its stdio transport queues the parse error, and its dispatcher logs and drops it)."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    # The server run_stdio_async runs, with our screen in front of it (the SDK offers no public hook).
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def screen() -> None:
            async with send:
                async for item in read_stream:
                    reply = unreadable_reply(item) if isinstance(item, Exception) else None
                    if reply is not None:
                        await write_stream.send(SessionMessage(reply))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(screen)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


def cmd_mcp(args: Any) -> int:
    import sys

    import anyio

    backend = backend_for(args)
    if isinstance(backend, LocalBackend):
        reason = backend.why_nothing()
        if reason:  # stdout is the protocol; the agent's host shows stderr
            print(f"winnow mcp: {reason}", file=sys.stderr, flush=True)
    server = build_server(WinnowTools(backend), "INFO" if getattr(args, "verbose", False) else "WARNING")
    anyio.run(serve_stdio, server)
    return 0
