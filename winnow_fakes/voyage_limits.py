"""The fake Voyage's simulator (off unless ``FakeVoyageServer(simulation=...)``, so tests stay instant):
``VoyageSimulation`` adds a per-request latency (base + per token) and Voyage's per-model
requests-per-minute / tokens-per-minute limits, counted over the most recent 60 seconds as Voyage
describes. Defaults are usage tier 1 of https://docs.voyageai.com/docs/rate-limits (tiers 2 and 3 are 2x
and 3x)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

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
    per model; ``rate_limits=False`` turns limiting off). ``clock`` and ``sleep`` are injectable.

    ``retry_after_share``: the share of throttled answers that carry ``Retry-After`` (Voyage does not
    promise it; 0 never sends it), drawn from a generator seeded with ``seed``. ``rate_token_share``:
    the share of the fake's token bound (one per UTF-8 byte, about 4x real English prose) counted
    against tokens per minute and latency; 1 keeps the bound (strict), 0.25 models English prose.
    Per-request limits always use the whole bound."""

    base_latency_seconds: float = DEFAULT_BASE_LATENCY_SECONDS
    per_token_latency_seconds: float = DEFAULT_PER_TOKEN_LATENCY_SECONDS
    tier: int = 1
    rate_limits: bool = True
    limits: dict[str, RateLimit] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], object] | None = None  # None: an interruptible wait (ends on reset/stop)
    retry_after_share: float = 1.0
    rate_token_share: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.base_latency_seconds < 0 or self.per_token_latency_seconds < 0:
            raise ValueError("latencies must not be negative")
        if not 0.0 <= self.retry_after_share <= 1.0 or not 0.0 < self.rate_token_share <= 1.0:
            raise ValueError("retry_after_share must be in [0, 1] and rate_token_share in (0, 1]")
        tier_rate_limit("voyage-3.5", self.tier)  # validates the tier

    def latency(self, tokens: int) -> float:
        return self.base_latency_seconds + self.per_token_latency_seconds * tokens

    def limit_for(self, model: str) -> RateLimit:
        if not self.rate_limits:
            return RateLimit(None, None)
        return self.limits.get(model) or tier_rate_limit(model, self.tier)
