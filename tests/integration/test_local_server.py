"""``winnow serve``: the local HTTP server on a free loopback port, in a thread, over real HTTP. Every API
route goes through the real search handler; uploads through the real ingest handler."""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.serve import serving
from tests.support.sockets import nagle_disabled_on_served_connection
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

KETTLE = b"""# Kettle manual

## Descaling

Descale the Brewmaster kettle every four weeks with one sachet of citric acid dissolved in half a litre
of warm water. Let it stand for twenty minutes, then rinse twice.
"""


class Client:
    def __init__(self, server: WinnowHTTPServer) -> None:
        self.host, self.port = str(server.server_address[0]), int(server.server_address[1])

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        tenant: str | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        sent = dict(headers or {})
        if tenant is not None:
            sent["X-Winnow-Tenant"] = tenant
        if isinstance(body, dict):
            body = json.dumps(body)
            sent.setdefault("Content-Type", "application/json")
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def json(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        status, _, body = self.request(method, path, **kwargs)
        return status, json.loads(body)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    home = tmp_path_factory.mktemp("serve") / "home"
    # WINNOW_SEARCH_ALLOW_TENANT_HEADER off: make_server must turn it on
    env = {"WINNOW_INGEST_MAX_OBJECT_BYTES": "200000", "WINNOW_SEARCH_ALLOW_TENANT_HEADER": "false"}
    with serving(home, env) as httpd:
        yield httpd


@pytest.fixture(scope="module")
def client(server: WinnowHTTPServer) -> Client:
    return Client(server)


@pytest.fixture(scope="module")
def uploaded(client: Client) -> dict[str, Any]:
    status, result = client.json("POST", "/upload?key=guides/kettle.md", body=KETTLE, tenant="cafe")
    assert status == 200, result
    return dict(result)


def test_binds_a_free_port_on_loopback(server: WinnowHTTPServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    assert server.server_address[1] > 0
    assert server.url == f"http://127.0.0.1:{server.server_address[1]}"


def test_answers_go_out_without_waiting_for_nagle(
    server: WinnowHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Headers and body are two writes: with Nagle's algorithm every keep-alive request waited ~40 ms for
    # the client's delayed ACK (the search page's requests all do). The served socket must carry NODELAY.
    assert nagle_disabled_on_served_connection(server, monkeypatch)


def test_health_and_openapi_come_from_the_handler(client: Client) -> None:
    status, body = client.json("GET", "/health")
    assert status == 200
    assert body["status"] == "ok"
    status, document = client.json("GET", "/openapi.json")
    assert status == 200
    assert {"/search", "/documents", "/health"} <= set(document["paths"])


def test_upload_then_search_finds_the_document(client: Client, uploaded: dict[str, Any]) -> None:
    # Given a Markdown file uploaded for tenant cafe as a raw body
    assert set(uploaded) == {"key", "status", "chunks", "embedded", "reused", "error"}
    assert uploaded["key"] == "cafe/guides/kettle.md"
    assert uploaded["status"] == "indexed"
    assert uploaded["chunks"] >= 1
    # When the same tenant searches over HTTP
    status, headers, raw = client.request(
        "POST", "/search", body={"query": "how often should I descale the kettle?"}, tenant="cafe"
    )
    # Then the answer cites the uploaded document, and carries the handler's correlation id
    assert status == 200
    assert headers["content-type"].startswith("application/json")
    assert headers.get("x-correlation-id")
    body = json.loads(raw)
    assert body["relevant"] is True
    top = body["results"][0]
    assert top["key"] == "cafe/guides/kettle.md"
    assert "four weeks" in top["text"]
    assert top["section"]


def test_tenants_are_isolated_by_the_header(client: Client, uploaded: dict[str, Any]) -> None:
    status, body = client.json(
        "POST", "/search", body={"query": "descale the kettle", "relevance_threshold": 0.0}, tenant="other"
    )
    assert status == 200
    assert body["results"] == []


def test_routes_without_the_tenant_header_say_what_to_send(client: Client) -> None:
    # The server has no implicit tenant: a web app that forgot the header would search an empty one
    name = f"note-{uuid.uuid4().hex[:6]}.txt"
    for method, path, body in (
        ("POST", f"/upload?key={name}", b"The default tenant keeps notes here."),
        ("GET", "/documents", None),
        ("POST", "/search", {"query": "notes"}),
    ):
        status, answer = client.json(method, path, body=body)
        assert status == 401, (path, answer)
        assert "x-winnow-tenant" in answer["error"]["message"]
    # And the public routes need none
    assert client.json("GET", "/health")[0] == 200
    status, page = client.json("GET", "/documents", tenant="default")
    assert status == 200
    assert f"default/{name}" not in {d["key"] for d in page["documents"]}


def test_multipart_upload_uses_the_file_name(client: Client) -> None:
    boundary = "winnowboundary"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="grinder.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
        "Grind coffee beans medium-fine for a pour over, at setting twelve on the Brewmaster grinder.\r\n"
        f"--{boundary}--\r\n"
    ).encode()
    status, result = client.json(
        "POST",
        "/upload",
        body=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        tenant="cafe",
    )
    assert status == 200, result
    assert result["key"] == "cafe/grinder.txt"
    assert result["status"] == "indexed"


def test_documents_routes_show_ingest_status(client: Client, uploaded: dict[str, Any]) -> None:
    status, page = client.json("GET", "/documents?limit=100", tenant="cafe")
    assert status == 200
    listed = {d["key"]: d for d in page["documents"]}
    assert listed["cafe/guides/kettle.md"]["status"] == "indexed"
    status, one = client.json("GET", "/documents/guides/kettle.md", tenant="cafe")
    assert status == 200
    assert one["status"] == "indexed"
    status, missing = client.json("GET", "/documents/guides/nope.md", tenant="cafe")
    assert status == 404
    assert missing["error"]["code"] == "not_found"


def test_invalid_search_is_a_422_from_the_handler(client: Client) -> None:
    status, body = client.json("POST", "/search", body={"query": "x", "top_k": 0, "bogus": 1}, tenant="cafe")
    assert status == 422
    assert body["error"]["code"] == "validation_error"
    assert body["correlation_id"]


def test_failed_document_upload_is_422_with_the_reason(client: Client) -> None:
    status, result = client.json(
        "POST", "/upload?key=bad.pdf", body=b"%PDF-1.4 not a pdf at all", tenant="cafe"
    )
    assert status == 422
    assert result["status"] == "failed"
    assert result["error"]


def test_text_under_any_name_is_indexed_and_binary_under_an_unknown_name_is_422(client: Client) -> None:
    # Given a Debian README (an extension no parser is named for) and a program, uploaded as they are
    readme = b"Brewmaster for Debian\n=====================\n\nDescale the kettle monthly with citric acid.\n"
    status, result = client.json("POST", "/upload?key=notes/README.Debian", body=readme, tenant="cafe")
    # Then the README is read as the text it is
    assert status == 200, result
    assert result["status"] == "indexed" and result["chunks"] >= 1
    # and the program is refused with a reason naming its extension
    program = b"MZ\x90\x00" + bytes(300)
    status, result = client.json("POST", "/upload?key=tool.exe", body=program, tenant="cafe")
    assert status == 422
    assert result["status"] == "failed"
    assert "'.exe'" in result["error"] and "binary" in result["error"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/upload", "POST /upload?key="),
        ("/upload?key=../escape.txt", "relative path"),
        ("/upload?key=/abs", "relative"),
    ],
)
def test_upload_refuses_missing_or_unsafe_keys(client: Client, path: str, message: str) -> None:
    status, body = client.json("POST", path, body=b"some text", tenant="cafe")
    assert status == 400
    assert message in body["error"]["message"]


def test_upload_over_the_size_limit_is_413(client: Client) -> None:
    status, body = client.json("POST", "/upload?key=big.txt", body=b"a" * 300_000, tenant="cafe")
    assert status == 413
    assert body["error"]["code"] == "payload_too_large"


def test_search_page_and_its_assets_are_served(client: Client) -> None:
    status, headers, page = client.request("GET", "/")
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in headers["content-security-policy"]
    assert b'src="/static/app.js"' in page
    for asset, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        status, headers, _ = client.request("GET", f"/static/{asset}")
        assert status == 200
        assert headers["content-type"].startswith(kind)
    status, _, _ = client.request("GET", "/static/../server.py")
    assert status == 404


def _picker_admits(accept: str | None, name: str) -> bool:
    """What a browser's file dialog offers for ``accept`` (extensions only; no attribute offers all)."""
    if accept is None:
        return True
    suffixes = [token.strip().lower() for token in accept.split(",") if token.strip().startswith(".")]
    return any(name.lower().endswith(suffix) for suffix in suffixes)


def test_the_pages_file_picker_offers_every_name_the_server_reads(client: Client) -> None:
    import lxml.html

    # Given the page as served
    _, _, page = client.request("GET", "/")
    [picker] = lxml.html.fromstring(page).xpath('//input[@id="upload-files"]')
    # Then its file dialog offers the text files of any name that uploads index, not only listed types
    for name in ("README.Debian", "build.log", "app.conf", "report.pdf", "notes.md"):
        assert _picker_admits(picker.get("accept"), name), name


def test_unknown_route_is_the_handlers_404(client: Client) -> None:
    status, body = client.json("GET", "/nope", tenant="cafe")
    assert status == 404
    assert body["error"]["code"] == "not_found"


def test_cors_preflight_lets_a_local_web_app_call_the_api(client: Client) -> None:
    status, headers, _ = client.request(
        "OPTIONS",
        "/search",
        headers={"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"},
    )
    assert status == 204
    assert headers["access-control-allow-origin"] == "http://localhost:5173"
    assert "x-winnow-tenant" in headers["access-control-allow-headers"]


def test_static_dir_holds_the_page(server: WinnowHTTPServer) -> None:
    from winnow_local.web.routes import STATIC_DIR

    assert {p.name for p in Path(STATIC_DIR).iterdir()} >= {"index.html", "app.js", "style.css"}


def test_the_page_learns_whether_a_re_ranker_is_configured(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from winnow.factory import Container

    # Given the embedded default: no re-ranker, no answer model
    status, config = client.json("GET", "/local/config")
    assert (status, config) == (200, {"reranker": None, "answers": False})
    # When a Voyage re-ranker is configured, the page is told its model
    monkeypatch.setattr(Container, "uses_voyage_reranker", property(lambda self: True))
    status, config = client.json("GET", "/local/config")
    assert (status, config) == (200, {"reranker": "rerank-2.5", "answers": False})
