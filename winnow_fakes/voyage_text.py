"""The fake Voyage's deterministic "models": vectors that carry meaning without a model (a hashed bag of
lowercased, crudely stemmed words minus stop words, L2-normalised and rounded to float32, so texts that
share words are closer and the float-list and base64 encodings give identical numbers), a word-overlap
re-ranker, and two token counts: ``token_bound`` (what the fake Voyage bills and limits: never below
Voyage's tokenizers) and ``count_tokens`` (whitespace-separated words, the fake Bedrock's and Ollama's
rough usage figures). The fake Bedrock and Ollama read prompts with the same words."""

from __future__ import annotations

import hashlib
import math
import re
import struct

_STOP_WORD_LIST = (
    "a an and are as at be but by for from has have in into is it its of on or that the their this to "
    "was were what when where which who why will with"
)
_STOP_WORDS = frozenset(_STOP_WORD_LIST.split())
_WORD = re.compile(r"[0-9a-z]+")


def terms(text: str) -> list[str]:
    """Lowercased words minus stop words, with common English suffixes cut off (crude stemming), so
    "searching" and "searches" meet."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP_WORDS:
            continue
        out.append(_stem(word))
    return out


def _stem(word: str) -> str:
    for suffix, min_len in (("ing", 6), ("ies", 5), ("ed", 5), ("es", 5), ("ly", 5), ("s", 4)):
        if len(word) >= min_len and word.endswith(suffix):
            if suffix == "s" and word.endswith("ss"):
                return word
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def count_tokens(text: str) -> int:
    """The generation fakes' token count: whitespace-separated words (at least one per non-empty text)."""
    return max(1, len(text.split())) if text else 0


# Voyage's tokenizers (huggingface.co/voyageai/<model>, docs.voyageai.com/docs/tokenization) are
# byte-level BPE: the tokens the docs print carry GPT-2's byte markers ('Ġ'), and every token stands for
# at least one byte of the UTF-8 text. So a text's bytes bound its tokens from above, whatever the
# language or content (digits split one by one, code, CJK, emoji). Special tokens a tokenizer may add
# around a text are bounded by ``SPECIAL_TOKENS``.
SPECIAL_TOKENS = 2
# The prompt Voyage prepends when ``input_type`` is set ("Represent the document for retrieval: ", about
# 8 tokens) is counted as this many tokens per text.
PROMPT_TOKENS = 10


def token_bound(text: str) -> int:
    """Tokens of ``text`` no lower than any Voyage tokenizer counts: one per UTF-8 byte plus
    ``SPECIAL_TOKENS`` (see above). About 4x real English prose; the fake is stricter, never laxer."""
    return len(text.encode("utf-8", "surrogatepass")) + SPECIAL_TOKENS if text else 0


def embed_text(text: str, dimension: int) -> list[float]:
    """A unit vector for ``text``: hashed bag of terms with sub-linear term frequency."""
    weights: dict[str, int] = {}
    for term in terms(text) or [text.strip().lower() or "<empty>"]:
        weights[term] = weights.get(term, 0) + 1
    vector = [0.0] * dimension
    for term, tf in weights.items():
        digest = int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "big")
        sign = 1.0 if digest >> 63 else -1.0
        vector[digest % dimension] += sign * (1.0 + math.log(tf))
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    # Round to float32 so the JSON float list and the base64 float32 encoding carry the same numbers.
    return list(struct.unpack(f"<{dimension}f", struct.pack(f"<{dimension}f", *(v / norm for v in vector))))


def rerank_score(query: str, document: str) -> float:
    """Share of the query's distinct terms that the document contains, in [0, 1]."""
    query_terms = set(terms(query))
    if not query_terms:
        return 0.0
    return len(query_terms & set(terms(document))) / len(query_terms)
