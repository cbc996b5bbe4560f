"""``winnow serve``'s browser-upload flow over real HTTP: ``POST /uploads`` answers a form signed for
this server (the shape of S3's presigned POST), ``POST /local/uploads`` receives it only as signed, and
``DELETE /documents/{key+}`` removes the document and its passages."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.support.serve import serving
from winnow.postpolicy import SIGNATURE_FIELD, encode_policy, sign
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

LIMIT = 50_000
TEXT = (
    b"# Kettle manual\n\n## Descaling\n\nDescale the Brewmaster kettle every four weeks with citric acid.\n"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    home = tmp_path_factory.mktemp("serve-uploads") / "home"
    with serving(home, {"WINNOW_INGEST_MAX_OBJECT_BYTES": str(LIMIT)}) as httpd:
        yield httpd


def api(
    server: WinnowHTTPServer, method: str, path: str, tenant: str = "acme", **kwargs: object
) -> httpx.Response:
    return httpx.request(
        method, f"{server.url}{path}", headers={"x-winnow-tenant": tenant}, timeout=120, **kwargs
    )  # type: ignore[arg-type]


def form_for(server: WinnowHTTPServer, path: str, **extra: object) -> dict[str, object]:
    response = api(server, "POST", "/uploads", json={"path": path, **extra})
    assert response.status_code == 201, response.text
    return dict(response.json())


def post(form: dict[str, object], fields: dict[str, str], data: bytes) -> httpx.Response:
    return httpx.post(str(form["url"]), data=fields, files={"file": ("f", data)}, timeout=120)


def test_upload_form_has_the_aws_shape_and_indexes_the_file(server: WinnowHTTPServer) -> None:
    # Given a form from /uploads
    form = form_for(server, "manuals/kettle.md", metadata={"product": "kettle"})
    assert set(form) == {"key", "url", "fields", "expires_in"}
    assert form["key"] == "acme/manuals/kettle.md"
    assert form["url"] == f"{server.url}/local/uploads"
    fields = dict(form["fields"])  # type: ignore[call-overload]
    # When the browser posts it (no tenant header: the signature is the authority)
    response = post(form, fields, TEXT)
    # Then it is stored and indexed with its metadata, and found by search
    assert response.status_code == 204, response.text
    status = api(server, "GET", "/documents/manuals/kettle.md").json()
    assert status["status"] == "indexed"
    found = api(server, "POST", "/search", json={"query": "descale kettle", "filters": {"product": "kettle"}})
    assert [r["key"] for r in found.json()["results"]] == ["acme/manuals/kettle.md"]


def test_tampered_expired_or_oversized_forms_are_refused(server: WinnowHTTPServer) -> None:
    form = form_for(server, "a.md")
    fields = dict(form["fields"])  # type: ignore[call-overload]
    # a changed key, an added metadata field, a forged signature, a bigger file, an empty one
    cases = [
        ({**fields, "key": "globex/a.md"}, TEXT),
        ({**fields, "x-amz-meta-year": "2024"}, TEXT),
        ({**fields, SIGNATURE_FIELD: "0" * 64}, TEXT),
        (fields, b"x" * (LIMIT + 1)),
        (fields, b""),
    ]
    for sent, data in cases:
        assert post(form, sent, data).status_code in (403, 413), sent
    # an expired policy signed with the server's own secret (as if it were old)
    document = json.loads(base64.b64decode(fields["policy"]))
    old = encode_policy(document["conditions"], 60, now=datetime.now(UTC) - timedelta(hours=1))
    expired = {**fields, "policy": old, SIGNATURE_FIELD: sign(server.upload_secret, old)}
    response = post(form, expired, TEXT)
    assert response.status_code == 403 and "expired" in response.json()["error"]["message"]
    # Then nothing was stored
    assert api(server, "GET", "/documents/a.md").status_code == 404
    assert api(server, "GET", "/documents/a.md", tenant="globex").status_code == 404


def test_delete_removes_the_document_and_its_passages(server: WinnowHTTPServer) -> None:
    form = form_for(server, "gone/kettle.md")
    assert post(form, dict(form["fields"]), TEXT).status_code == 204  # type: ignore[call-overload]
    # When it is deleted
    response = api(server, "DELETE", "/documents/gone/kettle.md")
    # Then 202, the status is deleted and no search finds it; a second delete is accepted too
    assert response.status_code == 202, response.text
    assert api(server, "GET", "/documents/gone/kettle.md").json()["status"] == "deleted"
    found = api(server, "POST", "/search", json={"query": "descale kettle", "relevance_threshold": 0})
    assert "acme/gone/kettle.md" not in [r["key"] for r in found.json()["results"]]
    assert api(server, "DELETE", "/documents/gone/kettle.md").status_code == 202
    assert api(server, "DELETE", "/documents/never/there.md").status_code == 404
