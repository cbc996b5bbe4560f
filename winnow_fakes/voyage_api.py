"""The fake Voyage's request rules and answers, from the API reference (docs.voyageai.com): list lengths,
per-request token limits, output dimensions and encodings, and the shape of each answer. No HTTP here:
``winnow_fakes.fake_voyage`` serves these over a loopback socket."""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from typing import Any

from winnow_fakes.voyage_text import count_tokens, embed_text, rerank_score

DEFAULT_OUTPUT_DIMENSIONS = (256, 512, 1024, 2048)
MAX_LIST_LENGTH = 1000
# Per-request token limits from the API reference (embeddings: tokens in the list; rerank: the total).
EMBED_TOKEN_LIMITS = {
    "voyage-3.5-lite": 1_000_000,
    "voyage-4-lite": 1_000_000,
    "voyage-3.5": 320_000,
    "voyage-4": 320_000,
    "voyage-3-large": 120_000,
    "voyage-4-large": 120_000,
    "voyage-code-3": 120_000,
}
DEFAULT_EMBED_TOKEN_LIMIT = 320_000
RERANK_TOKEN_LIMITS = {"rerank-1": 300_000, "rerank-lite-1": 300_000}
DEFAULT_RERANK_TOKEN_LIMIT = 600_000


class BadRequest(Exception):
    """A request the real API answers with a 4xx ``{"detail": ...}``."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def embeddings_answer(
    body: Any, default_dimension: int, output_dimensions: frozenset[int]
) -> tuple[dict[str, Any], int, int]:
    """The answer to ``POST /v1/embeddings``, the number of texts and the tokens; BadRequest when the
    body breaks a rule of the API reference."""
    if not isinstance(body, dict):
        raise BadRequest(400, "Request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest(400, "Field 'model' is required.")
    raw_input = body.get("input")
    texts: Any = [raw_input] if isinstance(raw_input, str) else raw_input
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise BadRequest(400, "Field 'input' must be a string or a non-empty list of strings.")
    if len(texts) > MAX_LIST_LENGTH:
        raise BadRequest(400, f"The maximum length of the input list is {MAX_LIST_LENGTH}.")
    if any(not t for t in texts):
        raise BadRequest(400, "Input texts must not be empty.")
    input_type = body.get("input_type")
    if input_type not in (None, "query", "document"):
        raise BadRequest(400, "input_type must be null, 'query' or 'document'.")
    dimension = body.get("output_dimension")
    if dimension is None:
        dimension = default_dimension
    elif type(dimension) is not int or dimension not in output_dimensions:
        allowed = ", ".join(str(d) for d in sorted(output_dimensions))
        raise BadRequest(400, f"output_dimension must be one of {allowed}.")
    encoding = body.get("encoding_format")
    if encoding not in (None, "base64"):
        raise BadRequest(400, "encoding_format must be null or 'base64'.")
    tokens = sum(count_tokens(t) for t in texts)
    limit = EMBED_TOKEN_LIMITS.get(model, DEFAULT_EMBED_TOKEN_LIMIT)
    if tokens > limit:
        raise BadRequest(400, f"Request to model '{model}' has {tokens} tokens, over the limit of {limit}.")
    vectors = [embed_text(t, dimension) for t in texts]
    data = [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vectors)]
    payload = {"object": "list", "data": data, "model": model, "usage": {"total_tokens": tokens}}
    return payload, len(texts), tokens


def rerank_answer(body: Any) -> tuple[dict[str, Any], int, int]:
    """The answer to ``POST /v1/rerank``, best first, the number of documents and the tokens."""
    if not isinstance(body, dict):
        raise BadRequest(400, "Request body must be a JSON object.")
    model = body.get("model")
    query = body.get("query")
    documents = body.get("documents")
    if not isinstance(model, str) or not model:
        raise BadRequest(400, "Field 'model' is required.")
    if not isinstance(query, str) or not query:
        raise BadRequest(400, "Field 'query' must be a non-empty string.")
    if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
        raise BadRequest(400, "Field 'documents' must be a non-empty list of strings.")
    if len(documents) > MAX_LIST_LENGTH:
        raise BadRequest(400, f"The number of documents cannot exceed {MAX_LIST_LENGTH}.")
    if any(not d for d in documents):
        raise BadRequest(400, "Documents must not be empty.")
    top_k = body.get("top_k")
    if top_k is not None and (type(top_k) is not int or top_k < 1):
        raise BadRequest(400, "top_k must be a positive integer.")
    query_tokens = count_tokens(query)
    tokens = query_tokens * len(documents) + sum(count_tokens(d) for d in documents)
    limit = RERANK_TOKEN_LIMITS.get(model, DEFAULT_RERANK_TOKEN_LIMIT)
    if tokens > limit:
        raise BadRequest(400, f"Request to model '{model}' has {tokens} total tokens, over {limit}.")
    scored = sorted(
        ((i, rerank_score(query, d)) for i, d in enumerate(documents)), key=lambda p: (-p[1], p[0])
    )
    if top_k is not None:
        scored = scored[:top_k]
    data: list[dict[str, Any]] = []
    for index, score in scored:
        item: dict[str, Any] = {"index": index, "relevance_score": score}
        if body.get("return_documents"):
            item["document"] = documents[index]
        data.append(item)
    payload = {"object": "list", "data": data, "model": model, "usage": {"total_tokens": tokens}}
    return payload, len(documents), tokens


def apply_content_fault(endpoint: str, payload: dict[str, Any], kind: str) -> None:
    """Spoil a correct answer the way a content fault says (a wrong count, a short vector, ...)."""
    data: list[dict[str, Any]] = payload["data"]
    if kind == "wrong_count":
        data.pop()
    elif kind == "wrong_dimension":
        if endpoint == "embeddings":
            for item in data:
                item["embedding"] = item["embedding"][:-1]
        elif data:
            data[0]["index"] = 10 * MAX_LIST_LENGTH
    elif kind == "shuffled":
        data.reverse()
    elif kind == "non_finite" and data:
        if endpoint == "embeddings":
            data[0]["embedding"][0] = float("nan")
        else:
            data[0]["relevance_score"] = float("nan")


def encode_base64(payload: dict[str, Any]) -> None:
    for item in payload["data"]:
        vector: Sequence[float] = item["embedding"]
        item["embedding"] = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
