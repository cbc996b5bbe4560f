"""``winnow serve`` keeps a tenant's search answered behind work that takes long (issue 44, item 10): an
upload being ingested, uploads from many tenants, a slow language model, slow senders holding every
connection. The real server on loopback; each long piece of work is held open by the test (a gate, the
fake model's delay), and the assertions are about order: what was answered while it still ran."""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.serve import serving, until
from winnow_fakes.fake_model import ModelFault
from winnow_fakes.fake_ollama import FakeOllamaServer
from winnow_local.web.server import ServeSettings, WinnowHTTPServer

pytestmark = pytest.mark.slow

NOTE = b"# Kettle\n\nDescale the kettle every four weeks with citric acid.\n"
WAIT = 60  # the most any step waits for the server before the test fails (never a timing claim)


class InBackground:
    """A request sent from a thread; its response once answered."""

    def __init__(self, send: Callable[[], httpx.Response]) -> None:
        self.response: httpx.Response | None = None
        self.done = threading.Event()

        def run() -> None:
            try:
                self.response = send()
            finally:
                self.done.set()

        threading.Thread(target=run, daemon=True).start()


def request(server: WinnowHTTPServer, method: str, path: str, tenant: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method, f"{server.url}{path}", headers={"x-winnow-tenant": tenant}, timeout=300, **kwargs
    )


def _upload(server: WinnowHTTPServer, n: int) -> httpx.Response:
    return request(server, "POST", f"/upload?key=n{n}.md", f"up{n}", content=NOTE)


@pytest.fixture
def ollama_server(tmp_path: Path, fake_ollama: FakeOllamaServer) -> Iterator[WinnowHTTPServer]:
    with serving(tmp_path / "home", {"OLLAMA_HOST": fake_ollama.url}) as httpd:
        yield httpd


@contextlib.contextmanager
def ingest_held(server: WinnowHTTPServer) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Every ingest waits, once started, until the yielded gate is set; (started, gate)."""
    started, gate = threading.Event(), threading.Event()
    real = server.runtime.put_and_ingest

    def held(uploads: Any) -> Any:
        started.set()
        gate.wait(WAIT * 2)
        return real(uploads)

    server.runtime.put_and_ingest = held  # type: ignore[method-assign]
    try:
        yield started, gate
    finally:
        gate.set()
        server.runtime.put_and_ingest = real  # type: ignore[method-assign]


@pytest.mark.parametrize("uploaders", [1, 6])
def test_a_search_is_answered_while_uploads_are_ingested(
    ollama_server: WinnowHTTPServer, uploaders: int
) -> None:
    server = ollama_server
    assert request(server, "POST", "/upload?key=kettle.md", "victim", content=NOTE).status_code == 200
    with ingest_held(server) as (started, gate):
        # Given uploads of one or six tenants (any tenant header is accepted locally), one being ingested
        uploads = [InBackground(functools.partial(_upload, server, n)) for n in range(uploaders)]
        assert started.wait(WAIT), "no ingest started"
        # When another tenant searches and anyone asks /health
        search = InBackground(lambda: request(server, "POST", "/search", "victim", json={"query": "kettle"}))
        health = InBackground(lambda: httpx.get(f"{server.url}/health", timeout=300))
        # Then both are answered while the ingest still runs
        assert search.done.wait(WAIT) and health.done.wait(WAIT), "held behind an ingest"
        assert not any(upload.done.is_set() for upload in uploads)
        assert search.response is not None and search.response.status_code == 200
        assert "citric acid" in search.response.json()["results"][0]["text"]
        assert health.response is not None and health.response.status_code == 200
        gate.set()
        # and the uploads finish, indexed
        for upload in uploads:
            assert upload.done.wait(WAIT) and upload.response is not None
            assert upload.response.json()["status"] == "indexed"


@pytest.mark.parametrize("path", ["/answer", "/search"])
def test_a_search_is_answered_while_a_slow_model_writes(
    ollama_server: WinnowHTTPServer, fake_ollama: FakeOllamaServer, path: str
) -> None:
    server = ollama_server
    assert request(server, "POST", "/upload?key=kettle.md", "asker", content=NOTE).status_code == 200
    assert request(server, "POST", "/upload?key=kettle.md", "victim", content=NOTE).status_code == 200
    headers = {"x-winnow-tenant": "asker", "x-winnow-user": "ann"}
    first = httpx.post(f"{server.url}/answer", json={"query": "descale kettle"}, headers=headers, timeout=300)
    assert first.status_code == 200, first.text
    conversation = first.json()["conversation_id"]
    # Given a follow-up whose model call does not come back until released
    fake_ollama.inject(ModelFault.delay(WAIT * 2))
    before = fake_ollama.total_requests
    body = {"query": "and how often?", "conversation_id": conversation}
    asking = InBackground(lambda: httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=300))
    until(lambda: fake_ollama.total_requests > before, "the model is asked")
    # When another tenant searches
    search = InBackground(lambda: request(server, "POST", "/search", "victim", json={"query": "kettle"}))
    # Then it is answered while the model still writes
    try:
        assert search.done.wait(WAIT), "held behind a slow model"
        assert not asking.done.is_set()
        assert search.response is not None and search.response.status_code == 200
    finally:
        fake_ollama.cancel_in_flight()
    assert asking.done.wait(WAIT) and asking.response is not None
    assert asking.response.status_code == 200, asking.response.text


def test_slow_senders_holding_every_slot_do_not_keep_health_at_503(tmp_path: Path) -> None:
    """64 sockets sending a byte every 5 s kept /health at 503 for 40 s. A slot held by a client that
    has not sent its request is taken back when another client connects."""
    patient = ServeSettings(max_connections=4, idle_timeout_seconds=60, request_timeout_seconds=120)
    with serving(tmp_path / "home", settings=patient) as httpd:
        # Given as many slow senders as the server has slots, each part-way through its request head
        port = int(httpd.server_address[1])
        stalled = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(4)]
        try:
            for sock in stalled:
                sock.sendall(b"GET /health HTTP/1.1\r\nX-Slow: a")
            until(lambda: httpd.connections_waiting() == patient.max_connections, "every slot is held")
            # When a client asks for /health while they still hold every slot
            health = httpx.get(f"{httpd.url}/health", timeout=30)
            # Then it is answered, and the slow sender that waited longest was let go to make room
            assert health.status_code == 200
            with contextlib.suppress(ConnectionResetError):
                assert stalled[0].recv(65536) == b""
        finally:
            for sock in stalled:
                sock.close()
