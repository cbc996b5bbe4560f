"""A loopback stand-in for the Voyage AI REST API (``/v1/embeddings`` and ``/v1/rerank``).

Why it exists: our ``VoyageEmbedder``/``VoyageReranker`` and the official ``voyageai`` SDK are both run
against this server, so the adapter is tested over real HTTP and the contract test proves that the wire
format we speak is the one the SDK speaks. Benchmarks use it too, so it lives in the package and imports
only the standard library.

What it mimics (from docs.voyageai.com, API reference for embeddings and rerank):
- ``Authorization: Bearer <key>``; a wrong or missing key is 401 ``{"detail": ...}``.
- Embeddings: ``input`` (a string or 1..1,000 non-empty strings), ``model``, ``input_type`` (null /
  ``query`` / ``document``), ``output_dimension`` (256, 512, 1024, 2048), ``truncation``,
  ``encoding_format`` (null = float lists, ``base64`` = little-endian float32, as the SDK asks for).
  The per-request token limit of the model (320K for voyage-3.5) is enforced with a 400.
  Answer: ``{"object": "list", "data": [{"object": "embedding", "embedding": [...], "index": i}],
  "model", "usage": {"total_tokens"}}``.
- Rerank: ``query``, ``documents`` (1..1,000), ``model``, ``top_k``, ``truncation``,
  ``return_documents``; the total-token budget (query tokens x documents + document tokens, 600K for
  rerank-2.5) is enforced with a 400. Answer: ``{"object": "list", "data": [{"index",
  "relevance_score"}], "model", "usage"}``, best first.
- Errors are JSON ``{"detail": "..."}`` as the SDK expects.

Simulator (off unless ``simulation=`` is given, so tests stay instant): ``VoyageSimulation`` adds a
per-request latency (base + per token) and Voyage's per-model requests-per-minute / tokens-per-minute
limits, counted over the most recent 60 seconds as Voyage describes; a request over either limit gets
429 ``{"detail": ...}`` with ``Retry-After`` (whole seconds until it would fit) and is not billed.
Defaults are usage tier 1 of https://docs.voyageai.com/docs/rate-limits (tiers 2 and 3 are 2x and 3x).

Vectors carry meaning without a model: a hashed bag of lowercased, crudely stemmed words minus stop words,
L2-normalised and rounded to float32, so texts that share words are closer and the float-list and base64
encodings give identical numbers. Tokens are counted as whitespace-separated words.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

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
DEFAULT_OUTPUT_DIMENSIONS = (256, 512, 1024, 2048)
MAX_LIST_LENGTH = 1000
# Per-request token limits from the API reference (embeddings: tokens in the list; rerank: the total).
EMBED_TOKEN_LIMITS = {
    "voyage-3.5-lite": 1_000_000,
    "voyage-4-lite": 1_000_000,
    "voyage-3.5": 320_000,
    "voyage-4": 320_000,
    "voyage-3-large": 120_000,
    "voyage-4-large": 120_000,
    "voyage-code-3": 120_000,
}
DEFAULT_EMBED_TOKEN_LIMIT = 320_000
RERANK_TOKEN_LIMITS = {"rerank-1": 300_000, "rerank-lite-1": 300_000}
DEFAULT_RERANK_TOKEN_LIMIT = 600_000

# Rate limits of usage tier 1, from https://docs.voyageai.com/docs/rate-limits (requests, tokens per
# minute per model and organisation); tier 2 (>= $100 paid) doubles them, tier 3 (>= $1,000) triples them.
_TIER1_LIMITS: tuple[tuple[tuple[str, ...], int, int], ...] = (
    (("voyage-4-large", "voyage-3-large", "voyage-context-3", "voyage-code-3"), 2000, 3_000_000),
    (("voyage-4", "voyage-3.5", "voyage-3"), 2000, 8_000_000),
    (("voyage-4-lite", "voyage-3.5-lite", "voyage-3-lite"), 2000, 16_000_000),
    (("voyage-multimodal-3.5", "voyage-multimodal-3"), 2000, 2_000_000),
    (("rerank-2.5-lite", "rerank-2-lite", "rerank-lite-1"), 2000, 4_000_000),
    (("rerank-2.5", "rerank-2", "rerank-1"), 2000, 2_000_000),
)
# Voyage 1 & 2 series and anything unknown share the lowest published embedding limits.
_TIER1_FALLBACK = (2000, 3_000_000)
TIER_MULTIPLIERS = {1: 1, 2: 2, 3: 3}
RATE_WINDOW_SECONDS = 60.0
# Voyage publishes no latency figures. These defaults are a cross-region HTTPS round trip plus model
# queueing (~200 ms) and ~50k tokens/s of model time per request (a 32-chunk batch of 300 tokens
# each: ~0.4 s); benchmarks state them with their figures, and both are options.
DEFAULT_BASE_LATENCY_SECONDS = 0.2
DEFAULT_PER_TOKEN_LATENCY_SECONDS = 0.00002

_STOP_WORD_LIST = (
    "a an and are as at be but by for from has have in into is it its of on or that the their this to "
    "was were what when where which who why will with"
)
_STOP_WORDS = frozenset(_STOP_WORD_LIST.split())
_WORD = re.compile(r"[0-9a-z]+")


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
class RateLimit:
    """One model's limits per minute; ``None`` means unlimited on that axis."""

    requests_per_minute: int | None
    tokens_per_minute: int | None


def tier_rate_limit(model: str, tier: int = 1) -> RateLimit:
    """Voyage's published limits for ``model`` at usage ``tier`` (1-3)."""
    if tier not in TIER_MULTIPLIERS:
        raise ValueError(f"Voyage usage tier must be one of {sorted(TIER_MULTIPLIERS)}, not {tier}")
    rpm, tpm = _TIER1_FALLBACK
    for models, tier1_rpm, tier1_tpm in _TIER1_LIMITS:
        if model in models:
            rpm, tpm = tier1_rpm, tier1_tpm
            break
    factor = TIER_MULTIPLIERS[tier]
    return RateLimit(rpm * factor, tpm * factor)


class RateLimiter:
    """Per-model sliding-window limiter: a request is admitted when the requests and tokens admitted in
    the last ``window`` seconds, plus this one, stay within the model's limits. Rejected requests use
    no budget. The clock is injected so tests step time instead of sleeping."""

    def __init__(
        self,
        limits: Callable[[str], RateLimit],
        clock: Callable[[], float] = time.monotonic,
        window: float = RATE_WINDOW_SECONDS,
    ) -> None:
        self._limits = limits
        self._clock = clock
        self._window = window
        self._lock = threading.Lock()
        self._admitted: dict[str, deque[tuple[float, int]]] = {}
        self._tokens: dict[str, int] = {}

    def admit(self, model: str, tokens: int) -> float | None:
        """``None`` when admitted (and counted); else the seconds until this request would fit."""
        limit = self._limits(model)
        with self._lock:
            now = self._clock()
            log = self._admitted.setdefault(model, deque())
            used = self._tokens.get(model, 0)
            while log and log[0][0] <= now - self._window:
                used -= log.popleft()[1]
            self._tokens[model] = used
            waits: list[float] = []
            rpm = limit.requests_per_minute
            if rpm is not None and len(log) + 1 > rpm:
                # The oldest requests must leave the window until one slot is free.
                waits.append(log[len(log) - rpm][0] + self._window - now)
            tpm = limit.tokens_per_minute
            if tpm is not None and used + tokens > tpm:
                if tokens > tpm:
                    waits.append(self._window)  # never fits; a minute is the honest answer
                else:
                    freed = 0
                    for stamp, count in log:
                        freed += count
                        if used - freed + tokens <= tpm:
                            waits.append(stamp + self._window - now)
                            break
            if waits:
                return max(max(waits), 0.0)
            log.append((now, tokens))
            self._tokens[model] = used + tokens
            return None


@dataclass(frozen=True)
class VoyageSimulation:
    """Realistic behaviour for benchmarks: latency ``base_latency_seconds + per_token_latency_seconds x
    tokens`` per answered request, and Voyage's rate limits of usage ``tier`` (``limits`` overrides them
    per model; ``rate_limits=False`` turns limiting off). ``clock`` and ``sleep`` are injectable."""

    base_latency_seconds: float = DEFAULT_BASE_LATENCY_SECONDS
    per_token_latency_seconds: float = DEFAULT_PER_TOKEN_LATENCY_SECONDS
    tier: int = 1
    rate_limits: bool = True
    limits: dict[str, RateLimit] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], object] | None = None  # None: an interruptible wait (ends on reset/stop)

    def __post_init__(self) -> None:
        if self.base_latency_seconds < 0 or self.per_token_latency_seconds < 0:
            raise ValueError("latencies must not be negative")
        tier_rate_limit("voyage-3.5", self.tier)  # validates the tier

    def latency(self, tokens: int) -> float:
        return self.base_latency_seconds + self.per_token_latency_seconds * tokens

    def limit_for(self, model: str) -> RateLimit:
        if not self.rate_limits:
            return RateLimit(None, None)
        return self.limits.get(model) or tier_rate_limit(model, self.tier)


@dataclass(frozen=True)
class RecordedRequest:
    endpoint: str
    body: Any
    status: int
    fault: FaultKind | None = None
    peer_port: int = 0  # the client's source port: equal ports mean a reused keep-alive connection


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


# --- deterministic "models" ------------------------------------------------------------------------
def terms(text: str) -> list[str]:
    """Lowercased words minus stop words, with common English suffixes cut off (crude stemming), so
    "searching" and "searches" meet."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP_WORDS:
            continue
        out.append(_stem(word))
    return out


def _stem(word: str) -> str:
    for suffix, min_len in (("ing", 6), ("ies", 5), ("ed", 5), ("es", 5), ("ly", 5), ("s", 4)):
        if len(word) >= min_len and word.endswith(suffix):
            if suffix == "s" and word.endswith("ss"):
                return word
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def count_tokens(text: str) -> int:
    """The fake's token count: whitespace-separated words (at least one per non-empty text)."""
    return max(1, len(text.split())) if text else 0


def embed_text(text: str, dimension: int) -> list[float]:
    """A unit vector for ``text``: hashed bag of terms with sub-linear term frequency."""
    weights: dict[str, int] = {}
    for term in terms(text) or [text.strip().lower() or "<empty>"]:
        weights[term] = weights.get(term, 0) + 1
    vector = [0.0] * dimension
    for term, tf in weights.items():
        digest = int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "big")
        sign = 1.0 if digest >> 63 else -1.0
        vector[digest % dimension] += sign * (1.0 + math.log(tf))
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    # Round to float32 so the JSON float list and the base64 float32 encoding carry the same numbers.
    return list(struct.unpack(f"<{dimension}f", struct.pack(f"<{dimension}f", *(v / norm for v in vector))))


def rerank_score(query: str, document: str) -> float:
    """Share of the query's distinct terms that the document contains, in [0, 1]."""
    query_terms = set(terms(query))
    if not query_terms:
        return 0.0
    return len(query_terms & set(terms(document))) / len(query_terms)


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
class _BadRequest(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class FakeVoyageServer:
    """``with FakeVoyageServer() as fake: Client(base_url=fake.base_url, api_key=fake.api_key)``.

    Inject faults with ``fake.inject(Fault.rate_limited(retry_after=1), Fault.server_error())`` (consumed
    in order by the next requests) or ``fake.set_outage(Fault.unavailable())`` (every request until
    cleared with ``set_outage(None)``). Read ``fake.usage``/``fake.requests`` to count calls.
    """

    def __init__(
        self,
        *,
        api_key: str = DEFAULT_API_KEY,
        dimension: int = 1024,
        output_dimensions: Iterable[int] = DEFAULT_OUTPUT_DIMENSIONS,
        host: str = "127.0.0.1",
        simulation: VoyageSimulation | None = None,
    ) -> None:
        self.api_key = api_key
        self.dimension = dimension
        self.output_dimensions = frozenset(output_dimensions)
        self._host = host
        self._lock = threading.Lock()
        self._state = _State()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._simulation: VoyageSimulation | None = None
        self._limiter: RateLimiter | None = None
        self.set_simulation(simulation)

    # lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> FakeVoyageServer:
        if self._server is not None:
            return self
        handler = _make_handler(self)
        server = ThreadingHTTPServer((self._host, 0), handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fake-voyage", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        with self._lock:
            self._state.cancelled.set()  # wakes handlers sleeping on a delay fault
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeVoyageServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeVoyageServer is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

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
            self._limiter = (
                RateLimiter(simulation.limit_for, simulation.clock)
                if simulation is not None and simulation.rate_limits
                else None
            )

    @property
    def simulation(self) -> VoyageSimulation | None:
        return self._simulation

    def reset(self) -> None:
        """Forget faults, outage, usage, the request log and the rate-limit window (between tests or
        benchmark runs; the simulation itself stays). Requests still in flight keep writing to the state
        they started with, so they never leak into the next test's counts."""
        with self._lock:
            self._state.cancelled.set()
            self._state = _State()
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
        self, state: _State, endpoint: str, body: Any, status: int, fault: Fault | None, peer_port: int
    ) -> None:
        with self._lock:
            kind = fault.kind if fault else None
            state.log.append(RecordedRequest(endpoint, body, status, kind, peer_port))

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
        wait = limiter.admit(str(body.get("model")), tokens)
        if wait is not None:
            with self._lock:
                state.usage[endpoint].throttled += 1
        return wait

    def _simulate_latency(self, state: _State, tokens: int) -> None:
        simulation = self._simulation
        if simulation is None:
            return
        seconds = simulation.latency(tokens)
        if seconds <= 0:
            return
        if simulation.sleep is not None:
            simulation.sleep(seconds)
        else:
            state.cancelled.wait(seconds)

    def _embeddings(self, body: Any) -> tuple[dict[str, Any], int, int]:
        if not isinstance(body, dict):
            raise _BadRequest(400, "Request body must be a JSON object.")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _BadRequest(400, "Field 'model' is required.")
        raw_input = body.get("input")
        texts: Any = [raw_input] if isinstance(raw_input, str) else raw_input
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise _BadRequest(400, "Field 'input' must be a string or a non-empty list of strings.")
        if len(texts) > MAX_LIST_LENGTH:
            raise _BadRequest(400, f"The maximum length of the input list is {MAX_LIST_LENGTH}.")
        if any(not t for t in texts):
            raise _BadRequest(400, "Input texts must not be empty.")
        input_type = body.get("input_type")
        if input_type not in (None, "query", "document"):
            raise _BadRequest(400, "input_type must be null, 'query' or 'document'.")
        dimension = body.get("output_dimension")
        if dimension is None:
            dimension = self.dimension
        elif type(dimension) is not int or dimension not in self.output_dimensions:
            allowed = ", ".join(str(d) for d in sorted(self.output_dimensions))
            raise _BadRequest(400, f"output_dimension must be one of {allowed}.")
        encoding = body.get("encoding_format")
        if encoding not in (None, "base64"):
            raise _BadRequest(400, "encoding_format must be null or 'base64'.")
        tokens = sum(count_tokens(t) for t in texts)
        limit = EMBED_TOKEN_LIMITS.get(model, DEFAULT_EMBED_TOKEN_LIMIT)
        if tokens > limit:
            raise _BadRequest(
                400, f"Request to model '{model}' has {tokens} tokens, over the limit of {limit}."
            )
        vectors = [embed_text(t, dimension) for t in texts]
        data = [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vectors)]
        payload = {"object": "list", "data": data, "model": model, "usage": {"total_tokens": tokens}}
        return payload, len(texts), tokens

    def _rerank(self, body: Any) -> tuple[dict[str, Any], int, int]:
        if not isinstance(body, dict):
            raise _BadRequest(400, "Request body must be a JSON object.")
        model = body.get("model")
        query = body.get("query")
        documents = body.get("documents")
        if not isinstance(model, str) or not model:
            raise _BadRequest(400, "Field 'model' is required.")
        if not isinstance(query, str) or not query:
            raise _BadRequest(400, "Field 'query' must be a non-empty string.")
        if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
            raise _BadRequest(400, "Field 'documents' must be a non-empty list of strings.")
        if len(documents) > MAX_LIST_LENGTH:
            raise _BadRequest(400, f"The number of documents cannot exceed {MAX_LIST_LENGTH}.")
        if any(not d for d in documents):
            raise _BadRequest(400, "Documents must not be empty.")
        top_k = body.get("top_k")
        if top_k is not None and (type(top_k) is not int or top_k < 1):
            raise _BadRequest(400, "top_k must be a positive integer.")
        query_tokens = count_tokens(query)
        tokens = query_tokens * len(documents) + sum(count_tokens(d) for d in documents)
        limit = RERANK_TOKEN_LIMITS.get(model, DEFAULT_RERANK_TOKEN_LIMIT)
        if tokens > limit:
            raise _BadRequest(400, f"Request to model '{model}' has {tokens} total tokens, over {limit}.")
        scored = sorted(
            ((i, rerank_score(query, d)) for i, d in enumerate(documents)), key=lambda p: (-p[1], p[0])
        )
        if top_k is not None:
            scored = scored[:top_k]
        data: list[dict[str, Any]] = []
        for index, score in scored:
            item: dict[str, Any] = {"index": index, "relevance_score": score}
            if body.get("return_documents"):
                item["document"] = documents[index]
            data.append(item)
        payload = {"object": "list", "data": data, "model": model, "usage": {"total_tokens": tokens}}
        return payload, len(documents), tokens


def _apply_content_fault(endpoint: str, payload: dict[str, Any], fault: Fault) -> None:
    data: list[dict[str, Any]] = payload["data"]
    if fault.kind == "wrong_count":
        data.pop()
    elif fault.kind == "wrong_dimension":
        if endpoint == "embeddings":
            for item in data:
                item["embedding"] = item["embedding"][:-1]
        elif data:
            data[0]["index"] = 10 * MAX_LIST_LENGTH
    elif fault.kind == "shuffled":
        data.reverse()
    elif fault.kind == "non_finite" and data:
        if endpoint == "embeddings":
            data[0]["embedding"][0] = float("nan")
        else:
            data[0]["relevance_score"] = float("nan")


def _encode_base64(payload: dict[str, Any]) -> None:
    for item in payload["data"]:
        vector: Sequence[float] = item["embedding"]
        item["embedding"] = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def _make_handler(fake: FakeVoyageServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeVoyage/1.0"
        # TCP_NODELAY, as real API servers: with Nagle's algorithm every request on a kept-alive
        # connection waited 44 ms for the client's delayed ACK, a provider latency that is not there.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: tests read ``fake.requests`` instead of stderr."""

        def do_GET(self) -> None:
            self._send_json(404, {"detail": "Not found."})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            endpoint = {"/v1/embeddings": "embeddings", "/v1/rerank": "rerank"}.get(self.path.rstrip("/"))
            if endpoint is None:
                self._send_json(404, {"detail": f"Unknown path {self.path}."})
                return
            if self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                state = fake._arrive(endpoint)  # an auth failure consumes no fault
                fake._record(state, endpoint, None, 401, None, self.client_address[1])
                self._send_json(401, {"detail": "Provided API key is invalid."})
                return
            state = fake._arrive(endpoint)
            fault = fake._next_fault(state, endpoint)
            try:
                body = json.loads(raw or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError):
                fake._record(state, endpoint, None, 400, fault, self.client_address[1])
                self._send_json(400, {"detail": "Request body is not valid JSON."})
                return
            if fault is not None and fault.kind == "status":
                fake._record(state, endpoint, body, fault.status, fault, self.client_address[1])
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
                detail = (
                    fault.detail or f"Injected fault: HTTP {fault.status} {_phrase(fault.status)}".strip()
                )
                self._send_json(fault.status, {"detail": detail}, headers)
                return
            if fault is not None and fault.kind == "disconnect":
                fake._record(state, endpoint, body, 0, fault, self.client_address[1])
                self.close_connection = True
                self.wfile.flush()
                self.connection.close()
                return
            if fault is not None and fault.kind == "delay":
                state.cancelled.wait(fault.delay_seconds)
            try:
                if endpoint == "embeddings":
                    payload, texts, tokens = fake._embeddings(body)
                else:
                    payload, texts, tokens = fake._rerank(body)
            except _BadRequest as bad:
                fake._record(state, endpoint, body, bad.status, fault, self.client_address[1])
                self._send_json(bad.status, {"detail": bad.detail})
                return
            wait = fake._throttle(state, endpoint, body, tokens)
            if wait is not None:
                fake._record(state, endpoint, body, 429, None, self.client_address[1])
                detail = (
                    f"Rate limit exceeded for model '{body.get('model')}': too many requests or tokens "
                    "in the last minute. Please retry after the time in Retry-After."
                )
                self._send_json(429, {"detail": detail}, {"Retry-After": retry_after_header(wait)})
                return
            fake._simulate_latency(state, tokens)
            fake._record(state, endpoint, body, 200, fault, self.client_address[1])
            if fault is not None and fault.kind == "malformed_json":
                self._send_raw(200, b'{"object": "list", "data": [{"embedding": [0.1, ', {})
                return
            if fault is not None:
                _apply_content_fault(endpoint, payload, fault)
            if endpoint == "embeddings" and body.get("encoding_format") == "base64":
                _encode_base64(payload)
            if fault is None or fault.kind in ("delay", "shuffled"):
                fake._bill(state, endpoint, texts, tokens)
            self._send_json(200, payload)

        def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            self._send_raw(status, json.dumps(payload).encode("utf-8"), headers or {})

        def _send_raw(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (timeout fault): nothing to answer to.
                self.close_connection = True

    return Handler
