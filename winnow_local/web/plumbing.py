"""The request plumbing of ``winnow serve``: deadlines on reads, the access checks (``Host``, ``Origin``),
body-length rules, the tenant header, JSON errors and the guard that turns a failure into a plain 500.
The routes are in ``winnow_local.web.routes``."""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import sys
import time
import traceback
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from winnow.rules import is_tenant
from winnow_local.runtime import LocalRuntime
from winnow_local.web.access import ServeSettings
from winnow_local.web.lanes import FairLane
from winnow_local.web.uploads_batch import UploadBatcher

TENANT_HEADER = "x-winnow-tenant"
IDENTITY_HEADERS = (TENANT_HEADER, "x-winnow-user", "x-winnow-groups")  # who asks, locally
_CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")
_METHODS_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class ServerState(Protocol):
    """What a request handler needs of the server that runs it (``winnow_local.web.server``)."""

    settings: ServeSettings
    runtime: LocalRuntime
    lane: FairLane
    ingest_lane: FairLane
    model_lane: FairLane
    model_handler: Any
    uploads: UploadBatcher
    quiet: bool
    upload_secret: bytes

    def host_allowed(self, authority: str) -> bool: ...

    def origin_allowed(self, origin: str, authority: str) -> bool: ...

    def max_upload_bytes(self) -> int: ...

    def waiting_for_client(self, connection: socket.socket, waiting: bool) -> None: ...


class _DeadlineReader(io.RawIOBase):
    """The connection's reads, each bounded by the idle timeout and all of one request by a deadline: a
    client that trickles a byte at a time (slowloris) cannot hold a thread longer than the deadline."""

    def __init__(self, connection: socket.socket, idle_seconds: float) -> None:
        super().__init__()
        self._connection = connection
        self._idle = idle_seconds
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        timeout = self._idle
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the request did not arrive in time")
            timeout = min(timeout, remaining)
        self._connection.settimeout(timeout)
        return self._connection.recv_into(buffer)


class RequestPlumbing(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive with bounded reads, the access checks and JSON answers; routes subclass it."""

    server: ServerState  # type: ignore[assignment]  # socketserver says BaseServer; ours is this
    protocol_version = "HTTP/1.1"
    server_version = "winnow-local"
    sys_version = ""  # no Python version in the Server header
    # TCP_NODELAY: headers and body go out in two writes; with Nagle's algorithm the body waited for the
    # client's delayed ACK, 44 ms on every keep-alive request (0.5 ms without).
    disable_nagle_algorithm = True
    error_content_type = "application/json"
    _origin_allowed: str | None = None

    # --- plumbing -------------------------------------------------------------------------------------
    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.settings.idle_timeout_seconds)
        self._reader = _DeadlineReader(self.connection, self.server.settings.idle_timeout_seconds)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        self._reader.deadline = time.monotonic() + self.server.settings.request_timeout_seconds
        self._origin_allowed = None
        self.server.waiting_for_client(self.connection, True)  # for the request line and headers
        try:
            super().handle_one_request()
        finally:
            self._reader.deadline = None
            self.server.waiting_for_client(self.connection, False)

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.server.waiting_for_client(self.connection, False)  # the head is in: working on it
        return parsed

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own errors (bad request line, headers too long) as our JSON error."""
        self.close_connection = True
        status = HTTPStatus(code)
        self._send_error(code, status.phrase.lower().replace(" ", "_"), message or status.description)

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.connection.settimeout(self.server.settings.idle_timeout_seconds)  # reads may have shortened it
        self.send_response(status)
        merged = {k.lower(): v for k, v in headers.items()}
        merged["content-length"] = str(len(body))
        merged.setdefault("cache-control", "no-store")
        if self._origin_allowed:
            merged["access-control-allow-origin"] = self._origin_allowed
            merged["access-control-expose-headers"] = "x-correlation-id, retry-after"
        merged["vary"] = "Origin"
        if self.close_connection:
            merged["connection"] = "close"
        for name, value in merged.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        self._send(status, {"content-type": "application/json", **(headers or {})}, body)

    def _send_error(self, status: int, code: str, message: str) -> None:
        self._send_json(
            status, {"error": {"code": code, "message": message}, "correlation_id": str(uuid.uuid4())}
        )

    def _admitted(self) -> bool:
        """Check ``Host`` and ``Origin``; answer 403 (and False) when the caller may not use the server."""
        authority = self.headers.get("host", "")
        if len(self.headers.get_all("host") or []) > 1 or not self.server.host_allowed(authority):
            self.close_connection = True
            self._send_error(
                403,
                "forbidden",
                f"this server does not answer to the host {authority[:100]!r}: use http://127.0.0.1 or "
                "http://localhost, or list the name in WINNOW_SERVE_ALLOWED_HOSTS",
            )
            return False
        origin = self.headers.get("origin")
        if origin is not None:
            if not self.server.origin_allowed(origin, authority):
                self.close_connection = True
                self._send_error(
                    403,
                    "forbidden",
                    f"requests from the origin {origin[:100]!r} are not allowed: list it in "
                    "WINNOW_SERVE_ALLOWED_ORIGINS to let that web app call this server",
                )
                return False
            self._origin_allowed = origin.strip()
        return True

    def _read_body(self, limit: int, *, required: bool = False) -> bytes | None:
        """The request body, or None after answering 400/411/413 when its length is missing, invalid or
        too big. Only a plain decimal ``Content-Length`` is believed: ``-1`` would read to end of stream."""
        if self.headers.get("transfer-encoding") is not None:
            self.close_connection = True  # the unread body would be taken for the next request
            self._send_error(
                411, "length_required", "send a Content-Length; chunked bodies are not supported"
            )
            return None
        lengths = self.headers.get_all("content-length") or []
        if not lengths:
            if required or self.command in _METHODS_WITH_BODY:
                self.close_connection = True
                self._send_error(411, "length_required", "send a Content-Length header with the body")
                return None
            return b""
        if len(set(lengths)) != 1 or not _CONTENT_LENGTH.fullmatch(lengths[0].strip()):
            self.close_connection = True
            self._send_error(400, "bad_request", "invalid Content-Length: send the body's size in bytes")
            return None
        length = int(lengths[0].strip())
        if length > limit:
            self.close_connection = True
            self._send_error(413, "payload_too_large", f"the body is over the {limit}-byte limit")
            return None
        self.server.waiting_for_client(self.connection, True)
        try:
            body = self.rfile.read(length) if length else b""
        except TimeoutError:
            self.close_connection = True
            self._send_error(408, "request_timeout", "the body did not arrive in time")
            return None
        finally:
            self.server.waiting_for_client(self.connection, False)
        if len(body) < length:  # the client closed early
            self.close_connection = True
            return None
        return body

    def _tenant(self) -> str | None:
        """The tenant header, or None after answering 401/403 when it is missing or malformed (closing
        the connection when a body is left unread). An identity header sent twice is a 400: the lane
        would queue the request as one tenant and the handler answer it as the other."""
        twice = next((h for h in IDENTITY_HEADERS if len(self.headers.get_all(h) or ()) > 1), None)
        if twice is not None:
            self.close_connection = True
            self._send_error(400, "bad_request", f"the {twice} header is sent twice: send it once")
            return None
        tenant = self.headers.get(TENANT_HEADER)
        if (tenant is None or not is_tenant(tenant)) and self.command in _METHODS_WITH_BODY:
            self.close_connection = True
        if tenant is None or not tenant.strip():
            self._send_error(
                401,
                "unauthorized",
                f"say which tenant: send the {TENANT_HEADER} header, e.g. '{TENANT_HEADER}: demo'",
            )
            return None
        if not is_tenant(tenant):
            self._send_error(
                403,
                "forbidden",
                f"the {TENANT_HEADER} header is not a valid tenant: use up to 128 letters, digits, "
                "'.', '_' or '-', starting with a letter or digit",
            )
            return None
        return tenant

    def _guarded(self, route: Any) -> None:
        """Run one route: admission first; any failure becomes a 500 without internals, logged here."""
        if not self._admitted():
            return
        try:
            route()
        except (TimeoutError, ConnectionError):
            self.close_connection = True
        except Exception:
            self.close_connection = True
            sys.stderr.write(
                f"winnow serve: {self.command} {self.path[:200]} failed\n{traceback.format_exc()}"
            )
            with contextlib.suppress(OSError):
                self._send_error(
                    500, "internal_error", "internal error; the server's console has the details"
                )
