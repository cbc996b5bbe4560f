"""The upload forms ``winnow serve`` reads: one parse of a ``multipart/form-data`` body into its fields and
its file, and the key a file is stored under, checked by the upload rule and by the bucket.

Every route reads a form through ``read_form`` and nothing else, so the fields a policy is checked against
are the fields that are stored: a name sent twice, in any case (``key`` then ``KEY``), is refused here,
never resolved one way by the check and another by the write."""

from __future__ import annotations

from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path


class UploadError(Exception):
    """A request the server answers with ``status`` and a JSON error naming ``code``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


FILE_FIELD = "file"
# A signed form has a key, a content type, up to 50 metadata fields, the policy, its signature and the file;
# the email parser spends about 0.3 ms a part (20,000 one-byte parts in 1.1 MB: 5.9 s), so the parts are
# counted before it runs.
MAX_PARTS = 100


@dataclass(frozen=True)
class Form:
    """A multipart form: its text fields by lower-cased name (S3 reads form field names without regard to
    case; each name is here once), then the ``file`` part and the file name it was sent with."""

    fields: dict[str, str]
    file: bytes | None
    filename: str | None

    def file_name(self) -> str | None:
        """The last segment of the file's name, as a browser may send a path."""
        return Path(self.filename.replace("\\", "/")).name or None if self.filename else None


def _bad(message: str) -> UploadError:
    return UploadError(400, "bad_request", message)


def read_form(content_type: str, body: bytes) -> Form:
    """The one parse of a multipart/form-data body. Refused (400): a body that is not multipart, more
    than ``MAX_PARTS`` parts, a part without a name, a name given twice in any case, a field after the
    file, a text field that is not UTF-8."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise _bad("send the upload form as multipart/form-data")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
    boundary = BytesParser(policy=HTTP).parsebytes(head).get_boundary()
    if not boundary:
        raise _bad("the multipart/form-data content type names no boundary")
    if body.count(b"--" + boundary.encode("latin-1", "replace")) > MAX_PARTS + 1:
        raise _bad(f"the form has more than {MAX_PARTS} parts: send its fields and the file")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise _bad("malformed multipart/form-data body: send the upload form as multipart/form-data")
    fields: dict[str, str] = {}
    file: bytes | None = None
    filename: str | None = None
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str) or not name:
            raise _bad("a part of the form has no name: send each field as form-data with a name")
        lowered = name.lower()
        if lowered in fields or (lowered == FILE_FIELD and file is not None):
            raise _bad(
                f"the form field {name[:60]!r} is sent twice (names are not case-sensitive): send it once"
            )
        if file is not None:
            raise _bad(f"the form field {name[:60]!r} comes after the file: send the file last")
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            raise _bad(f"the form field {name[:60]!r} is not a plain value")
        if lowered == FILE_FIELD:
            file, filename = payload, part.get_filename()
            continue
        try:
            fields[lowered] = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(f"the form field {name[:60]!r} is not UTF-8") from None
    return Form(fields, file, filename)


def bucket_key(tenant: str, key: str) -> str:
    """``<tenant>/<key>`` once both the upload rule (``winnow.rules``: a caller path, never a sidecar) and
    the bucket's own accept it (a key can pass one and not the other: the folder bucket's file names are
    at most 250 bytes)."""
    from winnow.errors import InvalidKey
    from winnow.rules import object_key, upload_path_problem
    from winnow_local.adapters.objects_local import check_key

    key = key.strip()
    problem = upload_path_problem(tenant, key)
    if problem is not None:
        raise UploadError(400, "bad_request", f"unusable key: {problem}")
    full_key = object_key(tenant, key)
    try:
        check_key(full_key)
    except InvalidKey as exc:
        raise UploadError(400, "bad_request", f"unusable key: {exc}") from None
    return full_key
