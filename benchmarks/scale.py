"""Warm search latency and memory of the embedded Qdrant engine at a given collection size, no model needed.

``python -m benchmarks.scale [--chunks 50000] [--queries 200] [--tenants 1] [--access] [--json]``

Synthetic points stand in for a real corpus, shaped like Winnow's: 384-d unit vectors (the local
model's dimension) drawn around topic centroids, so neighbours are meaningful and HNSW/brute force have
real work; BM25 sparse vectors of ~100 distinct terms per chunk (what SciFact chunks average, see
``winnow.text.sparse``) drawn from a Zipf-distributed vocabulary, valued with the encoder's own
tf-saturation formula; payloads with ~1,000 characters of text and the fields ingest writes. Points go in
through ``EdgeVectorStore.upsert`` (batches of 256, ``wait=True``) on disk under a temporary home.

Queries are built from random chunks: their topic's centroid plus noise as the dense side, 3-6 of their
terms as the sparse side, scoped to the first tenant (with ``--tenants 1`` that is every point, the
worst case of the embedded default). Each mode is warmed up, then timed through
``EdgeVectorStore.search`` (limit 15): this is the engine part of a search, the part that grows with
the collection; the query embedding (~3 ms with the local model, ``benchmarks.speed``) comes on top.
``--max-seconds`` caps each mode's timing loop (at least 20 queries run), so a slow engine finishes.
Peak RSS is this process's high-water mark (``VmHWM``).

``--access``: document-level access lists (``winnow.access``). Each document (8 chunks) lists one user
and 1-3 of 1,000 groups, except a fifth of them that have no list; each query comes from a caller in
1-20 random groups (plus their user id and the open documents), and hybrid search is timed again with
that caller's read condition in the filter. Both figures come from the same run and the same loaded
collection: the ratio is the cost of the access filter.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.common import Progress, machine, percentile, positive_int, quiet_known_warnings, rss_mb, table

DIMENSION = 384
TOPICS = 200
VOCABULARY = 30_000
TERMS_PER_CHUNK = 100
TEXT_CHARS = 1000
BATCH = 256
LIMIT = 15
WARMUP = 10
MIN_QUERIES = 20
MODES = ("sparse", "dense", "hybrid")
GOAL_HYBRID_P50_MS = 25.0
SEED = 18
ACCESS_GROUPS = 1000
ACCESS_OPEN_SHARE = 0.2
CALLER_GROUPS = (1, 20)
GOAL_ACCESS_RATIO = 1.5


def document_access(document: int) -> dict[str, list[str]] | None:
    """The access list of synthetic document ``document``: None for about a fifth of them."""
    rnd = random.Random(f"access/{document}")
    if rnd.random() < ACCESS_OPEN_SHARE:
        return None
    groups = {f"g{rnd.randrange(ACCESS_GROUPS):04d}" for _ in range(rnd.randint(1, 3))}
    return {"users": [f"user{rnd.randrange(5000)}"], "groups": sorted(groups)}


def caller_scopes(count: int) -> list[Any]:
    """``count`` callers' read scopes: a user id, 1-20 of the 1,000 groups, the open documents."""
    from winnow.models import ReadScope

    rnd = random.Random(SEED)
    return [
        ReadScope(
            open_documents=True,
            users=(f"user{rnd.randrange(5000)}",),
            groups=tuple(
                sorted(f"g{g:04d}" for g in rnd.sample(range(ACCESS_GROUPS), rnd.randint(*CALLER_GROUPS)))
            ),
        )
        for _ in range(count)
    ]


# --- synthetic corpus ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SyntheticChunk:
    index: int
    tenant: str
    topic: int
    dense: list[float]
    term_ids: list[int]
    term_values: list[float]


class Corpus:
    """Deterministic chunks from a seed; generated batch by batch so the corpus itself is never in memory
    twice (the engine's copy is what the memory figure should show)."""

    def __init__(self, chunks: int, tenants: int, seed: int = SEED) -> None:
        import numpy as np

        self.chunks = chunks
        self.tenants = tenants
        self._np = np
        rng = np.random.default_rng(seed)
        centroids = rng.standard_normal((TOPICS, DIMENSION)).astype(np.float32)
        self.centroids = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
        # Zipf-like term popularity: rank r has weight 1/r; each topic prefers its own slice of the
        # vocabulary, so sparse and dense agree about which chunks belong together.
        ranks = np.arange(1, VOCABULARY + 1, dtype=np.float64)
        self._popularity = (1.0 / ranks) / (1.0 / ranks).sum()
        self._topic_terms = rng.integers(0, VOCABULARY, size=(TOPICS, 300))
        self._seed = seed

    def tenant_of(self, index: int) -> str:
        return f"tenant-{index % self.tenants:03d}"

    def batches(self, size: int = BATCH) -> Iterator[list[SyntheticChunk]]:
        np = self._np
        rng = np.random.default_rng(self._seed + 1)
        for start in range(0, self.chunks, size):
            count = min(size, self.chunks - start)
            topics = rng.integers(0, TOPICS, size=count)
            dense = self.centroids[topics] + 0.35 * rng.standard_normal((count, DIMENSION)).astype(np.float32)
            dense /= np.linalg.norm(dense, axis=1, keepdims=True)
            batch = []
            for row in range(count):
                terms = self._terms(rng, int(topics[row]))
                ids, counts = np.unique(terms, return_counts=True)
                values = _bm25_weights(counts, length=len(terms))
                batch.append(
                    SyntheticChunk(
                        index=start + row,
                        tenant=self.tenant_of(start + row),
                        topic=int(topics[row]),
                        dense=[float(x) for x in dense[row]],
                        term_ids=[int(i) for i in ids],
                        term_values=values,
                    )
                )
            yield batch

    def _terms(self, rng: Any, topic: int) -> Any:
        np = self._np
        # ~120 tokens: 60% general vocabulary (Zipf), 40% the topic's own terms.
        general = rng.choice(VOCABULARY, size=72, p=self._popularity)
        specific = rng.choice(self._topic_terms[topic], size=48)
        return np.concatenate([general, specific])

    def queries(self, count: int, tenant: str) -> list[tuple[list[float], list[int]]]:
        """(dense, sparse term ids) for ``count`` queries aimed at chunks of topics this corpus holds."""
        np = self._np
        rng = np.random.default_rng(self._seed + 2)
        out = []
        for _ in range(count):
            topic = int(rng.integers(0, TOPICS))
            dense = self.centroids[topic] + 0.5 * rng.standard_normal(DIMENSION).astype(np.float32)
            dense /= np.linalg.norm(dense)
            terms = self._terms(rng, topic)
            picked = sorted({int(t) for t in rng.choice(terms, size=int(rng.integers(3, 7)))})
            out.append(([float(x) for x in dense], picked))
        return out


def _bm25_weights(
    counts: Any, length: int, k1: float = 1.2, b: float = 0.75, avgdl: float = 100.0
) -> list[float]:
    """The document side of BM25, as ``Bm25Encoder`` writes it."""
    norm = k1 * (1 - b + b * length / avgdl)
    return [float(tf * (k1 + 1) / (tf + norm)) for tf in counts]


_WORDS = [f"term{i}" for i in range(2000)]


def _text(index: int) -> str:
    rnd = random.Random(index)
    words: list[str] = []
    size = 0
    while size < TEXT_CHARS:
        word = rnd.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


# --- the run -------------------------------------------------------------------------------------------
def open_store(home: Path) -> Any:
    from winnow.adapters.qdrant_store import make_qdrant_client, store_on
    from winnow.models import EmbeddingProfile
    from winnow.settings import QdrantSettings

    settings = QdrantSettings(path=str(home / "qdrant"))
    client = make_qdrant_client(settings, None, home / "qdrant")
    profile = EmbeddingProfile("synthetic", "scale-benchmark", DIMENSION)
    return store_on(client, profile, settings)


def load(store: Any, corpus: Corpus, progress: Progress, access: bool = False) -> float:
    from winnow.access import ACCESS_KEY
    from winnow.models import Chunk, ChunkPoint, SparseVector

    def metadata(chunk: SyntheticChunk) -> dict[str, Any]:
        listed = document_access(chunk.index // 8) if access else None
        return {"department": f"d{chunk.topic % 7}", **({ACCESS_KEY: listed} if listed else {})}

    store.ensure_collection()
    started = time.perf_counter()
    done = 0
    for batch in corpus.batches():
        points = [
            ChunkPoint(
                point_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"scale/{c.index}")),
                tenant=c.tenant,
                key=f"docs/doc-{c.index // 8:06d}.md",
                chunk=Chunk(
                    index=c.index % 8,
                    text=_text(c.index),
                    title=f"Document {c.index // 8}",
                    section_path=(f"Topic {c.topic}",),
                    page=None,
                ),
                dense=c.dense,
                sparse=SparseVector(indices=list(c.term_ids), values=list(c.term_values)),
                metadata=metadata(c),
                source_type="markdown",
                doc_version="v1",
            )
            for c in batch
        ]
        store.upsert(points)
        done += len(points)
        if done % (BATCH * 40) == 0 or done == corpus.chunks:
            progress(f"loaded {done:,}/{corpus.chunks:,} chunks")
    return time.perf_counter() - started


def time_queries(
    store: Any,
    corpus: Corpus,
    tenant: str,
    count: int,
    max_seconds: float,
    progress: Progress,
    access: bool = False,
) -> dict[str, dict[str, float]]:
    from winnow.models import ReadScope, SparseVector
    from winnow.ports import SearchQuery

    queries = corpus.queries(count + WARMUP, tenant)
    scopes = caller_scopes(len(queries)) if access else []
    out: dict[str, dict[str, float]] = {}
    for mode in MODES:
        built = [
            SearchQuery(
                tenant=tenant,
                dense=dense if mode != "sparse" else None,
                sparse=SparseVector(indices=list(terms), values=[1.0] * len(terms))
                if mode != "dense"
                else None,
                mode=mode,  # type: ignore[arg-type]
                limit=LIMIT,
                filters={},
                reader=ReadScope(everything=True),
            )
            for dense, terms in queries
        ]
        out[mode] = _timed(store, built, max_seconds)
        progress(f"{mode}: p50 {out[mode]['p50_ms']} ms over {out[mode]['queries']} queries")
        if mode == "hybrid" and access:
            # The same queries again, each from a caller whose read condition joins the tenant's.
            filtered = [replace(query, reader=scope) for query, scope in zip(built, scopes, strict=True)]
            out["hybrid+access"] = _timed(store, filtered, max_seconds)
            progress(f"hybrid+access: p50 {out['hybrid+access']['p50_ms']} ms")
    return out


def _timed(store: Any, built: list[Any], max_seconds: float) -> dict[str, float]:
    """Warm up, then time each query; at least ``MIN_QUERIES``, at most ``max_seconds`` of them."""
    hits = 0
    for query in built[:WARMUP]:
        store.search(query)
    timings: list[float] = []
    loop_started = time.perf_counter()
    for query in built[WARMUP:]:
        started = time.perf_counter()
        found = store.search(query)
        timings.append((time.perf_counter() - started) * 1000)
        hits += len(found)
        if len(timings) >= MIN_QUERIES and time.perf_counter() - loop_started > max_seconds:
            break
    return {
        "queries": len(timings),
        "p50_ms": round(percentile(timings, 0.50), 2),
        "p95_ms": round(percentile(timings, 0.95), 2),
        "mean_ms": round(statistics.fmean(timings), 2) if timings else 0.0,
        "mean_hits": round(hits / len(timings), 1) if timings else 0.0,
    }


def run(
    chunks: int,
    queries: int,
    tenants: int,
    max_seconds: float,
    home: Path,
    progress: Progress,
    access: bool = False,
) -> dict[str, Any]:
    import numpy  # noqa: F401  (imported before the baseline, as the engine needs it anyway)

    from winnow.adapters.qdrant_store import store_on  # noqa: F401

    baseline_rss = rss_mb()
    corpus = Corpus(chunks, tenants)
    store = open_store(home)
    progress(f"loading {chunks:,} synthetic chunks into Qdrant Edge")
    load_seconds = load(store, corpus, progress, access)
    loaded_rss = rss_mb()
    search = time_queries(store, corpus, corpus.tenant_of(0), queries, max_seconds, progress, access)
    store.close()
    hybrid = search["hybrid"]
    extra: dict[str, Any] = {}
    if access:
        filtered = search["hybrid+access"]
        ratio = filtered["p50_ms"] / hybrid["p50_ms"] if hybrid["p50_ms"] else 0.0
        extra["access"] = {
            "groups": ACCESS_GROUPS,
            "caller_groups": list(CALLER_GROUPS),
            "hybrid_p50_ms": filtered["p50_ms"],
            "hybrid_p95_ms": filtered["p95_ms"],
            "p50_ratio": round(ratio, 2),
            "goal_ratio": GOAL_ACCESS_RATIO,
            "meets_goal": ratio <= GOAL_ACCESS_RATIO and filtered["p50_ms"] <= GOAL_HYBRID_P50_MS,
        }
    return {
        "chunks": chunks,
        "engine": "edge",
        "tenants": tenants,
        "tenant_chunks": len(range(0, chunks, tenants)),
        "hybrid_p50_ms": hybrid["p50_ms"],
        "hybrid_p95_ms": hybrid["p95_ms"],
        "search": search,
        "load_seconds": round(load_seconds, 1),
        "load_chunks_per_s": round(chunks / load_seconds, 1) if load_seconds else None,
        "baseline_rss_mb": round(baseline_rss, 1),
        "loaded_rss_mb": round(loaded_rss, 1),
        # The kernel's RSS counters are batched per thread, so VmHWM read later can trail a VmRSS read
        # earlier by a few hundred KB (354.6 against 354.8 MB in one run): the peak is at least that.
        "peak_rss_mb": round(max(rss_mb("VmHWM"), loaded_rss), 1),
        "goal_hybrid_p50_ms": GOAL_HYBRID_P50_MS,
        "meets_goal": hybrid["p50_ms"] <= GOAL_HYBRID_P50_MS,
        "machine": machine(),
        **extra,
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        [mode, f"{s['p50_ms']:.1f}", f"{s['p95_ms']:.1f}", str(s["queries"]), f"{s['mean_hits']:.1f}"]
        for mode, s in result["search"].items()
    ]
    verdict = "meets" if result["meets_goal"] else "misses"
    access = result.get("access")
    access_lines = []
    if access:
        access_verdict = "meets" if access["meets_goal"] else "misses"
        access_lines.append(
            f"access filter ({access['groups']:,} groups, callers in {access['caller_groups'][0]}-"
            f"{access['caller_groups'][1]}): hybrid p50 {access['hybrid_p50_ms']:.1f} ms, p95 "
            f"{access['hybrid_p95_ms']:.1f} ms, {access['p50_ratio']:.2f}x unfiltered p50: {access_verdict} "
            f"the goal of <= {access['goal_ratio']}x and {result['goal_hybrid_p50_ms']:.0f} ms"
        )
    return "\n".join(
        [
            f"{result['chunks']:,} chunks ({result['tenant_chunks']:,} in the searched tenant), "
            f"engine {result['engine']}",
            table(["warm search", "p50 ms", "p95 ms", "queries", "hits"], rows),
            f"hybrid p50 {result['hybrid_p50_ms']:.1f} ms: {verdict} the goal of "
            f"{result['goal_hybrid_p50_ms']:.0f} ms",
            f"load {result['load_seconds']:.1f} s ({result['load_chunks_per_s']} chunks/s); RSS "
            f"{result['baseline_rss_mb']:.0f} MB before, {result['loaded_rss_mb']:.0f} MB loaded, "
            f"peak {result['peak_rss_mb']:.0f} MB",
            *access_lines,
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=positive_int, default=50_000, help="synthetic chunks to load")
    parser.add_argument("--queries", type=positive_int, default=200, help="timed queries per mode")
    parser.add_argument("--tenants", type=positive_int, default=1, help="tenants the chunks are spread over")
    parser.add_argument(
        "--max-seconds", type=float, default=120.0, help="cap on each mode's timing loop (>= 20 queries run)"
    )
    parser.add_argument(
        "--access",
        action="store_true",
        help="access lists on documents; time hybrid with a caller's filter too",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--quiet", action="store_true", help="no progress notes on stderr")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.tenants > args.chunks:
        print("--tenants must not exceed --chunks", file=sys.stderr)
        return 2
    quiet_known_warnings()
    os.environ.pop("QDRANT_URL", None)
    with tempfile.TemporaryDirectory(prefix="winnow-scale-") as tmp:
        result = run(
            args.chunks,
            args.queries,
            args.tenants,
            args.max_seconds,
            Path(tmp),
            Progress(args.quiet),
            args.access,
        )
    print(json.dumps(result) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
