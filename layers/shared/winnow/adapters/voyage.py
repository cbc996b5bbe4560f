"""Voyage AI embeddings and re-ranking over REST with httpx: the ``voyageai`` SDK would drag LangChain,
Pillow and Hugging Face into the Lambda bundle (it stays a dev dependency for the contract test).
``POST /embeddings`` and ``POST /rerank`` as Voyage documents them; their per-request limits follow the
model (``voyage_models``; settings override them, docs/deploy.md "Voyage's limits").

Why it works as it does:
- Tokens are bounded (no tokenizer in the Lambda) by the UTF-8 bytes plus special tokens
  (``voyage_models.estimate_tokens``): never below Voyage's count, so a request is not refused for its
  size. Should one be anyway (a budget set above the model's limit, a model the table does not know), a
  400 about tokens splits the request in two and each half is sent again: a document never fails for it.
- The key is asked for on every request (``KeySource``: the factory's secrets cache, refreshed after
  ``SecretsMaxAgeSeconds``), so a rotated key reaches a warm function; a 401 re-reads the secret once
  and repeats the request with the new key before it fails. Atlas keys (``al-``) go to Atlas's endpoint.
- A 429 without ``Retry-After`` is waited out across Voyage's one-minute window
  (``rate_limit_window_seconds``: exponential pauses with equal jitter whose minimum sums to the window);
  search sets the window to 0 and answers 503 with Retry-After instead of waiting.
- Embeddings are asked for as ``base64`` (packed float32) like the SDK does: a quarter of the bytes of
  float lists to download and parse. Float lists are accepted too.
- A re-rank over budget is split into several requests and merged: a cross-encoder scores each (query,
  document) pair on its own, so splitting changes no score, where trimming text would. Only a document
  over the budget on its own is trimmed (the model would truncate it anyway); empty documents score 0
  locally (the API rejects empty strings).
- 408, 429, 5xx, timeouts, connection errors and unusable 200 answers (malformed JSON, wrong count or
  dimension, non-finite numbers) are retried with the policy all providers share (``_retry``), honouring
  ``Retry-After`` on 429/503; other 4xx never are.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import random
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from winnow.adapters._retry import Backoff, Retryable, Sleep, call_with_retries, parse_retry_after
from winnow.adapters.secrets import KeySource
from winnow.adapters.voyage_models import (
    PROMPT_TOKENS,
    base_url_for,
    embed_tokens_per_request,
    estimate_tokens,
    rerank_tokens_per_request,
)
from winnow.errors import (
    ConfigurationError,
    ProviderRejected,
    ProviderResponseError,
    TransientError,
)
from winnow.models import EmbeddingProfile
from winnow.observability import logger
from winnow.ports import Embedder, InputType, Reranker, RerankScore

if TYPE_CHECKING:
    from winnow.settings import VoyageSettings

_SCORE_SLACK = 1e-6

__all__ = ["KeySource", "VoyageEmbedder", "VoyageReranker", "batches_within", "estimate_tokens"]


class RequestTooLarge(ProviderRejected):
    """Voyage refused a request for its tokens (HTTP 400): smaller requests will pass."""


def batches_within(
    texts: Sequence[str], max_texts: int, max_tokens: int, extra_per_text: int = 0
) -> list[list[int]]:
    """Consecutive index groups with at most ``max_texts`` items and ``max_tokens`` estimated tokens
    each. A single text over the token budget gets a group of its own (the API truncates it)."""
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index, text in enumerate(texts):
        cost = estimate_tokens(text) + extra_per_text
        if current and (len(current) >= max_texts or used + cost > max_tokens):
            groups.append(current)
            current, used = [], 0
        current.append(index)
        used += cost
    if current:
        groups.append(current)
    return groups


def voyage_http_client(settings: VoyageSettings) -> httpx.Client:
    """The connection pool for Voyage. The factory gives the embedder and the re-ranker the same one: a
    re-ranked query then reuses the connection its query embedding opened (no second TLS handshake), and
    a cold start builds one TLS context instead of two (each loads the whole CA bundle)."""
    from winnow.adapters.tls import tls_context

    return httpx.Client(
        timeout=httpx.Timeout(settings.timeout_seconds),
        verify=tls_context(),
        # enough kept-alive connections for a batch's documents embedded at once (batch_concurrency)
        limits=httpx.Limits(max_keepalive_connections=16, keepalive_expiry=60),
    )


class _VoyageClient:
    """The HTTP part both adapters share: one connection pool, auth, retries and error translation."""

    def __init__(
        self,
        settings: VoyageSettings,
        api_key: str | KeySource,
        client: httpx.Client | None,
        sleep: Sleep,
        rng: Callable[[], float],
    ) -> None:
        self.settings = settings
        self._source: KeySource = api_key if callable(api_key) else _fixed(api_key)
        self._keys: set[str] = set()  # every key used, to scrub from messages
        self._key()  # an empty key is a configuration error at once, not at the first request
        self._owns_client = client is None
        self._client = client or voyage_http_client(settings)
        self._sleep = sleep
        self._rng = rng
        self._rate_base = _rate_base(settings.rate_limit_window_seconds, settings.max_attempts)
        longest = self._rate_base * 2 ** max(settings.max_attempts - 2, 0)
        self._backoff = Backoff(
            settings.max_attempts,
            settings.backoff_base_seconds,
            settings.backoff_max_seconds,
            max_retry_after=max(settings.backoff_max_seconds, longest),
        )

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _key(self, refresh: bool = False) -> str:
        key = self._source(refresh)
        if not key or not key.strip():
            raise ConfigurationError(
                "Voyage API key is empty: set VOYAGE_API_KEY or VOYAGE_API_KEY_SECRET_ARN"
            )
        self._keys.add(key)
        return key

    def _url(self, key: str, path: str) -> str:
        base = self.settings.base_url or base_url_for(key)
        return f"{base.rstrip('/')}/{path}"

    def _send(self, key: str, path: str, body: bytes) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        return self._client.post(self._url(key, path), content=body, headers=headers)

    def _scrub(self, text: str) -> str:
        """Never let a key into a message, whatever the provider or httpx echo back."""
        for key in self._keys:
            text = text.replace(key, "***")
        return text

    def _rate_pause(self, failed: int) -> float | None:
        """The pause after failed attempt ``failed`` on a 429 without Retry-After: exponential with
        equal jitter, the minimum pauses of all attempts summing to the rate-limit window."""
        if self._rate_base <= 0:
            return None
        return self._rate_base * 2 ** (failed - 1) * (0.5 + 0.5 * self._rng())

    def _retry_after(self, response: httpx.Response) -> float | None:
        seconds = parse_retry_after(response.headers.get("Retry-After"))
        cap = self._backoff.max_retry_after or self._backoff.max_seconds
        return None if seconds is None else min(seconds, cap)

    def post(self, path: str, payload: dict[str, Any], validate: Callable[[Any], Any]) -> Any:
        """POST with retries; ``validate`` turns the decoded JSON into the result or raises
        ``ProviderResponseError`` (which is retried like an outage)."""
        body = json.dumps(payload).encode("utf-8")
        made = 0

        def attempt(_left: float | None) -> Any:
            nonlocal made
            made += 1
            try:
                key = self._key()
                response = self._send(key, path, body)
                if response.status_code == 401:
                    fresh = self._key(refresh=True)  # rotated since it was cached? one more try
                    if fresh != key:
                        logger.info("Voyage refused the key: re-read the secret, trying the new key")
                        response = self._send(fresh, path, body)
            except httpx.TimeoutException as exc:
                raise Retryable("unavailable", f"Voyage {path} timed out ({type(exc).__name__})") from exc
            except httpx.TransportError as exc:
                message = f"Voyage {path} connection failed ({type(exc).__name__})"
                raise Retryable("unavailable", message) from exc
            status = response.status_code
            if 200 <= status < 300:
                try:
                    return validate(response.json())
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise Retryable("response", f"Voyage {path} answered with malformed JSON") from exc
                except ProviderResponseError as exc:
                    raise Retryable("response", str(exc)) from exc
            if status in (408, 429) or status >= 500:
                retry_after = self._retry_after(response) if status in (429, 503) else None
                if status == 429 and retry_after is None:
                    retry_after = self._rate_pause(made)
                kind = "rate_limited" if status == 429 else "unavailable"
                raise Retryable(kind, f"Voyage {path} answered HTTP {status}", retry_after)
            detail = _detail(response)
            message = self._scrub(f"Voyage {path} rejected the request (HTTP {status}): {detail}")
            if status == 400 and "token" in detail.lower():
                raise RequestTooLarge(message)
            raise ProviderRejected(message)

        def give_up(failure: Retryable | None, made: int) -> TransientError:
            assert failure is not None  # no deadline: the first attempt always runs
            message = self._scrub(f"{failure.message}; gave up after {made} attempt(s)")
            retry_after = failure.retry_after
            if retry_after is None:
                retry_after = self._backoff.ceiling(made)
            return failure.as_transient(message, retry_after)

        return call_with_retries(
            attempt,
            provider="Voyage",
            backoff=self._backoff,
            give_up=give_up,
            sleep=self._sleep,
            rng=self._rng,
            log_extra={"endpoint": path},
        )


def _fixed(api_key: str) -> KeySource:
    return lambda _refresh: api_key


def _rate_base(window: float, attempts: int) -> float:
    """The first pause's ceiling such that pauses of ceilings base, 2 base, 4 base, ... with equal
    jitter (at least half the ceiling each) add up to ``window`` over ``attempts - 1`` pauses."""
    if window <= 0 or attempts < 2:
        return 0.0
    return 2 * window / (2 ** (attempts - 1) - 1)


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        detail = None
    text = str(detail) if detail else response.text
    return " ".join(text.split())[:300] or "no detail"


def _decode_vector(raw: Any) -> list[float]:
    if isinstance(raw, str):
        try:
            packed = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ProviderResponseError("Voyage embedding is not valid base64") from exc
        if len(packed) % 4:
            raise ProviderResponseError("Voyage embedding is not a whole number of float32 values")
        values = array("f")
        values.frombytes(packed)
        if sys.byteorder != "little":
            values.byteswap()
        return values.tolist()
    if isinstance(raw, list) and all(type(v) in (float, int) for v in raw):
        return [float(v) for v in raw]
    raise ProviderResponseError("Voyage embedding is neither a float list nor base64")


class _VoyageEndpoint:
    """What the embedder and the re-ranker share: the settings and one retrying client, closed with them."""

    def __init__(
        self,
        settings: VoyageSettings,
        api_key: str | KeySource,
        client: httpx.Client | None = None,
        *,
        sleep: Sleep = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._http = _VoyageClient(settings, api_key, client, sleep, rng)
        self._settings = settings

    def close(self) -> None:
        self._http.close()


class VoyageEmbedder(_VoyageEndpoint, Embedder):
    """``Embedder`` on Voyage's embeddings endpoint, batching by count and estimated tokens."""

    def __init__(
        self,
        settings: VoyageSettings,
        api_key: str | KeySource,
        client: httpx.Client | None = None,
        *,
        sleep: Sleep = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        super().__init__(settings, api_key, client, sleep=sleep, rng=rng)
        self._dimension: int | None = settings.output_dimension
        self._lock = threading.Lock()

    @property
    def profile(self) -> EmbeddingProfile:
        """With ``output_dimension`` unset the dimension is the model's default, learned from the first
        answer (one tiny probe call if nothing was embedded yet)."""
        if self._dimension is None:
            self.embed(["dimension probe"], "document")
        assert self._dimension is not None
        return EmbeddingProfile("voyage", self._settings.embed_model, self._dimension)

    def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        if not texts:
            return []
        vectors: list[list[float]] = []
        for group in self.request_groups(texts):
            vectors.extend(self._embed_fitting([texts[i] for i in group], input_type))
        return vectors

    @property
    def max_batch_tokens(self) -> int:
        """The tokens one request may carry: the setting, else the model's documented limit."""
        settings = self._settings
        return settings.max_batch_tokens or embed_tokens_per_request(settings.embed_model)

    def request_groups(self, texts: Sequence[str]) -> list[list[int]]:
        """One group per request, within Voyage's texts and tokens per request."""
        return batches_within(
            texts, self._settings.max_batch_texts, self.max_batch_tokens, extra_per_text=PROMPT_TOKENS
        )

    def _embed_fitting(self, texts: list[str], input_type: InputType) -> list[list[float]]:
        """One request, or two halves (recursively) when Voyage refuses it for its tokens."""
        try:
            return self._embed_batch(texts, input_type)
        except RequestTooLarge:
            if len(texts) < 2:
                raise
            logger.warning("Voyage refused an embedding request for its size: splitting it in two")
            half = len(texts) // 2
            return self._embed_fitting(texts[:half], input_type) + self._embed_fitting(
                texts[half:], input_type
            )

    def _embed_batch(self, texts: list[str], input_type: InputType) -> list[list[float]]:
        payload: dict[str, Any] = {
            "input": texts,
            "model": self._settings.embed_model,
            "input_type": input_type,
            "truncation": True,
            "encoding_format": "base64",
        }
        if self._settings.output_dimension is not None:
            payload["output_dimension"] = self._settings.output_dimension

        def validate(body: Any) -> list[list[float]]:
            return self._parse(body, len(texts))

        result: list[list[float]] = self._http.post("embeddings", payload, validate)
        return result

    def _parse(self, body: Any, expected: int) -> list[list[float]]:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise ProviderResponseError("Voyage embeddings answer has no data list")
        if len(data) != expected:
            raise ProviderResponseError(f"Voyage returned {len(data)} embeddings for {expected} texts")
        by_index: dict[int, list[float]] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if type(index) is not int or not 0 <= index < expected or index in by_index:
                raise ProviderResponseError("Voyage embeddings answer has missing or repeated indexes")
            by_index[index] = _decode_vector(item.get("embedding"))
        vectors = [by_index[i] for i in range(expected)]
        dimension = len(vectors[0])
        if dimension == 0 or any(len(v) != dimension for v in vectors):
            raise ProviderResponseError("Voyage returned embeddings of different lengths")
        if not all(math.isfinite(x) for v in vectors for x in v):
            raise ProviderResponseError("Voyage returned non-finite numbers in an embedding")
        with self._lock:
            if self._dimension is None:
                self._dimension = dimension
            elif dimension != self._dimension:
                raise ProviderResponseError(
                    f"Voyage returned {dimension}-dimensional embeddings, expected {self._dimension}"
                )
        return vectors


class VoyageReranker(_VoyageEndpoint, Reranker):
    """``Reranker`` on Voyage's rerank endpoint; splits over-budget calls and merges the scores."""

    @property
    def model(self) -> str:
        return self._settings.rerank_model

    def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None) -> list[RerankScore]:
        if top_k is not None and top_k < 1:
            raise ValueError("top_k must be at least 1")
        settings = self._settings
        sendable = [i for i, doc in enumerate(documents) if doc.strip()]
        scores = [RerankScore(i, 0.0) for i, doc in enumerate(documents) if not doc.strip()]
        if sendable:
            query_tokens = estimate_tokens(query)
            budget = settings.rerank_max_tokens or rerank_tokens_per_request(settings.rerank_model)
            texts = [self._fit(documents[i], query_tokens, budget) for i in sendable]
            groups = batches_within(texts, settings.rerank_max_documents, budget, extra_per_text=query_tokens)
            for group in groups:
                for score in self._rerank_fitting(query, [texts[i] for i in group], top_k):
                    scores.append(RerankScore(sendable[group[score.index]], score.score))
        scores.sort(key=lambda s: (-s.score, s.index))
        return scores[:top_k] if top_k is not None else scores

    @staticmethod
    def _fit(document: str, query_tokens: int, budget: int) -> str:
        """Trim only a document that cannot fit the whole budget on its own."""
        room = max(1, budget - query_tokens)
        tokens = estimate_tokens(document)
        if tokens <= room:
            return document
        keep = max(1, len(document) * room // tokens)
        while keep > 1 and estimate_tokens(document[:keep]) > room:
            keep = keep * 9 // 10
        return document[:keep]

    def _rerank_fitting(self, query: str, documents: list[str], top_k: int | None) -> list[RerankScore]:
        """One request, or two halves merged (each pair is scored on its own) when refused for size."""
        try:
            return self._rerank_batch(query, documents, top_k)
        except RequestTooLarge:
            if len(documents) < 2:
                raise
            logger.warning("Voyage refused a rerank request for its size: splitting it in two")
            half = len(documents) // 2
            first = self._rerank_fitting(query, documents[:half], top_k)
            second = self._rerank_fitting(query, documents[half:], top_k)
            return first + [RerankScore(s.index + half, s.score) for s in second]

    def _rerank_batch(self, query: str, documents: list[str], top_k: int | None) -> list[RerankScore]:
        expected = len(documents) if top_k is None else min(top_k, len(documents))
        payload: dict[str, Any] = {
            "query": query,
            "documents": documents,
            "model": self._settings.rerank_model,
            "top_k": None if top_k is None else expected,
            "truncation": True,
        }

        def validate(body: Any) -> list[RerankScore]:
            return _parse_rerank(body, len(documents), expected)

        result: list[RerankScore] = self._http.post("rerank", payload, validate)
        return result


def _parse_rerank(body: Any, documents: int, expected: int) -> list[RerankScore]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ProviderResponseError("Voyage rerank answer has no data list")
    if len(data) != expected:
        raise ProviderResponseError(f"Voyage returned {len(data)} rerank results, expected {expected}")
    seen: set[int] = set()
    scores: list[RerankScore] = []
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < documents or index in seen:
            raise ProviderResponseError("Voyage rerank answer has a missing, repeated or unknown index")
        if not isinstance(score, float | int) or isinstance(score, bool) or not math.isfinite(score):
            raise ProviderResponseError("Voyage rerank answer has a non-numeric or non-finite score")
        if not -_SCORE_SLACK <= score <= 1 + _SCORE_SLACK:
            raise ProviderResponseError(f"Voyage rerank score {score} is outside [0, 1]")
        seen.add(index)
        scores.append(RerankScore(index, min(1.0, max(0.0, float(score)))))
    return scores
