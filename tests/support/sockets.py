"""Socket options on the server's side of a connection: what a client cannot see from its own side."""

from __future__ import annotations

import http.client
import socket
import socketserver
from typing import Any

import pytest


def nagle_disabled_on_served_connection(
    server: socketserver.TCPServer, monkeypatch: pytest.MonkeyPatch, path: str = "/health"
) -> bool:
    """Make one keep-alive request; say whether the server's socket for it has TCP_NODELAY set."""
    accepted: list[socket.socket] = []
    original = server.get_request

    def recording() -> tuple[Any, Any]:
        connection, address = original()
        accepted.append(connection)
        return connection, address

    monkeypatch.setattr(server, "get_request", recording)
    host, port = server.server_address[:2]
    client = http.client.HTTPConnection(str(host), int(port), timeout=10)
    try:
        client.request("GET", path)
        client.getresponse().read()
        # The handler set its socket options before answering; the connection is still open (keep-alive).
        assert accepted, "the server accepted no connection"
        return accepted[-1].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        client.close()
