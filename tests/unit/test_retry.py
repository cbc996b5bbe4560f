"""The one retry policy of provider calls (winnow.adapters._retry): how many attempts, how long each
pause, what a deadline allows, and what passes through untouched. The adapters' own tests drive it
through the loopback fakes; these pin the policy's edges with a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from winnow.adapters._retry import Backoff, Retryable, call_with_retries, parse_retry_after
from winnow.errors import ProviderRateLimited, ProviderRejected, ProviderUnavailable, TransientError


class Clock:
    """A monotonic clock that only moves when the policy sleeps or an attempt spends time."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _give_up(failure: Retryable | None, made: int) -> TransientError:
    if failure is None:
        return ProviderUnavailable(f"no attempt ({made})")
    return failure.as_transient(f"{failure.message}; {made} attempt(s)", failure.retry_after or 0.0)


def _run(
    attempt: Callable[[float | None], Any],
    clock: Clock,
    *,
    deadline: float | None = None,
    min_attempt: float = 0.0,
    attempts: int = 4,
) -> Any:
    return call_with_retries(
        attempt,
        provider="Test",
        backoff=Backoff(attempts, 1.0, 5.0),
        give_up=_give_up,
        sleep=clock.sleep,
        rng=lambda: 1.0,
        deadline=deadline,
        min_attempt_seconds=min_attempt,
        clock=clock,
    )


def test_failures_are_retried_with_exponential_pauses_capped_at_the_maximum() -> None:
    # Given a call that fails three times, then answers
    clock, calls = Clock(), []

    def attempt(_left: float | None) -> str:
        calls.append(1)
        if len(calls) < 4:
            raise Retryable("unavailable", "down")
        return "ok"

    # When it is called with 4 attempts, base 1 s, max 5 s and the jitter at its top
    # Then the answer comes back after pauses of 1, 2 and 4 s
    assert _run(attempt, clock) == "ok"
    assert clock.slept == [1.0, 2.0, 4.0]


def test_retry_after_replaces_the_backoff_and_is_capped() -> None:
    clock = Clock()
    answers = iter([Retryable("rate_limited", "slow down", 2.0), Retryable("rate_limited", "slow", 60.0)])

    def attempt(_left: float | None) -> str:
        failure = next(answers, None)
        if failure is not None:
            raise failure
        return "ok"

    assert _run(attempt, clock) == "ok"
    assert clock.slept == [2.0, 5.0]


def test_the_last_failure_is_translated_with_the_attempts_made() -> None:
    clock = Clock()

    def attempt(_left: float | None) -> str:
        raise Retryable("rate_limited", "throttled", 1.0)

    with pytest.raises(ProviderRateLimited, match="throttled; 3 attempt"):
        _run(attempt, clock, attempts=3)
    assert len(clock.slept) == 2


def test_our_own_exceptions_pass_through_at_once() -> None:
    clock, calls = Clock(), []

    def attempt(_left: float | None) -> str:
        calls.append(1)
        raise ProviderRejected("bad request")

    with pytest.raises(ProviderRejected, match="bad request"):
        _run(attempt, clock)
    assert calls == [1] and clock.slept == []


def test_no_attempt_starts_that_the_deadline_cannot_fit() -> None:
    # Given 3 s left and attempts that need 5 s
    clock, calls = Clock(), []
    # When called, Then no attempt is made and the caller learns why
    with pytest.raises(ProviderUnavailable, match=r"no attempt \(0\)"):
        _run(lambda left: calls.append(left), clock, deadline=clock.now + 3, min_attempt=5)
    assert calls == []


def test_no_retry_starts_when_the_pause_would_eat_the_time_left() -> None:
    # Given 6 s left, attempts that need 2 s and take 2 s, and a first pause of 1 s
    clock, lefts = Clock(), []

    def attempt(left: float | None) -> str:
        lefts.append(left)
        clock.now += 2
        raise Retryable("unavailable", "timed out")

    # When called: attempt 1 (4 s left after it), pause 1 s, attempt 2 (1 s left): no room for a third
    with pytest.raises(ProviderUnavailable, match="timed out; 2 attempt"):
        _run(attempt, clock, deadline=clock.now + 6, min_attempt=2)
    # Then each attempt was told the time it had
    assert lefts == [6.0, 3.0]
    assert clock.slept == [1.0]


@pytest.mark.parametrize(
    ("header", "seconds"),
    [(None, None), ("3", 3.0), ("0.5", 0.5), ("-4", 0.0), ("inf", None), ("nan", None), ("soon", None)],
)
def test_retry_after_headers(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


def test_retry_after_as_an_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    parsed = parse_retry_after(when)
    assert parsed is not None and 25 <= parsed <= 31
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(past) == 0.0
