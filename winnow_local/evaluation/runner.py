"""Asking the questions: each one as the ``POST /search`` a web app sends (here or over HTTP), with
``relevance_threshold`` 0 so that the scores under the deployment's threshold are seen; a bounded number
at once, Retry-After honoured, and Ctrl-C keeping what is done."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

from winnow_local.errors import CliError
from winnow_local.evaluation.questions import Question
from winnow_local.evaluation.scoring import Outcome, Passage
from winnow_local.runtime import ApiResponse

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_ATTEMPTS = 6
MAX_WAIT_SECONDS = 60.0
REFUSED_TOKEN = frozenset({401, 403})


class Api(Protocol):
    """The one call eval makes: the search API, here or over HTTP (``winnow_local.cli.remote``)."""

    def call_api(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        tenant: str | None = None,
        user: str | None = None,
        groups: Sequence[str] = (),
    ) -> ApiResponse: ...


@dataclass(frozen=True)
class Asker:
    """Who asks and how: the runtime (handlers here or an API), the tenant and caller, the cut-off."""

    runtime: Api
    tenant: str
    user: str | None = None
    groups: Sequence[str] = ()
    top_k: int = 10
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.perf_counter

    def post_search(self, body: dict[str, Any]) -> ApiResponse:
        """One search, retried while the API says it is overloaded, waiting what Retry-After says."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            response = self.runtime.call_api(
                "POST", "/search", body=body, tenant=self.tenant, user=self.user, groups=self.groups
            )
            if response.status in REFUSED_TOKEN:
                raise CliError(f"the API refused the request ({response.error_message}): check the token")
            if response.status not in RETRY_STATUSES or attempt == MAX_ATTEMPTS:
                return response
            self.sleep(retry_after(response, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def deployment_threshold(self, question: Question) -> tuple[float | None, float | None]:
        """The threshold the deployment applies by default (the gate) and its floor for the results
        after the best (None: not said, as before the floor): one request as a web app sends it."""
        response = self.post_search({"query": question.text})
        if response.status != 200:
            raise CliError(f"the API could not be asked ({response.error_message})")
        body = response.json()
        values = (body.get("relevance_threshold"), body.get("relevance_floor"))
        threshold, floor = (float(v) if isinstance(v, int | float) else None for v in values)
        return threshold, floor

    def ask(self, question: Question) -> Outcome:
        started = self.clock()
        response = self.post_search({"query": question.text, "top_k": self.top_k, "relevance_threshold": 0})
        latency = (self.clock() - started) * 1000
        if response.status != 200:
            return Outcome(question, latency_ms=latency, error=response.error_message)
        passages = [
            Passage(str(r.get("key", "")), float(r.get("score") or 0.0), str(r.get("text") or ""))
            for r in response.json().get("results") or []
        ]
        return Outcome(question, passages, latency_ms=latency)


def retry_after(response: ApiResponse, attempt: int) -> float:
    """What the API asked for (seconds), else an exponential wait; bounded either way."""
    headers = {k.lower(): v for k, v in response.headers.items()}
    try:
        asked = float(headers.get("retry-after", ""))
    except ValueError:
        asked = 2.0**attempt
    return max(0.0, min(asked, MAX_WAIT_SECONDS))


class Progress(Protocol):
    """A progress bar (``winnow_local.cli.common.Progress``): one step a question, cleared at the end."""

    def advance(self, label: str = "") -> None: ...

    def clear(self) -> None: ...


def ask_all(
    asker: Asker, questions: Sequence[Question], concurrency: int, progress: Progress
) -> tuple[list[Outcome], bool]:
    """Every question's outcome, in the questions' order, and whether Ctrl-C stopped the run (then only
    those answered are returned). At most ``concurrency`` requests are in flight."""
    results: dict[int, Outcome] = {}
    stop = threading.Event()

    def one(index: int) -> tuple[int, Outcome | None]:
        if stop.is_set():
            return index, None
        return index, asker.ask(questions[index])

    interrupted = False
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    pending: set[Future[tuple[int, Outcome | None]]] = set()
    upcoming = iter(range(len(questions)))
    try:
        for index in upcoming:
            pending.add(pool.submit(one, index))
            if len(pending) >= concurrency:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                _collect(finished, results, progress)
        finished, pending = wait(pending)
        _collect(finished, results, progress)
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
        for future in pending:
            if future.done() and not future.cancelled() and future.exception() is None:
                _collect({future}, results, progress)
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)
        progress.clear()
    return [results[i] for i in sorted(results)], interrupted


def _collect(
    finished: set[Future[tuple[int, Outcome | None]]], results: dict[int, Outcome], progress: Progress
) -> None:
    for future in finished:
        index, outcome = future.result()
        if outcome is not None:
            results[index] = outcome
            progress.advance()
