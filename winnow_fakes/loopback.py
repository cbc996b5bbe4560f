"""The loopback HTTP server every fake runs on: a daemon thread serving a free port on 127.0.0.1, started
and stopped by ``with``, and a request handler that reads a body and answers JSON. A fake subclasses
``LoopbackServer`` and names its ``LoopbackHandler`` subclass; the handler reaches the fake as ``self.fake``.
Standard library only, so tests and benchmarks get real sockets without another dependency."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self


class LoopbackHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, silent (tests read the fake's request log, not stderr)."""

    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as real API servers: with Nagle's algorithm every request on a kept-alive connection
    # waited 44 ms for the client's delayed ACK, a provider latency that is not there.
    disable_nagle_algorithm = True
    fake: Any  # the LoopbackServer this handler class is bound to

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_raw(status, body, {"Content-Type": "application/json", **(headers or {})})

    def send_raw(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            self.close_connection = True

    def hang_up(self) -> None:
        """Close the connection without an answer (a provider dropping the request)."""
        self.close_connection = True
        self.wfile.flush()
        self.connection.close()


class LoopbackServer:
    """Lifecycle of a fake: ``start``/``stop`` or ``with``; ``origin`` is ``http://127.0.0.1:<port>``."""

    name = "fake"
    handler: ClassVar[type[LoopbackHandler]] = LoopbackHandler

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        if self._server is None:
            bound = type(f"{type(self).__name__}Handler", (self.handler,), {"fake": self})
            server = ThreadingHTTPServer((self._host, 0), bound)
            server.daemon_threads = True
            self._server = server
            self._thread = threading.Thread(target=server.serve_forever, name=self.name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self.cancel_in_flight()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def cancel_in_flight(self) -> None:
        """Wake requests still waiting on a delay, so ``stop`` does not wait for them (fakes override)."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://{self._host}:{self.port}"
