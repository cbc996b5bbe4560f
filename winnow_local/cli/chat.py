"""``winnow chat``: a conversation at the terminal. Each line is a question; follow-ups continue the same
conversation without retyping its id. Answers through ``POST /answer`` when a model is configured, else
the passages of ``POST /search``. Registered by ``winnow_local.cli.main``."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from winnow_local.api_client import add_api_arguments
from winnow_local.cli.ask import print_answer
from winnow_local.cli.common import TENANT_HELP, check_tenant, fail_response, whole_number
from winnow_local.cli.remote import ApiRuntime, runtime_for
from winnow_local.cli.search import print_search_results
from winnow_local.errors import CliError
from winnow_local.runtime import DEFAULT_TENANT

PROMPT = "? "
QUIT = frozenset({"exit", "quit", ":q"})


def chat(
    runtime: ApiRuntime,
    tenant: str,
    lines: IO[str],
    out: IO[str],
    conversation: str | None = None,
    memory: bool = True,
    top_k: int | None = None,
) -> str | None:
    """Ask each line in turn; return the conversation id (None when nothing was asked)."""
    answers = True
    while True:
        if lines.isatty():
            print(PROMPT, end="", file=out, flush=True)
        line = lines.readline()
        if not line:
            return conversation
        question = line.strip()
        if question.lower() in QUIT:
            return conversation
        if not question:
            continue
        body: dict[str, Any] = {"query": question}
        if top_k is not None:
            body["top_k"] = top_k
        if conversation:
            body["conversation_id"] = conversation
        route = "/answer" if answers else "/search"
        if route == "/answer" and not memory:
            body["memory"] = False
        response = runtime.call_api("POST", route, body=body, tenant=tenant)
        if route == "/answer" and response.status == 501:  # no model here: passages instead, from now on
            answers = False
            body.pop("memory", None)
            response = runtime.call_api("POST", "/search", body=body, tenant=tenant)
        if response.status >= 400:
            try:
                fail_response(response)
            except CliError as exc:
                print(f"winnow: {exc}", file=out, flush=True)
                continue
        payload: dict[str, Any] = response.json()
        conversation = payload.get("conversation_id") or conversation
        if answers:
            print_answer(payload, tenant, out)
        else:
            print_search_results(payload, tenant, out)
        used = payload.get("query_used")
        if used and used != question:
            print(f"(searched: {used})", file=out)
        print("", file=out, flush=True)


def cmd_chat(args: argparse.Namespace) -> int:
    tenant = check_tenant(args.tenant)
    groups = [g for g in args.groups.replace(",", " ").split() if g]
    runtime = runtime_for(args, args.user, groups)
    print(
        f"Ask as {args.user} in {tenant}; follow-ups continue the conversation. Ctrl-D or 'exit' to stop.",
        file=sys.stderr,
    )
    conversation = chat(
        runtime, tenant, sys.stdin, sys.stdout, args.conversation, not args.no_memory, args.top_k
    )
    if conversation:
        print(f"(conversation {conversation}: continue with --conversation {conversation})", file=sys.stderr)
    return 0


def add_chat_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "chat",
        help="ask questions and follow-ups in one conversation",
        description="Each line is a question; follow-ups ('and for adoptions?') continue the conversation. "
        "Answers with the configured model (OLLAMA_HOST), else shows the passages.",
    )
    parser.add_argument("--tenant", default=DEFAULT_TENANT, help=TENANT_HELP)
    parser.add_argument("--user", default="me", help="user id the conversation belongs to (default: me)")
    parser.add_argument("--groups", default="", help="groups, comma-separated (the token's groups claim)")
    parser.add_argument("--conversation", default=None, metavar="ID", help="continue this conversation")
    parser.add_argument("--no-memory", action="store_true", help="neither recall nor add memories")
    parser.add_argument(
        "--top-k", type=whole_number, default=None, help="most passages per question, 1-50 (default 5)"
    )
    add_api_arguments(parser, what="chat")
    parser.set_defaults(func=cmd_chat)
