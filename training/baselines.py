"""What a user would build instead of Winnow, run on the same whole documents in the same process:

- ``bm25``: the ``bm25s`` library with its defaults (Lucene variant, k1 = 1.5, b = 0.75), English
  stop-words, and the Snowball English stemmer (PyStemmer) — the stemmer Winnow's own BM25 uses.
- ``dense``: the same local ONNX model over whole documents (truncated at the model's token limit as the
  embedder is configured), scored by brute-force cosine in numpy: exactly what a FAISS flat index does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def bm25_rankings(
    documents: Mapping[str, str], queries: Mapping[str, str], k: int = 10
) -> dict[str, list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    doc_ids = list(documents)
    corpus_tokens = bm25s.tokenize(
        list(documents.values()), stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    k = min(k, len(doc_ids))
    query_ids = list(queries)
    # Query words as strings: bm25s looks them up in the corpus vocabulary and ignores unknown ones.
    query_tokens = bm25s.tokenize(
        list(queries.values()), stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
    )
    rankings: dict[str, list[str]] = {qid: [] for qid in query_ids}
    if not query_ids or not doc_ids:
        return rankings
    results, scores = retriever.retrieve(query_tokens, k=k, show_progress=False, n_threads=1)
    for row, qid in enumerate(query_ids):
        rankings[qid] = [doc_ids[int(i)] for i, s in zip(results[row], scores[row], strict=True) if s > 0]
    return rankings


def dense_rankings(
    documents: Mapping[str, str], queries: Mapping[str, str], embedder: Any, k: int = 10
) -> dict[str, list[str]]:
    """``embedder``: a ``winnow.ports.Embedder`` returning L2-normalised vectors (the local model)."""
    import numpy as np

    doc_ids = list(documents)
    doc_matrix = np.asarray(embedder.embed(list(documents.values()), "document"), dtype=np.float32)
    doc_matrix /= np.clip(np.linalg.norm(doc_matrix, axis=1, keepdims=True), 1e-12, None)
    query_ids = list(queries)
    query_matrix = np.asarray(embedder.embed(list(queries.values()), "query"), dtype=np.float32)
    query_matrix /= np.clip(np.linalg.norm(query_matrix, axis=1, keepdims=True), 1e-12, None)
    scores = query_matrix @ doc_matrix.T
    k = min(k, len(doc_ids))
    rankings: dict[str, list[str]] = {}
    for row, qid in enumerate(query_ids):
        top = np.argsort(-scores[row], kind="stable")[:k]
        rankings[qid] = [doc_ids[int(i)] for i in top]
    return rankings
