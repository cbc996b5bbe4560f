"""The ``winnow`` command: the embedded default, driven through the same handlers that run in Lambda.

``ingest`` and ``delete`` put objects into (or remove them from) the local bucket and run the resulting
S3 notification through the ingest handler; ``search`` and ``documents`` send API Gateway events through
the search handler; ``serve`` exposes the same API over HTTP with a search page; ``demo`` shows it all on
samples we ship. State lives in ``WINNOW_HOME`` (default ``./.winnow``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

import winnow
from winnow.rules import TENANT_RULE, is_tenant
from winnow_local.cli.filters import FilterSyntaxError, parse_filters
from winnow_local.runtime import (
    DEFAULT_TENANT,
    ApiResponse,
    LocalRuntime,
    Upload,
    close_local_qdrant,
)

SIDECAR_SUFFIX = ".metadata.json"
INGEST_FIELDS = ("key", "status", "chunks", "embedded", "reused", "error")
FAILED_STATUSES = {"failed", "retry"}


class CliError(Exception):
    """A problem the user can fix; shown as one line on stderr, exit status 1."""


# --- output helpers ------------------------------------------------------------------------------------
def _print_json(value: Any, stream: IO[str] | None = None) -> None:
    print(json.dumps(value, ensure_ascii=False), file=stream or sys.stdout, flush=True)


class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal (stdlib only)."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = total > 0 and self.stream.isatty()
        self._drawn = False

    def draw(self, label: str = "") -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size((80, 20)).columns
        bar_width = 24
        filled = int(bar_width * self.done / self.total)
        head = f"[{'#' * filled}{'.' * (bar_width - filled)}] {self.done}/{self.total} "
        room = max(0, width - len(head) - 1)
        tail = label if len(label) <= room else "..." + label[-max(0, room - 3) :]
        self.stream.write("\r" + head + tail[:room] + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def clear(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def advance(self, label: str = "") -> None:
        self.done += 1
        self.draw(label)


def _document_name(key: str, tenant: str) -> str:
    return key[len(tenant) + 1 :] if key.startswith(f"{tenant}/") else key


def _format_ingest(result: dict[str, Any]) -> str:
    status = str(result.get("status"))
    key = str(result.get("key"))
    if status in FAILED_STATUSES or (result.get("error") and status != "skipped"):
        return f"{status:<9}  {key}  {result.get('error') or ''}".rstrip()
    if status in ("indexed", "unchanged"):
        embedded, reused = result.get("embedded", 0), result.get("reused", 0)
        chunks = result.get("chunks", 0)
        detail = f"{chunks} chunk{'' if chunks == 1 else 's'} ({embedded} embedded, {reused} reused)"
        return f"{status:<9}  {key}  {detail}"
    extra = f"  {result['error']}" if result.get("error") else ""
    return f"{status:<9}  {key}{extra}"


def _ingest_record(result: dict[str, Any]) -> dict[str, Any]:
    return {name: result.get(name) for name in INGEST_FIELDS}


# --- ingest --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LocalFile:
    """A file to ingest, the key it gets, and its sidecar when one sits next to it."""

    path: Path
    key: str
    sidecar: Path | None = None


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def collect_files(paths: Sequence[str], tenant: str, prefix: str) -> list[LocalFile]:
    """Expand files and folders into the objects to upload: ``<tenant>/<prefix><relative path>``, the path
    relative to a folder argument, or a file argument's name. Sidecars found in folders travel with their
    document; hidden files and folders are left out."""
    found: list[LocalFile] = []
    seen: dict[str, Path] = {}

    def add(path: Path, relative: str, sidecar: Path | None) -> None:
        key = f"{tenant}/{prefix}{relative}"
        if key in seen and seen[key] != path:
            raise CliError(f"{seen[key]} and {path} would both become {key}; use --prefix to tell them apart")
        if key not in seen:
            seen[key] = path
            found.append(LocalFile(path, key, sidecar))

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p, path))
            names = {p for p in files}
            for file in files:
                if (
                    file.name.endswith(SIDECAR_SUFFIX)
                    and file.with_name(file.name[: -len(SIDECAR_SUFFIX)]) in names
                ):
                    continue  # uploaded with its document
                sidecar = file.with_name(file.name + SIDECAR_SUFFIX)
                add(file, file.relative_to(path).as_posix(), sidecar if sidecar in names else None)
        elif path.is_file():
            sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
            add(
                path,
                path.name,
                sidecar if sidecar.is_file() and not path.name.endswith(SIDECAR_SUFFIX) else None,
            )
        else:
            raise CliError(f"no such file or folder: {raw}")
    return found


def _check_tenant(tenant: str) -> str:
    if not is_tenant(tenant):
        raise CliError(f"invalid tenant {tenant!r}: use {TENANT_RULE}")
    return tenant


def _check_prefix(prefix: str) -> str:
    if prefix.startswith("/") or ".." in prefix.split("/"):
        raise CliError(f"invalid prefix {prefix!r}: give a relative path such as 'docs/'")
    return prefix


def ingest_files(
    runtime: LocalRuntime, files: Sequence[LocalFile], *, as_json: bool, out: IO[str] | None = None
) -> list[dict[str, Any]]:
    """Upload and ingest each file (with its sidecar) and print one line per document as it finishes."""
    out = out or sys.stdout
    progress = Progress(len(files))
    results: list[dict[str, Any]] = []
    progress.draw()
    for file in files:
        progress.draw(file.key)
        try:
            data = file.path.read_bytes()
            sidecar = file.sidecar.read_bytes() if file.sidecar else None
        except OSError as exc:
            raise CliError(f"cannot read {file.path}: {exc.strerror or exc}") from exc
        uploads = [Upload(file.key, data)]
        if sidecar is not None:
            uploads.append(Upload(file.key + SIDECAR_SUFFIX, sidecar))
        outcome = runtime.put_and_ingest(uploads)
        document = next((r for r in outcome if r.get("key") == file.key), None) or {
            "key": file.key,
            "status": "failed",
            "error": "the ingest handler returned no result for this document",
        }
        # A sidecar's own result matters only when it is broken (its metadata was then ignored).
        shown = [document] + [r for r in outcome if r is not document and r.get("status") in FAILED_STATUSES]
        progress.clear()
        for result in shown:
            if as_json:
                _print_json(_ingest_record(result), out)
            else:
                print(_format_ingest(result), file=out, flush=True)
            results.append(result)
        progress.advance(file.key)
    progress.clear()
    return results


def _summary(results: Iterable[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    total = 0
    for result in results:
        counts[str(result.get("status"))] = counts.get(str(result.get("status")), 0) + 1
        total += 1
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"{total} object{'s' if total != 1 else ''}: {parts}" if total else "nothing to ingest"


def cmd_ingest(args: argparse.Namespace) -> int:
    tenant = _check_tenant(args.tenant)
    files = collect_files(args.paths, tenant, _check_prefix(args.prefix))
    if not files:
        raise CliError("no files found to ingest (hidden files are skipped)")
    results = ingest_files(LocalRuntime(), files, as_json=args.json)
    if not args.json:
        print(_summary(results), file=sys.stderr)
    return 1 if any(r.get("status") in FAILED_STATUSES for r in results) else 0


# --- delete --------------------------------------------------------------------------------------------
def cmd_delete(args: argparse.Namespace) -> int:
    runtime = LocalRuntime()
    tenant = _check_tenant(args.tenant) if args.tenant else None
    results: list[dict[str, Any]] = []
    for raw in args.keys:
        key = raw if tenant is None or raw.startswith(f"{tenant}/") else f"{tenant}/{raw}"
        if "/" not in key:
            raise CliError(
                f"{raw!r} is not a full key: give <tenant>/<path> as `winnow documents` shows it, "
                "or add --tenant"
            )
        keys = [key] + ([key + SIDECAR_SUFFIX] if runtime.object_exists(key + SIDECAR_SUFFIX) else [])
        if not runtime.object_exists(key):
            raise CliError(
                f"no object {key!r} in the local bucket; "
                f"`winnow documents --tenant {key.split('/', 1)[0]}` lists them"
            )
        outcome = runtime.delete_and_ingest(keys)
        for result in outcome:
            if result.get("key") != key and result.get("status") not in FAILED_STATUSES:
                continue
            results.append(result)
            if args.json:
                _print_json(_ingest_record(result))
            else:
                print(_format_ingest(result), flush=True)
    return 1 if any(r.get("status") in FAILED_STATUSES for r in results) else 0


# --- search --------------------------------------------------------------------------------------------
def state_folder() -> str:
    """Where this command keeps its state, as an absolute path (WINNOW_HOME is relative to the current
    folder, so the same command run elsewhere looks in another place)."""
    from winnow.factory import get_container

    return str(get_container().settings.storage.home.expanduser().resolve())


def _no_documents(tenant: str) -> str:
    return (
        f"no documents for tenant {tenant} in {state_folder()} (WINNOW_HOME); "
        f"ingest some with `winnow ingest PATH --tenant {tenant}`, or run from the folder you ingested in"
    )


def _tenant_has_documents(runtime: LocalRuntime, tenant: str) -> bool:
    response = runtime.call_api("GET", "/documents", query={"limit": 1}, tenant=tenant)
    if response.status != 200:
        return True  # cannot tell; let the search answer stand
    return bool(response.json().get("documents"))


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
    return body


def _wrap(text: str, indent: str = "    ", width: int = 100) -> str:
    paragraphs = [" ".join(part.split()) for part in text.split("\n\n")]
    return "\n".join(
        textwrap.fill(p, width=width, initial_indent=indent, subsequent_indent=indent)
        for p in paragraphs
        if p
    )


def citation(result: dict[str, Any], tenant: str) -> str:
    """``document, page N, section "A > B", score 0.62``: what a reader needs to find the passage."""
    parts = [_document_name(str(result.get("key")), tenant)]
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
    for result in results:
        title = result.get("title") or _document_name(str(result.get("key")), tenant)
        print(f"\n[{result.get('rank')}] {title}", file=out)
        print(_wrap(str(result.get("text") or "")), file=out)
        print(f"    -- {citation(result, tenant)}", file=out)
    out.flush()


# The API's request fields, as this command spells them.
_FLAGS = {
    "query": "QUERY",
    "top_k": "--top-k",
    "candidates": "--candidates",
    "filters": "--filter",
    "mode": "--mode",
    "rerank": "--no-rerank",
    "relevance_threshold": "--threshold",
}


def _validation_message(response: ApiResponse) -> str | None:
    """A 422's field errors in the command's own terms: ``--top-k: Input should be ... 50``."""
    try:
        details = response.json()["error"]["details"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(details, list) or not details:
        return None
    parts = []
    for detail in details[:5]:
        field = str(detail.get("field") or "")
        head = field.split(".", 1)[0]
        name = _FLAGS.get(head, field)
        if head == "filters" and "." in field:
            name = f"--filter {field.split('.', 2)[1]}"
        message = str(detail.get("message") or "invalid").removeprefix("Value error, ")
        parts.append(f"{name}: {message}")
    return "; ".join(parts)


def _fail_response(response: ApiResponse) -> NoReturn:
    if response.status == 422:
        message = _validation_message(response)
        if message:
            raise CliError(message)
    hint = ""
    if response.status == 401:
        hint = " (the request carried no tenant)"
    elif response.status == 500 and "internal" in response.error_message:
        hint = " (run with --verbose to see the handler's log)"
    raise CliError(f"{response.error_message}{hint}")


def cmd_search(args: argparse.Namespace) -> int:
    tenant = _check_tenant(args.tenant)
    body = search_request(args)
    runtime = LocalRuntime()
    response = runtime.call_api("POST", "/search", body=body, tenant=tenant)
    if args.json:
        sys.stdout.write(response.body.decode("utf-8"))
        sys.stdout.write("\n")
        sys.stdout.flush()
    if response.status >= 400:
        _fail_response(response)
    payload = response.json()
    if not payload.get("results") and not _tenant_has_documents(runtime, tenant):
        raise CliError(_no_documents(tenant))
    if not args.json:
        if not payload.get("results") and body.get("filters") and not _filter_matches(runtime, body, tenant):
            conditions = " ".join(f"--filter {spec}" for spec in args.filter)
            print(f"No passages: {conditions} matched no documents of tenant {tenant}.")
            return 0
        print_search_results(payload, tenant)
    return 0


def _filter_matches(runtime: LocalRuntime, body: dict[str, Any], tenant: str) -> bool:
    """Whether any passage of the tenant passes the filters at all (threshold 0), to tell "nothing
    relevant" from "the filter excludes everything"."""
    probe = {"query": body["query"], "filters": body["filters"], "top_k": 1, "relevance_threshold": 0.0}
    probe |= {"mode": "dense", "rerank": False}
    response = runtime.call_api("POST", "/search", body=probe, tenant=tenant)
    return response.status != 200 or bool(response.json().get("results"))


# --- documents -----------------------------------------------------------------------------------------
def list_documents(runtime: LocalRuntime, tenant: str) -> list[dict[str, Any]]:
    """Every page of GET /documents."""
    documents: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query: dict[str, str | int] = {"limit": 100}
        if cursor:
            query["cursor"] = cursor
        response = runtime.call_api("GET", "/documents", query=query, tenant=tenant)
        if response.status >= 400:
            _fail_response(response)
        page = response.json()
        documents.extend(page.get("documents") or [])
        cursor = page.get("next_cursor")
        if not cursor:
            return documents


def cmd_documents(args: argparse.Namespace) -> int:
    tenant = _check_tenant(args.tenant)
    documents = list_documents(LocalRuntime(), tenant)
    if args.json:
        for document in documents:
            _print_json(document)
    if not documents:
        print(f"winnow: {_no_documents(tenant)}", file=sys.stderr)
        return 0
    if not args.json:
        names = [_document_name(str(d.get("key")), tenant) for d in documents]
        width = max(len("DOCUMENT"), *(len(name) for name in names))
        print(f"{'STATUS':<9}  {'DOCUMENT':<{width}}  {'CHUNKS':>6}  {'UPDATED':<16}  ERROR".rstrip())
        for name, document in zip(names, documents, strict=True):
            updated = str(document.get("updated") or "")[:16].replace("T", " ")
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
    deleted = counts.pop("deleted", 0)
    live = sum(counts.values())
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    line = f"{live} document{'s' if live != 1 else ''} for tenant {tenant}" + (f": {parts}" if parts else "")
    return line + (f" (and {deleted} deleted)" if deleted else "")


# --- serve, demo -------------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    from winnow_local.web.server import serve

    serve(args.host, args.port, allow_hosts=tuple(args.allow_host), allow_origins=tuple(args.allow_origin))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from winnow_local.cli.demo import run_demo

    return run_demo(tenant=_check_tenant(args.tenant))


def reconcile_available() -> bool:
    """``winnow reconcile`` exists only where the reconcile package ships."""
    import importlib.util

    return importlib.util.find_spec("winnow.reconcile") is not None


def cmd_reconcile(args: argparse.Namespace) -> int:
    from winnow.factory import get_container
    from winnow.reconcile import run_reconcile

    tenant = _check_tenant(args.tenant) if args.tenant else None
    stats = run_reconcile(get_container(), tenant=tenant, dry_run=args.dry_run).to_dict()
    if args.json:
        _print_json(stats)
        return 0
    scope = f"tenant {tenant}" if tenant else "the whole bucket"
    if args.dry_run:
        scope += " (dry run: nothing changed)"
    counts = ", ".join(
        f"{stats.get(name, 0)} {name.replace('_', ' ')}"
        for name in (
            "scanned",
            "new",
            "modified",
            "unchanged",
            "deleted",
            "failed",
            "orphans_removed",
            "repaired",
        )
    )
    print(f"reconciled {scope}: {counts} in {stats.get('duration_ms', 0):.0f} ms")
    return 0


# --- parser --------------------------------------------------------------------------------------------
def _whole_number(text: str) -> int:
    """A whole number; its range is the API's to check, so every out-of-range value reads the same."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="winnow",
        description="Winnow on this machine: ingest, search and serve through the same handlers as in AWS. "
        "State lives in WINNOW_HOME (default ./.winnow).",
    )
    parser.add_argument("--version", action="version", version=f"winnow {winnow.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the handlers' logs on stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    tenant_help = f"tenant (default {DEFAULT_TENANT!r})"

    ingest = commands.add_parser(
        "ingest",
        help="index files or folders",
        description="Put files into the local bucket as <tenant>/<prefix><relative path> and run the ingest "
        "handler on each. Folders are read recursively; a <file>.metadata.json next to a file is its "
        "sidecar.",
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--tenant", default=DEFAULT_TENANT, help=tenant_help)
    ingest.add_argument("--prefix", default="", help="prepended to every key after the tenant, e.g. 'docs/'")
    ingest.add_argument("--json", action="store_true", help="one JSON object per document")
    ingest.set_defaults(func=cmd_ingest)

    delete = commands.add_parser(
        "delete",
        help="remove documents",
        description="Remove objects (and their sidecars) and run the delete events.",
    )
    delete.add_argument(
        "keys", nargs="+", metavar="KEY", help="<tenant>/<path>, as `winnow documents --json` shows"
    )
    delete.add_argument("--tenant", default=None, help="accept keys relative to this tenant")
    delete.add_argument("--json", action="store_true", help="one JSON object per document")
    delete.set_defaults(func=cmd_delete)

    search = commands.add_parser(
        "search", help="search the documents", description="Run POST /search through the search handler."
    )
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--tenant", default=DEFAULT_TENANT, help=tenant_help)
    search.add_argument("--top-k", type=_whole_number, default=None, help="most results, 1-50 (default 5)")
    search.add_argument(
        "--candidates", type=_whole_number, default=None, help="candidates per retriever, top-k to 200"
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
    search.add_argument("--threshold", type=_unit_float, default=None, help="relevance threshold in [0, 1]")
    search.add_argument("--json", action="store_true", help="print the response body exactly as returned")
    search.set_defaults(func=cmd_search)

    from winnow_local.cli.ask import add_ask_parser

    add_ask_parser(commands, tenant_help)

    documents = commands.add_parser("documents", help="list documents and their ingest status")
    documents.add_argument("--tenant", default=DEFAULT_TENANT, help=tenant_help)
    documents.add_argument("--json", action="store_true", help="one JSON object per document")
    documents.set_defaults(func=cmd_documents)

    serve = commands.add_parser("serve", help="serve the API and the search page over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=3000)
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this host name (loopback names always); for use on a LAN",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let a web app at this origin (e.g. http://mybox.local:5173) call the API; loopback always",
    )
    serve.set_defaults(func=cmd_serve)

    demo = commands.add_parser("demo", help="ingest the shipped samples and run a few queries")
    demo.add_argument("--tenant", default="demo", help="tenant for the samples (default 'demo')")
    demo.set_defaults(func=cmd_demo)

    if reconcile_available():
        reconcile = commands.add_parser(
            "reconcile",
            help="make the index match the bucket again",
            description="Compare the bucket with the ledger and the index; index what is new or changed, "
            "remove what is gone, and report what was done.",
        )
        reconcile.add_argument("--tenant", default=None, help="one tenant (default: the whole bucket)")
        reconcile.add_argument(
            "--dry-run", action="store_true", help="change nothing; report what would change"
        )
        reconcile.add_argument("--json", action="store_true", help="the statistics as one JSON object")
        reconcile.set_defaults(func=cmd_reconcile)

    # Local-only tools (invoke, mcp) live in winnow_local, outside the shipped package.
    from winnow_local.commands import register

    register(commands)
    return parser


def _quiet_library_warnings() -> None:
    """Warnings meant for operators of a Qdrant server or a Lambda, not for someone at a terminal."""
    warnings.filterwarnings("ignore", message="Payload indexes have no effect", category=UserWarning)
    warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)


def _set_log_level(args: argparse.Namespace) -> None:
    """Handlers log for operators; at a terminal, the one-line error is the message. ``--verbose`` shows
    the handlers' logs (on stderr); ``serve`` keeps warnings and errors, as a server console should.
    Must run before the handlers (and so ``winnow.observability``) are imported."""
    if args.verbose:
        os.environ["POWERTOOLS_LOG_LEVEL"] = "INFO"
    elif args.command != "serve":
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _set_log_level(args)
    _quiet_library_warnings()
    try:
        return _run(args)
    finally:
        close_local_qdrant()


def _run(args: argparse.Namespace) -> int:
    try:
        code: int = args.func(args)
    except CliError as exc:
        print(f"winnow: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("winnow: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from winnow.errors import WinnowError

        if isinstance(exc, WinnowError):
            print(f"winnow: {exc}", file=sys.stderr)
            return 1
        raise
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
