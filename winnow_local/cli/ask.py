"""``winnow ask``: ``POST /answer`` through the search handler, on this machine (Ollama when
``OLLAMA_HOST`` is set). Registered by ``winnow_local.cli.main``."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

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
from winnow_local.cli.search import citation, post_query, search_request
from winnow_local.runtime import DEFAULT_TENANT, LocalRuntime


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


def cmd_ask(args: argparse.Namespace) -> int:
    tenant = check_tenant(args.tenant)
    body = search_request(args)
    if args.max_answer_tokens is not None:
        body["max_answer_tokens"] = args.max_answer_tokens
    payload = post_query(
        LocalRuntime(*identity(args)),
        "/answer",
        body,
        tenant,
        echo=args.json,
        found=lambda p: p.get("answer") is not None,
    )
    if not args.json:
        print_answer(payload, tenant)
    return 0


def add_ask_parser(commands: Any) -> None:
    ask = commands.add_parser(
        "ask",
        help="answer a question from the documents, with citations",
        description="Run POST /answer through the search handler: the search, then a model answers from "
        "the passages it kept. Needs OLLAMA_HOST (a running Ollama server) on this machine.",
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
    ask.add_argument("--json", action="store_true", help="print the response body exactly as returned")
    ask.set_defaults(func=cmd_ask)
