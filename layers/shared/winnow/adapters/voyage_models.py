"""Voyage's documented per-request limits and endpoints, in one place: the embeddings and rerank adapters
size their requests from these tables unless a setting overrides them (``VOYAGE_MAX_BATCH_TOKENS``,
``VOYAGE_RERANK_MAX_TOKENS``, ``VOYAGE_BASE_URL``; stack parameters ``VoyageMaxBatchTokens``,
``VoyageBaseUrl``). docs/deploy.md ("Voyage's limits") shows the same table.

Token counts are bounded, not guessed: Voyage's tokenizers are byte-level BPE (docs.voyageai.com/docs/
tokenization; every token stands for at least one byte of UTF-8), so a text's bytes plus a few special
tokens is never below what Voyage counts. That is about 4x real English prose: a request carries a
quarter of what it could, which costs requests (2,000 a minute at tier 1), never tokens or a 400.
"""

from __future__ import annotations

# Total tokens per embeddings request, from the API reference's ``input`` parameter
# (https://docs.voyageai.com/reference/embeddings-api): "at most 1M for voyage-4-lite and
# voyage-3.5-lite; 320K for voyage-4, voyage-3.5 and voyage-2; and 120K for voyage-4-large,
# voyage-3-large, voyage-code-3, voyage-finance-2, and voyage-law-2". At most 1,000 texts a request.
EMBED_TOKENS_PER_REQUEST: dict[str, int] = {
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
# A model not in the table gets the lowest published limit; a refusal for size is split anyway.
DEFAULT_EMBED_TOKENS_PER_REQUEST = 120_000
# Rerank (https://docs.voyageai.com/reference/reranker-api): "query tokens x documents + the documents'
# tokens" per request; at most 1,000 documents.
RERANK_TOKENS_PER_REQUEST: dict[str, int] = {
    "rerank-2.5": 600_000,
    "rerank-2.5-lite": 600_000,
    "rerank-2": 600_000,
    "rerank-2-lite": 600_000,
    "rerank-lite-1": 300_000,
    "rerank-1": 100_000,
}
DEFAULT_RERANK_TOKENS_PER_REQUEST = 100_000
MAX_TEXTS_PER_REQUEST = 1000

# The voyageai SDK (voyageai/util.py, ``get_default_base_url``) sends keys issued through MongoDB Atlas,
# which start with ``al-``, to Atlas's endpoint and every other key to Voyage's own.
VOYAGE_BASE_URL = "https://api.voyageai.com/v1"
ATLAS_BASE_URL = "https://ai.mongodb.com/v1"
ATLAS_KEY_PREFIX = "al-"

SPECIAL_TOKENS = 4  # beginning/end markers a tokenizer may add, with room to spare
# Voyage prepends a prompt of about 8 tokens to each text when input_type is set ("Represent the
# document for retrieval: "); budget for it so that a batch of many short texts stays under the limit.
PROMPT_TOKENS = 10


def embed_tokens_per_request(model: str) -> int:
    return EMBED_TOKENS_PER_REQUEST.get(model, DEFAULT_EMBED_TOKENS_PER_REQUEST)


def rerank_tokens_per_request(model: str) -> int:
    return RERANK_TOKENS_PER_REQUEST.get(model, DEFAULT_RERANK_TOKENS_PER_REQUEST)


def base_url_for(api_key: str) -> str:
    """The endpoint a key belongs to, as the voyageai SDK chooses it."""
    return ATLAS_BASE_URL if api_key.startswith(ATLAS_KEY_PREFIX) else VOYAGE_BASE_URL


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes at most in any Voyage model: one per UTF-8 byte plus special tokens."""
    if not text:
        return 0
    return len(text.encode("utf-8", "surrogatepass")) + SPECIAL_TOKENS
