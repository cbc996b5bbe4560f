"""``winnow serve`` on a free loopback port in a thread, on its own home, for the tests that drive it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
