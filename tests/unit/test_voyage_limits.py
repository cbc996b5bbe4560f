"""Voyage as it is: the fake refuses what Voyage refuses (per-model token limits in Voyage's words,
1,000 texts, rerank query/document/total limits, revoked keys, 429 without Retry-After), and our adapter
lives with it (budgets per model, a refusal for size split and retried, Atlas keys to Atlas's endpoint,
a 401 re-reading the key once, a one-minute back-off without Retry-After)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from winnow.adapters.voyage import VoyageEmbedder, VoyageReranker
from winnow.adapters.voyage_models import (
    ATLAS_BASE_URL,
    EMBED_TOKENS_PER_REQUEST,
    VOYAGE_BASE_URL,
    base_url_for,
    embed_tokens_per_request,
    estimate_tokens,
)
from winnow.errors import ProviderRateLimited, ProviderRejected
from winnow.settings import VoyageSettings
from winnow_fakes.fake_voyage import FakeVoyageServer, Fault, RateLimit, VoyageSimulation, embed_text
from winnow_fakes.voyage_api import EMBED_TOKEN_LIMITS, RERANK_LIMITS
from winnow_fakes.voyage_text import PROMPT_TOKENS, SPECIAL_TOKENS, token_bound


def post(
    fake: FakeVoyageServer, path: str, body: Mapping[str, object], key: str | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key or fake.api_key}"}
    return httpx.post(f"{fake.base_url}/{path}", json=body, headers=headers, timeout=10)


# --- the fake's token count ----------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_the_fakes_count_is_one_token_per_utf8_byte_plus_special_tokens(text: str) -> None:
    # Voyage's tokenizers are byte-level BPE: no token covers less than one byte, so bytes bound them
    expected = len(text.encode("utf-8", "surrogatepass")) + SPECIAL_TOKENS if text else 0
    assert token_bound(text) == expected
    # and digits, which a tokenizer may split one by one, are covered too
    assert token_bound("1234567890") >= 10


def test_adapter_and_fake_agree_on_each_models_documented_limit() -> None:
    # Two tables written from the same API reference, one for the client and one for the stand-in
    assert EMBED_TOKENS_PER_REQUEST == EMBED_TOKEN_LIMITS
    assert embed_tokens_per_request("voyage-3-large") == 120_000
    assert embed_tokens_per_request("voyage-3.5") == embed_tokens_per_request("voyage-4") == 320_000
    assert embed_tokens_per_request("voyage-3.5-lite") == 1_000_000
    assert embed_tokens_per_request("some-new-model") == 120_000  # unknown: the lowest limit
    assert RERANK_LIMITS["rerank-2.5"] == (8_000, 32_000, 600_000)


# --- the fake refuses what Voyage refuses ---------------------------------------------------------------
@pytest.mark.parametrize(("model", "limit"), [("voyage-3-large", 120_000), ("voyage-3.5", 320_000)])
def test_a_request_over_the_models_tokens_is_refused_in_voyages_words(
    fake_voyage: FakeVoyageServer, model: str, limit: int
) -> None:
    # Given texts whose bound just passes the model's limit (each text under the 32K context)
    per_text = 30_000
    count = limit // (per_text + SPECIAL_TOKENS + PROMPT_TOKENS) + 1
    texts = ["x" * per_text] * count
    # When embedded in one request
    response = post(fake_voyage, "embeddings", {"input": texts, "model": model, "input_type": "document"})
    # Then 400 with Voyage's own detail, nothing billed; one text fewer passes
    tokens = count * (per_text + SPECIAL_TOKENS + PROMPT_TOKENS)
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"Request to model '{model}' failed. The max allowed tokens per submitted batch is "
        f"{limit}. Your batch has {tokens} tokens after truncation. Please lower the number of tokens "
        "in the batch."
    }
    assert fake_voyage.usage["embeddings"].tokens == 0
    ok = post(fake_voyage, "embeddings", {"input": texts[1:], "model": model, "input_type": "document"})
    assert ok.status_code == 200


def test_a_text_over_the_context_is_truncated_or_refused(fake_voyage: FakeVoyageServer) -> None:
    long = "y" * 40_000  # over voyage-3.5's 32K context
    truncated = post(fake_voyage, "embeddings", {"input": [long], "model": "voyage-3.5"})
    assert truncated.status_code == 200 and truncated.json()["usage"]["total_tokens"] == 32_000
    refused = post(fake_voyage, "embeddings", {"input": [long], "model": "voyage-3.5", "truncation": False})
    assert refused.status_code == 400 and "context length" in refused.json()["detail"]


def test_more_than_1000_texts_or_documents_are_refused(fake_voyage: FakeVoyageServer) -> None:
    texts = ["t"] * 1001
    assert post(fake_voyage, "embeddings", {"input": texts, "model": "voyage-3.5"}).status_code == 400
    body = {"query": "q", "documents": texts, "model": "rerank-2.5"}
    assert post(fake_voyage, "rerank", body).status_code == 400
    thousand = {"input": texts[:1000], "model": "voyage-3.5", "output_dimension": 256}
    assert post(fake_voyage, "embeddings", thousand).status_code == 200


def test_rerank_enforces_query_document_and_total_limits(fake_voyage: FakeVoyageServer) -> None:
    # rerank-1: query 2,000, query + document 8,000, total 100K (query x documents + documents)
    strict = {"model": "rerank-1", "truncation": False}
    long_query = {"query": "q" * 2_000, "documents": ["d"], **strict}
    assert post(fake_voyage, "rerank", long_query).status_code == 400
    long_doc = {"query": "q", "documents": ["d" * 8_000], **strict}
    assert post(fake_voyage, "rerank", long_doc).status_code == 400
    # With truncation (the default) each fits, but the total still counts: 20 x (5,000 + 3) > 100K
    many = {"query": "q" * 100, "documents": ["d" * 5_000] * 20, "model": "rerank-1"}
    refused = post(fake_voyage, "rerank", many)
    assert refused.status_code == 400 and "max allowed tokens" in refused.json()["detail"]
    many["documents"] = ["d" * 5_000] * 18
    assert post(fake_voyage, "rerank", many).status_code == 200


def test_a_rotated_out_key_is_refused_with_401(fake_voyage: FakeVoyageServer) -> None:
    body = {"input": ["hello"], "model": "voyage-3.5"}
    old = fake_voyage.rotate_key("pa-new-key")
    assert post(fake_voyage, "embeddings", body, key=old).status_code == 401
    assert post(fake_voyage, "embeddings", body, key="pa-new-key").status_code == 200


def test_the_simulator_can_throttle_without_retry_after() -> None:
    simulation = VoyageSimulation(
        base_latency_seconds=0,
        per_token_latency_seconds=0,
        limits={"voyage-3.5": RateLimit(1, None)},
        retry_after_share=0.0,
    )
    with FakeVoyageServer(simulation=simulation) as fake:
        body = {"input": ["hello"], "model": "voyage-3.5"}
        assert post(fake, "embeddings", body).status_code == 200
        refused = post(fake, "embeddings", body)
        assert refused.status_code == 429 and "Retry-After" not in refused.headers


# --- the adapter lives with it --------------------------------------------------------------------------
Make = Callable[..., VoyageEmbedder]


@pytest.fixture
def make(fake_voyage: FakeVoyageServer, voyage_settings: VoyageSettings) -> Make:
    def build(**overrides: object) -> VoyageEmbedder:
        sleep = overrides.pop("sleep", lambda _s: None)
        rng = overrides.pop("rng", lambda: 1.0)
        key = overrides.pop("key", fake_voyage.api_key)
        return VoyageEmbedder(
            voyage_settings.model_copy(update=overrides),
            key,  # type: ignore[arg-type]
            sleep=sleep,  # type: ignore[arg-type]
            rng=rng,  # type: ignore[arg-type]
        )

    return build


def large_document(kilobytes: int) -> list[str]:
    """Chunks of ~1,200 characters, as ingest sends them, adding up to ``kilobytes``."""
    chunk = "The quarterly report covers revenue, churn and the hiring plan for each region. " * 15
    return [f"{i}: {chunk}" for i in range(kilobytes * 1000 // len(chunk))]


def test_a_large_document_on_voyage_3_large_fits_its_120k_budget(
    fake_voyage: FakeVoyageServer, make: Make
) -> None:
    # Given a 730 KB document (the 213K-token request on voyage-3-large)
    texts = large_document(730)
    embedder = make(embed_model="voyage-3-large", output_dimension=256)
    assert embedder.max_batch_tokens == 120_000
    # When embedded
    vectors = embedder.embed(texts, "document")
    # Then no request was refused and each stayed within the model's limit
    requests = fake_voyage.requests_to("embeddings")
    assert {r.status for r in requests} == {200}
    assert all(sum(token_bound(t) + PROMPT_TOKENS for t in r.body["input"]) <= 120_000 for r in requests)
    assert vectors == [embed_text(t, 256) for t in texts]


def test_a_request_refused_for_its_size_is_split_and_retried(
    fake_voyage: FakeVoyageServer, make: Make
) -> None:
    # Given a budget set above voyage-3-large's limit (a wrong override)
    texts = large_document(400)
    embedder = make(embed_model="voyage-3-large", max_batch_tokens=320_000, output_dimension=256)
    # When embedded
    vectors = embedder.embed(texts, "document")
    # Then the refused request was split until each half passed, and every vector came back in order
    statuses = [r.status for r in fake_voyage.requests_to("embeddings")]
    assert 400 in statuses and statuses[-1] == 200
    assert vectors == [embed_text(t, 256) for t in texts]
    assert fake_voyage.usage["embeddings"].texts == len(texts)


def test_a_rerank_refused_for_its_size_is_split_with_the_same_ranking(
    fake_voyage: FakeVoyageServer, voyage_settings: VoyageSettings
) -> None:
    query = "hiring plan per region"
    docs = [f"doc {i} " + ("hiring plan " if i % 3 == 0 else "revenue ") * 500 for i in range(40)]
    roomy = voyage_settings.model_copy(update={"rerank_model": "rerank-2.5"})
    whole = VoyageReranker(roomy, fake_voyage.api_key).rerank(query, docs, top_k=5)
    fake_voyage.reset()
    # rerank-1 allows 100K in all; a budget of 600K sends more than that
    tight = voyage_settings.model_copy(update={"rerank_model": "rerank-1", "rerank_max_tokens": 600_000})
    split = VoyageReranker(tight, fake_voyage.api_key).rerank(query, docs, top_k=5)
    assert 400 in [r.status for r in fake_voyage.requests_to("rerank")]
    assert [s.index for s in split] == [s.index for s in whole]


def test_atlas_keys_go_to_atlas_and_a_base_url_setting_wins(
    fake_voyage: FakeVoyageServer, voyage_settings: VoyageSettings
) -> None:
    assert base_url_for("al-abc") == ATLAS_BASE_URL == "https://ai.mongodb.com/v1"
    assert base_url_for("pa-abc") == VOYAGE_BASE_URL == "https://api.voyageai.com/v1"
    # Given an Atlas key, no base URL set, and a transport that records the URL then reaches the fake
    seen: list[str] = []
    fake_voyage.rotate_key("al-atlas-key")

    class ToFake(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(str(request.url))
            request.url = httpx.URL(f"{fake_voyage.base_url}/{request.url.path.rsplit('/', 1)[-1]}")
            return super().handle_request(request)

    settings = voyage_settings.model_copy(update={"base_url": None})
    with httpx.Client(transport=ToFake()) as client:
        VoyageEmbedder(settings, "al-atlas-key", client).embed(["hello"], "query")
        VoyageEmbedder(
            settings.model_copy(update={"base_url": "https://proxy.example/v1"}), "al-atlas-key", client
        ).embed(["hello"], "query")
    assert seen == ["https://ai.mongodb.com/v1/embeddings", "https://proxy.example/v1/embeddings"]


class KeySource:
    """The factory's secret cache in miniature: a cached key and a store the operator rotates."""

    def __init__(self, cached: str, stored: str) -> None:
        self.cached, self.stored, self.refreshes = cached, stored, 0

    def __call__(self, refresh: bool) -> str:
        if refresh:
            self.refreshes += 1
            self.cached = self.stored
        return self.cached


def test_a_401_re_reads_the_key_once_and_uses_the_new_one(fake_voyage: FakeVoyageServer, make: Make) -> None:
    # Given a key rotated at Voyage and in the secret, while the function still holds the old one
    old = fake_voyage.rotate_key("pa-rotated")
    source = KeySource(cached=old, stored="pa-rotated")
    embedder = make(key=source)
    # When it embeds
    assert embedder.embed(["hello"], "query") == [embed_text("hello", 1024)]
    # Then one 401, one re-read, the same request with the new key; later requests use it at once
    assert [r.status for r in fake_voyage.requests] == [401, 200]
    embedder.embed(["again"], "query")
    assert source.refreshes == 1 and [r.status for r in fake_voyage.requests] == [401, 200, 200]


def test_a_401_with_an_unchanged_secret_fails_after_one_re_read(
    fake_voyage: FakeVoyageServer, make: Make
) -> None:
    old = fake_voyage.rotate_key("pa-rotated")
    source = KeySource(cached=old, stored=old)  # nobody updated the secret
    with pytest.raises(ProviderRejected, match="HTTP 401"):
        make(key=source).embed(["hello"], "query")
    assert source.refreshes == 1 and len(fake_voyage.requests) == 1


@pytest.mark.parametrize("jitter", [0.0, 1.0])
def test_without_retry_after_the_back_off_spans_voyages_minute(
    fake_voyage: FakeVoyageServer, make: Make, jitter: float
) -> None:
    # Given four 429s without Retry-After, then an answer
    fake_voyage.inject(*[Fault.rate_limited()] * 4)
    slept: list[float] = []
    embedder = make(max_attempts=5, rate_limit_window_seconds=60.0, sleep=slept.append, rng=lambda: jitter)
    # When it embeds
    assert embedder.embed(["hello"], "document") == [embed_text("hello", 1024)]
    # Then the pauses double and add up to at least the minute (at most two), whatever the jitter
    assert len(slept) == 4 and all(b > a for a, b in itertools.pairwise(slept))
    assert 60.0 <= sum(slept) <= 120.0
    assert sum(slept) == pytest.approx(60.0 if jitter == 0.0 else 120.0)


def test_search_does_not_wait_the_minute_it_answers_rate_limited(
    fake_voyage: FakeVoyageServer, make: Make
) -> None:
    # Given search's settings (window 0, two attempts, 1 s back-off) and a Voyage throttling without a hint
    fake_voyage.set_outage(Fault.rate_limited())
    slept: list[float] = []
    embedder = make(
        max_attempts=2, backoff_max_seconds=1.0, rate_limit_window_seconds=0.0, sleep=slept.append
    )
    # Then ProviderRateLimited (search's 503) with a Retry-After, after at most a second of waiting
    with pytest.raises(ProviderRateLimited) as caught:
        embedder.embed(["q"], "query")
    assert sum(slept) <= 1.0 and caught.value.retry_after is not None and caught.value.retry_after > 0


def test_estimate_covers_the_fakes_count_with_the_prompt() -> None:
    # The adapter's budget per text (estimate + prompt) is never below what the fake bills
    for text in ("a", "héllo wörld", "検索", "🙂" * 10, "1234567890"):
        assert estimate_tokens(text) + PROMPT_TOKENS >= token_bound(text) + PROMPT_TOKENS


@pytest.fixture(autouse=True)
def _no_leak(fake_voyage: FakeVoyageServer) -> Iterator[None]:
    yield
    fake_voyage.reset()  # restores the issued key for the next test
