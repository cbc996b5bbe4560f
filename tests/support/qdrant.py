"""The toy embedding and data the Qdrant store tests share: one dense axis and one sparse term per word, so
expected rankings are obvious; ``point`` and ``query`` build what the store takes, ``CORPUS`` a small
two-tenant corpus with metadata. ``server_stand_in`` is the Qdrant server the tests of ``QdrantVectorStore``
talk to."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from winnow.access import ReadScope
from winnow.models import Chunk, ChunkPoint, EmbeddingProfile, SparseVector
from winnow.ports import FilterValue, SearchQuery
from winnow.settings import QdrantSettings
from winnow_fakes.fake_qdrant import FakeQdrantServer

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

EVERYTHING = ReadScope(everything=True)


def server_stand_in() -> QdrantClient:
    """A Qdrant server for ``QdrantVectorStore`` (the adapter Qdrant Cloud uses): the strict loopback
    stand-in (``winnow_fakes.fake_qdrant``), which refuses what Qdrant Cloud's strict mode refuses, reached
    over REST as Cloud is. Closing the client stops the server; ``client.server`` is the stand-in."""
    client: QdrantClient = _stand_in_class()(FakeQdrantServer().start())
    return client


def stand_in_client(server: FakeQdrantServer, api_key: str | None = None) -> QdrantClient:
    """A client of a running stand-in, built as the product builds its client of Qdrant Cloud."""
    from winnow.adapters.qdrant_store import make_qdrant_client

    settings = QdrantSettings(url=server.origin, timeout_seconds=10)
    client = make_qdrant_client(settings, api_key, Path("/nonexistent"))
    return client  # type: ignore[return-value]


def _stand_in_class() -> type:
    from qdrant_client import QdrantClient

    class _StandInClient(QdrantClient):
        def __init__(self, server: FakeQdrantServer) -> None:
            super().__init__(url=server.origin, prefer_grpc=False, check_compatibility=False)
            self.server = server

        def close(self, grpc_grace: float | None = None, **kwargs: Any) -> None:
            super().close(grpc_grace=grpc_grace, **kwargs)
            self.server.stop()

    return _StandInClient


# The CORPUS's metadata fields a test filters on, declared as a deployment declares them (``tenant`` and
# ``access_users`` too: user metadata of those names, which a filter must never mistake for the real ones).
METADATA_FIELDS = {
    "department": "keyword",
    "year": "integer",
    "public": "bool",
    "tags": "keyword",
    "tenant": "keyword",
    "access_users": "keyword",
}
VOCAB = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
PROFILE = EmbeddingProfile(provider="test", model="toy-axes", dimension=len(VOCAB))


def dense(text: str) -> list[float]:
    counts = [float(text.split().count(word)) for word in VOCAB]
    norm = math.sqrt(sum(c * c for c in counts)) or 1.0
    return [c / norm for c in counts]


def sparse(text: str) -> SparseVector:
    words = [w for w in text.split() if w in VOCAB]
    indices = sorted({VOCAB.index(w) + 1 for w in words})
    return SparseVector(indices=indices, values=[float(words.count(VOCAB[i - 1])) for i in indices])


def point(
    tenant: str,
    key: str,
    text: str,
    index: int = 0,
    metadata: dict[str, Any] | None = None,
    source_type: str = "text",
    title: str = "Doc",
    page: int | None = 1,
) -> ChunkPoint:
    chunk = Chunk(index=index, text=text, title=title, section_path=("Intro", "Part"), page=page)
    return ChunkPoint(
        point_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{tenant}/{key}#{index}")),
        tenant=tenant,
        key=key,
        chunk=chunk,
        dense=dense(text),
        sparse=sparse(text),
        metadata=metadata or {},
        source_type=source_type,
        doc_version='"etag-1"',
    )


def query(
    tenant: str,
    text: str,
    mode: str = "hybrid",
    limit: int = 10,
    filters: dict[str, FilterValue] | None = None,
    score_threshold: float | None = None,
    reader: ReadScope = EVERYTHING,
) -> SearchQuery:
    return SearchQuery(
        tenant=tenant,
        dense=dense(text),
        sparse=sparse(text),
        mode=mode,  # type: ignore[arg-type]
        limit=limit,
        filters=filters or {},
        reader=reader,
        score_threshold=score_threshold,
    )


def qsettings(**overrides: Any) -> QdrantSettings:
    values: dict[str, Any] = {"collection_prefix": "t", "metadata_fields": METADATA_FIELDS}
    values.update(overrides)
    return QdrantSettings(**values)


CORPUS = [
    ("acme", "alpha.txt", "alpha alpha beta", {"department": "hr", "year": 2021, "public": True}),
    ("acme", "beta.txt", "beta beta gamma", {"department": "eng", "year": 2023, "public": False}),
    ("acme", "gamma.txt", "gamma delta", {"department": "eng", "year": 2024, "tags": ["x", "y"]}),
    ("acme", "epsilon.txt", "epsilon zeta", {"department": "ops", "year": 2019, "tenant": "globex"}),
    ("globex", "alpha.txt", "alpha alpha alpha beta", {"department": "hr", "year": 2021, "public": True}),
    ("globex", "secret.txt", "gamma delta epsilon", {"department": "eng", "year": 2024}),
]


def keys(results: Sequence[Any]) -> list[str]:
    return [r.key for r in results]
