"""VoyageEmbedder and VoyageReranker through real HTTP against the loopback fake Voyage server: batching,
wire fields, response validation, retries with backoff and Retry-After, and error translation."""

from __future__ import annotations

import math
import socket
from collections.abc import Callable

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.sockets import nagle_disabled_on_served_connection
from winnow.adapters.voyage import VoyageEmbedder, VoyageReranker, batches_within, estimate_tokens
from winnow.errors import (
    ConfigurationError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderResponseError,
    ProviderUnavailable,
    TransientError,
)
from winnow.models import EmbeddingProfile
from winnow.settings import VoyageSettings
from winnow_fakes.fake_voyage import FakeVoyageServer, Fault, embed_text, rerank_score, token_bound

SENTENCES = [
    "Cats sleep most of the day in warm places.",
    "The stock market fell sharply after the announcement.",
    "A sleeping cat prefers warm sunny windows.",
    "Interest rates and the stock market move together.",
    "Penguins live in the southern hemisphere.",
]


EmbedderFactory = Callable[..., VoyageEmbedder]
RerankerFactory = Callable[..., VoyageReranker]


class SleepRecorder:
    """Stands in for ``time.sleep`` so retry tests record delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def make_embedder(
    fake_voyage: FakeVoyageServer, voyage_settings: VoyageSettings, sleeps: SleepRecorder
) -> Callable[..., VoyageEmbedder]:
    def make(**overrides: object) -> VoyageEmbedder:
        api_key = str(overrides.pop("api_key", fake_voyage.api_key))
        rng = overrides.pop("rng", lambda: 1.0)
        settings = voyage_settings.model_copy(update=overrides)
        return VoyageEmbedder(settings, api_key, sleep=sleeps, rng=rng)  # type: ignore[arg-type]

    return make


@pytest.fixture
def make_reranker(
    fake_voyage: FakeVoyageServer, voyage_settings: VoyageSettings, sleeps: SleepRecorder
) -> Callable[..., VoyageReranker]:
    def make(**overrides: object) -> VoyageReranker:
        settings = voyage_settings.model_copy(update=overrides)
        return VoyageReranker(settings, fake_voyage.api_key, sleep=sleeps, rng=lambda: 1.0)

    return make


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


# --- embeddings: wire and batching -----------------------------------------------------------------
def test_embed_sends_documented_fields_and_returns_vectors_in_order(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given an embedder with output_dimension 256
    embedder = make_embedder(output_dimension=256)
    # When it embeds documents
    vectors = embedder.embed(SENTENCES, "document")
    # Then one request carried every documented field
    (request,) = fake_voyage.requests_to("embeddings")
    assert request.body["input"] == SENTENCES
    assert request.body["model"] == "voyage-3.5"
    assert request.body["input_type"] == "document"
    assert request.body["output_dimension"] == 256
    assert request.body["truncation"] is True
    # And each vector is the one the server computed for the text at the same position
    assert vectors == [embed_text(text, 256) for text in SENTENCES]
    assert embedder.profile == EmbeddingProfile("voyage", "voyage-3.5", 256)


def test_query_input_type_is_sent(fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory) -> None:
    # Given an embedder; When it embeds a query; Then the request says input_type=query
    make_embedder().embed(["what do cats do all day"], "query")
    assert fake_voyage.requests_to("embeddings")[0].body["input_type"] == "query"


def test_vectors_carry_meaning_through_the_adapter(make_embedder: EmbedderFactory) -> None:
    # Given texts about two topics; When embedded; Then texts sharing a topic are closer than others
    cats_a, market_a, cats_b, market_b, _ = make_embedder().embed(SENTENCES, "document")
    assert cosine(cats_a, cats_b) > cosine(cats_a, market_a)
    assert cosine(market_a, market_b) > cosine(market_a, cats_b)


def test_answer_items_are_placed_by_their_index_not_their_position(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given a server that returns the data items in reverse order
    fake_voyage.inject(Fault.shuffled())
    # When embedding; Then vectors still follow the input order (data[].index decides)
    vectors = make_embedder().embed(SENTENCES, "document")
    assert vectors == [embed_text(text, 1024) for text in SENTENCES]
    assert fake_voyage.total_requests == 1


def test_batches_respect_the_text_count_limit(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given at most 3 texts per request and 10 texts
    texts = [f"document number {i} about topic {i % 3}" for i in range(10)]
    vectors = make_embedder(max_batch_texts=3).embed(texts, "document")
    # Then the server saw 4 requests of at most 3 texts, in order, and every vector is in place
    bodies = [r.body["input"] for r in fake_voyage.requests_to("embeddings")]
    assert [len(b) for b in bodies] == [3, 3, 3, 1]
    assert [t for body in bodies for t in body] == texts
    assert vectors == [embed_text(t, 1024) for t in texts]


def test_batches_respect_the_token_budget(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given a 1,000-token budget and texts of about 400 estimated tokens each
    texts = [f"passage {i} " + "lorem ipsum dolor sit amet " * 14 for i in range(7)]
    assert all(350 < estimate_tokens(t) < 500 for t in texts)
    vectors = make_embedder(max_batch_tokens=1000).embed(texts, "document")
    # Then no request went over the budget, texts kept their order, and nothing was lost
    bodies = [r.body["input"] for r in fake_voyage.requests_to("embeddings")]
    assert len(bodies) == 4
    assert all(sum(estimate_tokens(t) + 10 for t in body) <= 1000 for body in bodies)
    assert [t for body in bodies for t in body] == texts
    assert len(vectors) == 7
    assert fake_voyage.usage["embeddings"].texts == 7


def test_default_limits_send_at_most_1000_texts_per_request(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given 2,500 short texts and the API's documented limit of 1,000 per request
    texts = [f"note {i}" for i in range(2500)]
    vectors = make_embedder(output_dimension=256).embed(texts, "document")
    # Then three requests carried them, and the last vector belongs to the last text
    assert [len(r.body["input"]) for r in fake_voyage.requests_to("embeddings")] == [1000, 1000, 500]
    assert vectors[-1] == embed_text("note 2499", 256)


def test_one_connection_is_reused_across_requests(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given an embedder that needs four requests; Then all four came over one keep-alive connection
    make_embedder(max_batch_texts=1).embed(SENTENCES[:4], "document")
    ports = {r.peer_port for r in fake_voyage.requests_to("embeddings")}
    assert len(ports) == 1 and ports != {0}


def test_no_request_for_no_texts(fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory) -> None:
    assert make_embedder().embed([], "document") == []
    assert fake_voyage.total_requests == 0


def test_unset_output_dimension_is_learned_from_the_first_answer(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given no output_dimension (the model's default applies)
    embedder = make_embedder(output_dimension=None)
    # When the profile is asked for before any embedding
    profile = embedder.profile
    # Then one probe request without output_dimension taught it the server's default
    (request,) = fake_voyage.requests_to("embeddings")
    assert "output_dimension" not in request.body
    assert profile.dimension == fake_voyage.dimension == 1024
    # And later answers of another size are refused
    fake_voyage.inject(Fault.wrong_dimension(), Fault.wrong_dimension(), Fault.wrong_dimension())
    with pytest.raises(ProviderResponseError, match="1023-dimensional"):
        embedder.embed(["a text"], "document")


def test_injected_http_client_is_used_and_reused(
    fake_voyage: FakeVoyageServer, voyage_settings: VoyageSettings, sleeps: SleepRecorder
) -> None:
    # Given a caller-owned httpx client that counts requests
    seen: list[str] = []
    client = httpx.Client(event_hooks={"request": [lambda request: seen.append(request.url.path)]})
    embedder = VoyageEmbedder(
        voyage_settings.model_copy(update={"max_batch_texts": 2}), "test-voyage-key", client
    )
    # When embedding five texts (three requests)
    embedder.embed(SENTENCES, "document")
    # Then every request went through that client, and closing the embedder leaves it open
    assert seen == ["/v1/embeddings"] * 3
    embedder.close()
    assert not client.is_closed
    client.close()


# --- embeddings: faults ----------------------------------------------------------------------------
TRANSIENT_FAULTS = {
    "429 without Retry-After": Fault.rate_limited(),
    "429 with Retry-After": Fault.rate_limited(retry_after=1),
    "500": Fault.server_error(500),
    "502": Fault.server_error(502),
    "529 (any 5xx)": Fault.server_error(529),
    "408": Fault.http_status(408),
    "503": Fault.unavailable(),
    "timeout": Fault.delay(1.0),
    "connection dropped": Fault.disconnect(),
    "malformed JSON": Fault.malformed_json(),
    "wrong vector count": Fault.wrong_count(),
    "wrong dimension": Fault.wrong_dimension(),
    "non-finite value": Fault.non_finite(),
}


@pytest.mark.parametrize("fault", TRANSIENT_FAULTS.values(), ids=TRANSIENT_FAULTS.keys())
def test_one_transient_fault_is_retried_then_succeeds(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory, sleeps: SleepRecorder, fault: Fault
) -> None:
    # Given a server that misbehaves once
    fake_voyage.inject(fault)
    # When embedding (timeout 0.3 s so the delay fault times out)
    vectors = make_embedder(timeout_seconds=0.3).embed(SENTENCES[:2], "document")
    # Then the second attempt's answer is returned, after exactly one pause
    assert vectors == [embed_text(t, 1024) for t in SENTENCES[:2]]
    assert fake_voyage.total_requests == 2
    assert len(sleeps.delays) == 1
    assert fake_voyage.pending_faults == 0


EXHAUSTED = {
    "429": (Fault.rate_limited(), ProviderRateLimited),
    "500": (Fault.server_error(500), ProviderUnavailable),
    "503": (Fault.unavailable(), ProviderUnavailable),
    "timeout": (Fault.delay(1.0), ProviderUnavailable),
    "connection dropped": (Fault.disconnect(), ProviderUnavailable),
    "malformed JSON": (Fault.malformed_json(), ProviderResponseError),
    "wrong count": (Fault.wrong_count(), ProviderResponseError),
    "wrong dimension": (Fault.wrong_dimension(), ProviderResponseError),
    "non-finite": (Fault.non_finite(), ProviderResponseError),
}


@pytest.mark.parametrize(("fault", "expected"), EXHAUSTED.values(), ids=EXHAUSTED.keys())
def test_persistent_fault_exhausts_attempts_and_raises_our_transient_error(
    fake_voyage: FakeVoyageServer,
    make_embedder: EmbedderFactory,
    sleeps: SleepRecorder,
    fault: Fault,
    expected: type[TransientError],
) -> None:
    # Given a server that misbehaves on every request
    fake_voyage.set_outage(fault)
    embedder = make_embedder(timeout_seconds=0.3, max_attempts=3)
    # When embedding; Then our transient exception is raised after exactly max_attempts requests
    with pytest.raises(expected) as caught:
        embedder.embed(["a text"], "document")
    assert isinstance(caught.value, TransientError)
    assert fake_voyage.total_requests == 3
    assert len(sleeps.delays) == 2
    assert "3 attempt" in str(caught.value)
    assert caught.value.retry_after is not None and caught.value.retry_after >= 0
    if expected is ProviderUnavailable:
        assert not isinstance(caught.value, (ProviderRateLimited, ProviderResponseError))


def test_backoff_grows_exponentially_and_is_capped(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory, sleeps: SleepRecorder
) -> None:
    # Given base 0.1 s, cap 0.5 s and a jitter source at its maximum
    fake_voyage.set_outage(Fault.server_error(500))
    embedder = make_embedder(max_attempts=5, backoff_base_seconds=0.1, backoff_max_seconds=0.5)
    with pytest.raises(ProviderUnavailable):
        embedder.embed(["a text"], "document")
    # Then the pauses double until the cap
    assert sleeps.delays == pytest.approx([0.1, 0.2, 0.4, 0.5])


def test_backoff_uses_full_jitter(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory, sleeps: SleepRecorder
) -> None:
    # Given a jitter source returning 0.25
    fake_voyage.inject(Fault.server_error(500), Fault.server_error(500))
    make_embedder(backoff_base_seconds=1.0, backoff_max_seconds=10.0, rng=lambda: 0.25).embed(["x"], "query")
    # Then each pause is that fraction of the exponential ceiling
    assert sleeps.delays == pytest.approx([0.25, 0.5])


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory, sleeps: SleepRecorder, status: int
) -> None:
    # Given a throttle answer asking for 3 s, and a cap of 20 s
    fake_voyage.inject(Fault.http_status(status, retry_after=3))
    make_embedder(backoff_max_seconds=20.0).embed(["x"], "query")
    # Then the adapter waited exactly what the server asked
    assert sleeps.delays == [3.0]


def test_retry_after_is_capped(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory, sleeps: SleepRecorder
) -> None:
    # Given a server asking for 120 s and a cap of 5 s; Then the wait is 5 s
    fake_voyage.inject(Fault.rate_limited(retry_after=120))
    make_embedder(backoff_max_seconds=5.0).embed(["x"], "query")
    assert sleeps.delays == [5.0]


def test_exhausted_rate_limit_carries_the_servers_retry_after(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given a server that keeps throttling with Retry-After: 2
    fake_voyage.set_outage(Fault.rate_limited(retry_after=2))
    with pytest.raises(ProviderRateLimited) as caught:
        make_embedder(backoff_max_seconds=20.0).embed(["x"], "query")
    # Then callers (search's 503) can pass that hint on
    assert caught.value.retry_after == 2.0


@pytest.mark.parametrize("status", [400, 401, 403, 422])
def test_client_errors_are_rejected_without_retry(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory, sleeps: SleepRecorder, status: int
) -> None:
    # Given a server refusing the request with a 4xx other than 429
    fake_voyage.inject(Fault.http_status(status))
    # Then ProviderRejected (permanent) after a single request and no pause
    with pytest.raises(ProviderRejected, match=f"HTTP {status}"):
        make_embedder().embed(["x"], "document")
    assert fake_voyage.total_requests == 1
    assert sleeps.delays == []


def test_server_validation_detail_reaches_the_message(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given an output_dimension the API does not offer
    with pytest.raises(ProviderRejected, match="output_dimension must be one of"):
        make_embedder(output_dimension=100).embed(["x"], "document")
    assert fake_voyage.total_requests == 1


def test_api_key_never_appears_in_errors_or_logs(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a secret-looking key the server does not accept
    secret = "pa-SECRET-0123456789abcdef"
    with pytest.raises(ProviderRejected) as rejected:
        make_embedder(api_key=secret).embed(["x"], "document")
    # And transient failures with the right key (logged on each retry)
    fake_voyage.set_outage(Fault.server_error(500))
    with pytest.raises(ProviderUnavailable) as unavailable:
        make_embedder().embed(["x"], "document")
    # Then neither key shows up in messages, reprs or anything printed
    output = capsys.readouterr()
    assert "HTTP 401" in str(rejected.value)
    for text in (str(rejected.value), repr(rejected.value), str(unavailable.value), output.out, output.err):
        assert secret not in text
        assert fake_voyage.api_key not in text


def test_api_key_echoed_by_the_provider_is_scrubbed(
    fake_voyage: FakeVoyageServer, make_embedder: EmbedderFactory
) -> None:
    # Given a provider whose error message repeats the key it was sent
    fake_voyage.inject(Fault.http_status(400, detail=f"bad request from key {fake_voyage.api_key}"))
    # Then our message keeps the provider's words but not the key
    with pytest.raises(ProviderRejected, match="bad request from key") as caught:
        make_embedder().embed(["x"], "document")
    assert fake_voyage.api_key not in str(caught.value)


def test_empty_api_key_is_a_configuration_error(voyage_settings: VoyageSettings) -> None:
    with pytest.raises(ConfigurationError):
        VoyageEmbedder(voyage_settings, "  ")


def test_connection_refused_is_unavailable(voyage_settings: VoyageSettings, sleeps: SleepRecorder) -> None:
    # Given a base URL where nothing listens
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = voyage_settings.model_copy(update={"base_url": f"http://127.0.0.1:{port}/v1"})
    # Then every attempt fails to connect and ProviderUnavailable says so
    with pytest.raises(ProviderUnavailable, match="connection failed"):
        VoyageEmbedder(settings, "k", sleep=sleeps).embed(["x"], "document")
    assert len(sleeps.delays) == settings.max_attempts - 1


# --- re-ranking ------------------------------------------------------------------------------------
RERANK_DOCS = [
    "Penguins live in the southern hemisphere.",
    "Cats sleep in warm places most of the day.",
    "Warm places attract sleeping cats and dogs.",
    "The stock market fell.",
    "Cats are mammals.",
]


def test_rerank_returns_scores_best_first_with_the_wire_fields(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory
) -> None:
    # Given a query and documents
    query = "where do cats sleep"
    scores = make_reranker().rerank(query, RERANK_DOCS, top_k=3)
    # Then one request with the documented fields, and the top 3 scores best first, in [0, 1]
    (request,) = fake_voyage.requests_to("rerank")
    assert request.body == {
        "query": query,
        "documents": RERANK_DOCS,
        "model": "rerank-2.5",
        "top_k": 3,
        "truncation": True,
    }
    expected = sorted(
        ((i, rerank_score(query, d)) for i, d in enumerate(RERANK_DOCS)), key=lambda p: (-p[1], p[0])
    )[:3]
    assert [(s.index, s.score) for s in scores] == expected
    assert all(0.0 <= s.score <= 1.0 for s in scores)
    assert scores[0].index in (1, 2)


def test_rerank_without_top_k_scores_every_document(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory
) -> None:
    scores = make_reranker().rerank("stock market", RERANK_DOCS)
    assert sorted(s.index for s in scores) == list(range(len(RERANK_DOCS)))
    assert scores[0].index == 3
    assert fake_voyage.requests_to("rerank")[0].body["top_k"] is None


def test_rerank_splits_by_document_count_and_merges_the_same_ranking(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory
) -> None:
    # Given the ranking from one request
    query = "cats sleep in warm places"
    docs = RERANK_DOCS * 3
    whole = make_reranker().rerank(query, docs, top_k=6)
    fake_voyage.reset()
    # When at most 4 documents fit one request
    split = make_reranker(rerank_max_documents=4).rerank(query, docs, top_k=6)
    # Then 4 requests were made and the merged top 6 equals the single-request top 6
    bodies = [r.body for r in fake_voyage.requests_to("rerank")]
    assert [len(b["documents"]) for b in bodies] == [4, 4, 4, 3]
    assert all(b["top_k"] == min(6, len(b["documents"])) for b in bodies)
    assert split == whole


def test_rerank_splits_by_token_budget(fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory) -> None:
    # Given documents of ~300 estimated tokens and a 1,000-token budget
    query = "cats warm places"
    docs = [f"doc {i} cats like warm places " + "filler words here " * 50 for i in range(6)]
    scores = make_reranker(rerank_max_tokens=1000).rerank(query, docs)
    # Then each request stayed within "query tokens x documents + document tokens"
    bodies = [r.body for r in fake_voyage.requests_to("rerank")]
    assert len(bodies) > 1
    q = estimate_tokens(query)
    assert all(
        q * len(b["documents"]) + sum(estimate_tokens(d) for d in b["documents"]) <= 1000 for b in bodies
    )
    assert sorted(s.index for s in scores) == list(range(6))


def test_rerank_trims_only_a_document_too_large_for_the_budget(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory
) -> None:
    # Given one huge document and one small one, with a 1,000-token budget
    huge = "cats " * 5000
    scores = make_reranker(rerank_max_tokens=1000).rerank("cats", [huge, "cats and dogs"])
    # Then the huge one was cut to fit on its own, the small one sent whole, both scored
    sent = [d for r in fake_voyage.requests_to("rerank") for d in r.body["documents"]]
    assert sent[1] == "cats and dogs"
    assert huge.startswith(sent[0]) and estimate_tokens(sent[0]) + estimate_tokens("cats") <= 1000
    assert {s.index for s in scores} == {0, 1}


def test_rerank_scores_empty_documents_zero_without_sending_them(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory
) -> None:
    scores = make_reranker().rerank("cats", ["", "cats sleep", "   "])
    assert fake_voyage.requests_to("rerank")[0].body["documents"] == ["cats sleep"]
    assert [(s.index, s.score) for s in scores] == [(1, 1.0), (0, 0.0), (2, 0.0)]


def test_rerank_of_nothing_makes_no_request(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory
) -> None:
    assert make_reranker().rerank("cats", []) == []
    assert fake_voyage.total_requests == 0


RERANK_FAULTS = {
    "429": Fault.rate_limited(),
    "timeout": Fault.delay(1.0),
    "malformed JSON": Fault.malformed_json(),
    "wrong count": Fault.wrong_count(),
    "unknown index": Fault.wrong_dimension(),
    "NaN score": Fault.non_finite(),
}


@pytest.mark.parametrize("fault", RERANK_FAULTS.values(), ids=RERANK_FAULTS.keys())
def test_rerank_retries_a_transient_fault(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory, fault: Fault
) -> None:
    fake_voyage.inject(fault)
    scores = make_reranker(timeout_seconds=0.3).rerank("cats sleep", RERANK_DOCS, top_k=2)
    assert [s.index for s in scores] == [1, 2]
    assert fake_voyage.total_requests == 2


def test_rerank_outage_raises_unavailable(
    fake_voyage: FakeVoyageServer, make_reranker: RerankerFactory
) -> None:
    fake_voyage.set_outage(Fault.unavailable(endpoint="rerank"))
    with pytest.raises(ProviderUnavailable):
        make_reranker().rerank("cats", RERANK_DOCS)
    assert fake_voyage.usage["rerank"].requests == 3


def test_rerank_rejects_bad_top_k(make_reranker: RerankerFactory) -> None:
    with pytest.raises(ValueError, match="top_k"):
        make_reranker().rerank("cats", RERANK_DOCS, top_k=0)


# --- token estimate and batching helpers -----------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_token_estimate_is_never_below_the_strict_fakes_count(text: str) -> None:
    # The fake counts the most any byte-level BPE tokenizer can: one token per UTF-8 byte
    assert estimate_tokens(text) >= token_bound(text) >= len(text.encode("utf-8", "surrogatepass"))


def test_token_estimate_counts_cjk_at_least_one_token_per_byte() -> None:
    assert estimate_tokens("検索エンジンの再ランキング") >= 3 * len("検索エンジンの再ランキング")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=60), max_size=40), st.integers(1, 7), st.integers(5, 200))
def test_batches_cover_every_text_once_in_order_within_limits(
    texts: list[str], max_texts: int, max_tokens: int
) -> None:
    groups = batches_within(texts, max_texts, max_tokens)
    assert [i for g in groups for i in g] == list(range(len(texts)))
    for group in groups:
        assert 1 <= len(group) <= max_texts
        assert len(group) == 1 or sum(estimate_tokens(texts[i]) for i in group) <= max_tokens


def test_fake_answers_without_waiting_for_nagle(
    fake_voyage: FakeVoyageServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real API answers a kept-alive connection at once; with Nagle's algorithm the fake's body waited
    # ~40 ms for the client's delayed ACK, latency the benchmarks and tests would wrongly pay.
    assert fake_voyage._server is not None
    assert nagle_disabled_on_served_connection(fake_voyage._server, monkeypatch, path="/v1/models")
