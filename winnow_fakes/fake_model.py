"""What the loopback fake Bedrock and Ollama servers share: a deterministic stand-in for a language
model, faults to inject and a request log, on the loopback server (``winnow_fakes.loopback``). Standard
library only.

The "model" reads Winnow's prompt the way a naive model reads text: it finds ``<passage number="n">``
elements and the ``<question>`` with regular expressions (the last question wins), answers with the
sentence of the passage that shares most words with the question, cites it as ``[n]``, and obeys any
line starting with ``SYSTEM:`` that it finds outside a passage. So a document that breaks out of its
passage element would take it over: the injection test proves the prompt's escaping prevents that.
With no passage sharing a word with the question it says it cannot find the answer (citing nothing).
Tests may also script the next replies word for word (``fake.script("... [7]")``).

A follow-up rewrite request (``<follow_up>`` in the user turn) is answered, unscripted, with the follow-up
followed by the last ``<asked>`` question: a naive but deterministic standalone question."""

from __future__ import annotations

import html
import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from winnow_fakes.loopback import LoopbackHandler, LoopbackServer
from winnow_fakes.voyage_text import count_tokens, terms

FaultKind = Literal["status", "delay", "disconnect", "malformed_json"]

_PASSAGES = re.compile(r"<passages>(.*?)</passages>", re.DOTALL)  # the first closing tag ends the data
_PASSAGE = re.compile(r'<passage number="(\d+)"[^>]*>\n?(.*?)\n?</passage>', re.DOTALL)
_QUESTION = re.compile(r"<question>\n?(.*?)\n?</question>", re.DOTALL)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_FOLLOW_UP = re.compile(r"<follow_up>\n?(.*?)\n?</follow_up>", re.DOTALL)
_ASKED = re.compile(r"<asked>(.*?)</asked>", re.DOTALL)
# The markup inside a passage (its highlighted sentences and its context): read as the passage's text.
_PASSAGE_MARKUP = re.compile(r"</?(?:highlight|before|after)>")
NOT_FOUND_REPLY = "I cannot find that in the passages."


@dataclass(frozen=True)
class ModelFault:
    """One injected misbehaviour, consumed by the next request."""

    kind: FaultKind
    status: int = 500
    error_type: str | None = None  # Bedrock's x-amzn-ErrorType; default from the status
    retry_after: str | None = None
    delay_seconds: float = 0.0

    @classmethod
    def http_status(
        cls, status: int, error_type: str | None = None, retry_after: float | None = None
    ) -> Self:
        return cls(
            "status",
            status=status,
            error_type=error_type,
            retry_after=None if retry_after is None else str(retry_after),
        )

    @classmethod
    def throttled(cls) -> Self:
        return cls.http_status(429)

    @classmethod
    def unavailable(cls) -> Self:
        return cls.http_status(503)

    @classmethod
    def delay(cls, seconds: float) -> Self:
        return cls("delay", delay_seconds=seconds)

    @classmethod
    def disconnect(cls) -> Self:
        return cls("disconnect")

    @classmethod
    def malformed_json(cls) -> Self:
        return cls("malformed_json")


@dataclass(frozen=True)
class ModelRequest:
    path: str
    headers: dict[str, str]
    body: Any
    status: int


@dataclass(frozen=True)
class Reply:
    text: str
    input_tokens: int
    output_tokens: int


def read_prompt(system: str, user: str) -> Reply:
    """The deterministic "model" (see the module docstring)."""
    follow_up = _FOLLOW_UP.search(user)
    if follow_up is not None:
        asked = _ASKED.findall(user)
        text = html.unescape(follow_up.group(1) + (f" {asked[-1]}" if asked else ""))
        return Reply(text, count_tokens(system) + count_tokens(user), count_tokens(text))
    block = _PASSAGES.search(user)
    inside = block.group(1) if block else ""
    outside = user.replace(block.group(0), "") if block else user
    passages = [
        (int(n), html.unescape(_PASSAGE_MARKUP.sub("", text))) for n, text in _PASSAGE.findall(inside)
    ]
    questions = _QUESTION.findall(outside) or _QUESTION.findall(user)
    question = html.unescape(questions[-1]) if questions else ""
    commands = [line.split(":", 1)[1].strip() for line in outside.splitlines() if line.startswith("SYSTEM:")]
    text = commands[-1] if commands else answer_from(question, passages)
    return Reply(text, count_tokens(system) + count_tokens(user), count_tokens(text))


def answer_from(question: str, passages: list[tuple[int, str]]) -> str:
    wanted = set(terms(question))
    best: tuple[int, int, str] | None = None  # (overlap, -number, sentence)
    for number, text in passages:
        for sentence in _SENTENCE.findall(text):
            overlap = len(wanted & set(terms(sentence)))
            if overlap and (best is None or (overlap, -number) > best[:2]):
                best = (overlap, -number, sentence.strip())
    if best is None:
        return NOT_FOUND_REPLY
    sentence = best[2].rstrip(".!?")
    return f"{sentence} [{-best[1]}]."


@dataclass
class _State:
    faults: deque[ModelFault] = field(default_factory=deque)
    outage: ModelFault | None = None
    scripted: deque[str] = field(default_factory=deque)
    log: list[ModelRequest] = field(default_factory=list)
    cancelled: threading.Event = field(default_factory=threading.Event)


class FakeModelServer(LoopbackServer):
    """The controls both fakes share. Subclasses answer ``handle(handler, path, body)``."""

    name = "fake-model"

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self._state = _State()

    @property
    def url(self) -> str:
        return self.origin

    def cancel_in_flight(self) -> None:
        with self._lock:
            self._state.cancelled.set()

    # control ------------------------------------------------------------------------------------------
    def inject(self, *faults: ModelFault) -> None:
        with self._lock:
            self._state.faults.extend(faults)

    def set_outage(self, fault: ModelFault | None) -> None:
        with self._lock:
            self._state.outage = fault

    def script(self, *replies: str) -> None:
        """The next requests are answered with these texts, in order, instead of the reader's answer."""
        with self._lock:
            self._state.scripted.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._state.cancelled.set()
            self._state = _State()

    @property
    def requests(self) -> list[ModelRequest]:
        with self._lock:
            return list(self._state.log)

    @property
    def total_requests(self) -> int:
        return len(self.requests)

    # used by the handler --------------------------------------------------------------------------------
    def _arrive(self) -> tuple[_State, ModelFault | None]:
        with self._lock:
            state = self._state
            fault = state.faults.popleft() if state.faults else state.outage
            return state, fault

    def _reply(self, state: _State, system: str, user: str) -> Reply:
        with self._lock:
            scripted = state.scripted.popleft() if state.scripted else None
        if scripted is not None:
            return Reply(scripted, count_tokens(system) + count_tokens(user), count_tokens(scripted))
        return read_prompt(system, user)

    def _record(self, state: _State, request: ModelRequest) -> None:
        with self._lock:
            state.log.append(request)

    def handle(self, handler: Handler, path: str, body: Any, state: _State) -> None:
        raise NotImplementedError

    def send_fault(self, handler: Handler, fault: ModelFault) -> None:
        raise NotImplementedError


class Handler(LoopbackHandler):
    fake: FakeModelServer

    def do_POST(self) -> None:
        raw = self.read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        state, fault = self.fake._arrive()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        status = fault.status if fault is not None and fault.kind == "status" else 200
        self.fake._record(state, ModelRequest(self.path, headers, body, status))  # on arrival
        if fault is not None and fault.kind == "delay":
            state.cancelled.wait(fault.delay_seconds)
            fault = None
        if fault is not None and fault.kind == "disconnect":
            self.close_connection = True
            self.connection.close()
            return
        if fault is not None and fault.kind == "malformed_json":
            self.send_raw(200, b"{not json", {"Content-Type": "application/json"})
            return
        if fault is not None:
            self.fake.send_fault(self, fault)
            return
        self.fake.handle(self, self.path, body, state)


FakeModelServer.handler = Handler  # defined after the server, whose methods it calls
