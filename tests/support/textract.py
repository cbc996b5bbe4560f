"""A loopback stand-in for Amazon Textract's ``DetectDocumentText`` (AWS JSON 1.1 over HTTP), driven by
boto3 through ``endpoint_url``, so ``TextractOcr`` is tested over the real wire with botocore's own
retries and error parsing.

What it mimics (Textract API reference, DetectDocumentText): ``POST /`` with ``X-Amz-Target:
Textract.DetectDocumentText`` and ``{"Document": {"Bytes": <base64>}}``; a synchronous call reads one
page, so a PDF of more than one page is ``UnsupportedDocumentException``; an image or PDF it cannot
decode is ``BadDocumentException``; throttling is ``ProvisionedThroughputExceededException`` or
``ThrottlingException`` (HTTP 400), an outage ``InternalServerError`` (HTTP 500). The answer has
``DocumentMetadata.Pages`` and ``Blocks`` (one PAGE block, then LINE and WORD blocks).

It does not run OCR: tests register the scans they rendered (image and known text), and a page is
matched to the registered scan whose thumbnail is nearest (JPEG re-encoding inside a PDF changes pixels,
not the thumbnail). The fake still decodes every page it receives, so a page split that produced a
broken or multi-page PDF fails here as it would at AWS.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from typing import Any

import pytest

_THUMBNAIL = (24, 34)
_MATCH_THRESHOLD = 12.0  # mean absolute grey difference of thumbnails


def _thumbnail(image: Any) -> bytes:
    return bytes(image.convert("L").resize(_THUMBNAIL).tobytes())


class FakeTextract:
    def __init__(self) -> None:
        self.known: list[tuple[bytes, str]] = []
        self.calls: list[dict[str, Any]] = []  # one per request: page count and media kind
        self.faults: deque[tuple[int, str]] = deque()  # (status, __type) answered before real answers
        self.unreadable_pages: set[str] = set()  # texts whose page answers BadDocumentException
        self._lock = threading.Lock()
        handler = self._handler()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def register(self, image: Any, text: str) -> None:
        self.known.append((_thumbnail(image), text))

    def fail_next(self, count: int, status: int = 400, error_type: str = "ThrottlingException") -> None:
        with self._lock:
            self.faults.extend([(status, error_type)] * count)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "textract",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(
                retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=10
            ),
        )

    # --- the server ------------------------------------------------------------------------------------
    def _answer(self, target: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if target != "Textract.DetectDocumentText":
            return 400, {"__type": "UnknownOperationException", "message": target}
        with self._lock:
            if self.faults:
                status, kind = self.faults.popleft()
                self.calls.append({"fault": kind})
                return status, {"__type": kind, "message": "injected"}
        try:
            data = base64.b64decode(json.loads(body)["Document"]["Bytes"])
        except (ValueError, KeyError, TypeError):
            return 400, {"__type": "InvalidParameterException", "message": "Document.Bytes"}
        try:
            image, pages, kind = _first_image(data)
        except Exception:
            self.calls.append({"kind": "unreadable"})
            return 400, {"__type": "BadDocumentException", "message": "cannot decode"}
        self.calls.append({"kind": kind, "pages": pages})
        if pages != 1:
            return 400, {"__type": "UnsupportedDocumentException", "message": "one page only"}
        text = self._match(image)
        if text in self.unreadable_pages:
            return 400, {"__type": "BadDocumentException", "message": "cannot decode"}
        blocks: list[dict[str, Any]] = [{"BlockType": "PAGE", "Id": "p"}]
        for number, line in enumerate(text.splitlines()):
            blocks.append({"BlockType": "LINE", "Id": f"l{number}", "Text": line, "Confidence": 99.0})
            blocks.extend({"BlockType": "WORD", "Text": word} for word in line.split())
        return 200, {
            "DocumentMetadata": {"Pages": 1},
            "Blocks": blocks,
            "DetectDocumentTextModelVersion": "1.0",
        }

    def _match(self, image: Any) -> str:
        thumb = _thumbnail(image)
        best, best_score = "", float("inf")
        for known, text in self.known:
            score = sum(abs(a - b) for a, b in zip(thumb, known, strict=True)) / len(thumb)
            if score < best_score:
                best, best_score = text, score
        return best if best_score <= _MATCH_THRESHOLD else ""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                status, answer = fake._answer(self.headers.get("X-Amz-Target", ""), body)
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        return Handler


def _first_image(data: bytes) -> tuple[Any, int, str]:
    from PIL import Image

    if data.startswith(b"%PDF-"):
        from pypdf import PdfReader

        reader = PdfReader(BytesIO(data))
        pages = len(reader.pages)
        images = list(reader.pages[0].images)
        return images[0].image, pages, "pdf"
    with Image.open(BytesIO(data)) as opened:
        opened.load()
        return opened.copy(), 1, "image"


@pytest.fixture
def fake_textract() -> Iterator[FakeTextract]:
    fake = FakeTextract()
    yield fake
    fake.close()
