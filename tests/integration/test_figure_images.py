"""A figure's image: stored once under the reserved prefix, linked from its search result, gone with its
document, never a document itself, never readable through a link this server did not sign.

Real parts: ``winnow serve`` on loopback (its handlers, the folder bucket, the ledger, the embedded
index and ONNX model, tesseract), the real ingest and reconcile services, and S3 on moto over HTTP."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.support.figure_docs import CHART, DIAGRAM, INTRO, SAMPLE_FIGURES, draw_figure, figure_docx, png
from tests.support.serve import serving, upload
from tests.support.stack import EmbeddedStack
from winnow.adapters.objects_s3 import S3ObjectSource
from winnow.factory import get_container
from winnow.ingest.events import s3_event
from winnow.rules import FIGURE_PREFIX, figure_folder
from winnow_local.adapters.objects_local import figure_signature
from winnow_local.web.server import WinnowHTTPServer


def call(server: WinnowHTTPServer, method: str, path: str, body: Any = None, tenant: str = "acme") -> Any:
    host, port = str(server.server_address[0]), int(server.server_address[1])
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"X-Winnow-Tenant": tenant, "Content-Type": "application/json"}
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.headers), response.read()
    finally:
        connection.close()


def figure_results(server: WinnowHTTPServer, query: str, tenant: str = "acme") -> list[dict[str, Any]]:
    request = {"query": query, "filters": {"kind": "figure"}, "top_k": 10, "relevance_threshold": 0}
    status, _, body = call(server, "POST", "/search", request, tenant)
    assert status == 200, body
    return list(json.loads(body)["results"])


def fetch(server: WinnowHTTPServer, url: str) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    host, port = str(server.server_address[0]), int(server.server_address[1])
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")  # an <img>: no tenant header
        response = connection.getresponse()
        return response.status, dict(response.headers), response.read()
    finally:
        connection.close()


def stored_figures(key: str) -> list[str]:
    return sorted(info.key for info in get_container().objects.list(figure_folder(key)))


def test_a_figure_result_links_its_image_and_only_that_link_reads_it(tmp_path: Path) -> None:
    with serving(tmp_path / "home") as server:
        # Given a DOCX with three figures, uploaded through the server
        upload(server, "acme", "report.docx", figure_docx(SAMPLE_FIGURES, intro=INTRO))
        # Then each figure is stored once, in the document's own folder under the reserved prefix
        assert len(stored_figures("acme/report.docx")) == 3
        # When the figures are searched
        results = figure_results(server, "tram ridership by city")
        assert len(results) == 3 and all(hit["image_url"] for hit in results)
        chart = next(hit for hit in results if hit["text"].startswith(CHART.caption))
        # Then the chart's link reads exactly the chart's image, as a PNG nobody may sniff as anything else
        status, headers, data = fetch(server, chart["image_url"])
        assert status == 200 and data == png(draw_figure(CHART))
        assert headers["content-type"] == "image/png" and headers["x-content-type-options"] == "nosniff"
        query = {name: values[0] for name, values in parse_qs(urlsplit(chart["image_url"]).query).items()}
        # and a link whose signature, key or expiry was changed reads nothing
        forged = {
            **query,
            "signature": query["signature"][:-1] + ("0" if query["signature"][-1] != "0" else "1"),
        }
        other_key = {**query, "key": query["key"].replace("acme", "other", 1)}
        later = {**query, "expires": str(int(query["expires"]) + 3600)}
        for changed in (forged, other_key, later):
            assert fetch(server, "/local/figures?" + urlencode(changed))[0] == 403
        # and a link this server signed for a document key outside the prefix reads nothing either
        document = {"key": "acme/report.docx", "expires": query["expires"]}
        document["signature"] = figure_signature(
            server.upload_secret, document["key"], int(document["expires"])
        )
        assert fetch(server, "/local/figures?" + urlencode(document))[0] == 403
        # and an expired link reads nothing
        past = int(time.time()) - 1
        expired = {"key": query["key"], "expires": str(past)}
        expired["signature"] = figure_signature(server.upload_secret, query["key"], past)
        assert fetch(server, "/local/figures?" + urlencode(expired))[0] == 403
        # and another tenant's search shows no figure and so no link
        assert figure_results(server, "tram ridership by city", tenant="other") == []


def test_replacing_or_deleting_a_document_removes_its_images(tmp_path: Path) -> None:
    with serving(tmp_path / "home") as server:
        upload(server, "acme", "report.docx", figure_docx(SAMPLE_FIGURES, intro=INTRO))
        old_links = [hit["image_url"] for hit in figure_results(server, "overview")]
        assert len(stored_figures("acme/report.docx")) == 3
        # When the document is replaced by a version with one of its figures only
        upload(server, "acme", "report.docx", figure_docx([DIAGRAM], intro=INTRO))
        # Then only that figure's image is left, and the links to the others read nothing
        (left,) = stored_figures("acme/report.docx")
        statuses = sorted(fetch(server, link)[0] for link in old_links)
        assert statuses == [200, 404, 404]
        (kept,) = figure_results(server, "kiln")
        status, headers, data = fetch(server, kept["image_url"])
        assert (status, headers["content-type"], data) == (200, "image/png", png(draw_figure(DIAGRAM)))
        assert parse_qs(urlsplit(kept["image_url"]).query)["key"] == [left]
        # When the document is deleted, Then no image of it is left
        status, _, body = call(server, "DELETE", "/documents/report.docx")
        assert status in (200, 202, 204), body
        deadline = time.monotonic() + 30
        while stored_figures("acme/report.docx") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert stored_figures("acme/report.docx") == []


def test_figure_images_are_never_documents(stack: EmbeddedStack) -> None:
    # Given a document whose figures were stored
    stack.upload("acme/report.docx", figure_docx(SAMPLE_FIGURES, intro=INTRO))
    images = [info.key for info in stack.container.objects.list(FIGURE_PREFIX)]
    assert len(images) == 3
    # When S3 notifies ingest of one of them (it notifies every key of the bucket)
    out = stack.invoke_ingest(s3_event([stack.created_record(images[0])], stack.bucket))
    # Then ingest skips it and records nothing for it
    assert [result["status"] for result in out["results"]] == ["skipped"]
    assert stack.container.ledger.get("acme", images[0]) is None
    assert stack.container.ledger.get("_figures", images[0]) is None
    # And reconcile over the whole bucket sees one document, unchanged, and no key without a tenant
    stats = stack.container.reconciler().run().totals.counters()
    assert stats["scanned"] == 1 and stats["unchanged"] == 1 and stats["failed"] == 0
    assert len(list(stack.container.objects.list(FIGURE_PREFIX))) == 3


def test_s3_stores_a_figure_and_presigns_a_get_of_that_key_only(s3_bucket: str, aws_client: Any) -> None:
    objects = S3ObjectSource(s3_bucket, client=aws_client("s3"))
    key = figure_folder("acme/report.docx") + "0" * 32 + ".png"
    image = png(draw_figure(CHART))
    objects.put_figure(key, image, "image/png")
    url = objects.figure_url(key, 60)
    assert url is not None and "X-Amz-Signature" in url and "X-Amz-Expires=60" in url
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.read() == image
        assert response.headers["content-type"] == "image/png"


def test_only_those_who_may_read_the_document_get_its_image_link(stack: EmbeddedStack) -> None:
    # Given a figure in a document the board group alone may read, and a bucket that signs image links
    stack.container.objects.accept_signed_uploads("http://127.0.0.1:9/local/uploads", b"test secret")
    access = {"winnow-access": json.dumps({"users": [], "groups": ["board"]})}
    data = figure_docx([CHART], intro=INTRO)
    assert stack.upload("acme/board.docx", data, access)["status"] == "indexed"
    request = {"relevance_threshold": 0, "filters": {"kind": "figure"}}
    # When a board member searches, Then the figure comes with its link
    status, body = stack.search(
        "tram ridership", claims={"sub": "ann", "cognito:groups": "[board]"}, **request
    )
    assert status == 200 and [bool(hit["image_url"]) for hit in body["results"]] == [True]
    # When another member of the tenant searches, Then there is no figure and so no link
    status, body = stack.search(
        "tram ridership", claims={"sub": "eve", "cognito:groups": "[staff]"}, **request
    )
    assert status == 200 and body["results"] == []


def test_a_hostile_image_link_is_refused_not_a_server_error(tmp_path: Path) -> None:
    """Bad input gets a 4xx: a signature that is not ASCII (``hmac.compare_digest`` raises on one), or
    a query with more fields than the route reads, is refused like any forged link."""
    with serving(tmp_path / "home") as server:
        key = figure_folder("acme/report.docx") + "0" * 32 + ".png"
        expires = str(int(time.time()) + 300)
        hostile = [
            urlencode({"key": key, "expires": expires, "signature": "é" * 64}),
            urlencode({"key": key, "expires": expires, "signature": "0" * 64, "a": "1", "b": "2"}),
        ]
        for query in hostile:
            status, _, body = fetch(server, "/local/figures?" + query)
            assert status == 403, (query, status, body)
