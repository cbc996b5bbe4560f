"""Points in and out of Qdrant, the same on every engine: the payload a chunk is stored with, the
``StoredChunk`` a hit becomes, and the reciprocal rank fusion of a hybrid search's two lists."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from winnow.access import access_of_payload, split_metadata
from winnow.models import ChunkPoint, StoredChunk

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"


def payload_of(p: ChunkPoint) -> dict[str, Any]:
    """Every field a point carries; the access list as its own indexed fields (``winnow.access``)."""
    user_meta, access = split_metadata(p.metadata)
    return {
        "tenant": p.tenant,
        "key": p.key,
        "title": p.chunk.title,
        "section": p.chunk.section,
        "section_path": list(p.chunk.section_path),
        "page": p.chunk.page,
        "chunk_index": p.chunk.index,
        "text": p.chunk.text,
        "content_hash": p.chunk.content_hash,
        "source_type": p.source_type,
        "kind": p.chunk.kind,
        "ocr": p.chunk.ocr,
        **({"figure_text": p.chunk.figure_text} if p.chunk.figure_text else {}),
        **({"image": p.chunk.image} if p.chunk.image else {}),
        "doc_version": p.doc_version,
        "meta": user_meta,
        **access,
    }


def fuse_rrf(dense: list[StoredChunk], sparse: list[StoredChunk], k: int) -> list[StoredChunk]:
    """Reciprocal rank fusion of the two candidate lists (what Qdrant's ``RrfQuery`` computes), keeping
    each retriever's score and rank on the merged chunk; ``score`` becomes the fused score."""
    merged: dict[str, StoredChunk] = {}
    for hit in [*dense, *sparse]:
        seen = merged.get(hit.point_id)
        if seen is None:
            merged[hit.point_id] = hit
            continue
        merged[hit.point_id] = replace(
            seen,
            dense=seen.dense if seen.dense is not None else hit.dense,
            dense_score=seen.dense_score if seen.dense_score is not None else hit.dense_score,
            dense_rank=seen.dense_rank if seen.dense_rank is not None else hit.dense_rank,
            sparse_score=seen.sparse_score if seen.sparse_score is not None else hit.sparse_score,
            sparse_rank=seen.sparse_rank if seen.sparse_rank is not None else hit.sparse_rank,
        )
    fused = [
        replace(
            h,
            # Qdrant counts ranks from 0: the best chunk of a list adds 1/k
            score=sum(1.0 / (k + rank - 1) for rank in (h.dense_rank, h.sparse_rank) if rank is not None),
        )
        for h in merged.values()
    ]
    order = {pid: i for i, pid in enumerate(merged)}
    fused.sort(key=lambda h: (-h.score, order[h.point_id]))
    return fused


def stored_chunk(point: Any, *, dense_rank: int | None = None, sparse_rank: int | None = None) -> StoredChunk:
    payload = point.payload or {}
    page = payload.get("page")
    score = float(point.score) if getattr(point, "score", None) is not None else 0.0
    return StoredChunk(
        point_id=str(point.id),
        key=str(payload.get("key", "")),
        title=str(payload.get("title") or ""),
        section=str(payload.get("section") or ""),
        page=int(page) if page is not None else None,
        chunk_index=int(payload.get("chunk_index") or 0),
        text=str(payload.get("text") or ""),
        content_hash=str(payload.get("content_hash") or ""),
        metadata=dict(payload.get("meta") or {}),
        score=score,
        dense=dense_of(point),
        kind=str(payload.get("kind") or "text"),  # points written before kind existed are text
        ocr=bool(payload.get("ocr", False)),
        figure_text=str(payload.get("figure_text") or ""),
        image=str(payload.get("image") or ""),
        dense_score=score if dense_rank is not None else None,
        dense_rank=dense_rank,
        sparse_score=score if sparse_rank is not None else None,
        sparse_rank=sparse_rank,
        access=access.as_json() if (access := access_of_payload(payload)) is not None else None,
        doc_version=str(payload["doc_version"]) if payload.get("doc_version") is not None else None,
    )


def dense_of(point: Any) -> list[float] | None:
    vector = getattr(point, "vector", None)
    if isinstance(vector, dict):
        vector = vector.get(DENSE_VECTOR)
    if vector is None or isinstance(vector, dict):
        return None
    return [float(x) for x in vector]
