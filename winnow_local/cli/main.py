"""The ``winnow`` command: the embedded default, driven through the same handlers that run in Lambda.

``ingest`` and ``delete`` put objects into (or remove them from) the local bucket and run the resulting
S3 notification through the ingest handler; ``search`` and ``documents`` send API Gateway events through
the search handler; ``serve`` exposes the same API over HTTP with a search page; ``demo`` shows it all on
samples we ship. State lives in ``WINNOW_HOME`` (default ``./.winnow``). Each group of subcommands has its
module beside this one; this module builds the parser and runs the chosen command.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import winnow
from winnow_local.api_client import ApiUnavailable
from winnow_local.cli import ask, chat, evaluate, ingest, search
from winnow_local.cli.common import check_tenant, print_json
from winnow_local.errors import CliError
from winnow_local.memory import limit_malloc_arenas
from winnow_local.runtime import close_local_qdrant


def cmd_serve(args: argparse.Namespace) -> int:
    from winnow_local.web.server import serve

    serve(args.host, args.port, allow_hosts=tuple(args.allow_host), allow_origins=tuple(args.allow_origin))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from winnow_local.cli.demo import run_demo

    return run_demo(tenant=check_tenant(args.tenant), as_json=args.json)


def reconcile_available() -> bool:
    """``winnow reconcile`` exists only where the reconcile package ships."""
    import importlib.util

    return importlib.util.find_spec("winnow.reconcile") is not None


def cmd_reconcile(args: argparse.Namespace) -> int:
    from winnow.factory import get_container
    from winnow.reconcile import run_reconcile

    tenant = check_tenant(args.tenant) if args.tenant else None
    totals = run_reconcile(get_container(), tenant=tenant, dry_run=args.dry_run, reread=args.reread)
    stats = totals.to_dict()
    if args.json:
        print_json(stats)
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
            "reread",
        )
    )
    print(f"reconciled {scope}: {counts} in {stats.get('duration_ms', 0):.0f} ms")
    return 0


VERBOSE_HELP = "show the handlers' logs on stderr (and, for invoke, the environment it applied)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="winnow",
        description="Winnow on this machine: ingest, search and serve through the same handlers as in AWS. "
        "State lives in WINNOW_HOME (default ./.winnow).",
    )
    parser.add_argument("--version", action="version", version=f"winnow {winnow.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ingest.add_parsers(commands)
    search.add_search_parser(commands)
    ask.add_ask_parser(commands)
    chat.add_chat_parser(commands)
    search.add_documents_parser(commands)
    evaluate.add_eval_parser(commands)

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
    demo.add_argument(
        "--json", action="store_true", help="one JSON line per document, then one per question's response"
    )
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
        reconcile.add_argument(
            "--reread",
            action="store_true",
            help="also read again the documents an older Winnow read (after an upgrade; runs OCR and "
            "vision again)",
        )
        reconcile.add_argument("--json", action="store_true", help="the statistics as one JSON object")
        reconcile.set_defaults(func=cmd_reconcile)

    # Local-only tools with heavy imports of their own (YAML, the MCP SDK), loaded when they run.
    from winnow_local import invoke, mcp_server

    invoke.add_parser(commands)
    mcp_server.add_parser(commands)
    for command in commands.choices.values():  # `winnow invoke ... -v` as well as `winnow -v invoke ...`
        command.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
        )
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
    limit_malloc_arenas()  # before any thread: ingest's peak memory (winnow_local/memory.py)
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
    except (CliError, ApiUnavailable) as exc:
        print(f"winnow: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("winnow: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `winnow documents --json | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        return 141  # as a command killed by SIGPIPE
    except Exception as exc:
        from pydantic import ValidationError

        from winnow.errors import WinnowError

        if isinstance(exc, WinnowError):
            print(f"winnow: {exc}", file=sys.stderr)
            return 1
        if isinstance(exc, ValidationError):
            print(f"winnow: {setting_problem(exc)}", file=sys.stderr)
            return 2
        raise
    return code


def setting_problem(exc: Any) -> str:
    """A settings ``ValidationError`` as one line naming each environment variable and what is wrong
    (``QDRANT_TIMEOUT_SECONDS: Input should be greater than or equal to 1``), never a traceback."""
    import winnow.settings

    model = getattr(winnow.settings, str(exc.title), None)
    config = getattr(model, "model_config", {})
    prefix = str(config.get("env_prefix") or "")
    problems = []
    for error in exc.errors(include_url=False):
        message = str(error["msg"]).removeprefix("Value error, ")
        field = "_".join(str(part) for part in error["loc"])
        problems.append(f"{(prefix + field).upper()}: {message}" if field else message)
    return "invalid setting: " + "; ".join(problems)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
