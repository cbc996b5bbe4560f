"""``winnow search`` and ``winnow documents``: API Gateway events through the search handler, printed for
a reader (or as the API's JSON)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import IO, Any

from winnow.models import DocumentStatus
from winnow_local.api_client import add_api_arguments
from winnow_local.cli.common import (
    TENANT_HELP,
    add_identity_arguments,
    check_tenant,
    document_name,
    fail_response,
    identity,
    marks_for,
    passage_text,
    print_json,
    unit_float,
    whole_number,
)
from winnow_local.cli.filters import FilterSyntaxError, parse_filters
from winnow_local.cli.remote import ApiRuntime, runtime_for
from winnow_local.errors import CliError
from winnow_local.runtime import DEFAULT_TENANT, ApiResponse, no_documents


def search_request(args: argparse.Namespace) -> dict[str, Any]:
    """The POST /search body the options describe; unset options are left to the API's defaults."""
    body: dict[str, Any] = {"query": args.query}
    if args.top_k is not None:
        body["top_k"] = args.top_k
    if args.candidates is not None:
        body["candidates"] = args.candidates
    if args.filter:
        try:
            body["filters"] = parse_filters(args.filter)
        except FilterSyntaxError as exc:
            raise CliError(str(exc)) from exc
    if args.mode is not None:
        body["mode"] = args.mode
    if args.no_rerank:
        body["rerank"] = False
    if args.threshold is not None:
        body["relevance_threshold"] = args.threshold
    if getattr(args, "conversation", None):
        body["conversation_id"] = args.conversation
    return body


CONVERSATION_HELP = "continue this conversation (the id a previous answer printed); needs --user"


def print_conversation(payload: dict[str, Any], out: IO[str] | None = None) -> None:
    """What a follow-up searched, and the id to continue with (conversations need a user id); nothing
    when nothing was found, as there is nothing to follow up."""
    out = out or sys.stdout
    conversation = payload.get("conversation_id")
    if not conversation or not (payload.get("results") or payload.get("answer")):
        return
    used = payload.get("query_used")
    if used and used != payload.get("query"):
        print(f"\n(searched: {used})", file=out)
    print(f"(conversation {conversation}: continue with --conversation {conversation})", file=out)
    out.flush()


def citation(result: dict[str, Any], tenant: str) -> str:
    """``document, page N, section "A > B", score 0.62``: what a reader needs to find the passage."""
    parts = [document_name(str(result.get("key")), tenant)]
    if result.get("page") is not None:
        parts.append(f"page {result['page']}")
    if result.get("section"):
        parts.append(f'section "{result["section"]}"')
    parts.append(f"score {float(result.get('score') or 0):.3f}")
    return ", ".join(parts)


def print_search_results(payload: dict[str, Any], tenant: str, out: IO[str] | None = None) -> None:
    out = out or sys.stdout
    results = payload.get("results") or []
    total_ms = (payload.get("timings_ms") or {}).get("total")
    timing = f" in {total_ms:.0f} ms" if isinstance(total_ms, int | float) else ""
    if not results:
        print(payload.get("message") or "No relevant passages found.", file=out)
        return
    count = len(results)
    print(f"{count} passage{'s' if count != 1 else ''} for {payload.get('query')!r}{timing}", file=out)
    marks = marks_for(out)
    for result in results:
        title = result.get("title") or document_name(str(result.get("key")), tenant)
        print(f"\n[{result.get('rank')}] {title}", file=out)
        print(passage_text(result, marks=marks), file=out)
        print(f"    -- {citation(result, tenant)}", file=out)
    out.flush()


def post_query(
    runtime: ApiRuntime,
    route: str,
    body: dict[str, Any],
    tenant: str,
    *,
    echo: bool,
    found: Callable[[dict[str, Any]], bool],
) -> dict[str, Any]:
    """POST a search or answer request and return its payload (``echo``: the raw JSON goes to stdout
    first). A failed request is the API's one-line error; nothing ``found`` for a tenant without
    documents says to ingest some, as that, not relevance, is why."""
    return query_payload(
        runtime, runtime.call_api("POST", route, body=body, tenant=tenant), tenant, echo, found
    )


def query_payload(
    runtime: ApiRuntime,
    response: ApiResponse,
    tenant: str,
    echo: bool,
    found: Callable[[dict[str, Any]], bool],
) -> dict[str, Any]:
    """``post_query`` for a response already in hand."""
    if echo:
        sys.stdout.write(response.body.decode("utf-8"))
        sys.stdout.write("\n")
        sys.stdout.flush()
    if response.status >= 400:
        fail_response(response)
    payload: dict[str, Any] = response.json()
    if not found(payload) and not runtime.has_documents(tenant):
        raise CliError(no_documents(tenant))
    return payload


def cmd_search(args: argparse.Namespace) -> int:
    tenant = check_tenant(args.tenant)
    body = search_request(args)
    runtime = runtime_for(args, *identity(args))
    payload = post_query(
        runtime, "/search", body, tenant, echo=args.json, found=lambda p: bool(p.get("results"))
    )
    if not args.json:
        if not payload.get("results") and body.get("filters") and not _filter_matches(runtime, body, tenant):
            conditions = " ".join(f"--filter {spec}" for spec in args.filter)
            print(f"No passages: {conditions} matched no documents of tenant {tenant}.")
            return 0
        print_search_results(payload, tenant)
        print_conversation(payload)
    return 0


def _filter_matches(runtime: ApiRuntime, body: dict[str, Any], tenant: str) -> bool:
    """Whether any passage of the tenant passes the filters at all (threshold 0), to tell "nothing
    relevant" from "the filter excludes everything"."""
    probe = {"query": body["query"], "filters": body["filters"], "top_k": 1, "relevance_threshold": 0.0}
    probe |= {"mode": "dense", "rerank": False}
    response = runtime.call_api("POST", "/search", body=probe, tenant=tenant)
    return response.status != 200 or bool(response.json().get("results"))


def list_documents(runtime: ApiRuntime, tenant: str) -> list[dict[str, Any]]:
    """Every page of GET /documents."""
    documents: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query: dict[str, str | int] = {"limit": 100}
        if cursor:
            query["cursor"] = cursor
        response = runtime.call_api("GET", "/documents", query=query, tenant=tenant)
        if response.status >= 400:
            fail_response(response)
        page = response.json()
        documents.extend(page.get("documents") or [])
        cursor = page.get("next_cursor")
        if not cursor:
            return documents


def cmd_documents(args: argparse.Namespace) -> int:
    tenant = check_tenant(args.tenant)
    documents = list_documents(runtime_for(args, *identity(args)), tenant)
    if args.json:
        for document in documents:
            print_json(document)
    if not documents:
        print(f"winnow: {no_documents(tenant)}", file=sys.stderr)
        return 0
    if not args.json:
        names = [document_name(str(d.get("key")), tenant) for d in documents]
        width = max(len("DOCUMENT"), *(len(name) for name in names))
        print(f"{'STATUS':<9}  {'DOCUMENT':<{width}}  {'CHUNKS':>6}  {'UPDATED':<16}  ERROR".rstrip())
        for name, document in zip(names, documents, strict=True):
            updated = str(document.get("updated_at") or "")[:16].replace("T", " ")
            error = document.get("error") or ""
            status, chunks = document.get("status", "?"), document.get("chunks", 0)
            line = f"{status:<9}  {name:<{width}}  {chunks:>6}  {updated:<16}"
            print(f"{line}  {error}".rstrip())
        print(_documents_summary(documents, tenant), file=sys.stderr)
    return 0


def _documents_summary(documents: list[dict[str, Any]], tenant: str) -> str:
    """``28 documents for tenant acme: 25 indexed, 1 failed (and 3 deleted)``: deleted ones are not
    counted as documents."""
    counts: dict[str, int] = {}
    for document in documents:
        status = str(document.get("status"))
        counts[status] = counts.get(status, 0) + 1
    deleted = counts.pop(DocumentStatus.DELETED, 0)
    live = sum(counts.values())
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    line = f"{live} document{'s' if live != 1 else ''} for tenant {tenant}" + (f": {parts}" if parts else "")
    return line + (f" (and {deleted} deleted)" if deleted else "")


def add_search_parser(commands: Any) -> None:
    search = commands.add_parser(
        "search", help="search the documents", description="Run POST /search through the search handler."
    )
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--tenant", default=DEFAULT_TENANT, help=TENANT_HELP)
    add_identity_arguments(search)
    search.add_argument("--top-k", type=whole_number, default=None, help="most results, 1-50 (default 5)")
    search.add_argument(
        "--candidates", type=whole_number, default=None, help="candidates per retriever, top-k to 200"
    )
    search.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="metadata filter: FIELD=VALUE (repeat a field for any-of), FIELD>=NUMBER, FIELD<=NUMBER",
    )
    search.add_argument("--mode", choices=("hybrid", "dense", "sparse"), default=None)
    search.add_argument("--no-rerank", action="store_true", help="skip the re-ranker")
    search.add_argument(
        "--threshold",
        type=unit_float,
        default=None,
        help="relevance threshold in [0, 1], applied to every passage (default: the server's threshold "
        "for the best passage and its floor for the others)",
    )
    search.add_argument("--conversation", default=None, metavar="ID", help=CONVERSATION_HELP)
    search.add_argument("--json", action="store_true", help="print the response body exactly as returned")
    add_api_arguments(search, what="search")
    search.set_defaults(func=cmd_search)


def add_documents_parser(commands: Any) -> None:
    documents = commands.add_parser("documents", help="list documents and their ingest status")
    documents.add_argument("--tenant", default=DEFAULT_TENANT, help=TENANT_HELP)
    add_identity_arguments(documents)
    documents.add_argument("--json", action="store_true", help="one JSON object per document")
    add_api_arguments(documents, what="list")
    documents.set_defaults(func=cmd_documents)
