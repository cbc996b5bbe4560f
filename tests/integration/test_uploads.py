"""Browser uploads and deletes through the search handler, against S3 on moto over HTTP.

``POST /uploads`` signs an S3 presigned POST; the form is then really POSTed (through the S3 policy gate
of tests/support/s3post.py, since moto does not enforce policies) to prove what it can and cannot write.
``DELETE /documents/{key+}`` removes the object; ``GET /documents/{key+}`` says ``pending`` in between."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.s3post import post_form
from tests.support.stack import EmbeddedStack
from tests.support.voyage import FakeVoyageServer
from winnow.adapters.objects_s3 import S3ObjectSource
from winnow.ingest.events import s3_event
from winnow.settings import IngestSettings, SearchSettings

LIMIT = 4096


@pytest.fixture
def s3_stack(
    tmp_path: Path, fake_voyage: FakeVoyageServer, s3_bucket: str, aws_endpoint: str
) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(
        tmp_path,
        fake_voyage,
        objects=S3ObjectSource(s3_bucket),
        ingest=IngestSettings(max_object_bytes=LIMIT),
        search=SearchSettings(upload_expires_seconds=120),
    )
    stack.bucket = s3_bucket
    try:
        yield stack
    finally:
        stack.close()


def sign(stack: EmbeddedStack, body: Any, tenant: str | None = "acme") -> tuple[int, Any]:
    status, _, payload = stack.api("POST", "/uploads", body, tenant=tenant)
    return status, payload


def s3(aws_client: Callable[[str], Any]) -> Any:
    return aws_client("s3")


# --- POST /uploads --------------------------------------------------------------------------------------
def test_signed_form_uploads_exactly_the_key_type_and_metadata(
    s3_stack: EmbeddedStack, aws_client: Callable[[str], Any]
) -> None:
    # Given a signed form for handbook/leave.md with metadata
    status, form = sign(
        s3_stack,
        {"path": "handbook/leave.md", "content_type": "text/markdown", "metadata": {"Department": "people"}},
    )
    assert status == 201, form
    assert form["key"] == "acme/handbook/leave.md"
    assert form["expires_in"] == 120
    assert form["fields"]["key"] == "acme/handbook/leave.md"
    # When a browser POSTs the form with the file
    data = b"# Leave\n\nEvery employee receives twenty-eight days of paid leave per year.\n"
    response = post_form(form["url"], form["fields"], data)
    # Then S3 holds exactly that object, with the pinned type and metadata
    assert response.status_code == 204, response.text
    head = s3(aws_client).head_object(Bucket=s3_stack.bucket, Key="acme/handbook/leave.md")
    assert head["ContentLength"] == len(data)
    assert head["ContentType"] == "text/markdown"
    assert head["Metadata"] == {"department": "people"}


def test_form_refuses_a_bigger_file_another_key_and_extra_metadata(
    s3_stack: EmbeddedStack, aws_client: Callable[[str], Any]
) -> None:
    # Given a signed form
    status, form = sign(s3_stack, {"path": "notes.txt"})
    assert status == 201
    fields = form["fields"]
    # When the file is over the ingest size limit, or the key or metadata are changed
    too_big = post_form(form["url"], fields, b"x" * (LIMIT + 1))
    other_key = post_form(form["url"], {**fields, "key": "globex/notes.txt"}, b"hello")
    other_prefix = post_form(form["url"], {**fields, "key": "acme/notes.txt.metadata.json"}, b"{}")
    extra_meta = post_form(form["url"], {**fields, "x-amz-meta-year": "2024"}, b"hello")
    other_type = post_form(form["url"], {**fields, "Content-Type": "text/html"}, b"<script>")
    empty = post_form(form["url"], fields, b"")
    # Then S3 refuses each, and nothing was written
    for response in (too_big, other_key, other_prefix, extra_meta, other_type, empty):
        assert response.status_code == 403, response.text
    listing = s3(aws_client).list_objects_v2(Bucket=s3_stack.bucket)
    assert listing.get("KeyCount", 0) == 0
    # And the untouched form still works, at the limit exactly
    assert post_form(form["url"], fields, b"y" * LIMIT).status_code == 204


ESCAPES = [
    "../globex/secret.pdf",
    "a/../../globex/secret.pdf",
    "..",
    ".",
    "./a.pdf",
    "a/./b.pdf",
    "/globex/secret.pdf",
    "//globex/secret.pdf",
    "a//b.pdf",
    "a/",
    "..\\globex\\secret.pdf",
    "a\\b.pdf",
    "a\x00b.pdf",
    "a\nb.pdf",
    "a\rb.pdf",
    "a\tb.pdf",
    "a\x7fb.pdf",
    "x" * 1020,
    "é" * 511,
]


@pytest.mark.parametrize("path", ESCAPES)
def test_paths_that_could_leave_the_tenant_get_no_form(s3_stack: EmbeddedStack, path: str) -> None:
    # When a caller asks for a form for a path that escapes, is absolute, or is too long
    status, body = sign(s3_stack, {"path": path})
    # Then no form is signed, and the message says what a path may be
    assert status in (400, 422), body
    assert "url" not in body and "fields" not in body
    assert "path" in body["error"]["message"]


def test_sidecars_cannot_be_uploaded(s3_stack: EmbeddedStack) -> None:
    status, body = sign(s3_stack, {"path": "handbook/leave.pdf.metadata.json"})
    assert status == 400
    assert "sidecar" in body["error"]["message"]


def test_tenant_comes_only_from_the_authorizer(s3_stack: EmbeddedStack) -> None:
    # Given no authorizer tenant, then 401; a tenant in the body is an unknown field
    assert sign(s3_stack, {"path": "a.txt"}, tenant=None)[0] == 401
    status, body = sign(s3_stack, {"path": "a.txt", "tenant": "globex"})
    assert status == 422
    assert "tenant" in body["error"]["message"] and "path" in body["error"]["message"]


@pytest.mark.parametrize(
    "metadata",
    [
        {"dept.team": "x"},
        {"-x": "y"},
        {"a b": "c"},
        {"ok": "caf\u00e9"},
        {"ok": "a\nb"},
        {"A": "1", "a": "2"},
    ],
)
def test_metadata_follows_the_field_name_rule(s3_stack: EmbeddedStack, metadata: dict[str, str]) -> None:
    status, body = sign(s3_stack, {"path": "a.txt", "metadata": metadata})
    assert status in (400, 422), body
    assert "metadata" in body["error"]["message"]


def test_bad_content_type_is_refused(s3_stack: EmbeddedStack) -> None:
    status, body = sign(s3_stack, {"path": "a.txt", "content_type": "text/html\r\nx-amz-meta-a: b"})
    assert status == 400
    assert "content_type" in body["error"]["message"]


# --- GET pending, DELETE ------------------------------------------------------------------------------
def test_upload_is_pending_until_ingested_then_indexed(s3_stack: EmbeddedStack) -> None:
    # Given an uploaded file that ingest has not handled yet
    _, form = sign(s3_stack, {"path": "guide.md"})
    data = b"# Guide\n\nHow to file travel expenses.\n"
    assert post_form(form["url"], form["fields"], data).status_code == 204
    # Then its status is pending
    status, _, body = s3_stack.api("GET", "/documents/guide.md")
    assert (status, body["status"], body["key"]) == (200, "pending", "acme/guide.md")
    # When the object's event is ingested, then it is indexed
    s3_stack.invoke_ingest(s3_event([s3_stack.created_record("acme/guide.md")], s3_stack.bucket))
    assert s3_stack.api("GET", "/documents/acme/guide.md")[2]["status"] == "indexed"


def test_delete_removes_the_object_and_then_the_points(
    s3_stack: EmbeddedStack, aws_client: Callable[[str], Any]
) -> None:
    # Given an indexed document
    assert s3_stack.upload("acme/a/leave.md", b"# Leave\n\nTwenty-eight days of paid leave.\n")["status"] == (
        "indexed"
    )
    # When it is deleted
    status, _, body = s3_stack.api("DELETE", "/documents/a/leave.md")
    # Then 202, and the object is gone from S3
    assert (status, body) == (202, {"key": "acme/a/leave.md", "status": "deleting"})
    with pytest.raises(Exception, match=r"404|Not Found"):
        s3(aws_client).head_object(Bucket=s3_stack.bucket, Key="acme/a/leave.md")
    # And once the removal event is handled, the document is deleted and no search finds it
    s3_stack.invoke_ingest(s3_event([s3_stack.removed_record("acme/a/leave.md")], s3_stack.bucket))
    assert s3_stack.api("GET", "/documents/acme/a/leave.md")[2]["status"] == "deleted"
    assert s3_stack.search("paid leave")[1]["results"] == []
    # And deleting again is accepted (idempotent)
    assert s3_stack.api("DELETE", "/documents/acme/a/leave.md")[0] == 202


def test_delete_of_unknown_or_other_tenants_key_is_404(
    s3_stack: EmbeddedStack, aws_client: Callable[[str], Any]
) -> None:
    # Given globex's document
    assert s3_stack.upload("globex/secret.md", b"# Secret\n\nGlobex plans.\n")["status"] == "indexed"
    # When acme deletes it by globex's full key, or deletes a key nobody has
    paths = ("/documents/globex/secret.md", "/documents/nothing.md", "/documents/..%2Fglobex%2Fsecret.md")
    for path in paths:
        status, _, body = s3_stack.api("DELETE", path)
        assert status in (400, 404), (path, body)
    # Then globex's object is untouched
    assert s3(aws_client).head_object(Bucket=s3_stack.bucket, Key="globex/secret.md")["ContentLength"] > 0
