"""The ``winnow`` subcommands registered by ``winnow_local.cli.main`` from their own modules."""

from __future__ import annotations

from typing import Any


def register(commands: Any) -> None:
    """Add ``invoke`` and ``mcp`` to the CLI's subcommands (their heavy imports wait until they run)."""
    from winnow_local import invoke, mcp_server

    invoke.add_parser(commands)
    mcp_server.add_parser(commands)
