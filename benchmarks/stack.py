"""A fresh embedded Winnow under a temporary ``WINNOW_HOME``, driven only through the real Lambda
handlers: objects go into the local folder bucket, S3 notifications go to ``functions.ingest.app.handler``
and API Gateway HTTP API (v2) events with a JWT tenant claim go to ``functions.search.app.handler``.

Settings come from the environment exactly as in the embedded default (so ``WINNOW_CHUNK_TARGET_CHARS``
and friends apply); the stack only pins what makes the run self-contained: its own home, the folder
bucket, the SQLite ledger and Qdrant local mode."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from unittest import mock

# Variables that would point a run at real infrastructure or another home: never inherited.
_CLEARED = (
    "WINNOW_BUCKET",
    "WINNOW_LEDGER_TABLE",
    "WINNOW_QUEUE_URL",
    "QDRANT_URL",
    "QDRANT_API_KEY",
    "QDRANT_API_KEY_SECRET_ARN",
    "QDRANT_PATH",
)
DEFAULT_TENANT = "bench"


@contextlib.contextmanager
def patched_environ(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (or, for None, remove) environment variables for the duration of the block."""
    with mock.patch.dict(os.environ, {k: v for k, v in values.items() if v is not None}):
        for name in (k for k, v in values.items() if v is None):
            os.environ.pop(name, None)
        yield


@dataclass(frozen=True)
class Hit:
    """One search result, as the API returned it."""

    key: str
    score: float
    vector_score: float
    text: str


class EmbeddedStack:
    """``with EmbeddedStack(home) as stack: stack.ingest(files); stack.search("...", mode="hybrid")``.

    ``env`` adds or overrides variables (None removes one); by default the local ONNX embedder is used
    and the re-ranker follows the environment (Voyage when ``VOYAGE_API_KEY`` is set)."""

    def __init__(
        self,
        home: Path,
        env: Mapping[str, str | None] | None = None,
        tenant: str = DEFAULT_TENANT,
        wrap_embedder: Callable[[Any], Any] | None = None,
    ):
        self.home = Path(home)
        self.tenant = tenant
        self.wrap_embedder = wrap_embedder  # e.g. training's embedding cache
        self._env: dict[str, str | None] = dict.fromkeys(_CLEARED)
        self._env.update({"WINNOW_HOME": str(self.home), "WINNOW_EMBEDDER": "local"})
        self._env.update(env or {})
        self._environ: contextlib.ExitStack | None = None
        self.container: Any = None

    def __enter__(self) -> EmbeddedStack:
        from winnow.factory import Container, Settings, set_container

        self.home.mkdir(parents=True, exist_ok=True)
        self._environ = contextlib.ExitStack()
        self._environ.enter_context(patched_environ(self._env))
        self.container = Container(Settings())
        if self.wrap_embedder is not None:
            # ``embedder`` is a cached property: the wrapper replaces it before anything reads it.
            self.container.__dict__["embedder"] = self.wrap_embedder(self.container.embedder)
        set_container(self.container)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Drop the container and close its Qdrant client and ledger, so the folder can be reopened."""
        from winnow.factory import set_container

        set_container(None)
        container, self.container = self.container, None
        for name in ("store", "embedder", "ledger") if container is not None else ():
            part = container.__dict__.get(name)  # cached properties: only what was built
            if part is not None and hasattr(part, "close"):
                with contextlib.suppress(Exception):
                    part.close()
        if self._environ is not None:
            self._environ.close()
            self._environ = None

    # --- ingest ------------------------------------------------------------------------------------
    def key_for(self, name: str) -> str:
        return f"{self.tenant}/{name}"

    def ingest(self, files: Sequence[tuple[str, bytes]], per_event: int = 50) -> list[dict[str, Any]]:
        """Put each ``(name, bytes)`` into the bucket under the tenant and send S3 ``ObjectCreated``
        notifications of ``per_event`` records each to the ingest handler. Returns the handler's
        per-object results in order; raises when any object did not end indexed or unchanged."""
        results: list[dict[str, Any]] = []
        for start in range(0, len(files), per_event):
            records = []
            for name, data in files[start : start + per_event]:
                key = self.key_for(name)
                info, sequencer = self.container.objects.put(key, data)
                records.append(("ObjectCreated:Put", key, info.size, info.etag, sequencer))
            results.extend(self.send_ingest_event(records))
        failed = [r for r in results if r.get("status") not in ("indexed", "unchanged")]
        if failed:
            raise RuntimeError(f"{len(failed)} object(s) were not indexed, e.g. {failed[0]}")
        return results

    def send_ingest_event(
        self, records: list[tuple[str, str, int | None, str | None, str | None]]
    ) -> list[dict[str, Any]]:
        from functions.ingest.app import handler
        from winnow.ingest.events import s3_event
        from winnow_local.context import LocalLambdaContext

        response = handler(s3_event(records, bucket="local"), LocalLambdaContext())
        return list(response.get("results") or [])

    # --- search ------------------------------------------------------------------------------------
    def search_event(
        self,
        query: str,
        mode: str = "hybrid",
        top_k: int = 50,
        candidates: int | None = 100,
        rerank: bool = False,
        relevance_threshold: float = 0.0,
    ) -> dict[str, Any]:
        from winnow_local.apigw import http_api_event

        body = {
            "query": query,
            "mode": mode,
            "top_k": top_k,
            "rerank": rerank,
            "relevance_threshold": relevance_threshold,
        }
        if candidates is not None:
            body["candidates"] = candidates
        claim = self.container.settings.search.tenant_claim
        return http_api_event("POST", "/search", body=body, tenant=self.tenant, claim=claim)

    def results(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """Send one prepared event to the search handler: its results as the API returned them; raise
        on any non-200 answer."""
        from functions.search.app import handler
        from winnow_local.context import LocalLambdaContext

        response = handler(event, LocalLambdaContext())
        if response.get("statusCode") != 200:
            raise RuntimeError(f"search answered {response.get('statusCode')}: {response.get('body')}")
        return list(json.loads(response["body"])["results"])

    def call_search(self, event: dict[str, Any]) -> list[Hit]:
        return [
            Hit(key=r["key"], score=r["score"], vector_score=r["vector_score"], text=r["text"])
            for r in self.results(event)
        ]

    def search(self, query: str, mode: str = "hybrid", **options: Any) -> list[Hit]:
        return self.call_search(self.search_event(query, mode, **options))

    @property
    def has_reranker(self) -> bool:
        return self.container is not None and self.container.reranker is not None


def documents_by_best_chunk(hits: Sequence[Hit], key_to_id: Mapping[str, str]) -> list[str]:
    """Document ids in the order their best chunk appears (first occurrence wins)."""
    seen: set[str] = set()
    ranking: list[str] = []
    for hit in hits:
        doc_id = key_to_id.get(hit.key)
        if doc_id is not None and doc_id not in seen:
            seen.add(doc_id)
            ranking.append(doc_id)
    return ranking


def write_documents(folder: Path, documents: Mapping[str, str]) -> list[Path]:
    """Each document as ``<id>.txt`` in ``folder`` (ids that are not safe file names are refused)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc_id, text in documents.items():
        if not doc_id or "/" in doc_id or doc_id in (".", ".."):
            raise ValueError(f"document id {doc_id!r} cannot be a file name")
        path = folder / f"{doc_id}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
