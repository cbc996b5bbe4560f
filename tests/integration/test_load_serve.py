"""``winnow serve`` under a bounded concurrent load from another process on loopback.

The true embedded default, as a newcomer runs it: ``python -m winnow_local ingest`` indexes a few documents
with the local ONNX model, ``python -m winnow_local serve --port 0`` serves them, and
``tests/support/loadgen.py`` (a third process) drives 20 keep-alive clients for a bounded time. Every
answer must be a 200 with the expected top document; latency percentiles are printed, never asserted
(figures depend on the machine). ``WINNOW_LOAD_SECONDS`` sets the duration (10 s here; the documented
run in docs/guarantees.md uses 30)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOADGEN = ROOT / "tests" / "support" / "loadgen.py"
TENANT = "acme"
CLIENTS = 20
SECONDS = float(os.environ.get("WINNOW_LOAD_SECONDS", "10"))

DOCUMENTS = {
    "handbook/holidays.md": "# Holidays\n\nEvery employee receives twenty-eight days of paid holiday "
    "per year. Unused days may be carried over into the first quarter of the next year.\n",
    "handbook/expenses.md": "# Expenses\n\nTravel expenses are reimbursed within fourteen days when "
    "submitted with receipts through the finance portal.\n",
    "it/laptops.txt": "Laptops must use full-disk encryption and lock the screen after five minutes "
    "of inactivity. Report lost laptops to the security desk within one hour.\n",
    "product/beacon.md": "# Beacon setup\n\nHold the pairing button on the Beacon for ten seconds until the "
    "light blinks blue, then open the companion app to finish pairing.\n",
}
EXPECT = {
    "how many days of paid holiday do employees get": "acme/handbook/holidays.md",
    "when are travel expenses reimbursed": "acme/handbook/expenses.md",
    "what to do when a laptop is lost": "acme/it/laptops.txt",
    "how do I pair the beacon device": "acme/product/beacon.md",
}


def environment(home: Path) -> dict[str, str]:
    """The embedded default: no AWS, no Voyage; state under a fresh WINNOW_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT", "VOYAGE_", "QDRANT_"))}
    for name in ("WINNOW_BUCKET", "WINNOW_LEDGER_TABLE", "WINNOW_SEARCH_ALLOW_TENANT_HEADER"):
        env.pop(name, None)
    env["WINNOW_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A ``winnow serve`` process with the documents ingested; yields its base URL."""
    home = tmp_path / "home"
    sources = tmp_path / "docs"
    for relative, text in DOCUMENTS.items():
        path = sources / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    env = environment(home)
    ingest = subprocess.run(
        [sys.executable, "-m", "winnow_local", "ingest", str(sources), "--tenant", TENANT, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert ingest.returncode == 0, ingest.stderr[-2000:]
    statuses = [json.loads(line)["status"] for line in ingest.stdout.splitlines() if line.strip()]
    assert statuses == ["indexed"] * len(DOCUMENTS), ingest.stdout

    with running_server(env) as url:
        yield url


@contextmanager
def running_server(env: dict[str, str], ignore_ctrl_c: bool = False) -> Iterator[str]:
    """``winnow serve --port 0`` in a process of its own; yields its base URL and stops it on the way out
    with SIGTERM, which the server handles as Ctrl-C. ``ignore_ctrl_c``: started as a script's background
    job is, with SIGINT ignored, which the server inherits and keeps (so SIGINT would never stop it)."""

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    server = subprocess.Popen(
        [sys.executable, "-m", "winnow_local", "serve", "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint if ignore_ctrl_c else None,
    )
    url: list[str] = []
    ready = threading.Event()
    stderr: list[str] = []

    def watch() -> None:  # read stderr until the server says where it listens, then keep draining it
        assert server.stderr is not None
        for line in server.stderr:
            stderr.append(line)
            found = re.search(r"serving on (http://127\.0\.0\.1:\d+)", line)
            if found and not url:
                url.append(found.group(1))
                ready.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        assert ready.wait(120), "winnow serve did not start"
        yield url[0]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
            raise AssertionError("winnow serve did not stop on SIGTERM") from None
        watcher.join(timeout=10)
        assert not any("Traceback" in line for line in stderr), "".join(stderr)


def test_serve_answers_twenty_concurrent_clients_without_errors(served: str) -> None:
    # Given a served index of four documents
    command = [
        sys.executable,
        str(LOADGEN),
        "--url",
        served,
        "--tenant",
        TENANT,
        "--clients",
        str(CLIENTS),
        "--seconds",
        str(SECONDS),
        "--max-requests",
        "5000",
    ]
    for query, key in EXPECT.items():
        command += ["--expect", f"{query}={key}"]
    command += ["--document", "acme/handbook/holidays.md", "--document", "handbook/expenses.md"]
    # When 20 clients in another process hammer it for a bounded time (the timeout bounds the whole run)
    run = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 180)
    summary = json.loads(run.stdout)
    print(
        f"\nwinnow serve under load: {summary['clients']} clients x {summary['seconds']} s: "
        f"{summary['requests']} requests, {summary['throughput_rps']} req/s, "
        f"p50 {summary['p50_ms']} ms, p95 {summary['p95_ms']} ms, p99 {summary['p99_ms']} ms, "
        f"max {summary['max_ms']} ms; by route {json.dumps(summary['by_route'])}"
    )
    # Then every request got a 200 with the right top document
    assert run.returncode == 0, json.dumps(summary)
    assert summary["errors"] == 0 and summary["wrong_answers"] == 0, summary["error_samples"]
    assert set(summary["statuses"]) == {"200"}
    assert summary["requests"] >= CLIENTS
    assert set(summary["by_route"]) == {"search", "documents", "status", "health"}


def test_serve_started_with_ctrl_c_ignored_stops_on_sigterm(tmp_path: Path) -> None:
    """Run from make in CI, every fresh-clone run of the test above waited 20 s for the server to stop:
    it had inherited SIGINT ignored (SigIgn in /proc showed it) and the teardown sent SIGINT. SIGTERM,
    which ``winnow serve`` handles itself, stops it however it was started."""
    # Given a server started as a background job of a script is, with Ctrl-C (SIGINT) ignored
    with running_server(environment(tmp_path / "home"), ignore_ctrl_c=True) as url:
        # When it is up (it answers), then stopped with SIGTERM on the way out of the block
        response = urllib.request.urlopen(f"{url}/health", timeout=30)
        status = response.status
        response.close()
    # Then it answered and stopped cleanly (running_server fails the test otherwise)
    assert status == 200
