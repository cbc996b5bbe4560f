"""Every HTTPS client we build shares one TLS context (winnow.adapters.tls): building a context loads the
whole CA bundle, which a cold start paid once per client, and again for a client rebuilt later."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from winnow.adapters.ollama import OllamaGenerator
from winnow.adapters.qdrant_store import make_qdrant_client
from winnow.adapters.rerank_server import ServerReranker
from winnow.adapters.tls import tls_context
from winnow.adapters.voyage import voyage_http_client
from winnow.settings import AnswerSettings, QdrantSettings, RerankServerSettings, VoyageSettings


def _pool_context(client: Any) -> ssl.SSLContext:
    return client._transport._pool._ssl_context


def test_clients_built_after_the_first_load_no_ca_bundle(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given the process's TLS context, made once
    shared = tls_context()
    loads: list[object] = []
    original = ssl.SSLContext.load_verify_locations

    def counting(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    # When Voyage's pool, a re-ranking server's, Ollama's and Qdrant Cloud's clients are built, twice each
    clients = []
    for _ in range(2):
        clients.append(voyage_http_client(VoyageSettings(api_key=SecretStr("k"))))
        clients.append(ServerReranker(RerankServerSettings(url="https://rerank.example"))._client)
        clients.append(OllamaGenerator(AnswerSettings(ollama_host="https://ollama.example"))._client)
        qdrant = make_qdrant_client(QdrantSettings(url="https://q.example:6333"), "key", tmp_path)
        clients.append(qdrant._client.http.client._client)  # qdrant-client's httpx.Client
    # Then none loaded a CA bundle again: each verifies with the one context
    assert loads == []
    assert all(_pool_context(client) is shared for client in clients)
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
