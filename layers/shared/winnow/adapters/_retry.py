"""The one retry policy of provider calls (Voyage, Bedrock, Ollama, Qdrant), on tenacity: bounded attempts,
exponential backoff with full jitter or the provider's ``Retry-After``, and optionally a deadline, so that
no attempt starts that could not finish in time (in Lambda, the invocation's remaining time: an outage
then becomes our own 503, not a timeout).

An adapter's attempt raises ``Retryable`` for what a later attempt may get past and our own exceptions
for the rest (those pass through at once: the permanent / transient split stays the adapter's). What is
left when attempts or time run out, the adapter words as one of our transient errors (``give_up``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type

from winnow.errors import ProviderRateLimited, ProviderResponseError, ProviderUnavailable, TransientError
from winnow.observability import logger

T = TypeVar("T")
Sleep = Callable[[float], None]


class Retryable(Exception):
    """One failed attempt that a later attempt may get past."""

    def __init__(
        self,
        kind: str,
        message: str,
        retry_after: float | None = None,
        error: TransientError | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind  # "rate_limited" | "unavailable" | "response"
        self.message = message
        self.retry_after = retry_after
        self.error = error  # already in our terms (an adapter that translates before retrying)

    def as_transient(self, message: str, retry_after: float) -> TransientError:
        """Our exception for this kind of failure, once no attempt is left."""
        if self.kind == "rate_limited":
            return ProviderRateLimited(message, retry_after=retry_after)
        if self.kind == "response":
            return ProviderResponseError(message, retry_after=retry_after)
        return ProviderUnavailable(message, retry_after=retry_after)


@dataclass(frozen=True)
class Backoff:
    max_attempts: int
    base_seconds: float
    max_seconds: float
    max_retry_after: float | None = None  # the cap of a provider's Retry-After; None: max_seconds

    def ceiling(self, attempt: int) -> float:
        """The longest pause after failed attempt number ``attempt`` (1-based)."""
        return min(self.max_seconds, self.base_seconds * 2 ** (attempt - 1))


def parse_retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds: a number of seconds or an HTTP date; None when absent or
    unreadable, never negative."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def call_with_retries(
    attempt: Callable[[float | None], T],
    *,
    provider: str,
    backoff: Backoff,
    give_up: Callable[[Retryable | None, int], TransientError],
    sleep: Sleep,
    rng: Callable[[], float],
    deadline: float | None = None,
    min_attempt_seconds: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    log_extra: Mapping[str, Any] | None = None,
) -> T:
    """Run ``attempt(seconds_left)`` (``None`` without a deadline) until it returns, at most
    ``backoff.max_attempts`` times. When attempts or time run out, raises ``give_up(last failure,
    attempts made)``; the failure is None when the deadline left no time for a first attempt."""
    if deadline is not None and deadline - clock() < min_attempt_seconds:
        logger.warning(
            f"{provider}: no time left for an attempt", extra={"left_s": round(deadline - clock(), 2)}
        )
        raise give_up(None, 0)
    made = 0

    def one_attempt() -> T:
        nonlocal made
        made += 1
        return attempt(None if deadline is None else deadline - clock())

    def pause(state: RetryCallState) -> float:
        """Full jitter spreads the retries of many Lambdas throttled at the same moment; a provider's
        ``Retry-After`` says how long to wait, capped so that one answer cannot stall us."""
        retry_after = _failure(state).retry_after
        if retry_after is not None:
            cap = backoff.max_seconds if backoff.max_retry_after is None else backoff.max_retry_after
            return min(retry_after, cap)
        return rng() * backoff.ceiling(state.attempt_number)

    def stop(state: RetryCallState) -> bool:
        """After the last attempt, or when the pause and one more attempt would pass the deadline."""
        if state.attempt_number >= backoff.max_attempts:
            return True
        late = deadline is not None and clock() + state.upcoming_sleep + min_attempt_seconds > deadline
        if late:
            logger.warning(f"{provider}: no time left to retry", extra={"attempt": state.attempt_number})
        return late

    def log(state: RetryCallState) -> None:
        logger.warning(
            f"{provider} call failed, retrying",
            extra={
                **(log_extra or {}),
                "attempt": state.attempt_number,
                "reason": _failure(state).message,
                "delay_s": round(state.upcoming_sleep, 3),
            },
        )

    retrying = Retrying(
        retry=retry_if_exception_type(Retryable),
        wait=pause,
        stop=stop,
        before_sleep=log,
        sleep=sleep,
        reraise=True,
    )
    try:
        return retrying(one_attempt)
    except Retryable as failure:
        raise give_up(failure, made) from failure


def _failure(state: RetryCallState) -> Retryable:
    failure = state.outcome.exception() if state.outcome is not None else None
    assert isinstance(failure, Retryable)  # retry_if_exception_type(Retryable) retries nothing else
    return failure
