"""BM25 sparse vectors for Qdrant: term-frequency saturation here, IDF in Qdrant (``Modifier.IDF``).

BM25 scores a document for a query as ``sum over query terms of IDF(t) * tf_weight(t, d)``. The
IDF needs corpus statistics that change with every upload, so Qdrant keeps them and applies them at
query time, counted over the searching tenant's points only (the store passes the tenant filter as
the IDF corpus: another tenant's documents never make a term common or rare); what stays in the
vector is the document side,

    tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))

and the query side is 1.0 per distinct term. Documents and queries go through the same ``analyze``
and ``term_id``, so the two sides cannot drift apart.

Analysis: NFKC-normalised (the "ﬁ" ligature PDFs are full of becomes "fi", full-width letters become
ASCII), Unicode word tokens, case-folded; English stop-words removed (Lucene's list, the one
Elasticsearch and bm25s use, so "not" and "no" go too: IDF would weigh them near zero anyway);
tokens longer than 64 characters dropped (hashes and base64, not words); Snowball English stemming
(``snowballstemmer`` runs on PyStemmer's C code when it is installed). Term ids are CRC-32 of the
UTF-8 stem: stable across processes and Python versions, unlike ``hash()``. Two stems that collide
share a dimension: their counts add up, as if they were one term.

``avgdl`` cannot come from the corpus here (each chunk is encoded alone, in a Lambda that sees one
document), so it is a constant matched to the default chunking: about the terms a default-sized chunk
keeps after stop-words go. A chunk much longer than ``avgdl`` has its term frequencies damped more,
which is what BM25 intends. How little the constant costs against the true average: training/NOTEBOOK.md,
"Figures behind design choices".
"""

from __future__ import annotations

import re
import threading
import unicodedata
import zlib
from collections import Counter
from typing import Any

from winnow.models import SparseVector

__all__ = ["DEFAULT_AVGDL", "ENGLISH_STOP_WORDS", "Bm25Encoder"]

DEFAULT_AVGDL = 100.0
ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
_WORD = re.compile(r"\w+")
_MAX_TOKEN_CHARS = 64
# ASCII text: every character ``\w`` does not match, and the underscore, becomes a space.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


def _words(text: str) -> list[str]:
    """The runs of letters and digits of ``text`` (an underscore splits them), NFKC-normalised and
    casefolded. Why ``\\w+`` split on ``_`` rather than ``[^\\W_]+``: the same tokens, found in two
    thirds of the time, and this runs over every candidate passage of every search (``covered``)."""
    if text.isascii():  # most text: the same words, split in a third of the time
        return text.lower().translate(_ASCII_SEPARATORS).split()
    normal = unicodedata.normalize("NFKC", text).casefold()
    words = _WORD.findall(normal)
    if "_" in normal:
        words = [part for word in words for part in word.split("_") if part]
    return words


class Bm25Encoder:
    """Thread-safe: the stemmer object (not thread-safe in PyStemmer) is kept per thread, and the
    cache is a dict, whose single reads and writes are atomic."""

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        avgdl: float = DEFAULT_AVGDL,
        language: str = "english",
        stop_words: frozenset[str] = ENGLISH_STOP_WORDS,
        cache_size: int = 200_000,
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1 or avgdl <= 0:
            raise ValueError("BM25 needs k1 >= 0, 0 <= b <= 1 and avgdl > 0")
        self.k1 = k1
        self.b = b
        self.avgdl = avgdl
        self.language = language
        self.stop_words = stop_words
        self._local = threading.local()
        # One cache from surface token to (stem, term id): the hot path is a dict lookup per token (a
        # third of an ``lru_cache`` call's time), emptied when full, so it never holds more than
        # ``cache_size`` tokens.
        self._analysed: dict[str, tuple[str, int]] = {}
        self._cache_size = cache_size

    # --- analysis ------------------------------------------------------------------------------------
    def analyze(self, text: str) -> list[str]:
        """The terms of ``text`` in order, repeats kept: what both encoders count."""
        return [self._analyze_token(token)[0] for token in self._tokens(text)]

    @staticmethod
    def term_id(term: str) -> int:
        """Stable unsigned 32-bit id of an analysed term (Qdrant sparse indices are u32)."""
        return zlib.crc32(term.encode("utf-8"))

    def _tokens(self, text: str) -> list[str]:
        stop_words = self.stop_words
        return [token for token in _words(text) if token not in stop_words and len(token) <= _MAX_TOKEN_CHARS]

    def _analyze_token(self, token: str) -> tuple[str, int]:
        known = self._analysed.get(token)
        if known is None:
            stem = self._stemmer().stemWord(token)
            known = stem, self.term_id(stem)
            if len(self._analysed) >= self._cache_size:
                self._analysed.clear()
            self._analysed[token] = known
        return known

    def _stemmer(self) -> Any:
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            import snowballstemmer

            stemmer = snowballstemmer.stemmer(self.language)
            self._local.stemmer = stemmer
        return stemmer

    def _term_ids(self, text: str) -> list[int]:
        known, ids = self._analysed, []
        for token in self._tokens(text):
            analysed = known.get(token)
            ids.append((analysed if analysed is not None else self._analyze_token(token))[1])
        return ids

    # --- vectors -------------------------------------------------------------------------------------
    def encode_document(self, text: str) -> SparseVector:
        """BM25 term-frequency weights of a chunk (its ``embed_text``)."""
        ids = self._term_ids(text)
        if not ids:
            return SparseVector(indices=[], values=[])
        counts = Counter(ids)
        k1 = self.k1
        length_norm = k1 * (1.0 - self.b + self.b * len(ids) / self.avgdl)
        indices = sorted(counts)
        values = [counts[index] * (k1 + 1.0) / (counts[index] + length_norm) for index in indices]
        return SparseVector(indices=indices, values=values)

    def covered(self, query: SparseVector, text: str) -> frozenset[int]:
        """The query's terms (``encode_query``) that ``text`` holds; ``share`` of them is the passage's
        keyword coverage: 1.0 when every keyword of the question is in it."""
        wanted = set(query.indices)
        if not wanted:
            return frozenset()
        # Each distinct token once: a passage repeats most of its words, and this runs on every candidate.
        known, held = self._analysed, set()
        for token in set(self._tokens(text)):
            analysed = known.get(token)
            held.add((analysed if analysed is not None else self._analyze_token(token))[1])
        return frozenset(wanted & held)

    @staticmethod
    def share(query: SparseVector, terms: frozenset[int]) -> float:
        """``terms`` (some of the query's) as a share of the query's terms; 0.0 for a query without any."""
        wanted = len(set(query.indices))
        return len(terms) / wanted if wanted else 0.0

    def encode_query(self, text: str) -> SparseVector:
        """One dimension per distinct query term, weight 1.0: Qdrant multiplies in the IDF."""
        indices = sorted(set(self._term_ids(text)))
        return SparseVector(indices=indices, values=[1.0] * len(indices))
