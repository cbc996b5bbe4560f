"""The finer reader: which sentence of a passage answers the question.

Each passage is cut into its segments (``winnow.text.segments``: sentences, or short lines in pairs),
the segments of all the passages read are embedded in ONE call (input type ``document``, as passages
are at ingest), and each segment is scored by its cosine with the query's vector. A passage's best
segment cosine is evidence for the order (``Evidence.segment``), and its best segments are the result's
``highlight``.

Bounded by construction: at most ``MAX_SEARCH_SEGMENTS`` segments per search (a passage has at most
``MAX_SEGMENTS``); passages are read in the order given (the fusion's, or the results'), and one past the
budget is read on its first segments only, or not at all. Some passages are never embedded: a figure
(its text is a caption and words read in the image, the image is what answers) is not read, and a
passage of one segment needs no embedding (that segment is its highlight; its passage cosine stands for
its best segment)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from winnow.ports import Embedder
from winnow.text.segments import Segment, segments

__all__ = ["HIGHLIGHT_MARGIN", "MAX_HIGHLIGHTS", "MAX_SEARCH_SEGMENTS", "Reading", "read"]

# Segments embedded per search at most: 15 default candidates of ~8 segments fit, with room.
MAX_SEARCH_SEGMENTS = 240
# A second (third) highlight only when its cosine is within this of the best: "close to it".
HIGHLIGHT_MARGIN = 0.05
MAX_HIGHLIGHTS = 2


@dataclass(frozen=True)
class Reading:
    """One passage read: its segments, best first, with their cosines (None: not embedded, its only
    segment, or none when the passage was not read), and the best cosine (None: not measured)."""

    ranked: tuple[tuple[Segment, float | None], ...] = ()

    @property
    def best(self) -> float | None:
        return self.ranked[0][1] if self.ranked else None

    def highlight(self) -> list[Segment]:
        """The best segment, and the next ones while within ``HIGHLIGHT_MARGIN`` of it."""
        if not self.ranked:
            return []
        best = self.ranked[0][1]
        out = [self.ranked[0][0]]
        for seg, score in self.ranked[1:MAX_HIGHLIGHTS]:
            if best is None or score is None or score < best - HIGHLIGHT_MARGIN:
                break
            out.append(seg)
        return out


NOT_READ = Reading()


def read(
    embedder: Embedder,
    query_vector: Sequence[float],
    texts: Sequence[str | None],
    budget: int = MAX_SEARCH_SEGMENTS,
) -> list[Reading]:
    """A ``Reading`` of each text (None: not to be read), with one ``embed`` call for all the segments
    that need one (none when no passage has two segments)."""
    cut: list[list[Segment]] = []
    wanted: list[tuple[int, Segment]] = []
    pieces_text: list[str] = []
    for i, text in enumerate(texts):
        pieces = segments(text) if text else []
        if text and len(pieces) > 1:
            pieces = pieces[: max(0, budget - len(wanted))]
            wanted.extend((i, seg) for seg in pieces)
            pieces_text.extend(text[seg.start : seg.end] for seg in pieces)
        cut.append(pieces)
    scores: dict[tuple[int, int], float] = {}
    if wanted:
        vectors = embedder.embed(pieces_text, "document")
        q_norm = _norm(query_vector)
        for (i, seg), vector in zip(wanted, vectors, strict=True):
            scores[(i, seg.start)] = _cosine(query_vector, q_norm, vector)
    out = []
    for i, pieces in enumerate(cut):
        if not pieces:
            out.append(NOT_READ)
        elif len(pieces) == 1 and (i, pieces[0].start) not in scores:
            out.append(Reading(((pieces[0], None),)))
        else:
            ranked = sorted(((s, scores[(i, s.start)]) for s in pieces), key=lambda p: (-p[1], p[0].start))
            out.append(Reading(tuple(ranked)))
    return out


def _norm(v: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def _cosine(q: Sequence[float], q_norm: float, v: Sequence[float]) -> float:
    n = _norm(v)
    if q_norm == 0 or n == 0:
        return 0.0
    return sum(x * y for x, y in zip(q, v, strict=True)) / (q_norm * n)
