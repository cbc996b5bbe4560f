"""Qdrant errors in Winnow's terms, and every Qdrant call run under the one retry policy (``_retry``).

One translator serves the store and the active-collection pointer on every engine: Qdrant Cloud over
REST, qdrant-client's local mode and Qdrant Edge. Connection problems, timeouts, 429 and 5xx are
transient (retried a bounded number of times within a time budget, honouring a 429's Retry-After, then
``ProviderRateLimited`` or ``ProviderUnavailable``); refused credentials and a
missing collection are configuration errors; any other 4xx is a rejection of the request. The in-process
engines report bad input as ``ValueError`` (local mode) and storage failures as a bare ``Exception``
(Edge, which has no error types of its own)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from winnow.adapters._retry import Backoff, Retryable, call_with_retries, parse_retry_after
from winnow.errors import (
    ConfigurationError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
    TransientError,
    WinnowError,
)

T = TypeVar("T")
# Qdrant answers in milliseconds: short jittered pauses, and a server's Retry-After within a cap.
BACKOFF = (0.2, 2.0, 10.0)  # base, ceiling, Retry-After cap (seconds)


class CollectionNotFound(ConfigurationError):
    """The collection a call addressed does not exist (dropped by hand, or not created yet)."""


def translate(
    exc: Exception, what: str, rejected: type[WinnowError] = ProviderRejected, collection: str | None = None
) -> WinnowError | None:
    """Our exception for a Qdrant or transport error, or None for a bug that should surface as is.
    ``collection`` names the collection the call addressed, for the message of a 404."""
    from qdrant_client.common.client_exceptions import QdrantException, ResourceExhaustedResponse
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if isinstance(exc, ResourceExhaustedResponse):  # what qdrant-client raises for a 429 with Retry-After
        return ProviderRateLimited(
            f"Qdrant {what} throttled (HTTP 429)", retry_after=float(exc.retry_after_s)
        )
    if isinstance(exc, QdrantException):  # a 429 whose Retry-After is not a number of seconds
        return ProviderRateLimited(f"Qdrant {what} throttled (HTTP 429)")
    if isinstance(exc, UnexpectedResponse):
        status = exc.status_code
        if status is None or status >= 500:
            return ProviderUnavailable(f"Qdrant {what} failed: HTTP {status}")
        if status == 429:
            return ProviderRateLimited(
                f"Qdrant {what} throttled (HTTP 429)",
                retry_after=parse_retry_after(exc.headers.get("retry-after") if exc.headers else None),
            )
        if status in (401, 403):
            return ConfigurationError(f"Qdrant refused the credentials (HTTP {status}) on {what}")
        if status == 404:
            subject = f"collection {collection} not found" if collection else "not found"
            return CollectionNotFound(f"Qdrant {what}: {subject} ({_detail(exc)})")
        return rejected(f"Qdrant rejected {what} (HTTP {status}): {_detail(exc)}")
    if isinstance(exc, ResponseHandlingException):
        source = getattr(exc, "source", None)
        return ProviderUnavailable(f"Qdrant {what} failed: {type(source or exc).__name__}")
    if isinstance(exc, ConnectionError | TimeoutError):
        return ProviderUnavailable(f"Qdrant {what} failed: {type(exc).__name__}")
    import httpx

    if isinstance(exc, httpx.TransportError):
        return ProviderUnavailable(f"Qdrant {what} failed: {type(exc).__name__}")
    if isinstance(exc, ValueError):  # local mode: the request (or the collection it names) is wrong
        return rejected(f"Qdrant rejected {what}: {str(exc)[:200]}")
    if type(exc) is Exception:  # Qdrant Edge: the engine failed (storage, WAL), not the caller's input
        return ProviderUnavailable(f"Qdrant Edge {what} failed: {str(exc)[:200]}")
    return None


class QdrantCaller:
    """Runs one Qdrant call under ``guard`` (local mode has no locks of its own), translated, and retried
    by the one policy of ``_retry`` while the error is transient and attempts remain."""

    def __init__(
        self,
        max_attempts: int,
        sleep: Callable[[float], None],
        guard: AbstractContextManager[Any] | None = None,
        budget_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_attempts = max_attempts
        self._sleep = sleep
        self._guard = guard or nullcontext()
        self._budget = budget_seconds
        self._clock = clock

    def __call__(
        self,
        what: str,
        fn: Callable[[], T],
        *,
        rejected: type[WinnowError] = ProviderRejected,
        retry: bool = True,
        collection: str | None = None,
    ) -> T:
        def attempt(_seconds_left: float | None) -> T:
            try:
                with self._guard:
                    return fn()
            except WinnowError:
                raise
            except Exception as exc:
                error = translate(exc, what, rejected, collection)
                if error is None:
                    raise
                if isinstance(error, TransientError):
                    raise Retryable("unavailable", str(error), error.retry_after, error) from exc
                raise error from exc

        def give_up(failure: Retryable | None, _made: int) -> TransientError:
            if failure is None or failure.error is None:
                return ProviderUnavailable(f"Qdrant {what}: no time left to retry")
            return failure.error

        # A throttled call waits as long as Qdrant's Retry-After asks, but all its retries fit in the
        # budget: past it the caller gets our transient error (503 with Retry-After), not a timeout.
        deadline = None if self._budget is None or not retry else self._clock() + self._budget
        return call_with_retries(
            attempt,
            provider="Qdrant",
            backoff=Backoff(self._max_attempts if retry else 1, *BACKOFF),
            give_up=give_up,
            sleep=self._sleep,
            rng=random.random,
            deadline=deadline,
            clock=self._clock,
            log_extra={"operation": what},
        )


def _detail(exc: Any) -> str:
    try:
        structured = exc.structured()
        message = structured.get("status", {}).get("error") if isinstance(structured, dict) else None
    except Exception:
        message = None
    return str(message or exc.reason_phrase or "no detail")[:200]
