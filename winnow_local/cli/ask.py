"""``winnow ask``: ``POST /answer`` through the search handler, on this machine (Ollama when
``OLLAMA_HOST`` is set). Registered by ``winnow_local.cli.main``."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from winnow.api.http import ANSWER_MODEL_UNAVAILABLE
from winnow_local.api_client import add_api_arguments
from winnow_local.cli.common import (
    TENANT_HELP,
    add_identity_arguments,
    check_tenant,
    document_name,
    identity,
    unit_float,
    whole_number,
    wrap,
)
from winnow_local.cli.remote import ApiRuntime, runtime_for
from winnow_local.cli.search import (
    CONVERSATION_HELP,
    citation,
    post_query,
    print_conversation,
    print_search_results,
    query_payload,
    search_request,
)
from winnow_local.errors import CliError
from winnow_local.runtime import DEFAULT_TENANT


def print_answer(payload: dict[str, Any], tenant: str, out: IO[str] | None = None) -> None:
    out = out or sys.stdout
    if payload.get("answer") is None:
        print(payload.get("message") or "No relevant passages found", file=out)
        return
    print(wrap(str(payload["answer"]), indent=""), file=out)
    citations = payload.get("citations") or []
    if citations:
        print("\nSources:", file=out)
        by_rank = {r.get("rank"): r for r in payload.get("results") or []}
        for c in citations:
            result = by_rank.get(c.get("rank"), c)
            title = c.get("title") or document_name(str(c.get("key")), tenant)
            print(f"[{c.get('rank')}] {title} -- {citation(result, tenant)}", file=out)
    usage = payload.get("usage") or {}
    total = (payload.get("timings_ms") or {}).get("total")
    timing = f", {total:.0f} ms" if isinstance(total, int | float) else ""
    print(
        f"\n({payload.get('model')}: {usage.get('input_tokens', 0)} input + "
        f"{usage.get('output_tokens', 0)} output tokens{timing})",
        file=out,
    )
    out.flush()


def answer_model() -> str:
    """The answer model this machine is set to use, with where it runs: ``Ollama model 'llama3.2' at
    http://127.0.0.1:11434`` (for the local user only; the API never names hosts)."""
    from winnow.factory import get_container

    a = get_container().settings.answer
    if a.chosen == "bedrock":
        return f"Bedrock model {a.bedrock_model_id!r} in {a.bedrock_region or 'the default region'}"
    host = (a.ollama_host or "").strip().rstrip("/")
    return f"Ollama model {a.ollama_model!r} at {host if '://' in host else 'http://' + host}"


ENABLE_ANSWERS = (
    "no answer model is configured, so these are the passages only; to have answers written from them, "
    "run an Ollama server and set OLLAMA_HOST (e.g. OLLAMA_HOST=127.0.0.1:11434) and "
    "WINNOW_ANSWER_OLLAMA_MODEL to a model pulled there (default llama3.2)"
)


def _without_answer(runtime: ApiRuntime, body: dict[str, Any], tenant: str, why: str) -> None:
    """No answer could be written: print the passages the answer would have come from, then why."""
    search_body = {name: value for name, value in body.items() if name != "max_answer_tokens"}
    payload = post_query(
        runtime, "/search", search_body, tenant, echo=False, found=lambda p: bool(p.get("results"))
    )
    print_search_results(payload, tenant)
    print(f"winnow: {why}", file=sys.stderr)


def cmd_ask(args: argparse.Namespace) -> int:
    tenant = check_tenant(args.tenant)
    body = search_request(args)
    if args.max_answer_tokens is not None:
        body["max_answer_tokens"] = args.max_answer_tokens
    runtime = runtime_for(args, *identity(args))
    response = runtime.call_api("POST", "/answer", body=body, tenant=tenant)
    if not args.json and response.status == 501:
        _without_answer(runtime, body, tenant, ENABLE_ANSWERS)
        return 0
    if response.status == 503 and response.error_message == ANSWER_MODEL_UNAVAILABLE:
        why = f"the answer model ({answer_model()}) is unavailable: is it running there?"
        if args.json:
            print(response.body.decode("utf-8"), flush=True)
            raise CliError(why)
        _without_answer(runtime, body, tenant, f"{why} The passages above are what it would answer from")
        return 1
    payload = query_payload(runtime, response, tenant, args.json, lambda p: p.get("answer") is not None)
    if not args.json:
        print_answer(payload, tenant)
        print_conversation(payload)
    return 0


def add_ask_parser(commands: Any) -> None:
    ask = commands.add_parser(
        "ask",
        help="answer a question from the documents, with citations",
        description="Run POST /answer through the search handler: the search, then a model answers from "
        "the passages it kept. Needs OLLAMA_HOST (a running Ollama server) on this machine; without one, or "
        "when the model does not answer, it prints the passages and says why.",
    )
    ask.add_argument("query", metavar="QUESTION")
    ask.add_argument("--tenant", default=DEFAULT_TENANT, help=TENANT_HELP)
    add_identity_arguments(ask)
    ask.add_argument("--top-k", type=whole_number, default=None, help="most passages (API default 5)")
    ask.add_argument("--candidates", type=whole_number, default=None, help="candidates per retriever")
    ask.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="metadata filter: FIELD=VALUE (repeat a field for any-of), FIELD>=NUMBER, FIELD<=NUMBER",
    )
    ask.add_argument("--mode", choices=("hybrid", "dense", "sparse"), default=None)
    ask.add_argument("--no-rerank", action="store_true", help="skip the re-ranker")
    ask.add_argument("--threshold", type=unit_float, default=None, help="relevance threshold in [0, 1]")
    ask.add_argument("--max-answer-tokens", type=whole_number, default=None, help="answer length cap")
    ask.add_argument("--conversation", default=None, metavar="ID", help=CONVERSATION_HELP)
    ask.add_argument("--json", action="store_true", help="print the response body exactly as returned")
    add_api_arguments(ask, what="ask")
    ask.set_defaults(func=cmd_ask)
