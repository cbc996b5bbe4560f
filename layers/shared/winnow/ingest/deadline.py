"""The ingest function's own time limit, as the Lambda context reports it.

A batch of slow documents used to run until Lambda killed the function: every message of the batch,
finished ones included, went back to the queue and spent one of its receives. Now the handler asks the
deadline before it starts each message: once less than the reserve (``WINNOW_INGEST_TIME_RESERVE_SECONDS``,
time to embed and write a parsed document and answer) is left, the messages not yet started are handed
back in the partial batch response. A document already running has its parse budget cut to the time
left; a parse stopped by that cut (not by its own budget) is handed back too, never recorded as failed.

The deadline of the message a thread works on is thread-local (``bound``), like the embedding gather,
so the service reads it where it parses without it passing through every call."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from winnow.errors import TransientError

_bound = threading.local()


class OutOfTime(TransientError):
    """The function's time ran out before this message could be finished: SQS delivers it again."""


class Deadline:
    """Seconds left to start or finish work: the function's remaining time less the reserve."""

    def __init__(self, remaining_ms: Callable[[], int], reserve_seconds: float) -> None:
        self._remaining_ms = remaining_ms
        self.reserve_seconds = reserve_seconds

    @classmethod
    def of(cls, context: Any, reserve_seconds: float) -> Deadline | None:
        """The deadline of a Lambda ``context``; None when there is none (a direct call without one)."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        return cls(remaining, reserve_seconds) if callable(remaining) else None

    def seconds_left(self) -> float:
        return self._remaining_ms() / 1000.0 - self.reserve_seconds

    def spent(self) -> bool:
        """No time left to start another message."""
        return self.seconds_left() <= 0

    @contextmanager
    def bound(self) -> Iterator[None]:
        """This thread works for this deadline inside the block (see ``current``)."""
        before = getattr(_bound, "deadline", None)
        _bound.deadline = self
        try:
            yield
        finally:
            _bound.deadline = before


def current() -> Deadline | None:
    """The deadline of the message this thread works on, if the handler set one."""
    deadline: Deadline | None = getattr(_bound, "deadline", None)
    return deadline


def parse_budget(configured: float) -> tuple[float, bool]:
    """The parse time budget for a document starting now: the configured one, or the time left when
    that is shorter (then True: a parse stopped at that budget ran out of the function's time)."""
    deadline = current()
    if deadline is None:
        return configured, False
    left = deadline.seconds_left()
    if left <= 0:
        raise OutOfTime("the function's time ran out before this document was parsed; handed back")
    return (left, True) if left < configured else (configured, False)


# The parse worker's own clock and the context's millisecond count never agree exactly.
_SLACK_SECONDS = 1.0


def ran_out() -> bool:
    """Whether this thread's deadline has (all but) passed: a parse budget cut to it was used up."""
    deadline = current()
    return deadline is not None and deadline.seconds_left() <= _SLACK_SECONDS
