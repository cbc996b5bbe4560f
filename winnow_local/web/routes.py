"""The routes of ``winnow serve``: the search page and its files, the API (HTTP request -> API Gateway event
-> the search handler), and the two upload routes (``/upload``, and ``/local/uploads`` for signed forms)."""

from __future__ import annotations

import json
from http import HTTPStatus
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from winnow_local.runtime import ApiResponse, Upload
from winnow_local.web.forms import UploadError, bucket_key, read_form
from winnow_local.web.lanes import SERVER
from winnow_local.web.plumbing import IDENTITY_HEADERS, TENANT_HEADER, RequestPlumbing

META = "x-amz-meta-"
# What /upload takes besides the file, as /uploads does, with an example of each for its 400.
DESCRIBED = {"metadata": '{"department": "people"}', "access": '{"users": ["ann"], "groups": ["hr"]}'}

STATIC_DIR = Path(__file__).with_name("static")
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


class WinnowRequestHandler(RequestPlumbing):
    """Routing by method and path; every route runs inside ``_guarded`` (access checks first)."""

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
        if method == "POST" and _asks_a_model(path, body):
            handler = self.server.model_handler  # its own resolver: it runs beside the API lane's
            response = self.server.model_lane.submit(
                tenant, lambda: runtime.call_api(method, target, body=payload, headers=headers, via=handler)
            ).result()
        else:
            response = self.server.lane.submit(
                tenant, lambda: runtime.call_api(method, target, body=payload, headers=headers)
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

    def _form_for_this_host(self, response: ApiResponse) -> ApiResponse:
        """The form's URL on the host the caller used (localhost or 127.0.0.1, a LAN name it allows), so
        the page's same-origin policy lets it POST there. The signature covers the policy, not the URL."""
        payload = response.json()
        authority = self.headers.get("host", "")
        if isinstance(payload, dict) and authority:
            payload["url"] = f"http://{authority.strip()}/local/uploads"
        return ApiResponse(response.status, response.headers, json.dumps(payload).encode("utf-8"))

    def _signed_upload(self) -> None:
        """A browser's POST of a form from ``/uploads``: verified as S3 verifies a presigned POST, and
        stored exactly as checked (one parse; ``signed_object`` reads the checked fields)."""
        from winnow.errors import InvalidKey
        from winnow.postpolicy import SIGNATURE_FIELD, decode_policy, policy_problem, signed_object, verify
        from winnow.rules import split_key

        limit = self.server.max_upload_bytes()
        body = self._read_body(limit + 64 * 1024, required=True)
        if body is None:
            return
        try:
            form = read_form(self.headers.get("content-type", ""), body)
        except UploadError as exc:
            self._send_error(exc.status, exc.code, str(exc))
            return
        policy = form.fields.get("policy", "")
        if not policy or not verify(self.server.upload_secret, policy, form.fields.get(SIGNATURE_FIELD, "")):
            self._send_error(403, "forbidden", "the upload form's signature does not match: ask /uploads")
            return
        if form.file is None:
            self._send_error(400, "bad_request", "the form has no 'file' field (it must come last)")
            return
        try:
            problem = policy_problem(decode_policy(policy), form.fields, len(form.file))
        except ValueError:
            problem = "the policy is not readable"
        if problem is not None:
            self._send_error(403, "forbidden", problem)
            return
        signed = signed_object(form.fields)
        try:  # what this server signs is always an upload key; a policy naming another is not ours
            tenant, path = split_key(signed.key)
            bucket_key(tenant, path)
        except (UploadError, InvalidKey) as exc:
            self._send_error(403, "forbidden", f"the upload form's key cannot be written: {exc}")
            return
        upload = Upload(signed.key, form.file, signed.metadata, signed.content_type)
        try:
            self.server.uploads.ingest(tenant, upload)
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
            key, data, described = self._upload_parts(body)
            if len(data) > limit:
                raise UploadError(413, "payload_too_large", f"the file is over the {limit}-byte limit")
            full_key = bucket_key(tenant, key)
        except UploadError as exc:
            self._send_error(exc.status, exc.code, str(exc))
            return
        from winnow.errors import InvalidKey
        from winnow.ingest.results import IngestOutcome

        try:
            outcome = self.server.uploads.ingest(
                tenant, Upload(full_key, data), lambda: self._write_terms(full_key, described)
            )
        except InvalidKey as exc:  # the bucket's own refusal, e.g. a key that runs through an object
            self._send_error(400, "bad_request", f"unusable key: {exc}")
            return
        if isinstance(outcome, ApiResponse):  # the caller may not write this key
            self._send(outcome.status, outcome.headers, outcome.body)
            return
        result = next((r for r in outcome if r.get("key") == full_key), None)
        if result is None:
            self._send_error(500, "internal_error", "the ingest handler returned no result")
            return
        record = {name: result.get(name) for name in INGEST_FIELDS}
        answers: dict[str, int] = {IngestOutcome.FAILED: 422, IngestOutcome.RETRY: 503}
        status = answers.get(str(result.get("status")), 200)
        self._send_json(status, record, {"retry-after": "5"} if status == 503 else None)

    def _write_terms(self, full_key: str, described: dict[str, object]) -> ApiResponse | dict[str, str]:
        """The API's answer when this caller may not write ``full_key`` with the ``metadata`` and
        ``access`` in ``described``, else the metadata its form pins: the user metadata, and the access
        list (the one asked for where the caller may grant it, else the document's, kept: an upload never
        opens a document). One rule: the search handler's ``POST /uploads`` is asked, with the caller's
        headers, and checks the metadata and who may be granted access (a sidecar never gets
        here: ``bucket_key`` refuses it, as ``/uploads`` does). Runs on the lane, in the upload's turn."""
        from winnow.rules import split_key

        _, path = split_key(full_key)
        probe: dict[str, object] = {"path": path, **described}
        headers = {name: value for name, value in self.headers.items() if name.lower() in IDENTITY_HEADERS}
        runtime = self.server.runtime
        response = runtime.call_api("POST", "/uploads", body=probe, headers=headers)
        if response.status != 201:
            return response
        fields = response.json().get("fields") or {}
        return {n[len(META) :]: v for n, v in fields.items() if n.lower().startswith(META)}

    def _upload_parts(self, body: bytes) -> tuple[str, bytes, dict[str, object]]:
        """The key, the file, and its ``metadata`` and ``access`` (JSON objects, as ``/uploads`` takes
        them: form fields before the file, or query parameters with a raw body)."""
        content_type = self.headers.get("content-type", "")
        query = parse_qs(urlsplit(self.path).query)
        key: str | None = query["key"][0] if query.get("key") else None
        given = {name: query[name][0] for name in DESCRIBED if query.get(name)}
        if content_type.lower().startswith("multipart/form-data"):
            form = read_form(content_type, body)
            given |= {name: form.fields[name] for name in DESCRIBED if form.fields.get(name, "").strip()}
            if form.file is None:
                raise UploadError(400, "bad_request", "the multipart body has no 'file' part")
            form_key = (form.fields.get("key") or "").strip() or None
            if key is not None and form_key is not None and form_key != key:
                raise UploadError(
                    400, "bad_request", "the key is given twice: send it in the URL or the form"
                )
            key, data = key or form_key or form.file_name(), form.file
        else:
            data = body
        if not key:
            raise UploadError(400, "bad_request", "say where to store the file: POST /upload?key=<path>")
        if not data:
            raise UploadError(400, "bad_request", "the file is empty")
        return key, data, {name: _json_object(name, text) for name, text in given.items()}


def _json_object(name: str, text: str) -> dict[str, object]:
    example = DESCRIBED[name]
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise UploadError(400, "bad_request", f"send {name!r} as a JSON object, e.g. {example}")
    return value
