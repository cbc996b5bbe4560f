"""The fake Voyage server's simulator: Voyage's published rate limits (sliding minute, 429 with
Retry-After, nothing billed) and per-request latency. Time is a stepped clock and sleeps are recorded,
so nothing here waits or depends on the machine's speed."""

from __future__ import annotations

import math
from collections.abc import Iterator

import httpx
import pytest
from pydantic import SecretStr

from winnow.adapters.voyage import VoyageEmbedder
from winnow.models import EmbeddingProfile
from winnow.settings import VoyageSettings
from winnow_fakes.fake_voyage import (
    FakeVoyageServer,
    RateLimit,
    RateLimiter,
    VoyageSimulation,
    retry_after_header,
    tier_rate_limit,
    token_bound,
)
from winnow_fakes.voyage_text import PROMPT_TOKENS


def billed(texts: list[str]) -> int:
    """What the fake counts for a document embedding request: the bound plus the prompt per text."""
    return sum(token_bound(t) + PROMPT_TOKENS for t in texts)


class SteppedClock:
    """A clock that moves only when told to; as a sleep function it advances itself."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def limiter(limit: RateLimit, clock: SteppedClock) -> RateLimiter:
    return RateLimiter(lambda model: limit, clock)


# --- published tiers ---------------------------------------------------------------------------------
def test_tier_limits_follow_voyages_published_table() -> None:
    # Given / When / Then: tier 1 figures from docs.voyageai.com/docs/rate-limits, tiers 2 and 3 scaled
    assert tier_rate_limit("voyage-3.5") == RateLimit(2000, 8_000_000)
    assert tier_rate_limit("voyage-3.5-lite") == RateLimit(2000, 16_000_000)
    assert tier_rate_limit("voyage-3-large") == RateLimit(2000, 3_000_000)
    assert tier_rate_limit("rerank-2.5") == RateLimit(2000, 2_000_000)
    assert tier_rate_limit("voyage-3.5", tier=2) == RateLimit(4000, 16_000_000)
    assert tier_rate_limit("voyage-3.5", tier=3) == RateLimit(6000, 24_000_000)
    assert tier_rate_limit("some-future-model") == RateLimit(2000, 3_000_000)


def test_unknown_tier_is_refused() -> None:
    with pytest.raises(ValueError, match="tier"):
        VoyageSimulation(tier=4)


# --- the limiter ---------------------------------------------------------------------------------------
def test_requests_over_rpm_wait_until_the_oldest_leaves_the_minute() -> None:
    # Given a limit of 3 requests per minute and requests at t=0, 10 and 20
    clock = SteppedClock(0.0)
    rl = limiter(RateLimit(3, None), clock)
    for at in (0.0, 10.0, 20.0):
        clock.now = at
        assert rl.admit("m", 1) is None
    # When a fourth arrives at t=30
    clock.now = 30.0
    # Then it must wait until the t=0 request is a minute old
    assert rl.admit("m", 1) == pytest.approx(30.0)
    # And at t=60 it fits, while the next one waits for the t=10 request
    clock.now = 60.0
    assert rl.admit("m", 1) is None
    assert rl.admit("m", 1) == pytest.approx(10.0)


def test_tokens_over_tpm_wait_until_enough_tokens_leave_the_minute() -> None:
    # Given 100 tokens per minute, 60 admitted at t=0 and 30 at t=10
    clock = SteppedClock(0.0)
    rl = limiter(RateLimit(None, 100), clock)
    assert rl.admit("m", 60) is None
    clock.now = 10.0
    assert rl.admit("m", 30) is None
    # When 20 more arrive at t=15 (110 > 100)
    clock.now = 15.0
    # Then they wait until the 60 tokens of t=0 leave the window; 10 tokens still fit now
    assert rl.admit("m", 20) == pytest.approx(45.0)
    assert rl.admit("m", 10) is None
    clock.now = 60.0
    assert rl.admit("m", 0) is None
    assert rl.admit("m", 20) is None


def test_rejected_requests_use_no_budget_and_models_are_counted_apart() -> None:
    # Given a limit of one request per minute, used by model a
    clock = SteppedClock(0.0)
    rl = limiter(RateLimit(1, None), clock)
    assert rl.admit("a", 5) is None
    # When model a is refused many times
    for _ in range(5):
        assert rl.admit("a", 5) is not None
    # Then model b still has its own budget, and model a gets exactly one slot a minute later
    assert rl.admit("b", 5) is None
    clock.now = 60.0
    assert rl.admit("a", 5) is None
    assert rl.admit("a", 5) == pytest.approx(60.0)


def test_a_request_larger_than_the_minute_budget_is_told_to_wait_a_minute() -> None:
    clock = SteppedClock(0.0)
    rl = limiter(RateLimit(None, 100), clock)
    assert rl.admit("m", 101) == pytest.approx(60.0)


def test_retry_after_is_whole_seconds_rounded_up_and_never_zero() -> None:
    assert retry_after_header(29.2) == "30"
    assert retry_after_header(30.0) == "30"
    assert retry_after_header(0.0) == "1"


# --- over HTTP ---------------------------------------------------------------------------------------
@pytest.fixture
def clock() -> SteppedClock:
    return SteppedClock()


@pytest.fixture
def limited_fake(clock: SteppedClock) -> Iterator[FakeVoyageServer]:
    simulation = VoyageSimulation(
        base_latency_seconds=0.25,
        per_token_latency_seconds=0.001,
        limits={"voyage-3.5": RateLimit(2, 1000)},
        clock=clock,
        sleep=clock.sleep,
    )
    with FakeVoyageServer(simulation=simulation) as fake:
        yield fake


def post_embeddings(fake: FakeVoyageServer, texts: list[str]) -> httpx.Response:
    return httpx.post(
        f"{fake.base_url}/embeddings",
        json={"input": texts, "model": "voyage-3.5", "input_type": "document"},
        headers={"Authorization": f"Bearer {fake.api_key}"},
    )


def test_over_the_limit_answers_429_with_retry_after_and_bills_nothing(
    limited_fake: FakeVoyageServer, clock: SteppedClock
) -> None:
    # Given two requests admitted within the minute (the limit is 2 requests per minute)
    first_admitted = clock.now  # the simulated latency moves the clock after admission
    assert post_embeddings(limited_fake, ["first text"]).status_code == 200
    clock.now += 20
    assert post_embeddings(limited_fake, ["second text here"]).status_code == 200
    billed = limited_fake.usage["embeddings"]
    # When a third arrives 10 s later
    clock.now += 10
    refused = post_embeddings(limited_fake, ["third"])
    # Then it is a 429 that says when to come back: when the first request leaves the window
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == str(math.ceil(first_admitted + 60 - clock.now))
    assert "rate limit" in refused.json()["detail"].lower()
    usage = limited_fake.usage["embeddings"]
    assert (usage.throttled, usage.tokens, usage.texts) == (1, billed.tokens, billed.texts)
    assert usage.requests == 3
    # And after Retry-After it is answered
    clock.now += float(refused.headers["Retry-After"])
    assert post_embeddings(limited_fake, ["third"]).status_code == 200


def test_token_limit_applies_to_the_request_tokens(
    limited_fake: FakeVoyageServer, clock: SteppedClock
) -> None:
    # Given 900 of the 1,000 tokens per minute used
    admitted = clock.now
    assert billed(["w" * 888]) == 900
    assert post_embeddings(limited_fake, ["w" * 888]).status_code == 200
    # When a request of 200 tokens arrives 5 s later
    clock.now += 5
    refused = post_embeddings(limited_fake, ["w" * 188])
    # Then it waits for the 900 tokens to leave the minute
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == str(math.ceil(admitted + 60 - clock.now))
    # And a request that fits in the 100 tokens left is answered at once
    assert post_embeddings(limited_fake, ["w" * 88]).status_code == 200


def test_latency_is_base_plus_per_token_for_each_answered_request(
    limited_fake: FakeVoyageServer, clock: SteppedClock
) -> None:
    # Given texts of known token counts
    texts = ["alpha beta gamma", "delta epsilon"]
    tokens = billed(texts)
    # When one request is answered and one is throttled
    assert post_embeddings(limited_fake, texts).status_code == 200
    assert post_embeddings(limited_fake, ["x"]).status_code == 200
    assert post_embeddings(limited_fake, ["y"]).status_code == 429
    # Then each answered request slept base + per-token time; the refusal did not
    assert clock.sleeps == [
        pytest.approx(0.25 + 0.001 * tokens),
        pytest.approx(0.25 + 0.001 * billed(["x"])),
    ]


def test_our_adapter_absorbs_the_429_by_waiting_retry_after(
    limited_fake: FakeVoyageServer, clock: SteppedClock
) -> None:
    # Given the minute's request budget spent
    assert post_embeddings(limited_fake, ["one"]).status_code == 200
    assert post_embeddings(limited_fake, ["two"]).status_code == 200
    # And our embedder whose sleep moves the simulator's clock
    settings = VoyageSettings(
        api_key=SecretStr(limited_fake.api_key),
        base_url=limited_fake.base_url,
        timeout_seconds=5.0,
        backoff_max_seconds=60.0,  # the adapter caps a Retry-After at this
    )
    adapter_sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        adapter_sleeps.append(seconds)
        clock.now += seconds

    embedder = VoyageEmbedder(settings, limited_fake.api_key, sleep=sleep)
    assert embedder.profile == EmbeddingProfile("voyage", "voyage-3.5", 1024)  # no call: dimension is set
    # When it embeds
    vectors = embedder.embed(["three"], "document")
    # Then it waited exactly the Retry-After of the 429 and got its vector
    assert len(vectors) == 1
    assert adapter_sleeps == [60.0]
    assert limited_fake.usage["embeddings"].throttled == 1


def test_simulation_off_by_default_and_reset_keeps_it_with_an_empty_window(clock: SteppedClock) -> None:
    # Given a plain server, then one with a one-request-per-minute limit
    with FakeVoyageServer() as plain:
        assert plain.simulation is None
        assert all(post_embeddings(plain, ["t"]).status_code == 200 for _ in range(3))
    simulation = VoyageSimulation(
        base_latency_seconds=0,
        per_token_latency_seconds=0,
        limits={"voyage-3.5": RateLimit(1, None)},
        clock=clock,
    )
    with FakeVoyageServer(simulation=simulation) as fake:
        assert post_embeddings(fake, ["t"]).status_code == 200
        assert post_embeddings(fake, ["t"]).status_code == 429
        # When it is reset
        fake.reset()
        # Then the simulation stays but the window is empty
        assert fake.simulation is simulation
        assert post_embeddings(fake, ["t"]).status_code == 200
        assert post_embeddings(fake, ["t"]).status_code == 429
