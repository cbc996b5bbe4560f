"""BM25 statistics per tenant: what another tenant's documents do to a tenant's keyword
scores, and what counting IDF over the tenant's points costs a sparse search, on Qdrant Edge.

``python -m benchmarks.tenant_idf [--points N] [--queries N] [--json]``

Two tenants share one collection, as in production: ``victim`` and ``eve`` hold ``--points`` chunks
each, with BM25 vectors drawn from a Zipf-like vocabulary of 30,000 terms (100 terms per chunk, the
SciFact average). Isolation: eve's sparse scores for her own chunks are read, the victim indexes 300
chunks full of eve's query terms, and eve's scores are read again, with each IDF scope (the largest
relative change is printed; 0 means eve can learn nothing). Cost: the same sparse queries, alternating,
once with IDF over the whole collection (what ``Modifier.IDF`` alone did) and once with IDF over the
tenant's points (what the store does now); median milliseconds per query and their ratio. Same run,
same data.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

from winnow.adapters.qdrant_collection import CollectionStore, QueryPlan
from winnow.adapters.qdrant_filters import search_filter, tenant_filter
from winnow.adapters.qdrant_points import SPARSE_VECTOR
from winnow.models import Chunk, ChunkPoint, EmbeddingProfile, ReadScope, SparseVector
from winnow.settings import QdrantSettings
from winnow_local.adapters.qdrant_edge import EdgeFolder, EdgeVectorStore

VOCABULARY = 30_000
TERMS_PER_CHUNK = 100
PROFILE = EmbeddingProfile(provider="bench", model="tenant-idf", dimension=4)


def random_sparse(rng: random.Random, terms: int, extra: list[int] | None = None) -> SparseVector:
    wanted = {min(VOCABULARY, int(rng.paretovariate(0.7))) for _ in range(terms)} | set(extra or [])
    indices = sorted(wanted)
    return SparseVector(indices=indices, values=[rng.uniform(0.3, 1.8) for _ in indices])


def chunk_point(tenant: str, number: int, sparse: SparseVector) -> ChunkPoint:
    chunk = Chunk(index=0, text=f"chunk {number}", title="Doc", section_path=(), page=None)
    return ChunkPoint(
        point_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{tenant}/{number}")),
        tenant=tenant,
        key=f"doc{number}.txt",
        chunk=chunk,
        dense=[1.0, 0.0, 0.0, 0.0],
        sparse=sparse,
        metadata={},
        source_type="text",
        doc_version='"1"',
    )


def store_on() -> tuple[CollectionStore, Any]:
    folder = EdgeFolder(":memory:")
    return EdgeVectorStore(folder, PROFILE, QdrantSettings(collection_prefix="bench")), folder


def eve_scores(store: CollectionStore, probes: list[SparseVector], idf_corpus: Any) -> list[dict[str, float]]:
    """Eve's top sparse hits and scores per probe, IDF counted over ``idf_corpus`` (None: everyone's)."""
    where = search_filter(store.conditions, "eve", ReadScope(everything=True), {})
    plans = [QueryPlan(p, SPARSE_VECTOR, where, 10, idf_corpus=idf_corpus) for p in probes]
    return [{str(point.id): float(point.score) for point in hits} for hits in store._query(plans)]


def largest_change(before: list[dict[str, float]], after: list[dict[str, float]]) -> float:
    changes = [
        abs(after_q.get(key, 0.0) - score) / score
        for before_q, after_q in zip(before, after, strict=True)
        for key, score in before_q.items()
        if score > 0 and key in after_q  # a hit that fell out of the top 10 moved by an unknown amount
    ]
    return max(changes, default=0.0)


def measure(points: int, queries: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    store, raw = store_on()
    store.ensure_collection()
    for tenant in ("victim", "eve"):
        batch = [chunk_point(tenant, n, random_sparse(rng, TERMS_PER_CHUNK)) for n in range(points)]
        for start in range(0, len(batch), 256):
            store.upsert(batch[start : start + 256])
    probes = [random_sparse(rng, 5) for _ in range(queries)]
    probes = [SparseVector(p.indices, [1.0] * len(p.indices)) for p in probes]
    where = search_filter(store.conditions, "eve", ReadScope(everything=True), {})
    corpus = tenant_filter(store.conditions, "eve")
    before = {scope: eve_scores(store, probes, c) for scope, c in (("collection", None), ("tenant", corpus))}
    terms = sorted({i for p in probes for i in p.indices})
    flood = [chunk_point("victim", points + n, random_sparse(rng, 20, terms)) for n in range(300)]
    store.upsert(flood)
    after = {scope: eve_scores(store, probes, c) for scope, c in (("collection", None), ("tenant", corpus))}
    timings: dict[str, list[float]] = {"collection": [], "tenant": []}
    for _ in range(2):
        for probe in probes:
            for scope, idf_corpus in (("collection", None), ("tenant", corpus)):
                plan = QueryPlan(probe, SPARSE_VECTOR, where, 10, idf_corpus=idf_corpus)
                started = time.perf_counter()
                store._query([plan])
                timings[scope].append((time.perf_counter() - started) * 1000)
    raw.close()
    collection_ms = statistics.median(timings["collection"])
    tenant_ms = statistics.median(timings["tenant"])
    return {
        "engine": "edge",
        "points_per_tenant": points,
        "queries": queries,
        "eve_change_idf_over_collection": round(largest_change(before["collection"], after["collection"]), 4),
        "eve_change_idf_over_tenant": round(largest_change(before["tenant"], after["tenant"]), 4),
        "median_ms_idf_over_collection": round(collection_ms, 3),
        "median_ms_idf_over_tenant": round(tenant_ms, 3),
        "ratio": round(tenant_ms / collection_ms, 2) if collection_ms else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--points", type=int, default=5_000, help="chunks per tenant (Edge)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [measure(args.points, args.queries)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| engine | chunks per tenant | IDF over | largest change of eve's scores | median ms per query |")
    print("|---|---|---|---|---|")
    for r in rows:
        for scope in ("collection", "tenant"):
            change, ms = r[f"eve_change_idf_over_{scope}"], r[f"median_ms_idf_over_{scope}"]
            print(f"| {r['engine']} | {r['points_per_tenant']:,} | {scope} | {change:.1%} | {ms} |")
        print(f"| {r['engine']} | | tenant / collection | | {r['ratio']}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
