"""How the generator adapters (Bedrock, Ollama) use the shared retry policy: each attempt gets the
smaller of the configured timeout and the time left before the deadline, and the error after the last
attempt carries a ``Retry-After`` of at least a second for the 503 it becomes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from winnow.adapters._retry import Backoff, Retryable, Sleep, call_with_retries
from winnow.errors import ProviderUnavailable, TransientError

if TYPE_CHECKING:
    from winnow.settings import AnswerSettings

T = TypeVar("T")

__all__ = ["Retryable", "Sleep", "with_retries"]


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
    An attempt needs ``min_attempt_seconds`` before ``deadline``."""

    def timed(left: float | None) -> T:
        return attempt(settings.timeout_seconds if left is None else min(settings.timeout_seconds, left))

    def give_up(failure: Retryable | None, made: int) -> TransientError:
        retry_after = max(1.0, settings.backoff_max_seconds)
        if failure is None:
            return ProviderUnavailable(
                f"{provider}: not enough time left in this request to call the model", retry_after=retry_after
            )
        if failure.retry_after is not None:
            retry_after = max(1.0, failure.retry_after)
        return failure.as_transient(f"{failure.message}; gave up after {made} attempt(s)", retry_after)

    return call_with_retries(
        timed,
        provider=provider,
        backoff=Backoff(settings.max_attempts, settings.backoff_base_seconds, settings.backoff_max_seconds),
        give_up=give_up,
        sleep=sleep,
        rng=rng,
        deadline=deadline,
        min_attempt_seconds=min_attempt_seconds,
        clock=clock,
    )
