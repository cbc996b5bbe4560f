"""Run work in a forked child under a limit of CPU time (``RLIMIT_CPU``), for the linear-time tests.

A backtracking regex holds the GIL and ignores signals until it returns, so a quadratic pattern can only
be stopped from outside its process. A wall-clock deadline on that process counts the machine's load
too: a busy machine turns a linear parse red. The kernel's CPU limit counts only the work the child
does (SIGXCPU at the soft limit, SIGKILL a second later), so the verdict is the same on a quiet
machine and on a loaded one. The parent waits far longer than any limit before it gives up: a bound on
waiting, never the verdict.

The children come from a fork server (``forkserver``: a small interpreter started once per test worker,
with the modules the work needs already imported), not from the worker itself: forking a worker late in
a run (a gigabyte of heap, threads of servers and engines) cost far more than the work, and the cost grew
with whatever the worker had run before.
"""

from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.context
import resource
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

# Waiting for a child that the CPU limit will stop anyway: only a child starved of the CPU for this
# long (far past any limit used here) is given up on.
GIVE_UP_SECONDS = 1800.0


@dataclass(frozen=True)
class Outcome:
    finished: bool  # returned or raised within the CPU limit
    value: Any = None  # what the work returned
    error: str = ""  # what it raised (repr), empty when it returned

    def __bool__(self) -> bool:  # ``assert outcome`` shows what went wrong when it fails
        return self.finished and not self.error


def _limited(cpu_seconds: int, send: Connection, work: Callable[..., Any], args: tuple[Any, ...]) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    try:
        value = work(*args)
    except BaseException as error:  # the parent reports it; nothing may escape a forked child
        send.send(("error", repr(error)[:2000]))
        return
    send.send(("ok", value))


# What the work of the linear-time tests imports, loaded once into the fork server.
PRELOAD = ["tests.support.regex_audit", "tests.unit.parsing.test_linear_time"]


@functools.lru_cache(maxsize=1)
def _context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def call_within_cpu(cpu_seconds: int, work: Callable[..., Any], *args: Any) -> Outcome:
    """``work(*args)`` in a forked child allowed ``cpu_seconds`` of CPU time."""
    context = _context()
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_limited, args=(cpu_seconds, send, work, args))
    child.start()
    send.close()  # the child's copy stays open: its death reads as the end of the pipe
    outcome = Outcome(finished=False)
    try:
        if receive.poll(GIVE_UP_SECONDS):
            kind, payload = receive.recv()
            outcome = Outcome(True, payload) if kind == "ok" else Outcome(True, error=payload)
    except EOFError:  # killed by its CPU limit (or crashed) before it answered
        pass
    finally:
        child.kill()
        child.join()
        receive.close()
    return outcome
