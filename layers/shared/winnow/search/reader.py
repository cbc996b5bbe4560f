"""The finer reader: which sentence of a passage answers the question.

Each passage is cut into its segments (``winnow.text.segments``: sentences, or short lines in pairs);
the query's keywords pre-select each passage's ``KEEP_SEGMENTS`` best segments (``lexical_scores``: no
model, microseconds), those of all the passages read are embedded in ONE call (input type ``document``,
as passages are at ingest), and each is scored by its cosine with the query's vector. Why not embed
every segment: the highlight holds the answer about as often, for a fraction of the segments embedded
(``python -m training.highlights``), and embedding them was most of a local search's time. A passage's best
segment cosine is evidence for the order (``Evidence.segment``), and its best segments are the result's
``highlight``.

Bounded by construction: at most ``KEEP_SEGMENTS`` segments per passage with keywords, and
``MAX_SEARCH_SEGMENTS`` per search (a passage has at most ``MAX_SEGMENTS``); passages are read in the
order given (the fusion's, or the results'), and one past the budget is read on its first segments
only, or not at all. Some passages are never embedded: a figure (its text is a caption and words read
in the image, the image is what answers) is not read, and a passage of one segment needs no embedding
(that segment is its highlight; its passage cosine stands for its best segment)."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from winnow.models import SparseVector
from winnow.ports import Embedder
from winnow.text.segments import Segment, segments
from winnow.text.sparse import Bm25Encoder

__all__ = [
    "HIGHLIGHT_MARGIN",
    "HIGHLIGHT_SEGMENTS",
    "KEEP_SEGMENTS",
    "MAX_HIGHLIGHTS",
    "MAX_SEARCH_SEGMENTS",
    "Reading",
    "SegmentVectors",
    "cosine",
    "introductions",
    "lexical_scores",
    "read",
]

# Segments embedded per search at most: every segment of a default search's 30 candidates (~8 each)
# fits; with the keywords' pre-selection a search embeds at most KEEP_SEGMENTS of each (90).
MAX_SEARCH_SEGMENTS = 240
# Segments embedded per passage when the query's keywords pre-select them (training.highlights: the
# highlight holds the answer as often as with every segment embedded, at a fraction of the cost).
KEEP_SEGMENTS = 3
# Segments embedded per returned passage for its highlight: none, the keywords alone pick it. On the
# passage benchmark's top-3 hits the highlight then holds the answer 77.7 % of the time (every segment
# embedded: 84.6 %, 10.6 segments per search; the 3 keyword-best embedded: 85.0 %, 6.8), and a search
# makes no model call for it (``python -m training.highlights``).
HIGHLIGHT_SEGMENTS = 0
# A second (third) highlight only when its cosine is within this of the best: "close to it".
HIGHLIGHT_MARGIN = 0.05
MAX_HIGHLIGHTS = 2
# A list item's start: a number ("0 ", "3. ", "2) ") or a bullet, then a space.
_LIST_ITEM = re.compile(r"(?:\d{1,3}[.)]?|[-*+\u2022\u00b7\u2023\u25e6\u2013])[ \t]")


@dataclass(frozen=True)
class Reading:
    """One passage read: its segments, best first, with their cosines (None: not embedded, its only
    segment, or none when the passage was not read), and the best cosine (None: not measured)."""

    ranked: tuple[tuple[Segment, float | None], ...] = ()
    # Segments that introduce what follows them ("The exit status is one of the following:"): never
    # highlighted while a scored segment that says something of its own is there (``introduces``).
    introductions: frozenset[Segment] = frozenset()

    @property
    def best(self) -> float | None:
        return self.ranked[0][1] if self.ranked else None

    def highlight(self) -> list[Segment]:
        """The best segment, and the next ones while within ``HIGHLIGHT_MARGIN`` of it; an introduction
        yields to the best scored segment that is none."""
        if not self.ranked:
            return []
        ranked = self.ranked
        if ranked[0][0] in self.introductions:
            said = [(s, score) for s, score in ranked if score is not None and s not in self.introductions]
            if said:
                ranked = tuple(said)
        best = ranked[0][1]
        out = [ranked[0][0]]
        for seg, score in ranked[1:MAX_HIGHLIGHTS]:
            if best is None or score is None or score < best - HIGHLIGHT_MARGIN:
                break
            out.append(seg)
        return out


NOT_READ = Reading()

# Segment vectors a warm container keeps: 2,048 of 1,024 float32 dimensions are 8 MB at most.
MAX_CACHED_SEGMENTS = 2048


class SegmentVectors:
    """A bounded LRU of segment vectors, keyed by a scope (the service's: tenant and embedding profile)
    and the SHA-256 of the segment's text, never the text: the same passages come back search after
    search, and a vector a scope's search embedded is only ever served to that scope again (a hit's
    timing tells no tenant what another has read). Thread-safe."""

    def __init__(self, max_entries: int = MAX_CACHED_SEGMENTS) -> None:
        self._max = max_entries
        self._vectors: OrderedDict[tuple[str, bytes], array[float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    @staticmethod
    def key(scope: str, text: str) -> tuple[str, bytes]:
        return scope, hashlib.sha256(text.encode("utf-8")).digest()

    def get(self, key: tuple[str, bytes]) -> array[float] | None:
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
            return vector

    def put(self, key: tuple[str, bytes], vector: Sequence[float]) -> None:
        with self._lock:
            self._vectors[key] = array("f", vector)
            self._vectors.move_to_end(key)
            while len(self._vectors) > self._max:
                self._vectors.popitem(last=False)


def read(
    embedder: Embedder,
    query_vector: Sequence[float],
    texts: Sequence[str | None],
    budget: int = MAX_SEARCH_SEGMENTS,
    *,
    keywords: tuple[Bm25Encoder, SparseVector] | None = None,
    keep: int = KEEP_SEGMENTS,
    cache: SegmentVectors | None = None,
    scope: str = "",
) -> list[Reading]:
    """A ``Reading`` of each text (None: not to be read), with one ``embed`` call for all the segments
    that need one (none when no passage has two segments). With ``keywords`` (the encoder and the
    query's terms), only each passage's ``keep`` segments of best keyword score are embedded; its
    others rank after them, unscored (never highlighted); ``keep`` 0: none is embedded, the segment
    of best keyword score ranks first, unscored (the highlight). With ``cache``, segments it holds for
    ``scope`` are not embedded again."""
    cut: list[list[Segment]] = []
    chosen: list[list[Segment]] = []
    for text in texts:
        pieces = segments(text) if text else []
        cut.append(pieces)
        chosen.append(pieces if len(pieces) > 1 else [])
    leaders: list[Segment | None] = [None] * len(texts)
    if keywords is not None:
        chosen, leaders = _preselect(keywords, texts, chosen, keep)
    wanted: list[tuple[int, Segment]] = []
    pieces_text: list[str] = []
    for i, (text, pieces) in enumerate(zip(texts, chosen, strict=True)):
        if text and pieces:
            pieces = pieces[: max(0, budget - len(wanted))]
            wanted.extend((i, seg) for seg in pieces)
            pieces_text.extend(text[seg.start : seg.end] for seg in pieces)
    scores: dict[tuple[int, int], float] = {}
    if wanted:
        vectors = _vectors(embedder, pieces_text, cache, scope)
        for (i, seg), vector in zip(wanted, vectors, strict=True):
            scores[(i, seg.start)] = cosine(query_vector, vector)
    out = []
    for i, (text, pieces) in enumerate(zip(texts, cut, strict=True)):
        lead = leaders[i]
        if len(pieces) == 1:
            out.append(Reading(((pieces[0], None),)))
        elif lead is not None:
            out.append(Reading(((lead, None), *((s, None) for s in pieces if s != lead))))
        elif not any((i, s.start) in scores for s in pieces):
            out.append(NOT_READ)
        else:
            ranked = sorted(
                ((s, scores.get((i, s.start))) for s in pieces),
                key=lambda p: (p[1] is None, -(p[1] or 0.0), p[0].start),
            )
            out.append(Reading(tuple(ranked), introductions(text or "", pieces)))
    return out


def introductions(text: str, pieces: Sequence[Segment]) -> frozenset[Segment]:
    """The segments that introduce a list: they end with a colon and the next segment is an item
    ("0 All files were synchronised.", "1. Check ...", "- ..."). Such a sentence says what follows
    and answers nothing alone (asked "what exit status when the remote is unreachable?", the keywords
    and the embedding both favour "tidesync exits with one of the following statuses:" over "3 The
    remote host could not be reached."). A sentence that introduces an example or a command ("To see
    every process using standard syntax:") is often the answer itself, and stays a candidate."""
    return frozenset(
        s
        for s, after in itertools.pairwise(pieces)
        if text[s.start : s.end].endswith(":") and _LIST_ITEM.match(text, after.start)
    )


def _vectors(
    embedder: Embedder, texts: Sequence[str], cache: SegmentVectors | None, scope: str
) -> list[Sequence[float]]:
    """The texts' document vectors: the cached ones, and the others from one ``embed`` call."""
    if cache is None:
        return list(embedder.embed(texts, "document"))
    keys = [cache.key(scope, t) for t in texts]
    found: list[Sequence[float] | None] = [cache.get(k) for k in keys]
    missing = [i for i, v in enumerate(found) if v is None]
    if missing:
        for i, vector in zip(missing, embedder.embed([texts[i] for i in missing], "document"), strict=True):
            cache.put(keys[i], vector)
            found[i] = vector
    return [v for v in found if v is not None]


def _preselect(
    keywords: tuple[Bm25Encoder, SparseVector],
    texts: Sequence[str | None],
    chosen: list[list[Segment]],
    keep: int,
) -> tuple[list[list[Segment]], list[Segment | None]]:
    """Each passage's ``keep`` segments of best keyword score (``lexical_scores`` over all the
    passages' segments; ties: the earlier), in text order; with ``keep`` 0, none, and each passage's
    best one as its leader instead."""
    encoder, query = keywords
    flat = [text[s.start : s.end] for text, pieces in zip(texts, chosen, strict=True) if text for s in pieces]
    scores = iter(lexical_scores(encoder, query, flat))
    out: list[list[Segment]] = []
    leaders: list[Segment | None] = []
    for text, pieces in zip(texts, chosen, strict=True):
        scored = sorted(((next(scores), s) for s in pieces), key=lambda p: (-p[0], p[1].start))
        leaders.append(_leader(scored, introductions(text or "", pieces)) if keep == 0 and scored else None)
        out.append(sorted((s for _, s in scored[:keep]), key=lambda s: s.start))
    return out, leaders


def _leader(scored: Sequence[tuple[float, Segment]], intros: frozenset[Segment]) -> Segment:
    """The segment of best keyword score, unless it is an introduction and another segment holds a
    query keyword: then the best of those."""
    best = scored[0][1]
    if best in intros:
        return next((s for score, s in scored if score > 0 and s not in intros), best)
    return best


def lexical_scores(encoder: Bm25Encoder, query: SparseVector, texts: Sequence[str]) -> list[float]:
    """Each text's keyword score for ``query``: the IDF, over ``texts``, of the query terms it holds
    (each once: a segment is a sentence, repeats say little). Cheap next to embedding the text."""
    held = [encoder.covered(query, t) for t in texts]
    n = len(texts)
    counts: dict[int, int] = {}
    for terms in held:
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
    idf = {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in counts.items()}
    return [sum(idf[t] for t in terms) for terms in held]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity, 0 when either vector is zero: the one the search and its reader score with."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return 0.0
    return dot / (na * nb)
