"""The upload routes of ``winnow serve``: ``POST /upload`` (a file, raw or multipart, with its metadata
and access as ``/uploads`` takes them) and ``POST /local/uploads`` (a browser's form signed by
``/uploads``, verified as S3 verifies a presigned POST). Both store the file through the server's upload
batcher (``uploads_batch``) on the ingest lane."""

from __future__ import annotations

import json
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from winnow_local.runtime import ApiResponse, Upload
from winnow_local.web.forms import UploadError, bucket_key, read_form
from winnow_local.web.plumbing import IDENTITY_HEADERS, RequestPlumbing

META = "x-amz-meta-"
# What /upload takes besides the file, as /uploads does, with an example of each for its 400.
DESCRIBED = {"metadata": '{"department": "people"}', "access": '{"users": ["ann"], "groups": ["hr"]}'}
INGEST_FIELDS = ("key", "status", "chunks", "embedded", "reused", "error")


class UploadRoutes(RequestPlumbing):
    """The two upload routes and the signed form's URL, for ``WinnowRequestHandler``."""

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
