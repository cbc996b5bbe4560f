"""Keyword evidence read inside the candidates, with no model call: how well a candidate's best
segment (a sentence, or a pair of short lines: ``winnow.text.segments``) holds the query's keywords,
and where its document stands among the candidates' documents.

A long document's right passage often shares its document's words with its neighbours; what sets it
apart is one sentence that holds the question's rarer words together. Each query term weighs its IDF
over all the candidates' segments (``reader.lexical_scores``: a term in every segment says nothing),
and a segment's score is the IDF of the query terms it holds, over the IDF of the query terms any
segment holds (1.0: one sentence holds them all)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from winnow.models import SparseVector
from winnow.text.segments import segments
from winnow.text.sparse import Bm25Encoder


@dataclass(frozen=True)
class KeywordReading:
    """One candidate's keyword evidence: its best segment's share of the query's keyword IDF, and
    1-based rank of its document among the candidates' documents (in the order given)."""

    best_segment: float
    document_rank: int


def keyword_readings(
    encoder: Bm25Encoder, query: SparseVector, texts: Sequence[str], documents: Sequence[str]
) -> list[KeywordReading]:
    """Each text's ``KeywordReading``; ``documents`` names each text's document, and the texts come in
    retrieval order (a document ranks where its first candidate does)."""
    cut = [[text[s.start : s.end] for s in segments(text)] or [text] for text in texts]
    held = [[encoder.covered(query, piece) for piece in pieces] for pieces in cut]
    n = sum(len(pieces) for pieces in cut)
    counts: dict[int, int] = {}
    for terms in (t for pieces in held for t in pieces):
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
    idf = {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in counts.items()}
    total = sum(idf.values())
    rank: dict[str, int] = {}
    for document in documents:
        rank.setdefault(document, len(rank) + 1)
    return [
        KeywordReading(
            best_segment=max(sum(idf[t] for t in terms) for terms in pieces) / total if total > 0 else 0.0,
            document_rank=rank[document],
        )
        for pieces, document in zip(held, documents, strict=True)
    ]
