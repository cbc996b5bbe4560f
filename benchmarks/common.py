"""Bits every benchmark shares: argument types, progress on stderr, the machine description."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
