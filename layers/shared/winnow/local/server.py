"""``winnow serve``: the deployed API on this machine, plus an upload route and the search page.

Every API route goes HTTP request → API Gateway (payload v2) event → ``functions.search.app.handler`` →
HTTP response, so a web app developed against this server behaves the same against AWS. The tenant comes
from the ``x-winnow-tenant`` header (default ``default``): the server turns on the handler's header mode
(``allow_tenant_header`` on its own container only); deployed APIs take it from the JWT.

Routes besides the API:
- ``GET /`` — the search page (``/static/*`` holds its script and style sheet).
- ``POST /upload?key=<path>`` — the raw request body is the file; it is stored as ``<tenant>/<path>``
  and ingested. ``multipart/form-data`` works too: a ``file`` part, and an optional ``key`` field (else the
  file's name). Answers the ingest result ``{"key", "status", "chunks", "embedded", "reused", "error"}``:
  200 when indexed or unchanged, 422 when the document could not be indexed, 503 when a provider was
  unavailable (retry).

Handler calls run on one worker thread: Qdrant's local mode and the SQLite ledger are single-process,
single-writer stores, and one lane keeps them consistent without locking inside the handlers.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from email.parser import BytesParser
from email.policy import HTTP
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from winnow.local.runtime import (
    DEFAULT_TENANT,
    ApiResponse,
    LocalRuntime,
    Upload,
    close_local_qdrant,
    local_qdrant_path,
)
from winnow.rules import is_tenant

STATIC_DIR = Path(__file__).with_name("static")
TENANT_HEADER = "x-winnow-tenant"
MAX_API_BODY_BYTES = 1024 * 1024
INGEST_FIELDS = ("key", "status", "chunks", "embedded", "reused", "error")
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


class UploadError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _valid_relative_key(key: str) -> str:
    key = key.strip()
    if not key or len(key) > 1024:
        raise UploadError(400, "bad_request", "key must be 1 to 1,024 characters")
    if key.startswith("/") or "\\" in key or any(part in ("", ".", "..") for part in key.split("/")):
        raise UploadError(400, "bad_request", "key must be a relative path like 'docs/guide.pdf'")
    if any(ord(ch) < 32 for ch in key):
        raise UploadError(400, "bad_request", "key must not contain control characters")
    return key


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


class WinnowHTTPServer(ThreadingHTTPServer):
    """The HTTP server and the one-lane runner its requests share."""

    daemon_threads = True
    # socketserver's default listen backlog is 5: a web app opening 20 connections at once had some of
    # them reset before they were accepted (found by tests/integration/test_load_serve.py).
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], *, quiet: bool = False) -> None:
        super().__init__(address, WinnowRequestHandler)
        self.runtime = LocalRuntime()
        self.lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="winnow-handlers")
        self.quiet = quiet
        self.qdrant_path = local_qdrant_path()

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), int(self.server_address[1])
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host  # noqa: S104 - display only
        return f"http://{shown}:{port}"

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
    # TCP_NODELAY: headers and body go out in two writes; with Nagle's algorithm the body waited for the
    # client's delayed ACK, 44 ms on every keep-alive request (0.5 ms without).
    disable_nagle_algorithm = True

    # --- plumbing -------------------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        merged = {k.lower(): v for k, v in headers.items()}
        merged["content-length"] = str(len(body))
        merged.setdefault("cache-control", "no-store")
        merged["access-control-allow-origin"] = "*"
        merged["access-control-expose-headers"] = "x-correlation-id, retry-after"
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

    def _read_body(self, limit: int) -> bytes | None:
        """The request body, or None after answering 411/413 when it is missing a length or too big."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            self.close_connection = True  # the unread body would be taken for the next request
            self._send_error(
                411, "length_required", "send a Content-Length; chunked bodies are not supported"
            )
            return None
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            self.close_connection = True
            self._send_error(400, "bad_request", "invalid Content-Length")
            return None
        if length > limit:
            self.close_connection = True
            self._send_error(413, "payload_too_large", f"the body is over the {limit}-byte limit")
            return None
        return self.rfile.read(length) if length else b""

    def _tenant(self) -> str:
        return self.headers.get(TENANT_HEADER) or DEFAULT_TENANT

    # --- routing --------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path in ("/", "/index.html"):
            self._static("index.html")
        elif path.startswith("/static/"):
            self._static(path[len("/static/") :])
        else:
            self._api()

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        if urlsplit(self.path).path == "/upload":
            self._upload()
        else:
            self._api()

    def do_PUT(self) -> None:
        self._api()

    def do_DELETE(self) -> None:
        self._api()

    def do_PATCH(self) -> None:
        self._api()

    def do_OPTIONS(self) -> None:
        """CORS preflight, so a web app served from another local port can call this API."""
        self._send(
            HTTPStatus.NO_CONTENT,
            {
                "access-control-allow-methods": "GET, POST, OPTIONS",
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

    def _api(self) -> None:
        body = self._read_body(MAX_API_BODY_BYTES)
        if body is None:
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        headers.setdefault(TENANT_HEADER, DEFAULT_TENANT)
        content_type = headers.get("content-type", "")
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
        self._send(response.status, response.headers, response.body)

    def _upload(self) -> None:
        tenant = self._tenant()
        if not is_tenant(tenant):
            self._send_error(403, "forbidden", "the tenant header is not a valid tenant")
            return
        limit = self.server.max_upload_bytes()
        body = self._read_body(limit + 64 * 1024)  # multipart framing on top of the file itself
        if body is None:
            return
        try:
            key, data = self._upload_parts(body)
            if len(data) > limit:
                raise UploadError(413, "payload_too_large", f"the file is over the {limit}-byte limit")
            full_key = f"{tenant}/{_valid_relative_key(key)}"
        except UploadError as exc:
            self._send_error(exc.status, exc.code, str(exc))
            return
        runtime = self.server.runtime
        results = self.server.lane.submit(runtime.put_and_ingest, [Upload(full_key, data)]).result()
        result = next((r for r in results if r.get("key") == full_key), None)
        if result is None:
            self._send_error(500, "internal_error", "the ingest handler returned no result")
            return
        record = {
            name: result.get(name) for name in ("key", "status", "chunks", "embedded", "reused", "error")
        }
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


def make_server(host: str = "127.0.0.1", port: int = 3000, *, quiet: bool = False) -> WinnowHTTPServer:
    """Bind the server (port 0 picks a free one) and let the handler read the tenant header."""
    from winnow.factory import get_container

    # Header tenancy for this server's container only: never through os.environ, which would leak it to
    # everything else in the process.
    container = get_container()
    search = container.settings.search
    if not search.allow_tenant_header:
        container.settings.search = search.model_copy(update={"allow_tenant_header": True})
    return WinnowHTTPServer((host, port), quiet=quiet)


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


def serve(host: str = "127.0.0.1", port: int = 3000) -> None:
    """Serve until Ctrl-C or SIGTERM."""
    try:
        server = make_server(host, port)
    except OSError as exc:
        from winnow.errors import ConfigurationError

        raise ConfigurationError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another with --port"
        ) from exc
    _stop_on_sigterm()
    try:
        warm_up(server)
        print(
            f"Winnow is serving on {server.url}  (search page: {server.url}/ , "
            f"API: {server.url}/openapi.json); Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
