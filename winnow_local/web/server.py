"""``winnow serve``: the deployed API on this machine, plus an upload route and the search page.

Every API route goes HTTP request → API Gateway (payload v2) event → ``functions.search.app.handler`` →
HTTP response, so a web app developed against this server behaves the same against AWS. The tenant comes
from the ``x-winnow-tenant`` header (default ``default``): the server turns on the handler's header mode
(``allow_tenant_header`` on its own container only); deployed APIs take it from the JWT. In the same
mode ``x-winnow-user`` and ``x-winnow-groups`` stand for the token's user and groups claims (without
them the caller is anonymous: documents without an access list only).

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
  unavailable (retry). The API's write rules apply first (``POST /uploads`` is asked with the caller's
  headers; a sidecar counts as a change of its document granting its access list).

Handler calls run on three lanes of one worker thread each (``winnow_local.web.lanes``): API requests,
ingest (uploads, removals) and requests that wait for a language model, so neither an upload nor a slow
model holds a search. Each lane takes one task from each tenant with work in turn, so one tenant's
backlog never holds another tenant's request behind all of it. A connection slot held by a client that
has not sent its request (or its body) is taken back when every slot is in use and another client
connects, so slow senders cannot keep the server at 503.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import secrets
import signal
import socket
import sys
import threading
import uuid
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from winnow_local.runtime import LocalRuntime, close_local_qdrant, local_qdrant_path
from winnow_local.web.access import ServeSettings, host_name, is_loopback_name
from winnow_local.web.lanes import SERVER, FairLane, separate_search_handler
from winnow_local.web.routes import WinnowRequestHandler
from winnow_local.web.uploads_batch import UploadBatcher

__all__ = ["ServeSettings", "WinnowHTTPServer", "make_server", "serve", "warm_up"]


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
        self.lane = FairLane("winnow-handlers")
        self.ingest_lane = FairLane("winnow-ingest")
        self.model_lane = FairLane("winnow-models")
        self.model_handler = separate_search_handler()
        self.uploads = UploadBatcher(self.ingest_lane, self.runtime, checks=self.lane)
        # Connections waiting for what the client sends, by when they began to wait (a count, not a clock:
        # a connection's first wait began when it was accepted, in accept order, whichever thread runs
        # first); ``_accepted`` holds that place until the connection's thread marks it waiting.
        self._waiting: dict[socket.socket, int] = {}
        self._accepted: dict[socket.socket, int] = {}
        self._order = itertools.count()
        self._waiting_lock = threading.Lock()
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
        return self._bound_host is None or not is_loopback_name(self._bound_host)

    # --- who may call ----------------------------------------------------------------------------------
    def host_allowed(self, authority: str) -> bool:
        """DNS rebinding sends the attacker's name in ``Host``; only names we know are answered."""
        name = host_name(authority)
        if name is None:
            return False
        allowed = self.settings.host_names
        return is_loopback_name(name) or name == self._bound_host or name in allowed or "*" in allowed

    def origin_allowed(self, origin: str, authority: str) -> bool:
        """The page itself, a web app on a loopback origin, or an origin the settings allow."""
        origin = origin.strip().lower().rstrip("/")
        allowed = self.settings.origins
        if origin in allowed or "*" in allowed:
            return True
        parsed = urlsplit(origin)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            return False  # "null" (sandboxed frames, file://) and the like
        return parsed.netloc == authority.strip().lower() or is_loopback_name(parsed.hostname)

    # --- bounded threads -------------------------------------------------------------------------------
    def process_request(self, request: Any, client_address: Any) -> None:
        """One thread per connection, at most ``max_connections``; when all are taken, the connection
        that has waited longest for its client's request (or body) is closed to make room, else a 503."""
        if not self._slots.acquire(blocking=False) and not (
            self._evict_slowest() and self._slots.acquire(timeout=5.0)
        ):
            self._refuse_busy(request)
            self.shutdown_request(request)
            return
        with self._waiting_lock:
            self._accepted[request] = next(self._order)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._forget(request)
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._forget(request)
            self._slots.release()

    def _forget(self, connection: Any) -> None:
        with self._waiting_lock:
            self._accepted.pop(connection, None)
            self._waiting.pop(connection, None)

    def waiting_for_client(self, connection: socket.socket, waiting: bool) -> None:
        """Mark a connection as waiting for its client (a request, a body) or as working on one."""
        with self._waiting_lock:
            if not waiting:
                self._waiting.pop(connection, None)
            elif connection not in self._waiting:
                accepted = self._accepted.pop(connection, None)
                self._waiting[connection] = next(self._order) if accepted is None else accepted

    def connections_waiting(self) -> int:
        with self._waiting_lock:
            return len(self._waiting)

    def _evict_slowest(self) -> bool:
        """Close the connection that has waited longest for its client (issue 44: 64 sockets sending a
        byte every 5 s kept /health at 503 for 40 s); its thread ends and frees its slot."""
        with self._waiting_lock:
            if not self._waiting:
                return False
            connection = min(self._waiting, key=self._waiting.__getitem__)
            del self._waiting[connection]
        with contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)
        return True

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
        for lane in (self.model_lane, self.ingest_lane, self.lane):
            lane.shutdown(wait=True, cancel_futures=True)
        if self.qdrant_path is not None:
            close_local_qdrant(self.qdrant_path)

    def max_upload_bytes(self) -> int:
        from winnow.factory import get_container

        return get_container().settings.ingest.max_object_bytes


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
    from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder

    if isinstance(container.embedder, LocalOnnxEmbedder):
        container.embedder.share_cores()  # an upload's model runs leave a core to searches
    from winnow_local.adapters.objects_local import LocalObjectSource

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

    server.lane.submit(SERVER, load).result()


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
