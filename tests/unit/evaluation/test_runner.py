"""Asking the questions: Retry-After honoured, a bounded number in flight, Ctrl-C keeps what is done.
The runtime here is a recording stand-in for the API; the whole command meets the real handlers in
tests/integration/test_eval_cli.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from winnow_local.cli.common import Progress
from winnow_local.errors import CliError
from winnow_local.evaluation.questions import Question
from winnow_local.evaluation.runner import Asker, ask_all
from winnow_local.runtime import ApiResponse


def ok(score: float = 0.5) -> ApiResponse:
    body = {"results": [{"key": "t/a.md", "score": score, "text": "a"}], "relevance_threshold": 0.23}
    return ApiResponse(200, {}, json.dumps(body).encode())


class Scripted:
    """Answers from a script, one per call; records the bodies and the most requests seen at once."""

    def __init__(
        self, answers: list[ApiResponse | BaseException], gate: threading.Event | None = None
    ) -> None:
        self.answers = answers
        self.bodies: list[Any] = []
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        self.gate = gate

    def call_api(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Any = None,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        user: str | None = None,
        groups: Sequence[str] = (),
    ) -> ApiResponse:
        with self.lock:
            self.bodies.append(body)
            answer = self.answers.pop(0) if self.answers else ok()
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                self.gate.wait(5)
            if isinstance(answer, BaseException):
                raise answer
            return answer
        finally:
            with self.lock:
                self.in_flight -= 1

    def has_documents(self, tenant: str) -> bool:
        return True


QUESTIONS = [Question(f"q{i}", f"question {i}", {"a.md": 1}) for i in range(6)]


def test_an_overloaded_api_is_asked_again_after_what_retry_after_says() -> None:
    waits: list[float] = []
    runtime = Scripted([ApiResponse(429, {"Retry-After": "7"}, b"{}"), ApiResponse(503, {}, b"{}"), ok(0.9)])
    outcome = Asker(runtime, "t", sleep=waits.append).ask(QUESTIONS[0])
    assert waits == [7.0, 4.0]  # as asked, then an exponential wait when the API gives none
    assert outcome.error is None and outcome.top_score == 0.9
    assert runtime.bodies[-1] == {"query": "question 0", "top_k": 10, "relevance_threshold": 0}


def test_an_api_that_stays_overloaded_gives_an_error_for_that_question_not_a_crash() -> None:
    runtime = Scripted([ApiResponse(503, {"Retry-After": "1"}, b'{"error": {"message": "busy"}}')] * 6)
    outcome = Asker(runtime, "t", sleep=lambda _: None).ask(QUESTIONS[0])
    assert outcome.error == "busy"


def test_a_refused_token_stops_the_run_with_a_clear_message() -> None:
    runtime = Scripted([ApiResponse(401, {}, b'{"message": "Unauthorized"}')])
    with pytest.raises(CliError, match="check the token"):
        Asker(runtime, "t").ask(QUESTIONS[0])


def test_no_more_than_the_concurrency_is_in_flight() -> None:
    gate = threading.Event()
    runtime = Scripted([], gate)
    timer = threading.Timer(0.05, gate.set)  # releases the first requests; the count is what is asserted
    timer.start()
    outcomes, interrupted = ask_all(Asker(runtime, "t"), QUESTIONS, 2, Progress(len(QUESTIONS)))
    timer.join()
    assert not interrupted and [o.question.id for o in outcomes] == [q.id for q in QUESTIONS]
    assert runtime.most_in_flight <= 2


def test_ctrl_c_keeps_the_questions_already_answered() -> None:
    runtime = Scripted([ok(), ok(), KeyboardInterrupt()])
    outcomes, interrupted = ask_all(Asker(runtime, "t"), QUESTIONS, 1, Progress(len(QUESTIONS)))
    assert interrupted
    assert [o.question.id for o in outcomes] == ["q0", "q1"]


def test_the_deployment_says_its_threshold_and_floor_and_eval_serves_what_they_keep() -> None:
    from winnow_local.evaluation.scoring import Outcome, Passage

    # Given a deployment that answers with its gate and floor
    body = {"results": [], "relevance_threshold": 0.24, "relevance_floor": 0.12}
    asker = Asker(Scripted([ApiResponse(200, {}, json.dumps(body).encode())]), "t", None, (), top_k=10)
    assert asker.deployment_threshold(Question("q0", "question 0", {"a.md": 1})) == (0.24, 0.12)
    # Then a question is served nothing when its best passage is under the threshold, else every passage
    # over the floor (a deployment that says no floor cuts every passage at the threshold)
    passages = [Passage("t/a.md", 0.3, "a"), Passage("t/b.md", 0.2, "b"), Passage("t/c.md", 0.05, "c")]
    outcome = Outcome(Question("q1", "question 1", {"a.md": 1}), passages)
    assert [p.key for p in outcome.served(0.24, 0.12)] == ["t/a.md", "t/b.md"]
    assert [p.key for p in outcome.served(0.24)] == ["t/a.md"]
    assert outcome.served(0.35, 0.0) == []
    # And the floor is never above the threshold it serves with
    assert [p.key for p in outcome.served(0.2, 0.25)] == ["t/a.md", "t/b.md"]
