"""The routes of ``winnow serve``: the search page and its files, the API (HTTP request -> API Gateway event
-> the search handler), and the two upload routes (``/upload``, and ``/local/uploads`` for signed forms),
which ``upload_routes`` serves."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

from winnow_local.web.lanes import SERVER
from winnow_local.web.plumbing import TENANT_HEADER
from winnow_local.web.upload_routes import UploadRoutes

STATIC_DIR = Path(__file__).with_name("static")
MAX_API_BODY_BYTES = 1024 * 1024
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


def _asks_a_model(path: str, body: bytes) -> bool:
    """Whether the request may wait for a language model: ``/answer``, or a ``/search`` that continues
    a conversation (its follow-up is rewritten by the model). Read as the handler reads the body."""
    if path == "/answer":
        return True
    if path != "/search" or (b"conversation" not in body.lower() and b"\\u" not in body):
        return False  # no conversation id, however spelt
    from winnow.api.body import decode_json_body

    try:
        decoded = decode_json_body(body.decode("utf-8"))
    except Exception:  # the handler answers it with a 4xx at once
        return False
    return isinstance(decoded, dict) and decoded.get("conversation_id") is not None


class WinnowRequestHandler(UploadRoutes):
    """Routing by method and path; every route runs inside ``_guarded`` (access checks first). The
    upload routes are ``UploadRoutes``'."""

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
        elif path == "/local/figures":
            self._figure()
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
                "access-control-allow-headers": (
                    f"content-type, {TENANT_HEADER}, x-winnow-user, x-winnow-groups, x-correlation-id"
                ),
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
        """What the page needs to know about this server: whether a re-ranker and an answer model are
        configured (the page offers Re-rank and Answer only then)."""
        from winnow.factory import get_container

        container = get_container()
        reranker = container.settings.voyage.rerank_model if container.uses_voyage_reranker else None
        answers = container.settings.answer.chosen != "none"
        self._send_json(200, {"reranker": reranker, "answers": answers})

    def _figure(self) -> None:
        """A figure's image from a search result's ``image_url``: the signature over the key and the
        expiry is the authority (an ``<img>`` sends no tenant header), as S3's presigned GET is in AWS.
        A link that is forged, altered, expired or names anything but a figure image reads nothing."""
        import hmac
        import time
        from urllib.parse import parse_qs

        from winnow.errors import InvalidKey, ObjectGone
        from winnow.factory import get_container
        from winnow.rules import FIGURE_CONTENT_TYPES, is_figure_key
        from winnow_local.adapters.objects_local import LocalObjectSource, figure_signature

        try:
            query = parse_qs(urlsplit(self.path).query, max_num_fields=3)
        except ValueError:  # more fields than a link holds: not one this server signed
            query = {}
        key, expires, signature = (query.get(name, [""])[0] for name in ("key", "expires", "signature"))
        objects = get_container().objects
        valid = (
            isinstance(objects, LocalObjectSource)
            and is_figure_key(key)
            and expires.isascii()
            and expires.isdigit()
            and len(expires) <= 12
            and int(expires) >= time.time()
            and hmac.compare_digest(  # as bytes: compare_digest raises on a str that is not ASCII
                figure_signature(self.server.upload_secret, key, int(expires)).encode(),
                signature.encode("utf-8", "surrogatepass"),
            )
        )
        if not valid:
            self._send_error(403, "forbidden", "the image link is expired or not signed here: search again")
            return
        try:
            data = objects.get(key)
        except (ObjectGone, InvalidKey):
            self._send_error(404, "not_found", "the image is gone (its document was replaced or deleted)")
            return
        headers = {
            "content-type": FIGURE_CONTENT_TYPES.get(key.rsplit(".", 1)[-1], "application/octet-stream"),
            "cache-control": "private, max-age=300",
            "x-content-type-options": "nosniff",
            "content-security-policy": "default-src 'none'",
        }
        self._send(200, headers, data)

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
        path = urlsplit(self.path).path
        method, target = self.command, self.path
        tenant = self._lane_tenant()
        turn = (str(self.client_address[0]), tenant)  # peers in turn, then tenants (``lanes``)
        if method == "POST" and _asks_a_model(path, body):
            handler = self.server.model_handler  # its own resolver: it runs beside the API lane's
            response = self.server.model_lane.submit(
                turn, lambda: runtime.call_api(method, target, body=payload, headers=headers, via=handler)
            ).result()
        else:
            response = self.server.lane.submit(
                turn, lambda: runtime.call_api(method, target, body=payload, headers=headers)
            ).result()
        if method == "DELETE" and path.startswith("/documents/") and response.status == 202:
            self._removal(tenant, str(response.json()["key"]))
        if method == "POST" and path == "/uploads" and response.status == 201:
            response = self._form_for_this_host(response)
        self._send(response.status, response.headers, response.body)

    def _removal(self, tenant: str, key: str) -> None:
        """In AWS the bucket notification runs the removal through ingest; here the ingest lane does, in
        the tenant's order there: an upload that was waiting is written first (the removal then finds
        the object again and removes nothing), a later one after it, as on S3."""
        from winnow.factory import get_container
        from winnow_local.adapters.objects_local import LocalObjectSource

        if isinstance(get_container().objects, LocalObjectSource):
            self.server.ingest_lane.submit(tenant, self.server.runtime.ingest_removals, [key]).result()

    def _lane_tenant(self) -> str:
        """Whose turn on the lane this request waits for: its tenant header (checked by then), else the
        server's own queue (``/health``)."""
        from winnow.rules import is_tenant

        tenant = self.headers.get(TENANT_HEADER)
        return tenant if tenant is not None and is_tenant(tenant) else SERVER
