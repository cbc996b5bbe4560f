"""``winnow serve``: the deployed API on this machine, plus an upload route and the search page.

Every API route goes HTTP request → API Gateway (payload v2) event → ``functions.search.app.handler`` →
HTTP response, so a web app developed against this server behaves the same against AWS. The tenant comes
from the ``x-winnow-tenant`` header (default ``default``): the server turns on the handler's header mode
(``allow_tenant_header`` on its own container only); deployed APIs take it from the JWT.

Who may call it: requests whose ``Host`` is not a loopback name (or one allowed by
``WINNOW_SERVE_ALLOWED_HOSTS``) are refused, which stops DNS rebinding; a browser ``Origin`` must be the
page itself, a loopback origin or one in ``WINNOW_SERVE_ALLOWED_ORIGINS``; ``Access-Control-Allow-Origin``
names that origin, never ``*``. Every route but ``/health``, ``/openapi.json`` and the page needs the
``x-winnow-tenant`` header: a custom header a cross-site form or ``text/plain`` POST cannot send without a
CORS preflight, which the origin rule answers. Connections are bounded (``WINNOW_SERVE_MAX_CONNECTIONS``),
a request must arrive within ``WINNOW_SERVE_REQUEST_TIMEOUT_SECONDS`` and a silent socket is closed after
``WINNOW_SERVE_IDLE_TIMEOUT_SECONDS``.

Routes besides the API:
- ``GET /`` — the search page (``/static/*`` holds its script and style sheet; ``GET /local/config``
  tells it whether a re-ranker is configured).
- ``POST /uploads`` (the API route) answers a form signed for this server, exactly as the deployed API
  answers an S3 presigned POST: same shape, same policy (key, size range, content type, metadata,
  expiry), signed with HMAC-SHA256 under a secret made when the server starts (``winnow.postpolicy``).
  ``POST /local/uploads`` receives that form (no tenant header: the signature is the authority, as at
  S3), stores and ingests the file, and answers 204 as S3 does. ``DELETE /documents/{key+}`` runs the
  object's removal event here, as the bucket notification does in AWS.
- ``POST /upload?key=<path>`` — the raw request body is the file; it is stored as ``<tenant>/<path>``
  and ingested. ``multipart/form-data`` works too: a ``file`` part, and an optional ``key`` field (else the
  file's name). Answers the ingest result ``{"key", "status", "chunks", "embedded", "reused", "error"}``:
  200 when indexed or unchanged, 422 when the document could not be indexed, 503 when a provider was
  unavailable (retry).

Handler calls run on one worker thread: Qdrant's local mode and the SQLite ledger are single-process,
single-writer stores, and one lane keeps them consistent without locking inside the handlers.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import re
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from email.parser import BytesParser
from email.policy import HTTP
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from winnow.rules import is_tenant
from winnow_local.runtime import (
    ApiResponse,
    LocalRuntime,
    Upload,
    close_local_qdrant,
    local_qdrant_path,
)

STATIC_DIR = Path(__file__).with_name("static")
TENANT_HEADER = "x-winnow-tenant"
MAX_API_BODY_BYTES = 1024 * 1024
INGEST_FIELDS = ("key", "status", "chunks", "embedded", "reused", "error")
# Routes that answer without a tenant: the handler's public routes and the page.
PUBLIC_PATHS = frozenset({"/health", "/openapi.json"})
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}
_PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")
_METHODS_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class ServeSettings(BaseSettings):
    """Who ``winnow serve`` answers and how long it waits. Lists are comma-separated host names (no
    port) or origins (``scheme://host[:port]``); loopback is always allowed, ``*`` allows any."""

    model_config = SettingsConfigDict(env_prefix="WINNOW_SERVE_", extra="ignore", case_sensitive=False)

    allowed_hosts: str = Field(
        default="", description="Host names besides loopback this server answers to, e.g. for LAN use."
    )
    allowed_origins: str = Field(
        default="", description="Browser origins besides loopback ones that may call the API."
    )
    max_connections: int = Field(default=64, ge=1, le=4096)
    idle_timeout_seconds: float = Field(default=15.0, gt=0, le=3600)
    request_timeout_seconds: float = Field(default=60.0, gt=0, le=3600)

    @staticmethod
    def _split(text: str) -> frozenset[str]:
        return frozenset(item.strip().lower().rstrip("/") for item in text.split(",") if item.strip())

    @property
    def host_names(self) -> frozenset[str]:
        return self._split(self.allowed_hosts)

    @property
    def origins(self) -> frozenset[str]:
        return self._split(self.allowed_origins)


def _is_loopback_name(name: str) -> bool:
    name = name.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(authority: str) -> str | None:
    """``example.com:3000`` → ``example.com``; ``[::1]:3000`` → ``::1``; None when malformed."""
    authority = authority.strip().lower()
    if not authority or any(ch in authority for ch in "/?#@ \t"):
        return None
    try:
        parsed = urlsplit(f"//{authority}")
        _ = parsed.port  # raises on a non-numeric or out-of-range port
    except ValueError:
        return None
    return parsed.hostname or None


class UploadError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _bucket_key(tenant: str, key: str) -> str:
    """``<tenant>/<key>`` once both the caller-path rule (``winnow.rules``) and the bucket's own accept
    it (a key can pass one and not the other: the folder bucket's file names are at most 250 bytes)."""
    from winnow.adapters.objects_local import check_key
    from winnow.errors import InvalidKey
    from winnow.rules import path_problem

    key = key.strip()
    problem = path_problem(tenant, key)
    if problem is not None:
        raise UploadError(400, "bad_request", f"unusable key: {problem}")
    full_key = f"{tenant}/{key}"
    try:
        check_key(full_key)
    except InvalidKey as exc:
        raise UploadError(400, "bad_request", f"unusable key: {exc}") from None
    return full_key


def parse_multipart(content_type: str, body: bytes) -> tuple[str | None, bytes | None]:
    """The ``key`` field (or the file's name) and the ``file`` part of a multipart/form-data body."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise UploadError(400, "bad_request", "malformed multipart/form-data body")
    key: str | None = None
    filename: str | None = None
    data: bytes | None = None
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            continue
        if name == "file":
            data = payload
            filename = part.get_filename()
        elif name == "key":
            key = payload.decode("utf-8", "replace").strip() or None
    if key is None and filename:
        key = Path(filename.replace("\\", "/")).name
    return key, data


def parse_form(content_type: str, body: bytes) -> tuple[dict[str, str], bytes | None]:
    """Every text field of a multipart/form-data body, and the ``file`` part (S3's form fields)."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise UploadError(400, "bad_request", "send the upload form as multipart/form-data")
    fields: dict[str, str] = {}
    data: bytes | None = None
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        if name == "file":
            data = payload
        else:
            try:
                fields[name] = payload.decode("utf-8")
            except UnicodeDecodeError:
                raise UploadError(400, "bad_request", f"form field {name[:40]!r} is not UTF-8") from None
    return fields, data


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


class WinnowHTTPServer(ThreadingHTTPServer):
    """The HTTP server, its access rules and limits, and the one-lane runner its requests share."""

    daemon_threads = True
    # socketserver's default listen backlog is 5: a web app opening 20 connections at once had some of
    # them reset before they were accepted (found by tests/integration/test_load_serve.py).
    request_queue_size = 128

    def __init__(
        self, address: tuple[str, int], *, quiet: bool = False, settings: ServeSettings | None = None
    ) -> None:
        super().__init__(address, WinnowRequestHandler)
        self.settings = settings or ServeSettings()
        self.runtime = LocalRuntime()
        self.lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="winnow-handlers")
        self.quiet = quiet
        self.qdrant_path = local_qdrant_path()
        self._slots = threading.BoundedSemaphore(self.settings.max_connections)
        # Signs /uploads forms for /local/uploads; new on every start, so old forms die with the server.
        self.upload_secret = secrets.token_bytes(32)
        bound = str(self.server_address[0]).lower()
        self._bound_host = None if bound in ("0.0.0.0", "::", "") else bound  # noqa: S104 - a comparison

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), int(self.server_address[1])
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host  # noqa: S104 - display only
        return f"http://{shown}:{port}"

    @property
    def open_to_network(self) -> bool:
        """Whether it listens on more than loopback, so other machines can reach it."""
        return self._bound_host is None or not _is_loopback_name(self._bound_host)

    # --- who may call ----------------------------------------------------------------------------------
    def host_allowed(self, authority: str) -> bool:
        """DNS rebinding sends the attacker's name in ``Host``; only names we know are answered."""
        name = _host_name(authority)
        if name is None:
            return False
        allowed = self.settings.host_names
        return _is_loopback_name(name) or name == self._bound_host or name in allowed or "*" in allowed

    def origin_allowed(self, origin: str, authority: str) -> bool:
        """The page itself, a web app on a loopback origin, or an origin the settings allow."""
        origin = origin.strip().lower().rstrip("/")
        allowed = self.settings.origins
        if origin in allowed or "*" in allowed:
            return True
        parsed = urlsplit(origin)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            return False  # "null" (sandboxed frames, file://) and the like
        return parsed.netloc == authority.strip().lower() or _is_loopback_name(parsed.hostname)

    # --- bounded threads -------------------------------------------------------------------------------
    def process_request(self, request: Any, client_address: Any) -> None:
        """One thread per connection, at most ``max_connections``; beyond that a 503 at once."""
        if not self._slots.acquire(blocking=False):
            self._refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    @staticmethod
    def _refuse_busy(request: socket.socket) -> None:
        body = json.dumps(
            {
                "error": {
                    "code": "service_unavailable",
                    "message": "too many open connections; retry shortly",
                },
                "correlation_id": str(uuid.uuid4()),
            }
        ).encode("utf-8")
        head = (
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode("ascii")
        try:
            request.settimeout(1.0)
            request.sendall(head + body)
        except OSError:
            pass

    def server_close(self) -> None:
        super().server_close()
        self.lane.shutdown(wait=True, cancel_futures=True)
        if self.qdrant_path is not None:
            close_local_qdrant(self.qdrant_path)

    def max_upload_bytes(self) -> int:
        from winnow.factory import get_container

        return get_container().settings.ingest.max_object_bytes


class WinnowRequestHandler(BaseHTTPRequestHandler):
    server: WinnowHTTPServer
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
        try:
            super().handle_one_request()
        finally:
            self._reader.deadline = None

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
        try:
            body = self.rfile.read(length) if length else b""
        except TimeoutError:
            self.close_connection = True
            self._send_error(408, "request_timeout", "the body did not arrive in time")
            return None
        if len(body) < length:  # the client closed early
            self.close_connection = True
            return None
        return body

    def _tenant(self) -> str | None:
        """The tenant header, or None after answering 401/403 when it is missing or malformed (closing
        the connection when a body is left unread)."""
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

    # --- routing --------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._guarded(self._route_get)

    def _route_get(self) -> None:
        path = urlsplit(self.path).path
        if path in ("/", "/index.html"):
            self._static("index.html")
        elif path.startswith("/static/"):
            self._static(path[len("/static/") :])
        elif path == "/local/config":
            self._page_config()
        else:
            self._api()

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if path == "/upload":
            self._guarded(self._upload)
        elif path == "/local/uploads":
            self._guarded(self._signed_upload)
        else:
            self._guarded(self._api)

    def do_PUT(self) -> None:
        self._guarded(self._api)

    def do_DELETE(self) -> None:
        self._guarded(self._api)

    def do_PATCH(self) -> None:
        self._guarded(self._api)

    def do_OPTIONS(self) -> None:
        """CORS preflight, answered only for origins the rules allow."""
        self._guarded(self._preflight)

    def _preflight(self) -> None:
        if not self._origin_allowed:
            self._send(HTTPStatus.NO_CONTENT, {"allow": "GET, HEAD, POST, DELETE, OPTIONS"}, b"")
            return
        self._send(
            HTTPStatus.NO_CONTENT,
            {
                "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
                "access-control-allow-headers": f"content-type, {TENANT_HEADER}, x-correlation-id",
                "access-control-max-age": "600",
            },
            b"",
        )

    # --- routes ---------------------------------------------------------------------------------------
    def _static(self, name: str) -> None:
        allowed = {p.name: p for p in STATIC_DIR.iterdir() if p.is_file()} if STATIC_DIR.is_dir() else {}
        file = allowed.get(name)
        if file is None:
            self._send_error(404, "not_found", "no such file")
            return
        content_type = _CONTENT_TYPES.get(file.suffix, "application/octet-stream")
        headers = {"content-type": content_type, "x-content-type-options": "nosniff"}
        if file.suffix == ".html":
            headers["content-security-policy"] = _PAGE_POLICY
            headers["referrer-policy"] = "no-referrer"
        self._send(200, headers, file.read_bytes())

    def _page_config(self) -> None:
        """What the page needs to know about this server: whether a re-ranker is configured."""
        from winnow.factory import get_container

        container = get_container()
        reranker = container.settings.voyage.rerank_model if container.uses_voyage_reranker else None
        self._send_json(200, {"reranker": reranker})

    def _api(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        if urlsplit(self.path).path not in PUBLIC_PATHS and self._tenant() is None:
            return
        body = self._read_body(MAX_API_BODY_BYTES)
        if body is None:
            return
        content_type = headers.get("content-type", "").lower()
        payload: str | bytes | None = None
        if body:
            is_text = content_type.startswith(("application/json", "text/")) or not content_type
            try:
                payload = body.decode("utf-8") if is_text else body
            except UnicodeDecodeError:
                payload = body
        runtime = self.server.runtime
        response: ApiResponse = self.server.lane.submit(
            runtime.call_api, self.command, self.path, body=payload, headers=headers
        ).result()
        path = urlsplit(self.path).path
        if self.command == "POST" and path == "/uploads" and response.status == 201:
            response = self._form_for_this_host(response)
        elif self.command == "DELETE" and path.startswith("/documents/") and response.status == 202:
            # In AWS the bucket notification runs the removal through ingest; here the server does.
            from winnow.adapters.objects_local import LocalObjectSource
            from winnow.factory import get_container

            if isinstance(get_container().objects, LocalObjectSource):
                key = str(response.json()["key"])
                self.server.lane.submit(runtime.delete_and_ingest, [key]).result()
        self._send(response.status, response.headers, response.body)

    def _form_for_this_host(self, response: ApiResponse) -> ApiResponse:
        """The form's URL on the host the caller used (localhost or 127.0.0.1, a LAN name it allows), so
        the page's same-origin policy lets it POST there. The signature covers the policy, not the URL."""
        payload = response.json()
        authority = self.headers.get("host", "")
        if isinstance(payload, dict) and authority:
            payload["url"] = f"http://{authority.strip()}/local/uploads"
        return ApiResponse(response.status, response.headers, json.dumps(payload).encode("utf-8"))

    def _signed_upload(self) -> None:
        """A browser's POST of a form from ``/uploads``: verified as S3 verifies a presigned POST."""
        from winnow.postpolicy import SIGNATURE_FIELD, decode_policy, policy_problem, verify

        limit = self.server.max_upload_bytes()
        body = self._read_body(limit + 64 * 1024, required=True)
        if body is None:
            return
        try:
            fields, data = parse_form(self.headers.get("content-type", ""), body)
        except UploadError as exc:
            self._send_error(exc.status, exc.code, str(exc))
            return
        policy = fields.get("policy", "")
        if not policy or not verify(self.server.upload_secret, policy, fields.get(SIGNATURE_FIELD, "")):
            self._send_error(403, "forbidden", "the upload form's signature does not match: ask /uploads")
            return
        if data is None:
            self._send_error(400, "bad_request", "the form has no 'file' field (it must come last)")
            return
        try:
            problem = policy_problem(decode_policy(policy), fields, len(data))
        except ValueError:
            problem = "the policy is not readable"
        if problem is not None:
            self._send_error(403, "forbidden", problem)
            return
        metadata = {
            name.lower()[len("x-amz-meta-") :]: value
            for name, value in fields.items()
            if name.lower().startswith("x-amz-meta-")
        }
        content_type = next((v for k, v in fields.items() if k.lower() == "content-type"), None)
        upload = Upload(fields["key"], data, metadata, content_type)
        from winnow.errors import InvalidKey

        try:
            self.server.lane.submit(self.server.runtime.put_and_ingest, [upload]).result()
        except InvalidKey as exc:
            self._send_error(400, "bad_request", f"unusable key: {exc}")
            return
        self._send(HTTPStatus.NO_CONTENT, {}, b"")

    def _upload(self) -> None:
        tenant = self._tenant()
        if tenant is None:
            return
        limit = self.server.max_upload_bytes()
        body = self._read_body(limit + 64 * 1024, required=True)  # multipart framing on top of the file
        if body is None:
            return
        try:
            key, data = self._upload_parts(body)
            if len(data) > limit:
                raise UploadError(413, "payload_too_large", f"the file is over the {limit}-byte limit")
            full_key = _bucket_key(tenant, key)
        except UploadError as exc:
            self._send_error(exc.status, exc.code, str(exc))
            return
        from winnow.errors import InvalidKey

        runtime = self.server.runtime
        try:
            results = self.server.lane.submit(runtime.put_and_ingest, [Upload(full_key, data)]).result()
        except InvalidKey as exc:  # the bucket's own refusal, e.g. a key that runs through an object
            self._send_error(400, "bad_request", f"unusable key: {exc}")
            return
        result = next((r for r in results if r.get("key") == full_key), None)
        if result is None:
            self._send_error(500, "internal_error", "the ingest handler returned no result")
            return
        record = {name: result.get(name) for name in INGEST_FIELDS}
        status = {"failed": 422, "retry": 503}.get(str(result.get("status")), 200)
        self._send_json(status, record, {"retry-after": "5"} if status == 503 else None)

    def _upload_parts(self, body: bytes) -> tuple[str, bytes]:
        content_type = self.headers.get("content-type", "")
        query = parse_qs(urlsplit(self.path).query)
        key: str | None = query["key"][0] if query.get("key") else None
        if content_type.lower().startswith("multipart/form-data"):
            form_key, data = parse_multipart(content_type, body)
            if data is None:
                raise UploadError(400, "bad_request", "the multipart body has no 'file' part")
            key = key or form_key
        else:
            data = body
        if not key:
            raise UploadError(400, "bad_request", "say where to store the file: POST /upload?key=<path>")
        if not data:
            raise UploadError(400, "bad_request", "the file is empty")
        return key, data


def make_server(
    host: str = "127.0.0.1", port: int = 3000, *, quiet: bool = False, settings: ServeSettings | None = None
) -> WinnowHTTPServer:
    """Bind the server (port 0 picks a free one) and let the handler read the tenant header."""
    from winnow.factory import get_container

    # Header tenancy for this server's container only: never through os.environ, which would leak it to
    # everything else in the process.
    container = get_container()
    search = container.settings.search
    if not search.allow_tenant_header:
        container.settings.search = search.model_copy(update={"allow_tenant_header": True})
    server = WinnowHTTPServer((host, port), quiet=quiet, settings=settings)
    from winnow.adapters.objects_local import LocalObjectSource

    objects = container.objects
    if isinstance(objects, LocalObjectSource):  # with WINNOW_BUCKET set, S3 signs and receives uploads
        objects.accept_signed_uploads(f"{server.url}/local/uploads", server.upload_secret)
    return server


def warm_up(server: WinnowHTTPServer) -> None:
    """Load the model and open the stores before the first request, so problems show at start-up."""
    from winnow.factory import get_container

    def load() -> None:
        container = get_container()
        _ = container.store  # opens Qdrant, builds the embedder to learn its profile
        _ = container.ledger
        _ = container.objects

    server.lane.submit(load).result()


def _stop_on_sigterm() -> None:
    """``kill`` (SIGTERM) stops the server as cleanly as Ctrl-C does."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)


def serve(
    host: str = "127.0.0.1",
    port: int = 3000,
    *,
    allow_hosts: tuple[str, ...] = (),
    allow_origins: tuple[str, ...] = (),
) -> None:
    """Serve until Ctrl-C or SIGTERM; ``allow_*`` add to WINNOW_SERVE_ALLOWED_HOSTS / _ORIGINS."""
    settings = ServeSettings()
    extra: dict[str, str] = {}
    if allow_hosts:
        extra["allowed_hosts"] = ",".join((settings.allowed_hosts, *allow_hosts))
    if allow_origins:
        extra["allowed_origins"] = ",".join((settings.allowed_origins, *allow_origins))
    settings = settings.model_copy(update=extra)
    try:
        server = make_server(host, port, settings=settings)
    except OSError as exc:
        from winnow.errors import ConfigurationError

        raise ConfigurationError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another with --port"
        ) from exc
    _stop_on_sigterm()
    try:
        warm_up(server)
        from winnow.factory import get_container

        home = get_container().settings.storage.home.resolve()
        print(
            f"Winnow is serving on {server.url}  (search page: {server.url}/ , "
            f"API: {server.url}/openapi.json); state in {home}; Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        if server.open_to_network:
            names = ", ".join(sorted(settings.host_names)) or "none besides loopback"
            print(
                f"Warning: listening on {host}, beyond this machine: anyone who can reach it can read and "
                f"write every tenant's documents. Host names answered: {names} "
                "(--allow-host or WINNOW_SERVE_ALLOWED_HOSTS).",
                file=sys.stderr,
                flush=True,
            )
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
