"""ServerReranker through real HTTP against the loopback stand-in of TEI and the Cohere-style servers
(Infinity, vLLM, llama.cpp): wire fields, batching within the server's limit, score mapping, retries
with Retry-After, and error translation."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from winnow.adapters.rerank_server import ServerReranker, sigmoid
from winnow.errors import (
    ConfigurationError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderResponseError,
    ProviderUnavailable,
)
from winnow.settings import RerankServerSettings
from winnow_fakes.fake_rerank import FakeRerankServer, RerankFault, logit_of

QUERY = "how many days of paid holiday"
DOCS = [
    "The stock market fell sharply after the announcement.",
    "Every employee receives twenty-eight days of paid holiday per year.",
    "Paid parking is available on weekdays.",
    "Penguins live in the southern hemisphere.",
]

Make = Callable[..., ServerReranker]


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(params=["tei", "cohere"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeRerankServer]:
    with FakeRerankServer(request.param, api_key="sk-rerank-secret") as fake:
        yield fake


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make(server: FakeRerankServer, sleeps: Sleeps) -> Make:
    def build(**overrides: object) -> ServerReranker:
        api_key = overrides.pop("api_key", server.api_key)
        settings = RerankServerSettings(url=server.url, api=server.api, **overrides)  # type: ignore[arg-type]
        return ServerReranker(settings, api_key, sleep=sleeps, rng=lambda: 1.0)  # type: ignore[arg-type]

    return build


def test_scores_every_document_best_first_with_the_servers_own_fields(
    server: FakeRerankServer, make: Make
) -> None:
    scores = make().rerank(QUERY, DOCS)
    assert [s.index for s in scores][:2] == [1, 2]
    assert sorted(s.index for s in scores) == [0, 1, 2, 3]
    for s in scores:  # the server's sigmoid, passed through
        assert s.score == pytest.approx(sigmoid(logit_of(QUERY, DOCS[s.index])))
    (sent,) = server.requests
    assert sent.authorization == "Bearer sk-rerank-secret"
    if server.api == "tei":
        assert sent.body == {"query": QUERY, "texts": DOCS, "truncate": True, "raw_scores": False}
    else:
        assert sent.body == {"query": QUERY, "documents": DOCS}


def test_top_k_cuts_the_merged_list_and_no_top_n_is_sent(server: FakeRerankServer, make: Make) -> None:
    scores = make(max_batch=2).rerank(QUERY, DOCS, top_k=1)
    assert [s.index for s in scores] == [1]
    assert len(server.requests) == 2
    assert all("top_n" not in r.body for r in server.requests)


def test_batches_stay_within_max_batch_and_merge_the_same_ranking(
    server: FakeRerankServer, make: Make
) -> None:
    docs = [f"document {i} about paid holiday" if i % 7 == 0 else f"note {i}" for i in range(70)]
    whole = make(max_batch=2048).rerank(QUERY, docs) if server.api == "cohere" else None
    server.requests.clear()
    split = make(max_batch=32).rerank(QUERY, docs)
    sizes = [len(r.body["texts" if server.api == "tei" else "documents"]) for r in server.requests]
    assert sizes == [32, 32, 6]
    assert sorted(s.index for s in split) == list(range(70))
    if whole is not None:
        assert split == whole


def test_a_server_limit_below_the_setting_halves_the_batch(sleeps: Sleeps) -> None:
    with FakeRerankServer("tei", max_client_batch_size=8) as fake:
        settings = RerankServerSettings(url=fake.url, api="tei", max_batch=32)
        docs = [f"holiday {i}" for i in range(20)]
        scores = ServerReranker(settings, sleep=sleeps).rerank(QUERY, docs)
    assert sorted(s.index for s in scores) == list(range(20))
    sizes = [len(r.body["texts"]) for r in fake.requests]
    assert sizes == [20, 10, 5, 5, 10, 5, 5]  # 20 and 10 refused (422), the halves of 5 answered
    assert sum(n for n in sizes if n <= 8) == 20
    assert not sleeps  # a size refusal is split, not retried


def test_empty_documents_score_zero_and_are_not_sent(server: FakeRerankServer, make: Make) -> None:
    scores = make().rerank(QUERY, ["", "  ", DOCS[1]])
    assert {s.index: s.score for s in scores}[0] == 0.0
    key = "texts" if server.api == "tei" else "documents"
    assert server.requests[0].body[key] == [DOCS[1]]
    server.requests.clear()
    assert make().rerank(QUERY, ["", " "]) == [type(scores[0])(0, 0.0), type(scores[0])(1, 0.0)]
    assert server.requests == []


def test_raw_logits_are_mapped_by_the_sigmoid() -> None:
    """llama.cpp's server answers the classifier's raw logit: ``scores=logit`` maps it to [0, 1]."""
    with FakeRerankServer("cohere", logits=True) as fake:
        settings = RerankServerSettings(url=fake.url, api="cohere", scores="logit")
        scores = ServerReranker(settings).rerank(QUERY, DOCS)
        assert all(0.0 <= s.score <= 1.0 for s in scores)
        for s in scores:
            assert s.score == pytest.approx(sigmoid(logit_of(QUERY, DOCS[s.index])))
        taken_as_probabilities = RerankServerSettings(url=fake.url, api="cohere")
        with pytest.raises(ConfigurationError, match="WINNOW_RERANKER_SCORES=logit"):
            ServerReranker(taken_as_probabilities).rerank(QUERY, DOCS)


def test_sigmoid_does_not_overflow() -> None:
    assert sigmoid(-1000.0) == 0.0 and sigmoid(1000.0) == 1.0 and sigmoid(0.0) == 0.5


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured_then_the_answer_comes(
    server: FakeRerankServer, make: Make, sleeps: Sleeps, status: int
) -> None:
    server.inject(RerankFault(status, retry_after="7"))
    assert make().rerank(QUERY, DOCS)[0].index == 1
    assert sleeps == [7.0]


@pytest.mark.parametrize("fault", [RerankFault(500), RerankFault(424), RerankFault(malformed=True)])
def test_transient_faults_are_retried_with_backoff(
    server: FakeRerankServer, make: Make, sleeps: Sleeps, fault: RerankFault
) -> None:
    server.inject(fault, fault)
    assert make().rerank(QUERY, DOCS)[0].index == 1
    assert sleeps == [0.5, 1.0]


def test_an_outage_becomes_our_transient_error_with_retry_after(server: FakeRerankServer, make: Make) -> None:
    server.inject(*[RerankFault(503, retry_after="3")] * 3)
    with pytest.raises(ProviderUnavailable) as caught:
        make(max_attempts=3).rerank(QUERY, DOCS)
    assert caught.value.retry_after == 3.0
    server.inject(*[RerankFault(429)] * 2)
    with pytest.raises(ProviderRateLimited):
        make(max_attempts=2).rerank(QUERY, DOCS)
    server.inject(*[RerankFault(malformed=True)] * 2)
    with pytest.raises(ProviderResponseError):
        make(max_attempts=2).rerank(QUERY, DOCS)


def test_connection_refused_is_unavailable(sleeps: Sleeps) -> None:
    with FakeRerankServer("tei") as fake:
        url = fake.url
    settings = RerankServerSettings(url=url, max_attempts=2)
    with pytest.raises(ProviderUnavailable, match="connection failed"):
        ServerReranker(settings, sleep=sleeps).rerank(QUERY, DOCS)
    assert len(sleeps) == 1


def test_a_wrong_key_is_rejected_at_once_and_never_shown(
    server: FakeRerankServer, make: Make, sleeps: Sleeps
) -> None:
    with pytest.raises(ProviderRejected, match="HTTP 401") as caught:
        make(api_key="sk-wrong-key").rerank(QUERY, DOCS)
    assert "sk-wrong-key" not in str(caught.value)
    assert "WINNOW_RERANKER_API_KEY" in str(caught.value)
    assert not sleeps


def test_a_rotated_key_is_read_again_after_a_401(server: FakeRerankServer, make: Make) -> None:
    reads: list[bool] = []

    def source(refresh: bool) -> str:
        reads.append(refresh)
        return "sk-rerank-secret" if refresh else "sk-rotated-out"

    assert make(api_key=source).rerank(QUERY, DOCS)[0].index == 1
    assert reads == [False, True]


def test_an_unknown_model_is_the_servers_400_not_retried(sleeps: Sleeps) -> None:
    with FakeRerankServer("cohere") as fake:
        settings = RerankServerSettings(url=fake.url, api="cohere", model="no/such-model")
        with pytest.raises(ProviderRejected, match="ModelNotDeployedError"):
            ServerReranker(settings, sleep=sleeps).rerank(QUERY, DOCS)
        named = RerankServerSettings(url=fake.url, api="cohere", model=fake.model_id)
        assert ServerReranker(named).rerank(QUERY, DOCS)[0].index == 1
        assert fake.requests[-1].body["model"] == fake.model_id
    assert not sleeps


def test_no_url_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="WINNOW_RERANKER_URL"):
        ServerReranker(RerankServerSettings())


def test_a_url_that_is_not_http_is_refused_by_the_settings() -> None:
    with pytest.raises(ValueError, match="http"):
        RerankServerSettings(url="tei:8080/rerank")
