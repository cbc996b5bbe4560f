"""Would uvicorn keep ``winnow serve``'s connection limits? Runs uvicorn (as installed) with a minimal ASGI
app and the clients of tests/integration/test_serve_hardening.py: 40 connections that send half a request
line, a client trickling header bytes, a malformed Content-Length. docs/local.md has the figures and the
decision. Run: ``.venv/bin/python -m benchmarks.studies.serve_uvicorn_probe`` (about 15 s)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

STALLED = 40
SLOTS = 8
WAIT_SECONDS = 8.0


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def start() -> tuple[uvicorn.Server, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, limit_concurrency=SLOTS, timeout_keep_alive=1, log_level="critical")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, int(sock.getsockname()[1])


def stalled_connections(port: int) -> dict[str, int]:
    """Open connections that send half a request line; count 503s, closes and silence."""
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS) for _ in range(STALLED)]
    for sock in sockets:
        sock.sendall(b"GET /hea")
    counts = {"503": 0, "closed": 0, "silent": 0}
    started = time.monotonic()
    for sock in sockets:
        sock.settimeout(max(0.1, WAIT_SECONDS - (time.monotonic() - started)))
        try:
            data = sock.recv(65536)
        except TimeoutError:
            counts["silent"] += 1
            continue
        counts["503" if data.startswith(b"HTTP/1.1 503") else "closed"] += 1
    for sock in sockets:
        sock.close()
    return counts


def trickler(port: int, give_up: float = 6.0) -> float | None:
    """Send a header byte every 0.4 s; the seconds until the server hangs up, None if it never does."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        sock.settimeout(0.4)
        while time.monotonic() - started < give_up:
            try:
                sock.sendall(b"a")
                if sock.recv(1024) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - started
    return None


def bad_length(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n")
        return sock.recv(4096).split(b"\r\n\r\n")[0].decode("latin-1")


def main() -> None:
    server, port = start()
    try:
        counts = stalled_connections(port)
        print(f"uvicorn {uvicorn.__version__}, {SLOTS} slots, {STALLED} stalled connections: {counts}")
        cut = trickler(port)
        print(f"header trickler cut off after: {'never (6 s)' if cut is None else f'{cut:.1f} s'}")
        print(f"Content-Length: -1 answered:\n{bad_length(port)}")
    finally:
        server.should_exit = True


if __name__ == "__main__":
    main()
