"""The upload forms ``winnow serve`` reads: ``multipart/form-data`` parts and the key a file is stored
under, checked by the caller-path rule and by the bucket."""

from __future__ import annotations

from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path


class UploadError(Exception):
    """A request the server answers with ``status`` and a JSON error naming ``code``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def bucket_key(tenant: str, key: str) -> str:
    """``<tenant>/<key>`` once both the caller-path rule (``winnow.rules``) and the bucket's own accept
    it (a key can pass one and not the other: the folder bucket's file names are at most 250 bytes)."""
    from winnow.adapters.objects_local import check_key
    from winnow.errors import InvalidKey
    from winnow.rules import object_key, path_problem

    key = key.strip()
    problem = path_problem(tenant, key)
    if problem is not None:
        raise UploadError(400, "bad_request", f"unusable key: {problem}")
    full_key = object_key(tenant, key)
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
