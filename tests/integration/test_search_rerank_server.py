"""``WINNOW_RERANKER=http``: the composition root builds the self-hosted re-ranker, and the real search
handler orders by its scores, through the loopback stand-in of TEI and of the Cohere-style servers;
an outage of the server is a 503 with Retry-After, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from tests.support.stack import EmbeddedStack
from winnow.adapters.rerank_server import ServerReranker, sigmoid
from winnow.settings import ProviderSettings, RerankServerSettings
from winnow_fakes.fake_rerank import FakeRerankServer, RerankFault, logit_of
from winnow_fakes.fake_voyage import FakeVoyageServer

DOCS = {
    "acme/finance/expenses.md": b"# Expenses\n\nTravel expenses are reimbursed within fourteen days.\n",
    "acme/people/holidays.md": b"# Holidays\n\nEvery employee receives twenty-eight days of paid holiday.\n",
    "acme/it/security.md": b"# Security\n\nLaptops must use full-disk encryption.\n",
}
QUERY = "how many days of paid holiday"


def server_stack(
    home: Path, fake_voyage: FakeVoyageServer, server: FakeRerankServer, **settings: object
) -> EmbeddedStack:
    stack = EmbeddedStack(home, fake_voyage)
    stack.container.settings.providers = ProviderSettings(embedder="voyage", reranker="http")
    stack.container.settings.rerank_server = RerankServerSettings(
        url=server.url,
        api=server.api,
        api_key=SecretStr(server.api_key) if server.api_key else None,
        backoff_base_seconds=0.0,
        backoff_max_seconds=0.0,
        max_attempts=2,
        **settings,  # type: ignore[arg-type]
    )
    for key, data in DOCS.items():
        assert stack.upload(key, data)["status"] == "indexed"
    return stack


@pytest.fixture(params=["tei", "cohere"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeRerankServer]:
    with FakeRerankServer(request.param, api_key="sk-self-hosted") as fake:
        yield fake


def test_the_search_is_ordered_by_the_servers_scores(
    tmp_path: Path, fake_voyage: FakeVoyageServer, server: FakeRerankServer
) -> None:
    stack = server_stack(tmp_path / "home", fake_voyage, server)
    try:
        assert isinstance(stack.container.reranker, ServerReranker)
        status, body = stack.search(QUERY, relevance_threshold=0)
        assert status == 200
        assert body["results"][0]["key"] == "acme/people/holidays.md"
        for result in body["results"]:
            assert result["score"] == pytest.approx(sigmoid(logit_of(QUERY, result["text"])), abs=1e-6)
        assert len(server.requests) == 1
        assert server.requests[0].authorization == "Bearer sk-self-hosted"
        assert fake_voyage.requests_to("rerank") == []  # Voyage is not asked to re-rank
    finally:
        stack.close()


def test_raw_logits_of_a_llama_cpp_server_are_mapped_to_probabilities(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    with FakeRerankServer("cohere", logits=True) as llama:
        stack = server_stack(tmp_path / "home", fake_voyage, llama, scores="logit")
        try:
            status, body = stack.search(QUERY, relevance_threshold=0.5)
            assert status == 200
            assert [r["key"] for r in body["results"]] == ["acme/people/holidays.md"]
            assert 0.5 <= body["results"][0]["score"] <= 1.0
        finally:
            stack.close()


def test_an_unavailable_server_is_a_503_with_retry_after(
    tmp_path: Path, fake_voyage: FakeVoyageServer, server: FakeRerankServer
) -> None:
    stack = server_stack(tmp_path / "home", fake_voyage, server)
    try:
        server.inject(RerankFault(503, retry_after="9"), RerankFault(503, retry_after="9"))
        status, headers, body = stack.api("POST", "/search", {"query": QUERY})
        assert status == 503
        assert headers["Retry-After"] == "9"
        assert body["error"]["code"] == "unavailable"
        assert "sk-self-hosted" not in str(body)
    finally:
        stack.close()
