"""The retry loop both generator adapters share: bounded attempts, exponential backoff with full jitter
(or the provider's ``Retry-After``), and a deadline so that no attempt starts that could not finish in
time (in Lambda, the invocation's remaining time: an outage then becomes our own 503, not a timeout)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from winnow.errors import ProviderRateLimited, ProviderResponseError, ProviderUnavailable
from winnow.observability import logger

if TYPE_CHECKING:
    from winnow.settings import AnswerSettings

T = TypeVar("T")
Sleep = Callable[[float], None]


class Retryable(Exception):
    """One failed attempt that a later attempt may get past."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind  # "rate_limited" | "unavailable" | "response"
        self.message = message
        self.retry_after = retry_after


def with_retries(
    provider: str,
    settings: AnswerSettings,
    attempt: Callable[[float], T],
    *,
    deadline: float | None,
    min_attempt_seconds: float,
    sleep: Sleep,
    rng: Callable[[], float],
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run ``attempt(timeout_seconds)`` until it returns, at most ``settings.max_attempts`` times.
    ``attempt`` raises ``Retryable`` for what is worth retrying and our own exceptions otherwise.
    An attempt needs ``min_attempt_seconds`` before ``deadline``; the timeout it gets is the smaller of
    the setting and what is left."""
    failure: Retryable | None = None
    attempts = settings.max_attempts
    made = 0
    for number in range(1, attempts + 1):
        timeout = settings.timeout_seconds
        if deadline is not None:
            left = deadline - clock()
            if left < min_attempt_seconds:
                logger.warning(
                    f"{provider}: no time left for another attempt",
                    extra={"attempt": number, "left_s": round(left, 2)},
                )
                break
            timeout = min(timeout, left)
        made += 1
        try:
            return attempt(timeout)
        except Retryable as exc:
            failure = exc
        if number == attempts:
            break
        ceiling = min(settings.backoff_max_seconds, settings.backoff_base_seconds * 2 ** (number - 1))
        delay = failure.retry_after if failure.retry_after is not None else rng() * ceiling
        delay = min(delay, settings.backoff_max_seconds)
        if deadline is not None and clock() + delay + min_attempt_seconds > deadline:
            logger.warning(f"{provider}: no time left to retry", extra={"attempt": number})
            break
        logger.warning(
            f"{provider} call failed, retrying",
            extra={"attempt": number, "reason": failure.message, "delay_s": round(delay, 3)},
        )
        sleep(delay)
    retry_after = max(1.0, settings.backoff_max_seconds)
    if failure is None:
        raise ProviderUnavailable(
            f"{provider}: not enough time left in this request to call the model", retry_after=retry_after
        )
    message = f"{failure.message}; gave up after {made} attempt(s)"
    if failure.retry_after is not None:
        retry_after = max(1.0, failure.retry_after)
    if failure.kind == "rate_limited":
        raise ProviderRateLimited(message, retry_after=retry_after)
    if failure.kind == "response":
        raise ProviderResponseError(message, retry_after=retry_after)
    raise ProviderUnavailable(message, retry_after=retry_after)
