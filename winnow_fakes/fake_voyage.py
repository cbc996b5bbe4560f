"""A loopback stand-in for the Voyage AI REST API (``/v1/embeddings`` and ``/v1/rerank``).

Why it exists: our ``VoyageEmbedder``/``VoyageReranker`` and the official ``voyageai`` SDK are both run
against this server, so the adapter is tested over real HTTP and the contract test proves that the wire
format we speak is the one the SDK speaks. Benchmarks use it too, so it lives in the package and imports
only the standard library.

What it mimics (from docs.voyageai.com, API reference for embeddings and rerank):
- ``Authorization: Bearer <key>``; a wrong or missing key is 401 ``{"detail": ...}``, and so is a key
  rotated out with ``rotate_key`` (Voyage revokes a deleted key at once).
- Embeddings: ``input`` (a string or 1..1,000 non-empty strings), ``model``, ``input_type`` (null /
  ``query`` / ``document``), ``output_dimension`` (256, 512, 1024, 2048), ``truncation``,
  ``encoding_format`` (null = float lists, ``base64`` = little-endian float32, as the SDK asks for).
  Each model's documented per-request token limit (120K for voyage-3-large, 320K for voyage-3.5, 1M for
  voyage-3.5-lite, see ``voyage_api``) is enforced with Voyage's own 400 wording, and the context length
  per text when ``truncation`` is false. Tokens are counted with ``token_bound``: one per UTF-8 byte
  plus special tokens, never fewer than Voyage's byte-level BPE tokenizers count.
  Answer: ``{"object": "list", "data": [{"object": "embedding", "embedding": [...], "index": i}],
  "model", "usage": {"total_tokens"}}``.
- Rerank: ``query``, ``documents`` (1..1,000), ``model``, ``top_k``, ``truncation``,
  ``return_documents``; the model's query, query + document and total-token limits (query tokens x
  documents + document tokens, 600K for rerank-2.5) are enforced with a 400. Answer: ``{"object":
  "list", "data": [{"index", "relevance_score"}], "model", "usage"}``, best first.
- Errors are JSON ``{"detail": "..."}`` as the SDK expects.

Simulator (``winnow_fakes.voyage_limits``, off unless ``simulation=`` is given): latency and Voyage's
rate limits; a request over a limit gets 429 ``{"detail": ...}`` with ``Retry-After`` (whole seconds
until it would fit), or without it for the share of answers ``retry_after_share`` leaves out, and is
not billed. Vectors, scores and token counts come from
``winnow_fakes.voyage_text``. The names of both modules are re-exported here, the fake's one front door.
"""

from __future__ import annotations

import json
import math
import random
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

from winnow_fakes.loopback import LoopbackHandler, LoopbackServer
from winnow_fakes.voyage_api import (
    DEFAULT_OUTPUT_DIMENSIONS,
    BadRequest,
    apply_content_fault,
    embeddings_answer,
    encode_base64,
    rerank_answer,
)
from winnow_fakes.voyage_limits import (
    DEFAULT_BASE_LATENCY_SECONDS,
    DEFAULT_PER_TOKEN_LATENCY_SECONDS,
    RateLimit,
    RateLimiter,
    VoyageSimulation,
    tier_rate_limit,
)
from winnow_fakes.voyage_text import count_tokens, embed_text, rerank_score, terms, token_bound

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_BASE_LATENCY_SECONDS",
    "DEFAULT_PER_TOKEN_LATENCY_SECONDS",
    "Endpoint",
    "EndpointUsage",
    "FakeVoyageServer",
    "Fault",
    "RateLimit",
    "RateLimiter",
    "RecordedRequest",
    "VoyageSimulation",
    "count_tokens",
    "embed_text",
    "rerank_score",
    "retry_after_header",
    "terms",
    "tier_rate_limit",
    "token_bound",
]

FaultKind = Literal[
    "status",  # answer with an HTTP error status (429 / 5xx / 4xx), optionally with Retry-After
    "delay",  # wait before answering normally, so a client with a shorter timeout times out
    "disconnect",  # close the connection without answering
    "malformed_json",  # 200 with a body that is not JSON
    "wrong_count",  # 200 with one result too few
    "wrong_dimension",  # 200 with vectors one element short (rerank: an index out of range)
    "non_finite",  # 200 with a NaN in the first vector (rerank: a NaN score)
    "shuffled",  # 200 with a correct answer whose data items come in reverse order (not an error)
]
Endpoint = Literal["embeddings", "rerank"]

DEFAULT_API_KEY = "test-voyage-key"


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour, consumed by the next matching request (``endpoint=None``: any)."""

    kind: FaultKind
    status: int = 500
    retry_after: str | None = None
    delay_seconds: float = 0.0
    endpoint: Endpoint | None = None
    detail: str | None = None  # the error message of a status fault (default: the status phrase)

    @classmethod
    def rate_limited(cls, retry_after: float | None = None, endpoint: Endpoint | None = None) -> Fault:
        return cls.http_status(429, retry_after=retry_after, endpoint=endpoint)

    @classmethod
    def server_error(cls, status: int = 500, endpoint: Endpoint | None = None) -> Fault:
        return cls.http_status(status, endpoint=endpoint)

    @classmethod
    def unavailable(cls, retry_after: float | None = None, endpoint: Endpoint | None = None) -> Fault:
        return cls.http_status(503, retry_after=retry_after, endpoint=endpoint)

    @classmethod
    def http_status(
        cls,
        status: int,
        retry_after: float | None = None,
        endpoint: Endpoint | None = None,
        detail: str | None = None,
    ) -> Fault:
        header = None if retry_after is None else _format_seconds(retry_after)
        return cls("status", status=status, retry_after=header, endpoint=endpoint, detail=detail)

    @classmethod
    def delay(cls, seconds: float, endpoint: Endpoint | None = None) -> Fault:
        return cls("delay", delay_seconds=seconds, endpoint=endpoint)

    @classmethod
    def disconnect(cls, endpoint: Endpoint | None = None) -> Fault:
        return cls("disconnect", endpoint=endpoint)

    @classmethod
    def malformed_json(cls, endpoint: Endpoint | None = None) -> Fault:
        return cls("malformed_json", endpoint=endpoint)

    @classmethod
    def wrong_count(cls, endpoint: Endpoint | None = None) -> Fault:
        return cls("wrong_count", endpoint=endpoint)

    @classmethod
    def wrong_dimension(cls, endpoint: Endpoint | None = None) -> Fault:
        return cls("wrong_dimension", endpoint=endpoint)

    @classmethod
    def non_finite(cls, endpoint: Endpoint | None = None) -> Fault:
        return cls("non_finite", endpoint=endpoint)

    @classmethod
    def shuffled(cls, endpoint: Endpoint | None = None) -> Fault:
        return cls("shuffled", endpoint=endpoint)


@dataclass
class EndpointUsage:
    """What one endpoint served. ``requests`` counts every request received (faulted ones too);
    ``texts`` and ``tokens`` count only what was answered successfully, as Voyage bills;
    ``throttled`` counts the simulator's rate-limit 429s (injected faults are not counted)."""

    requests: int = 0
    texts: int = 0
    tokens: int = 0
    throttled: int = 0


@dataclass(frozen=True)
class RecordedRequest:
    endpoint: str
    body: Any
    status: int
    fault: FaultKind | None = None
    peer_port: int = 0  # the client's source port: equal ports mean a reused keep-alive connection
    api_key: str = ""  # the key the request carried (a test double may know it; logs never do)


@dataclass
class _State:
    faults: deque[Fault] = field(default_factory=deque)
    outage: Fault | None = None
    usage: dict[str, EndpointUsage] = field(
        default_factory=lambda: {"embeddings": EndpointUsage(), "rerank": EndpointUsage()}
    )
    log: list[RecordedRequest] = field(default_factory=list)
    # Set by reset()/stop(): wakes handlers still sleeping on a delay fault of an earlier test.
    cancelled: threading.Event = field(default_factory=threading.Event)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


def retry_after_header(seconds: float) -> str:
    """HTTP ``Retry-After`` is whole seconds (RFC 9110): round up, and never ask for 0."""
    return str(max(1, math.ceil(seconds)))


# --- the server ------------------------------------------------------------------------------------
class FakeVoyageServer(LoopbackServer):
    """``with FakeVoyageServer() as fake: Client(base_url=fake.base_url, api_key=fake.api_key)``.

    Inject faults with ``fake.inject(Fault.rate_limited(retry_after=1), Fault.server_error())`` (consumed
    in order by the next requests) or ``fake.set_outage(Fault.unavailable())`` (every request until
    cleared with ``set_outage(None)``). Read ``fake.usage``/``fake.requests`` to count calls.
    """

    name = "fake-voyage"

    def __init__(
        self,
        *,
        api_key: str = DEFAULT_API_KEY,
        dimension: int = 1024,
        output_dimensions: Iterable[int] = DEFAULT_OUTPUT_DIMENSIONS,
        host: str = "127.0.0.1",
        simulation: VoyageSimulation | None = None,
    ) -> None:
        super().__init__(host)
        self.api_key = api_key
        self._issued_key = api_key
        self.revoked_keys: set[str] = set()
        self._also_valid: set[str] = set()  # older keys not revoked yet (rotate_key(revoke_old=False))
        self.dimension = dimension
        self.output_dimensions = frozenset(output_dimensions)
        self._state = _State()
        self._simulation: VoyageSimulation | None = None
        self._limiter: RateLimiter | None = None
        self._omit_rng = random.Random(0)
        self.set_simulation(simulation)

    def rotate_key(self, new_key: str, *, revoke_old: bool = True) -> str:
        """Issue ``new_key``; the current one is revoked (401 from now on) unless ``revoke_old`` is
        false, when it stays valid until ``revoke``. Returns the old key."""
        with self._lock:
            old, self.api_key = self.api_key, new_key
            if revoke_old:
                self.revoked_keys.add(old)
            else:
                self._also_valid.add(old)
            return old

    def revoke(self, key: str) -> None:
        with self._lock:
            self._also_valid.discard(key)
            self.revoked_keys.add(key)

    def _authorised(self, key: str) -> bool:
        with self._lock:
            return key == self.api_key or key in self._also_valid

    def cancel_in_flight(self) -> None:
        with self._lock:
            self._state.cancelled.set()  # wakes handlers sleeping on a delay fault

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    # control ------------------------------------------------------------------------------------------
    def inject(self, *faults: Fault) -> None:
        with self._lock:
            self._state.faults.extend(faults)

    def set_outage(self, fault: Fault | None) -> None:
        with self._lock:
            self._state.outage = fault

    def set_simulation(self, simulation: VoyageSimulation | None) -> None:
        """Turn realistic latency and rate limits on (or off with ``None``); starts an empty window."""
        with self._lock:
            self._simulation = simulation
            self._omit_rng = random.Random(simulation.seed if simulation is not None else 0)
            self._limiter = (
                RateLimiter(simulation.limit_for, simulation.clock)
                if simulation is not None and simulation.rate_limits
                else None
            )

    @property
    def simulation(self) -> VoyageSimulation | None:
        return self._simulation

    def reset(self) -> None:
        """Forget faults, outage, usage, the request log, rotated keys and the rate-limit window (between
        tests or benchmark runs; the simulation itself stays). Requests still in flight keep writing to
        the state they started with, so they never leak into the next test's counts."""
        with self._lock:
            self._state.cancelled.set()
            self._state = _State()
            self.api_key = self._issued_key
            self.revoked_keys.clear()
            self._also_valid.clear()
        self.set_simulation(self._simulation)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._state.faults)

    @property
    def usage(self) -> dict[str, EndpointUsage]:
        with self._lock:
            return {
                name: EndpointUsage(u.requests, u.texts, u.tokens, u.throttled)
                for name, u in self._state.usage.items()
            }

    @property
    def total_requests(self) -> int:
        return sum(u.requests for u in self.usage.values())

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._state.log)

    def requests_to(self, endpoint: Endpoint) -> list[RecordedRequest]:
        return [r for r in self.requests if r.endpoint == endpoint]

    # request handling (called from handler threads) ---------------------------------------------------
    def _arrive(self, endpoint: str) -> _State:
        """Count a request and hand back the state it belongs to for the rest of its life."""
        with self._lock:
            state = self._state
            state.usage[endpoint].requests += 1
            return state

    def _next_fault(self, state: _State, endpoint: str) -> Fault | None:
        with self._lock:
            if state.outage is not None and state.outage.endpoint in (None, endpoint):
                return state.outage
            for position, fault in enumerate(state.faults):
                if fault.endpoint in (None, endpoint):
                    del state.faults[position]
                    return fault
        return None

    def _record(
        self,
        state: _State,
        endpoint: str,
        body: Any,
        status: int,
        fault: Fault | None,
        peer_port: int,
        api_key: str = "",
    ) -> None:
        with self._lock:
            kind = fault.kind if fault else None
            state.log.append(RecordedRequest(endpoint, body, status, kind, peer_port, api_key))

    def _bill(self, state: _State, endpoint: str, texts: int, tokens: int) -> None:
        with self._lock:
            usage = state.usage[endpoint]
            usage.texts += texts
            usage.tokens += tokens

    def _throttle(self, state: _State, endpoint: str, body: dict[str, Any], tokens: int) -> float | None:
        """The simulator's verdict: ``None`` to answer, else seconds to put in ``Retry-After``."""
        with self._lock:
            limiter = self._limiter
        if limiter is None:
            return None
        assert self._simulation is not None
        counted = math.ceil(tokens * self._simulation.rate_token_share)
        wait = limiter.admit(str(body.get("model")), counted)
        if wait is not None:
            with self._lock:
                state.usage[endpoint].throttled += 1
        return wait

    def _sends_retry_after(self) -> bool:
        """Whether this throttled answer carries ``Retry-After`` (Voyage does not always send it)."""
        simulation = self._simulation
        if simulation is None or simulation.retry_after_share >= 1.0:
            return True
        with self._lock:
            return self._omit_rng.random() < simulation.retry_after_share

    def _simulate_latency(self, state: _State, tokens: int) -> None:
        simulation = self._simulation
        if simulation is None:
            return
        seconds = simulation.latency(math.ceil(tokens * simulation.rate_token_share))
        if seconds <= 0:
            return
        if simulation.sleep is not None:
            simulation.sleep(seconds)
        else:
            state.cancelled.wait(seconds)


class _Handler(LoopbackHandler):
    server_version = "FakeVoyage/1.0"
    fake: FakeVoyageServer

    def do_GET(self) -> None:
        self.send_json(404, {"detail": "Not found."})

    def do_POST(self) -> None:
        fake = self.fake
        raw = self.read_body()
        endpoint = {"/v1/embeddings": "embeddings", "/v1/rerank": "rerank"}.get(self.path.rstrip("/"))
        if endpoint is None:
            self.send_json(404, {"detail": f"Unknown path {self.path}."})
            return
        authorization = self.headers.get("Authorization") or ""
        key = authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else ""
        if not fake._authorised(key):
            state = fake._arrive(endpoint)  # an auth failure consumes no fault
            fake._record(state, endpoint, None, 401, None, self.client_address[1], key)
            self.send_json(401, {"detail": "Provided API key is invalid."})
            return
        state = fake._arrive(endpoint)
        fault = fake._next_fault(state, endpoint)
        try:
            body = json.loads(raw or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            fake._record(state, endpoint, None, 400, fault, self.client_address[1])
            self.send_json(400, {"detail": "Request body is not valid JSON."})
            return
        if fault is not None and fault.kind == "status":
            fake._record(state, endpoint, body, fault.status, fault, self.client_address[1])
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            detail = fault.detail or f"Injected fault: HTTP {fault.status} {_phrase(fault.status)}".strip()
            self.send_json(fault.status, {"detail": detail}, headers)
            return
        if fault is not None and fault.kind == "disconnect":
            fake._record(state, endpoint, body, 0, fault, self.client_address[1])
            self.hang_up()
            return
        if fault is not None and fault.kind == "delay":
            state.cancelled.wait(fault.delay_seconds)
        try:
            if endpoint == "embeddings":
                payload, texts, tokens = embeddings_answer(body, fake.dimension, fake.output_dimensions)
            else:
                payload, texts, tokens = rerank_answer(body)
        except BadRequest as bad:
            fake._record(state, endpoint, body, bad.status, fault, self.client_address[1])
            self.send_json(bad.status, {"detail": bad.detail})
            return
        wait = fake._throttle(state, endpoint, body, tokens)
        if wait is not None:
            fake._record(state, endpoint, body, 429, None, self.client_address[1])
            detail = (
                f"Rate limit exceeded for model '{body.get('model')}': too many requests or tokens "
                "in the last minute. Please retry after the time in Retry-After."
            )
            headers = {"Retry-After": retry_after_header(wait)} if fake._sends_retry_after() else {}
            self.send_json(429, {"detail": detail}, headers)
            return
        fake._simulate_latency(state, tokens)
        fake._record(state, endpoint, body, 200, fault, self.client_address[1], key)
        if fault is not None and fault.kind == "malformed_json":
            self.send_raw(200, b'{"object": "list", "data": [{"embedding": [0.1, ', _JSON)
            return
        if fault is not None:
            apply_content_fault(endpoint, payload, fault.kind)
        if endpoint == "embeddings" and body.get("encoding_format") == "base64":
            encode_base64(payload)
        if fault is None or fault.kind in ("delay", "shuffled"):
            fake._bill(state, endpoint, texts, tokens)
        self.send_json(200, payload)


_JSON = {"Content-Type": "application/json"}
FakeVoyageServer.handler = _Handler  # defined after the server, whose methods it calls
