"""``winnow serve`` on a free loopback port in a thread, on its own home, for the tests that drive it."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from winnow.factory import reset_container
from winnow_local.web.server import ServeSettings, WinnowHTTPServer, make_server


@contextmanager
def serving(
    home: Path, env: dict[str, str] | None = None, settings: ServeSettings | None = None
) -> Iterator[WinnowHTTPServer]:
    """The server with ``WINNOW_HOME=home`` and ``env`` set while it runs; the container is rebuilt on
    the way in and dropped on the way out, so no other test sees this one's settings."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WINNOW_HOME", str(home))
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        reset_container()
        httpd = make_server("127.0.0.1", 0, quiet=True, settings=settings)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield httpd
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=10)
            reset_container()


def upload(
    httpd: WinnowHTTPServer, tenant: str, key: str, data: bytes, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """One document through the server's own upload route, as the search page sends it; its answer.
    ``headers``: who uploads (``x-winnow-user``, ``x-winnow-groups``)."""
    host, port = str(httpd.server_address[0]), int(httpd.server_address[1])
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        sent = {"X-Winnow-Tenant": tenant, **(headers or {})}
        connection.request("POST", f"/upload?key={key}", body=data, headers=sent)
        response = connection.getresponse()
        body = json.loads(response.read() or b"{}")
    finally:
        connection.close()
    assert response.status == 200, (key, response.status, body)
    return dict(body)


def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for a state the server reaches by itself (a request queued); bounded, not a timing claim."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never reached: {what}"
        time.sleep(0.01)
