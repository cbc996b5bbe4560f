"""Bits every benchmark shares: argument types, progress on stderr, the machine description."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
# moto's stand-in credentials: a run never reaches real AWS.
AWS_TESTING = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}

# The first lines of a benchmark's child process that stands for the `winnow` command: the process set-up
# the command does before anything else. A checkout from before that set-up existed has no such module.
AS_THE_COMMAND = """
try:
    from winnow_local.memory import limit_malloc_arenas
    limit_malloc_arenas()
except ImportError:
    pass
"""


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (share in (0, 1])."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), math.ceil(share * len(ordered) - 1e-9)))
    return ordered[rank - 1]


def rss_mb(field: str = "VmRSS") -> float:
    """This process's ``VmRSS`` (resident now) or ``VmHWM`` (its high-water mark) in MB; 0 off Linux."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def child_env(root: Path = REPO_ROOT, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This environment for a child process on ``root``'s packages, without the variables that start
    with ``drop``. PYTHONDONTWRITEBYTECODE is dropped, not set to "0": any value stops the bytecode cache
    that an untimed first run is there to fill."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(root / "layers" / "shared"), str(root)])
    return env


# Child code's own peak memory: VmHWM belongs to the new address space, while ``ru_maxrss`` survives
# exec on Linux, so a child of a large process would report that process's peak.
CHILD_PEAK_RSS = """
def _peak_rss_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))
"""


def run_child(code: str, args: Sequence[str], env: dict[str, str], cwd: Path = REPO_ROOT) -> dict[str, Any]:
    """Run ``python -c code`` to the end; the JSON object of its last stdout line."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=cwd, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child process failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


class ChildProcess:
    """``serve(conn, *args)`` in a spawned child process, so what a stand-in service costs is not this
    process's CPU or memory: it sends one greeting (``self.greeting``), then answers each request."""

    def __init__(self, serve: Callable[..., None], *args: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=serve, args=(child, *args), daemon=True)
        self._process.start()
        self.greeting: Any = self._conn.recv()

    def ask(self, request: Any) -> Any:
        self._conn.send(request)
        return self._conn.recv()

    def close(self) -> None:
        """Wait a little for the child to end after its last answer; else stop it."""
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=10)


def moto_server(conn: Any) -> None:
    """For ``ChildProcess``: moto's server (S3, SQS, DynamoDB over HTTP) on loopback without its access
    log (a formatted line per request); greets with its URL, stops on any request."""
    import logging

    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.environ.update(AWS_TESTING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    conn.send(f"http://{host}:{port}")
    conn.recv()
    conn.send(True)
    server.stop()


def existing_file(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {path}")
    return path


class Progress:
    """One-line progress notes on stderr, so stdout carries only the table or the JSON object."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.started
            print(f"[{elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram_gb: float | None = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "load_average": load,  # other work on the machine skews timings: recorded with them
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": ram_gb,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    return "\n".join(out)


def quiet_known_warnings() -> None:
    """Qdrant local mode warns that payload indexes do nothing there; true, and known: not news here."""
    warnings.filterwarnings("ignore", message="Payload indexes have no effect in the local Qdrant")


@contextlib.contextmanager
def stdout_reserved_for_result() -> Iterator[None]:
    """Send anything printed during a run to stderr, so stdout carries only the result. Powertools'
    Metrics prints an EMF blob to stdout whenever 100 values of one metric pile up, even with
    ``POWERTOOLS_METRICS_DISABLED`` (disabled flushes never clear the set): a long ingest hits that."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
