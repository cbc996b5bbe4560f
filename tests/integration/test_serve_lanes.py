"""``winnow serve``'s handler lane under a queue (issue 31): what runs in which order when requests wait.
The test holds the lane with a task of its own, lines requests up behind it over real HTTP, then lets it
go: the assertions are about order (what was answered while something else still waited), never time."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.serve import serving, until
from winnow.errors import ObjectGone
from winnow.factory import get_container
from winnow_local.adapters.objects_local import LocalObjectSource
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

FIRST = b"# Kettle\n\nDescale the kettle every four weeks with citric acid.\n"
SECOND = b"# Kettle\n\nDescale the kettle every two weeks with white vinegar.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinnowHTTPServer]:
    home = tmp_path_factory.mktemp("serve-lanes") / "home"
    with serving(home) as httpd:
        yield httpd


def request(server: WinnowHTTPServer, method: str, path: str, tenant: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method, f"{server.url}{path}", headers={"x-winnow-tenant": tenant}, timeout=300, **kwargs
    )


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


def hold_lane(server: WinnowHTTPServer, tenant: str = "zz-test-gate") -> threading.Event:
    """A task that keeps the lane busy until the returned event is set, already running."""
    gate, started = threading.Event(), threading.Event()
    server.lane.submit(tenant, lambda: (started.set(), gate.wait(120)))
    until(started.is_set, "the gate task runs")
    return gate


def queue(server: WinnowHTTPServer, send: Callable[[], httpx.Response]) -> InBackground:
    """Send a request and return once it waits on the lane."""
    before = server.lane.pending()
    call = InBackground(send)
    until(lambda: server.lane.pending() > before or call.done.is_set(), "the request waits on the lane")
    return call


def test_a_re_upload_right_after_a_delete_survives(server: WinnowHTTPServer) -> None:
    # Given an indexed document
    assert (
        request(server, "POST", "/upload?key=kettle.md", "acme", content=FIRST).json()["status"] == "indexed"
    )
    # When its DELETE and then a re-upload of it wait on the lane, in that order
    gate = hold_lane(server)
    deleting = queue(server, lambda: request(server, "DELETE", "/documents/kettle.md", "acme"))
    uploading = queue(
        server, lambda: request(server, "POST", "/upload?key=kettle.md", "acme", content=SECOND)
    )
    gate.set()
    assert deleting.done.wait(120) and uploading.done.wait(120)
    assert deleting.response is not None and deleting.response.status_code == 202
    assert uploading.response is not None and uploading.response.json()["status"] == "indexed"
    # Then the later write survives, as on S3: stored, indexed, found
    objects = get_container().objects
    assert isinstance(objects, LocalObjectSource)
    try:
        stored = objects.get("acme/kettle.md")
    except ObjectGone:
        stored = None
    assert stored == SECOND
    assert request(server, "GET", "/documents/kettle.md", "acme").json()["status"] == "indexed"
    found = request(server, "POST", "/search", "acme", json={"query": "vinegar", "relevance_threshold": 0})
    assert "white vinegar" in found.json()["results"][0]["text"]


def test_another_tenants_search_is_served_before_a_backlog_drains(server: WinnowHTTPServer) -> None:
    # Given tenant a's backlog on the lane: three searches, then a task that holds the lane until released
    gate = hold_lane(server)
    body = {"query": "how often should the kettle be descaled", "top_k": 50}
    backlog = [queue(server, lambda: request(server, "POST", "/search", "a", json=body)) for _ in range(3)]
    tail_gate = threading.Event()
    server.lane.submit(("127.0.0.1", "a"), tail_gate.wait, 300)  # a's turn: its address and tenant
    # When tenant b sends one search behind all of it
    other = queue(server, lambda: request(server, "POST", "/search", "b", json={"query": "kettle"}))
    gate.set()
    # Then b is answered while a's backlog still waits behind its held task (in arrival order b would
    # wait for it)
    try:
        assert other.done.wait(120), "tenant b waited for tenant a's whole backlog"
        assert other.response is not None and other.response.status_code == 200, other.response
    finally:
        tail_gate.set()
    for call in backlog:
        assert call.done.wait(120) and call.response is not None and call.response.status_code == 200


def test_made_up_tenants_hold_a_search_from_another_address_one_task_at_most(
    server: WinnowHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: any tenant header is accepted locally, and with turns by tenant alone N made-up tenants
    each sending a search put N tasks ahead of a victim's search."""
    served: list[str] = []
    real = server.runtime.call_api

    def recording(method: str, target: str, **kwargs: Any) -> Any:
        served.append(str(kwargs["headers"].get("x-winnow-tenant")))
        return real(method, target, **kwargs)

    monkeypatch.setattr(server.runtime, "call_api", recording)
    # Given 30 made-up tenants from one address, each with a search waiting on the lane
    gate = hold_lane(server)
    body = {"query": "kettle", "relevance_threshold": 0}

    def search_as(tenant: str) -> Callable[[], httpx.Response]:
        return lambda: request(server, "POST", "/search", tenant, json=body)

    sybils = [queue(server, search_as(f"sybil-{n}")) for n in range(30)]
    # When a tenant on another address sends a search behind them all
    victim_client = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=300)
    with victim_client:
        victim = queue(
            server,
            lambda: victim_client.post(
                f"{server.url}/search", headers={"x-winnow-tenant": "victim"}, json=body
            ),
        )
        gate.set()
        assert victim.done.wait(120) and victim.response is not None
    # Then it is served after at most one of theirs (by tenant alone, it came 31st)
    assert victim.response.status_code == 200, victim.response.text
    for call in sybils:
        assert call.done.wait(120) and call.response is not None and call.response.status_code == 200
    assert len(served) == 31
    assert served.index("victim") <= 1, served


def test_an_uploads_model_runs_leave_a_core_to_searches(server: WinnowHTTPServer) -> None:
    """Issue 44: an upload's document runs took both cores (two intra-op threads), and every search's
    query run waited for them; on ``winnow serve`` they take one."""
    from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder

    upload = request(server, "POST", "/upload?key=cores.md", "cores", content=FIRST)
    assert upload.json()["status"] == "indexed"
    embedder = get_container().embedder
    assert isinstance(embedder, LocalOnnxEmbedder)
    assert embedder._document_session.get_session_options().intra_op_num_threads == 1
