"""An SQS batch of slow documents through the real ingest handler stops before the function's time does.

Time is a clock the test drives: the Lambda context's remaining time runs down with it, and parsing a slow
document moves it on by what that parse would take (or by its budget, when it takes longer: the parse
worker is killed then). Each document is then parsed for real, by the worker the service uses. Nothing
sleeps, so the figures are exact: a 300 s function, a 30 s reserve, a 120 s parse budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import EmbeddedStack
from winnow.errors import ParseBudgetExceeded
from winnow.ingest.events import s3_event
from winnow.models import DocumentStatus, ParsedDocument
from winnow.parsing.budget import parse_within_budget
from winnow.settings import IngestSettings
from winnow_fakes.fake_voyage import FakeVoyageServer
from winnow_local.context import LocalLambdaContext

TIMEOUT_S = 300.0
RESERVE_S = 30.0
PARSE_BUDGET_S = 120.0
SLOW_S = 200.0  # a slow document needs more than its budget: its parse is stopped at 120 s
FAST_S = 1.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0


class ClockedContext(LocalLambdaContext):
    """A Lambda context whose remaining time runs down with ``clock`` from ``timeout`` seconds."""

    def __init__(self, clock: Clock, timeout: float = TIMEOUT_S) -> None:
        super().__init__()
        self.clock = clock
        self.ends_at = clock.now + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.ends_at - self.clock.now) * 1000))


class TimedParser:
    """The real parse, after moving the clock by what it takes: ``slow`` keys take ``SLOW_S``, stopped at
    the budget they are given (as the worker is killed), other keys ``FAST_S``. Notes every budget."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.budgets: dict[str, float] = {}

    def __call__(self, key: str, data: bytes, settings: IngestSettings) -> ParsedDocument:
        budget = settings.parse_timeout_seconds
        self.budgets[key] = budget
        needs = SLOW_S if "slow" in key else FAST_S
        self.clock.now += min(needs, budget)
        if needs > budget:
            raise ParseBudgetExceeded(f"parsing took longer than the {budget:g} s time budget")
        return parse_within_budget(key, data, settings)


Timed = tuple[EmbeddedStack, Clock, TimedParser]


@pytest.fixture
def timed(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[Timed]:
    settings = IngestSettings(
        parse_timeout_seconds=PARSE_BUDGET_S, time_reserve_seconds=RESERVE_S, batch_concurrency=1
    )
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, ingest=settings)
    clock = Clock()
    parser = TimedParser(clock)
    stack.container.ingest_service().reader.parser = parser
    yield stack, clock, parser
    stack.close()


def batch_of(stack: EmbeddedStack, keys: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    for key in keys:
        stack.put_object(key, f"{key} explains how travel expenses are reimbursed.".encode())
    batch = stack.sqs_batch(*(s3_event([stack.created_record(key)]) for key in keys))
    ids = {key: record["messageId"] for key, record in zip(keys, batch["Records"], strict=True)}
    return batch, ids


def status(stack: EmbeddedStack, key: str) -> DocumentStatus | None:
    record = stack.container.ledger.get("acme", key)
    return record.status if record is not None else None


def handed_back(response: dict[str, Any]) -> list[str]:
    return [failure["itemIdentifier"] for failure in response["batchItemFailures"]]


def test_a_batch_of_slow_documents_stops_before_the_function_times_out(
    timed: Timed,
) -> None:
    stack, clock, parser = timed
    # Given a batch of a good document, three that each use their whole parse budget, and another good one
    keys = ["acme/good-1.txt", "acme/slow-1.txt", "acme/slow-2.txt", "acme/slow-3.txt", "acme/good-2.txt"]
    batch, ids = batch_of(stack, keys)
    # When it reaches the handler of a 300 s function (3 x 120 s of parsing alone would not fit)
    context = ClockedContext(clock)
    response = stack.invoke_ingest_with(batch, context)
    # Then the handler answered before the function's time ran out, keeping its reserve
    assert context.get_remaining_time_in_millis() >= RESERVE_S * 1000
    # and the documents it finished are settled: the good one indexed, two slow ones failed for their
    # own budget (never to be retried)
    assert status(stack, "acme/good-1.txt") == DocumentStatus.INDEXED
    for key in ("acme/slow-1.txt", "acme/slow-2.txt"):
        record = stack.container.ledger.get("acme", key)
        assert record is not None and record.status == DocumentStatus.FAILED
        assert record.error == "parsing took longer than the 120 s time budget"
    # and the third slow document was given only the time left (300 - 241 - 30 = 29 s); stopped by the
    # function's time, not its own budget, it is handed back, not failed
    assert parser.budgets["acme/slow-3.txt"] == pytest.approx(29.0)
    assert status(stack, "acme/slow-3.txt") != DocumentStatus.FAILED
    # and the good document nobody had time to start is handed back untouched
    assert "acme/good-2.txt" not in parser.budgets
    assert status(stack, "acme/good-2.txt") is None
    assert handed_back(response) == [ids["acme/slow-3.txt"], ids["acme/good-2.txt"]]

    # When SQS delivers the two messages again, to a fresh function
    again = {"Records": [r for r in batch["Records"] if r["messageId"] in handed_back(response)]}
    response = stack.invoke_ingest_with(again, ClockedContext(clock))
    # Then both are settled: the slow one fails for its own full budget, the good one is indexed
    assert response == {"batchItemFailures": []}
    assert parser.budgets["acme/slow-3.txt"] == PARSE_BUDGET_S
    assert status(stack, "acme/slow-3.txt") == DocumentStatus.FAILED
    assert status(stack, "acme/good-2.txt") == DocumentStatus.INDEXED


def test_with_less_than_the_reserve_left_no_message_starts(
    timed: Timed,
) -> None:
    stack, clock, parser = timed
    # Given a batch reaching a function with 29 s left, under the 30 s reserve
    keys = [f"acme/doc-{n}.txt" for n in range(4)]
    batch, ids = batch_of(stack, keys)
    context = ClockedContext(clock, timeout=RESERVE_S - 1)
    # When the handler runs it with four documents at a time
    stack.container.settings.ingest.batch_concurrency = 4
    response = stack.invoke_ingest_with(batch, context)
    # Then every message is handed back and no document was touched
    assert sorted(handed_back(response)) == sorted(ids.values())
    assert parser.budgets == {}
    assert all(status(stack, key) is None for key in keys)


def test_a_direct_invoke_out_of_time_answers_retry_for_what_it_did_not_start(
    timed: Timed,
) -> None:
    stack, clock, parser = timed
    # Given one notification of a slow and a good document, with 150 s left
    keys = ["acme/slow-1.txt", "acme/good-1.txt"]
    for key in keys:
        stack.put_object(key, b"Travel expenses are reimbursed within fourteen days.")
    event = s3_event([stack.created_record(key) for key in keys])
    # When it is invoked directly (as sam local invoke does)
    out = stack.invoke_ingest_with(event, ClockedContext(clock, timeout=150.0))
    # Then the slow one used its 120 s budget and failed, and the good one was not started: retry
    assert [r["status"] for r in out["results"]] == ["failed", "retry"]
    assert "acme/good-1.txt" not in parser.budgets
