"""Pytest plugin: the loopback fake Voyage server.

One server per test session (starting threads per test would cost more than the tests); ``fake_voyage``
resets it before each test so faults, usage counts and the request log never leak between tests.
``voyage_settings`` points ``VoyageSettings`` at it with millisecond backoff, so retry tests stay fast
even when they do not inject a sleep function.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from winnow.settings import VoyageSettings
from winnow_fakes.fake_voyage import FakeVoyageServer

# A read on loopback that the fake answers at once can still wait seconds when the machine runs three
# test workers beside other work: a 2 s timeout failed a contract test that way (ReadTimeout), which
# says nothing about the adapter. Tests of timeouts set their own, well under this.
LOOPBACK_TIMEOUT_SECONDS = 30.0


@pytest.fixture(scope="session")
def fake_voyage_server() -> Iterator[FakeVoyageServer]:
    with FakeVoyageServer() as server:
        yield server


@pytest.fixture
def fake_voyage(fake_voyage_server: FakeVoyageServer) -> Iterator[FakeVoyageServer]:
    """The session's fake Voyage server, clean for this test (no simulated latency or rate limits)."""
    fake_voyage_server.set_simulation(None)
    fake_voyage_server.reset()
    yield fake_voyage_server
    fake_voyage_server.set_simulation(None)
    fake_voyage_server.reset()


@pytest.fixture
def voyage_settings(fake_voyage: FakeVoyageServer) -> VoyageSettings:
    """Settings aimed at the fake server: real limits, near-zero backoff, and a timeout a loaded machine
    cannot reach on loopback (``LOOPBACK_TIMEOUT_SECONDS``); a test of timeouts sets its own."""
    return VoyageSettings(
        api_key=SecretStr(fake_voyage.api_key),
        base_url=fake_voyage.base_url,
        timeout_seconds=LOOPBACK_TIMEOUT_SECONDS,
        max_attempts=3,
        backoff_base_seconds=0.001,
        backoff_max_seconds=0.01,
        rate_limit_window_seconds=0.0,  # tests of the one-minute window set it and inject a sleep
    )
