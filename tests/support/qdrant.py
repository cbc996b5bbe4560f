"""The toy embedding and data the Qdrant store tests share: one dense axis and one sparse term per word, so
expected rankings are obvious; ``point`` and ``query`` build what the store takes, ``CORPUS`` a small
two-tenant corpus with metadata. ``server_stand_in`` is the Qdrant server the tests of ``QdrantVectorStore``
talk to."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from winnow.access import ReadScope
from winnow.models import Chunk, ChunkPoint, EmbeddingProfile, SparseVector
from winnow.ports import FilterValue, SearchQuery
from winnow.settings import QdrantSettings

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

EVERYTHING = ReadScope(everything=True)


def server_stand_in() -> QdrantClient:
    """A Qdrant server for ``QdrantVectorStore`` (the adapter Qdrant Cloud uses): qdrant-client's in-memory
    local mode, which answers through the same client calls. It is a test double of the server, not an
    engine of ours: the embedded engine is Qdrant Edge, and the product opens local mode only to move an
    old local-mode folder to Edge once (``migrate_local_mode``)."""
    from qdrant_client import QdrantClient

    return QdrantClient(":memory:")


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
    values: dict[str, Any] = {"collection_prefix": "t", "metadata_indexes": ["department", "year"]}
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
