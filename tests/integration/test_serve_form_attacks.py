"""Issue 31: a tenant's signed upload form on ``winnow serve`` must write exactly the object it was signed
for. Each test is an attack Eve makes with a form from ``/uploads`` for her own ``eve/legit2.txt``, sent as
a hand-built multipart body over real HTTP to a server in a thread (real handlers, bucket and index); each
asserts what Eve gets (a 4xx) and that the victim's documents are as they were."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.support.serve import serving
from winnow.errors import ObjectGone
from winnow.factory import get_container
from winnow_local.adapters.objects_local import LocalObjectSource
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

SECRET = b"# Payroll\n\nThe victim's payroll run closes on the 25th of each month.\n"
PLANTED = b"# Payroll\n\nWire every salary to Eve's account from now on.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    home = tmp_path_factory.mktemp("serve-form-attacks") / "home"
    with serving(home, {"WINNOW_INGEST_MAX_OBJECT_BYTES": "100000"}) as httpd:
        upload = httpx.post(
            f"{httpd.url}/upload?key=secret.txt",
            content=SECRET,
            headers={"x-winnow-tenant": "victim"},
            timeout=300,
        )
        assert upload.status_code == 200 and upload.json()["status"] == "indexed", upload.text
        yield httpd


def api(server: WinnowHTTPServer, method: str, path: str, tenant: str, **kwargs: object) -> httpx.Response:
    return httpx.request(
        method, f"{server.url}{path}", headers={"x-winnow-tenant": tenant}, timeout=120, **kwargs
    )  # type: ignore[arg-type]


def eve_form(server: WinnowHTTPServer, path: str = "legit2.txt") -> dict[str, str]:
    """The fields of a form signed for ``eve/<path>`` (content type text/plain)."""
    response = api(server, "POST", "/uploads", "eve", json={"path": path, "content_type": "text/plain"})
    assert response.status_code == 201, response.text
    return dict(response.json()["fields"])


def multipart(fields: list[tuple[str, str]], data: bytes, *, file_first: bool = False) -> tuple[str, bytes]:
    """A multipart/form-data body with exactly these parts in this order (names repeat as given)."""
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
        + value.encode()
        + b"\r\n"
        for name, value in fields
    ]
    file = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\n'
            "Content-Type: text/plain\r\n\r\n"
        ).encode()
        + data
        + b"\r\n"
    )
    parts = [file, *parts] if file_first else [*parts, file]
    return f"multipart/form-data; boundary={boundary}", b"".join(parts) + f"--{boundary}--\r\n".encode()


def post_form(
    server: WinnowHTTPServer, fields: list[tuple[str, str]], data: bytes = PLANTED
) -> httpx.Response:
    content_type, body = multipart(fields, data)
    return httpx.post(
        f"{server.url}/local/uploads", content=body, headers={"content-type": content_type}, timeout=120
    )


def bucket_holds(key: str) -> bytes | None:
    objects = get_container().objects
    assert isinstance(objects, LocalObjectSource)
    try:
        return objects.get(key)
    except ObjectGone:
        return None


def victim_untouched(server: WinnowHTTPServer) -> None:
    assert bucket_holds("victim/secret.txt") == SECRET
    found = api(
        server, "POST", "/search", "victim", json={"query": "payroll salary", "relevance_threshold": 0}
    )
    texts = [(r["key"], r["text"], r["metadata"]) for r in found.json()["results"]]
    assert texts and all(key == "victim/secret.txt" for key, _, _ in texts), texts
    assert all("Eve" not in text and "owner" not in metadata for _, text, metadata in texts), texts


def refused(response: httpx.Response) -> str:
    assert response.status_code in (400, 403), (response.status_code, response.text)
    return str(response.json()["error"]["message"])


@pytest.mark.parametrize(
    "planted_key",
    ["victim/secret.txt", "victim/new.txt", "victim/secret.txt.metadata.json", "secret.txt"],
    ids=["overwrite", "new-document", "sidecar", "no-tenant"],
)
@pytest.mark.parametrize("signed_name", ["KEY", "Key"])
def test_a_second_key_field_in_another_case_is_refused(
    server: WinnowHTTPServer, planted_key: str, signed_name: str
) -> None:
    # Given Eve's form for eve/legit2.txt
    fields = eve_form(server)
    signed_key = fields.pop("key")
    data = b'{"metadataAttributes": {"owner": "eve"}}' if planted_key.endswith(".json") else PLANTED
    # When she posts key=<the victim's key> and then <KEY>=<the signed key>
    message = refused(
        post_form(server, [("key", planted_key), (signed_name, signed_key), *fields.items()], data)
    )
    # Then the answer names the repeated field and nothing was written anywhere
    assert "twice" in message
    assert bucket_holds(planted_key) is None or planted_key == "victim/secret.txt"
    assert bucket_holds("eve/legit2.txt") is None
    victim_untouched(server)
    assert api(server, "GET", "/documents/new.txt", "victim").status_code == 404


def test_the_signed_key_first_then_another_is_refused(server: WinnowHTTPServer) -> None:
    fields = eve_form(server)
    signed_key = fields.pop("key")
    refused(post_form(server, [("KEY", signed_key), ("key", "victim/secret.txt"), *fields.items()]))
    refused(post_form(server, [("key", signed_key), ("key", "victim/secret.txt"), *fields.items()]))
    victim_untouched(server)


def test_a_content_type_other_than_the_signed_one_is_refused(server: WinnowHTTPServer) -> None:
    # Given the form signed for text/plain, When Eve sends content-type: application/pdf before it
    fields = eve_form(server)
    assert fields["Content-Type"] == "text/plain"
    message = refused(post_form(server, [("content-type", "application/pdf"), *fields.items()]))
    # Then it is refused and nothing is stored
    assert "twice" in message
    assert bucket_holds("eve/legit2.txt") is None


def test_a_metadata_field_twice_is_refused(server: WinnowHTTPServer) -> None:
    response = api(server, "POST", "/uploads", "eve", json={"path": "tagged.txt", "metadata": {"team": "a"}})
    fields = dict(response.json()["fields"])
    refused(post_form(server, [("X-Amz-Meta-Team", "victim"), *fields.items()]))
    assert bucket_holds("eve/tagged.txt") is None


def test_the_form_as_signed_still_uploads(server: WinnowHTTPServer) -> None:
    fields = eve_form(server)
    response = post_form(server, list(fields.items()), b"Eve's own notes on the kettle.\n")
    assert response.status_code == 204, response.text
    assert bucket_holds("eve/legit2.txt") == b"Eve's own notes on the kettle.\n"
    assert api(server, "GET", "/documents/legit2.txt", "eve").json()["status"] == "indexed"


def test_upload_refuses_a_sidecar_as_the_signed_forms_do(server: WinnowHTTPServer) -> None:
    # Given the rule of /uploads: no form for a sidecar
    signed = api(server, "POST", "/uploads", "eve", json={"path": "notes.txt.metadata.json"})
    assert signed.status_code == 400
    # When the same path goes to POST /upload, raw or as a multipart key
    raw = api(
        server, "POST", "/upload?key=notes.txt.metadata.json", "eve", content=b'{"metadataAttributes": {}}'
    )
    content_type, body = multipart([("key", "notes.txt.metadata.json")], b'{"metadataAttributes": {}}')
    form = httpx.post(
        f"{server.url}/upload",
        content=body,
        headers={"content-type": content_type, "x-winnow-tenant": "eve"},
        timeout=120,
    )
    # Then the same 400 with the same reason, and nothing stored
    for response in (raw, form):
        assert response.status_code == 400, response.text
        assert "sidecar" in response.json()["error"]["message"]
    assert signed.json()["error"]["message"] in raw.json()["error"]["message"]
    assert bucket_holds("eve/notes.txt.metadata.json") is None


def test_upload_refuses_a_form_naming_the_key_twice(server: WinnowHTTPServer) -> None:
    content_type, body = multipart([("key", "a.txt"), ("KEY", "b.txt")], b"text")
    response = httpx.post(
        f"{server.url}/upload",
        content=body,
        headers={"content-type": content_type, "x-winnow-tenant": "eve"},
        timeout=120,
    )
    assert "twice" in refused(response)
    assert bucket_holds("eve/a.txt") is None and bucket_holds("eve/b.txt") is None


def test_a_form_of_thousands_of_parts_is_refused_before_it_is_parsed(server: WinnowHTTPServer) -> None:
    from winnow_local.web.forms import MAX_PARTS

    # Given a form of 1,000 one-byte fields (the parser spends about 0.3 ms a part, more as they grow)
    fields = eve_form(server, "many.txt")
    many = [*fields.items(), *((f"x-ignore-{i}", "v") for i in range(1_000))]
    # When it is posted, Then a 400 names the limit
    assert f"more than {MAX_PARTS} parts" in refused(post_form(server, many))
    assert bucket_holds("eve/many.txt") is None
