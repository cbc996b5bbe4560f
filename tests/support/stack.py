"""A whole Winnow wired to the real handlers, for tests that go through ``functions.*.app.handler``.

``EmbeddedStack`` puts objects into a bucket (the local folder bucket, or S3 on moto over HTTP), builds
the S3 notification S3 would send, and invokes the real ingest handler, directly or wrapped in an SQS
batch. Searches go through the real search handler as HTTP API (payload v2) events with JWT claims.
Qdrant runs on Edge (in memory); the embedder is the real ``VoyageEmbedder`` talking to the
loopback fake Voyage server, unless a test passes another one (the local ONNX model)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from functions.ingest import app as ingest_app
from functions.search import app as search_app
from tests.support.voyage import LOOPBACK_TIMEOUT_SECONDS
from winnow.factory import Container, Settings, set_container
from winnow.ingest.events import s3_event
from winnow.ports import Embedder, Reranker
from winnow.settings import (
    ChunkingSettings,
    IngestSettings,
    ProviderSettings,
    QdrantSettings,
    SearchSettings,
    StorageSettings,
    VoyageSettings,
)
from winnow_fakes.fake_voyage import DEFAULT_API_KEY, FakeVoyageServer
from winnow_local.apigw import http_api_event
from winnow_local.context import LocalLambdaContext


def voyage_settings(fake: FakeVoyageServer, **overrides: Any) -> VoyageSettings:
    values: dict[str, Any] = {
        "api_key": SecretStr(DEFAULT_API_KEY),
        "base_url": fake.base_url,
        "output_dimension": 256,
        "backoff_base_seconds": 0.0,
        "backoff_max_seconds": 0.0,
        "max_attempts": 3,
        "timeout_seconds": LOOPBACK_TIMEOUT_SECONDS,
        "rate_limit_window_seconds": 0.0,
    }
    values.update(overrides)
    return VoyageSettings(**values)


class EmbeddedStack:
    """One tenant-aware Winnow instance; every call goes through a real handler."""

    def __init__(
        self,
        home: Path,
        fake_voyage: FakeVoyageServer | None = None,
        *,
        embedder: Embedder | None = None,
        rerank: bool = False,
        objects: Any = None,
        ledger: Any = None,
        chunking: ChunkingSettings | None = None,
        ingest: IngestSettings | None = None,
        search: SearchSettings | None = None,
    ) -> None:
        self.fake = fake_voyage
        voyage = voyage_settings(fake_voyage) if fake_voyage else VoyageSettings()
        settings = Settings(
            storage=StorageSettings(home=home),
            qdrant=QdrantSettings(
                path=":memory:",
                metadata_fields={"department": "keyword", "year": "integer"},
            ),
            voyage=voyage,
            providers=ProviderSettings(
                embedder="local" if embedder is not None or fake_voyage is None else "voyage",
                reranker="voyage" if rerank and fake_voyage else "none",
            ),
            chunking=chunking or ChunkingSettings(),
            ingest=ingest or IngestSettings(),
            search=search or SearchSettings(),
        )
        self.container = Container(settings)
        if embedder is not None:
            self.container.embedder = embedder
        if objects is not None:
            self.container.objects = objects
        if ledger is not None:
            self.container.ledger = ledger
        self._sequence = 0
        self.bucket = "local"
        set_container(self.container)

    # --- bucket + ingest ---------------------------------------------------------------------------
    def next_sequencer(self) -> str:
        self._sequence += 1
        return f"{self._sequence:016X}"

    def put_object(self, key: str, data: bytes, metadata: dict[str, str] | None = None) -> Any:
        objects: Any = self.container.objects  # the folder bucket, or S3ObjectSource and its client
        if hasattr(objects, "put"):
            objects.put(key, data, metadata=metadata)
        else:  # S3ObjectSource: write through its client
            extra = {"Metadata": metadata} if metadata else {}
            objects.client.put_object(Bucket=objects.bucket, Key=key, Body=data, **extra)
        return objects.head(key)

    def delete_object(self, key: str) -> None:
        objects: Any = self.container.objects
        if hasattr(objects, "delete"):
            objects.delete(key)
        else:
            objects.client.delete_object(Bucket=objects.bucket, Key=key)

    def created_record(
        self, key: str, sequencer: str | None = None
    ) -> tuple[str, str, int | None, str | None, str | None]:
        info = self.container.objects.head(key)
        return ("ObjectCreated:Put", key, info.size, info.etag, sequencer or self.next_sequencer())

    def removed_record(self, key: str, sequencer: str | None = None) -> tuple[str, str, None, None, str]:
        return ("ObjectRemoved:Delete", key, None, None, sequencer or self.next_sequencer())

    def invoke_ingest(self, event: dict[str, Any]) -> dict[str, Any]:
        return self.invoke_ingest_with(event, LocalLambdaContext())

    @staticmethod
    def invoke_ingest_with(event: dict[str, Any], context: Any) -> dict[str, Any]:
        """The ingest handler with a Lambda context of the test's own (its remaining time)."""
        result: dict[str, Any] = ingest_app.handler(event, context)
        return result

    def upload(self, key: str, data: bytes, metadata: dict[str, str] | None = None) -> dict[str, Any]:
        """Put the object and deliver its ObjectCreated event directly; the document's result."""
        self.put_object(key, data, metadata)
        out = self.invoke_ingest(s3_event([self.created_record(key)], self.bucket))
        return dict(out["results"][0]) if out["results"] else {}

    def remove(self, key: str) -> dict[str, Any]:
        self.delete_object(key)
        out = self.invoke_ingest(s3_event([self.removed_record(key)], self.bucket))
        return dict(out["results"][0]) if out["results"] else {}

    @staticmethod
    def sqs_batch(*notifications: dict[str, Any] | str) -> dict[str, Any]:
        """An SQS event whose message bodies are the given S3 notifications (or raw bodies)."""
        records = []
        for body in notifications:
            records.append(
                {
                    "messageId": str(uuid.uuid4()),
                    "receiptHandle": "handle",
                    "body": body if isinstance(body, str) else json.dumps(body),
                    "attributes": {"ApproximateReceiveCount": "1"},
                    "messageAttributes": {},
                    "md5OfBody": "",
                    "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:winnow-ingest",
                    "awsRegion": "us-east-1",
                }
            )
        return {"Records": records}

    # --- API -----------------------------------------------------------------------------------------
    def api(
        self,
        method: str,
        path: str,
        body: Any = None,
        tenant: str | None = "acme",
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        claims: dict[str, Any] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        """One request through the search handler; ``claims``: the JWT's other claims (user, groups)."""
        event = http_api_event(
            method, path, body=body, query=query, headers=headers, tenant=tenant, claims=claims
        )
        response = search_app.handler(event, LocalLambdaContext())
        raw = response.get("body") or ""
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw
        return int(response["statusCode"]), dict(response.get("headers") or {}), payload

    def search(
        self, query: str, tenant: str | None = "acme", claims: dict[str, Any] | None = None, **fields: Any
    ) -> tuple[int, Any]:
        status, _, payload = self.api(
            "POST", "/search", {"query": query, **fields}, tenant=tenant, claims=claims
        )
        return status, payload

    def embed_calls(self) -> int:
        return len(self.fake.requests_to("embeddings")) if self.fake else 0

    def embedded_texts(self) -> int:
        return self.fake.usage["embeddings"].texts if self.fake else 0

    def close(self) -> None:
        """Uninstall the container and release its store: an embedded folder left to the collector keeps
        its files in memory and their mappings in the worker for as long as the collector takes."""
        set_container(None)
        self.container.close()


@pytest.fixture
def stack(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    """The embedded default wired to the fake Voyage server (embedder only, no re-ranker)."""
    s = EmbeddedStack(tmp_path / "home", fake_voyage)
    yield s
    s.close()


@pytest.fixture
def rerank_stack(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    s = EmbeddedStack(tmp_path / "home", fake_voyage, rerank=True)
    yield s
    s.close()


@pytest.fixture(scope="session")
def onnx_embedder() -> Embedder:
    from winnow_local.adapters.onnx_embedder import LocalOnnxEmbedder

    return LocalOnnxEmbedder()


@pytest.fixture
def onnx_stack(tmp_path: Path, onnx_embedder: Embedder) -> Iterator[EmbeddedStack]:
    """The true embedded default: the local ONNX model and no re-ranker."""
    s = EmbeddedStack(tmp_path / "home", None, embedder=onnx_embedder)
    yield s
    s.close()


__all__ = ["EmbeddedStack", "Reranker"]
