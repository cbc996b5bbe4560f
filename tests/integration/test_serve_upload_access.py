"""``POST /upload`` with an access list and metadata, as ``/uploads`` takes them: JSON objects in form
fields (before the file) or query parameters, checked by the API's own rules, stored on the object and
applied by ingest."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.support.serve import serving
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

PAY = (
    b"# Pay bands\n\n## Engineering\n\n"
    b"Senior engineers at Brewmaster are paid in band seven of the salary scale.\n"
)
ADMIN = {"x-winnow-tenant": "acme", "x-winnow-user": "root", "x-winnow-groups": "winnow-admins"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    with serving(tmp_path_factory.mktemp("serve-upload-access") / "home") as httpd:
        yield httpd


def search(server: WinnowHTTPServer, headers: dict[str, str], **extra: object) -> list[str]:
    body = {"query": "which salary band are senior engineers paid in?", **extra}
    response = httpx.post(f"{server.url}/search", json=body, headers=headers, timeout=120)
    assert response.status_code == 200, response.text
    return [r["key"] for r in response.json()["results"]]


def post_form(
    server: WinnowHTTPServer, key: str, fields: dict[str, str], headers: dict[str, str]
) -> httpx.Response:
    """``PAY`` as a multipart form to ``/upload``: the key and ``fields`` first, then the file."""
    return httpx.post(
        f"{server.url}/upload",
        data={"key": key, **fields},
        files={"file": (key, PAY)},
        headers=headers,
        timeout=120,
    )


def test_a_form_upload_sets_who_may_read_it_and_its_metadata(server: WinnowHTTPServer) -> None:
    fields = {"access": json.dumps({"groups": ["hr"]}), "metadata": json.dumps({"department": "people"})}
    response = post_form(server, "pay.md", fields, ADMIN)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "indexed"
    # Only the group on the list (and admins) read it; the metadata filters
    assert search(server, {"x-winnow-tenant": "acme"}) == []
    hr = {"x-winnow-tenant": "acme", "x-winnow-user": "ann", "x-winnow-groups": "hr"}
    assert search(server, hr) == ["acme/pay.md"]
    assert search(server, hr, filters={"department": "people"}) == ["acme/pay.md"]
    assert search(server, hr, filters={"department": "sales"}) == []


def test_a_raw_upload_takes_them_as_query_parameters(server: WinnowHTTPServer) -> None:
    response = httpx.post(
        f"{server.url}/upload",
        params={"key": "pay-raw.md", "access": json.dumps({"users": ["bob"]})},
        content=PAY.replace(b"Pay bands", b"Pay bands again"),
        headers=ADMIN,
        timeout=120,
    )
    assert response.status_code == 200, response.text
    assert search(server, {"x-winnow-tenant": "acme", "x-winnow-user": "bob"}) == ["acme/pay-raw.md"]


@pytest.mark.parametrize(
    ("fields", "headers", "status", "message"),
    [
        ({"access": "hr"}, ADMIN, 400, "send 'access' as a JSON object"),
        ({"metadata": "[1]"}, ADMIN, 400, "send 'metadata' as a JSON object"),
        ({"access": json.dumps({"teams": ["x"]})}, ADMIN, 422, "access"),
        (
            {"access": json.dumps({"groups": ["legal"]})},
            {"x-winnow-tenant": "acme", "x-winnow-user": "ann", "x-winnow-groups": "hr"},
            403,
            "legal",
        ),
    ],
)
def test_bad_or_forbidden_access_is_refused_and_nothing_is_stored(
    server: WinnowHTTPServer, fields: dict[str, str], headers: dict[str, str], status: int, message: str
) -> None:
    response = post_form(server, "refused.md", fields, headers)
    assert response.status_code == status, response.text
    assert message in response.text
    listed = httpx.get(f"{server.url}/documents", headers=ADMIN, timeout=60).json()["documents"]
    assert "acme/refused.md" not in [d["key"] for d in listed]
