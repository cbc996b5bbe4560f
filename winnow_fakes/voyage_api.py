"""The fake Voyage's request rules and answers, from the API reference (docs.voyageai.com): list lengths,
per-request token limits, output dimensions and encodings, and the shape of each answer. No HTTP here:
``winnow_fakes.fake_voyage`` serves these over a loopback socket."""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from typing import Any

from winnow_fakes.voyage_text import PROMPT_TOKENS, embed_text, rerank_score, token_bound

DEFAULT_OUTPUT_DIMENSIONS = (256, 512, 1024, 2048)
MAX_LIST_LENGTH = 1000  # texts per embeddings request and documents per rerank request
# Total tokens per embeddings request, from the API reference's ``input`` parameter
# (https://docs.voyageai.com/reference/embeddings-api): "at most 1M for voyage-4-lite and
# voyage-3.5-lite; 320K for voyage-4, voyage-3.5 and voyage-2; and 120K for voyage-4-large,
# voyage-3-large, voyage-code-3, voyage-finance-2, and voyage-law-2".
EMBED_TOKEN_LIMITS = {
    "voyage-4-lite": 1_000_000,
    "voyage-3.5-lite": 1_000_000,
    "voyage-4": 320_000,
    "voyage-3.5": 320_000,
    "voyage-2": 320_000,
    "voyage-4-large": 120_000,
    "voyage-3-large": 120_000,
    "voyage-code-3": 120_000,
    "voyage-finance-2": 120_000,
    "voyage-law-2": 120_000,
}
# A model the table does not name gets the lowest published limit: stricter, never more lenient.
DEFAULT_EMBED_TOKEN_LIMIT = 120_000
# Context length per text (docs.voyageai.com/docs/embeddings): 32K for the current models, 16K for
# voyage-law-2, 4K for voyage-2. Over it, ``truncation: true`` (the default) cuts the text and
# ``false`` is a 400.
EMBED_CONTEXT = {"voyage-law-2": 16_000, "voyage-2": 4_000}
DEFAULT_EMBED_CONTEXT = 32_000
# Rerank (https://docs.voyageai.com/reference/reranker-api): the query's tokens, the query plus any one
# document, and the request's total "query tokens x documents + the documents' tokens".
RERANK_LIMITS: dict[str, tuple[int, int, int]] = {  # model: (query, query + document, total)
    "rerank-2.5": (8_000, 32_000, 600_000),
    "rerank-2.5-lite": (8_000, 32_000, 600_000),
    "rerank-2": (4_000, 16_000, 600_000),
    "rerank-2-lite": (2_000, 8_000, 600_000),
    "rerank-1": (2_000, 8_000, 100_000),
    "rerank-lite-1": (1_000, 4_000, 300_000),
}
DEFAULT_RERANK_LIMITS = (1_000, 4_000, 100_000)  # unknown model: the lowest of each


def over_limit(model: str, limit: int, tokens: int) -> str:
    """Voyage's own words for a request over its model's token limit (as its 400 answers read)."""
    return (
        f"Request to model '{model}' failed. The max allowed tokens per submitted batch is {limit}. "
        f"Your batch has {tokens} tokens after truncation. Please lower the number of tokens in the batch."
    )


def _truncation(body: dict[str, Any]) -> bool:
    truncation = body.get("truncation", True)
    if truncation is None:
        return True
    if not isinstance(truncation, bool):
        raise BadRequest(400, "truncation must be a boolean.")
    return truncation


def _fitted(tokens: int, room: int, truncate: bool, what: str) -> int:
    """A text's tokens after truncation: cut to ``room`` when allowed, else a 400."""
    if tokens <= room:
        return tokens
    if not truncate:
        raise BadRequest(400, f"{what} has {tokens} tokens, over the context length of {room}.")
    return room


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
    truncate = _truncation(body)
    context = EMBED_CONTEXT.get(model, DEFAULT_EMBED_CONTEXT)
    prompt = PROMPT_TOKENS if input_type is not None else 0
    tokens = sum(
        _fitted(token_bound(t) + prompt, context, truncate, f"Input text {i}") for i, t in enumerate(texts)
    )
    limit = EMBED_TOKEN_LIMITS.get(model, DEFAULT_EMBED_TOKEN_LIMIT)
    if tokens > limit:
        raise BadRequest(400, over_limit(model, limit, tokens))
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
    truncate = _truncation(body)
    query_limit, pair_limit, limit = RERANK_LIMITS.get(model, DEFAULT_RERANK_LIMITS)
    query_tokens = _fitted(token_bound(query), query_limit, truncate, "The query")
    room = pair_limit - query_tokens
    document_tokens = [
        _fitted(token_bound(d), room, truncate, f"The query with document {i}")
        for i, d in enumerate(documents)
    ]
    tokens = query_tokens * len(documents) + sum(document_tokens)
    if tokens > limit:
        raise BadRequest(400, over_limit(model, limit, tokens))
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
