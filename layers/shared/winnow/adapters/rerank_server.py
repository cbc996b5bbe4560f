"""``Reranker`` on a self-hosted cross-encoder server, for sites that cannot call Voyage
(``WINNOW_RERANKER=http``). Two wire formats, as the servers' own sources define them:

- ``api=tei``: text-embeddings-inference's ``POST /rerank`` (router/src/http/types.rs ``RerankRequest``):
  ``{"query", "texts", "truncate", "raw_scores"}`` → ``[{"index", "score"}]`` best first. Scores are
  the model's sigmoid unless ``raw_scores``; more than ``--max-client-batch-size`` texts (default 32)
  is a 422 ``{"error", "error_type": "validation"}``.
- ``api=cohere``: the Cohere-style ``POST /v1/rerank`` (or ``/rerank``) of Infinity, vLLM and llama.cpp's
  server: ``{"model", "query", "documents"}`` → ``{"results": [{"index", "relevance_score"}]}``.
  Infinity and vLLM answer the sigmoid by default; llama.cpp's server answers the classifier's raw logit.

Why it works as it does:
- Scores reach the port in [0, 1]. ``scores=probability`` (the servers' default) takes them as they are
  and refuses a score outside [0, 1] as a configuration error that names the fix; ``scores=logit``
  maps each raw logit ``x`` by the sigmoid ``1 / (1 + e^-x)``, the map the servers apply themselves, so
  either kind of server puts the same number on the same pair.
- Requests carry at most ``max_batch`` documents (TEI's default limit); a server whose limit is lower
  refuses with 413 or a 422 about the batch size, and the batch is halved and sent again (a
  cross-encoder scores each pair on its own, so splitting changes no score). ``top_n`` is never sent:
  each batch scores every document and the merged list is cut here.
- Empty documents score 0 without being sent (TEI refuses empty input).
- Timeouts, connection errors, 408, 424 (TEI's failed inference), 429, 5xx and unusable 200 answers are
  retried with the policy all providers share (``_retry``), honouring ``Retry-After`` on 429/503; once
  attempts run out they are our ``TransientError`` (a 503 with Retry-After at the edge). Other 4xx are
  ``ProviderRejected`` at once. The API key (``Authorization: Bearer``, as all four servers check it)
  never reaches a message.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from winnow.adapters._retry import Backoff, Retryable, Sleep, call_with_retries, parse_retry_after
from winnow.adapters.tls import tls_context
from winnow.errors import ConfigurationError, ProviderRejected, ProviderResponseError, TransientError
from winnow.observability import logger
from winnow.ports import Reranker, RerankScore

if TYPE_CHECKING:
    from winnow.settings import RerankServerSettings

__all__ = ["ServerReranker", "sigmoid"]

_SCORE_SLACK = 1e-6
_RETRIED = frozenset({408, 424, 429})
# The current key; ``True`` asks the source to read it again (a 401 after a rotation).
KeySource = Callable[[bool], str]


class BatchTooLarge(ProviderRejected):
    """The server refused a request for its number of documents: smaller requests will pass."""


def sigmoid(x: float) -> float:
    """The logistic map of a raw cross-encoder logit to [0, 1], without overflow for large ``|x|``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class ServerReranker(Reranker):
    """``Reranker`` on a TEI or Cohere-style ``/rerank`` endpoint."""

    def __init__(
        self,
        settings: RerankServerSettings,
        api_key: str | KeySource | None = None,
        client: httpx.Client | None = None,
        *,
        sleep: Sleep = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if not settings.url:
            raise ConfigurationError(
                "WINNOW_RERANKER=http needs WINNOW_RERANKER_URL, the server's /rerank endpoint"
            )
        self._settings = settings
        self._url: str = settings.url
        self._key: KeySource | None = (lambda _refresh: api_key) if isinstance(api_key, str) else api_key
        self._owns_client = client is None
        self._client = client or httpx.Client(
            timeout=httpx.Timeout(settings.timeout_seconds), verify=tls_context()
        )
        self._sleep = sleep
        self._rng = rng
        self._backoff = Backoff(
            settings.max_attempts, settings.backoff_base_seconds, settings.backoff_max_seconds
        )
        self._secrets: set[str] = set()

    @property
    def model(self) -> str:
        return self._settings.model or f"{self._settings.api}:{httpx.URL(self._url).host}"

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None) -> list[RerankScore]:
        if top_k is not None and top_k < 1:
            raise ValueError("top_k must be at least 1")
        sendable = [i for i, doc in enumerate(documents) if doc.strip()]
        scores = [RerankScore(i, 0.0) for i, doc in enumerate(documents) if not doc.strip()]
        step = self._settings.max_batch
        for start in range(0, len(sendable), step):
            group = sendable[start : start + step]
            for score in self._fitting(query, [documents[i] for i in group]):
                scores.append(RerankScore(group[score.index], score.score))
        scores.sort(key=lambda s: (-s.score, s.index))
        return scores[:top_k] if top_k is not None else scores

    def _fitting(self, query: str, documents: list[str]) -> list[RerankScore]:
        """One request, or two halves (recursively) when the server refuses the batch for its size."""
        try:
            return self._post(query, documents)
        except BatchTooLarge:
            if len(documents) < 2:
                raise
            logger.warning("the re-ranking server refused a batch for its size: splitting it in two")
            half = len(documents) // 2
            first = self._fitting(query, documents[:half])
            second = self._fitting(query, documents[half:])
            return first + [RerankScore(s.index + half, s.score) for s in second]

    def _payload(self, query: str, documents: list[str]) -> dict[str, Any]:
        if self._settings.api == "tei":
            return {"query": query, "texts": documents, "truncate": True, "raw_scores": False}
        payload: dict[str, Any] = {"query": query, "documents": documents}
        if self._settings.model:
            payload["model"] = self._settings.model
        return payload

    def _headers(self, refresh: bool = False) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._key is not None:
            key = self._key(refresh)
            if not key or not key.strip():
                raise ConfigurationError(
                    "the re-ranking server's API key is empty: set WINNOW_RERANKER_API_KEY"
                )
            self._secrets.add(key)
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _post(self, query: str, documents: list[str]) -> list[RerankScore]:
        body = json.dumps(self._payload(query, documents)).encode("utf-8")

        def attempt(_left: float | None) -> list[RerankScore]:
            try:
                response = self._client.post(self._url, content=body, headers=self._headers())
                if response.status_code == 401 and self._key is not None:
                    response = self._client.post(self._url, content=body, headers=self._headers(True))
            except httpx.TimeoutException as exc:
                raise Retryable("unavailable", f"re-ranking server timed out ({type(exc).__name__})") from exc
            except httpx.TransportError as exc:
                message = f"re-ranking server connection failed ({type(exc).__name__})"
                raise Retryable("unavailable", message) from exc
            return self._answer(response, len(documents))

        def give_up(failure: Retryable | None, made: int) -> TransientError:
            assert failure is not None  # no deadline: the first attempt always runs
            retry_after = failure.retry_after
            if retry_after is None:
                retry_after = self._backoff.ceiling(made)
            message = self._scrub(f"{failure.message}; gave up after {made} attempt(s)")
            return failure.as_transient(message, retry_after)

        result: list[RerankScore] = call_with_retries(
            attempt,
            provider="re-ranking server",
            backoff=self._backoff,
            give_up=give_up,
            sleep=self._sleep,
            rng=self._rng,
            log_extra={"endpoint": "rerank"},
        )
        return result

    def _answer(self, response: httpx.Response, documents: int) -> list[RerankScore]:
        status = response.status_code
        if 200 <= status < 300:
            try:
                return self._parse(response.json(), documents)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise Retryable("response", "re-ranking server answered with malformed JSON") from exc
            except ProviderResponseError as exc:
                raise Retryable("response", str(exc)) from exc
        if status in _RETRIED or status >= 500:
            retry_after = None
            if status in (429, 503):
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            kind = "rate_limited" if status == 429 else "unavailable"
            raise Retryable(kind, f"re-ranking server answered HTTP {status}", retry_after)
        detail = _detail(response)
        message = self._scrub(f"re-ranking server rejected the request (HTTP {status}): {detail}")
        if status == 413 or (status == 422 and "batch size" in detail.lower()):
            raise BatchTooLarge(message)
        if status in (401, 403):
            message += " (check WINNOW_RERANKER_API_KEY or its secret)"
        raise ProviderRejected(message)

    def _parse(self, body: Any, documents: int) -> list[RerankScore]:
        """Every document's score exactly once, mapped to [0, 1]."""
        tei = self._settings.api == "tei"
        items = body if tei else (body.get("results") if isinstance(body, dict) else None)
        if not isinstance(items, list):
            raise ProviderResponseError("re-ranking answer is not a list of results")
        if len(items) != documents:
            raise ProviderResponseError(
                f"re-ranking answer has {len(items)} results for {documents} documents"
            )
        field = "score" if tei else "relevance_score"
        seen: set[int] = set()
        scores = []
        for item in items:
            index = item.get("index") if isinstance(item, dict) else None
            raw = item.get(field) if isinstance(item, dict) else None
            if type(index) is not int or not 0 <= index < documents or index in seen:
                raise ProviderResponseError("re-ranking answer has a missing, repeated or unknown index")
            if not isinstance(raw, int | float) or isinstance(raw, bool) or not math.isfinite(raw):
                raise ProviderResponseError("re-ranking answer has a non-numeric or non-finite score")
            seen.add(index)
            scores.append(RerankScore(index, self._normalised(float(raw))))
        return scores

    def _normalised(self, raw: float) -> float:
        if self._settings.scores == "logit":
            return sigmoid(raw)
        if not -_SCORE_SLACK <= raw <= 1 + _SCORE_SLACK:
            raise ConfigurationError(
                f"the re-ranking server answered a score of {raw:g}, outside [0, 1]: it returns raw logits "
                "(llama.cpp's server does), set WINNOW_RERANKER_SCORES=logit"
            )
        return min(1.0, max(0.0, raw))


def _detail(response: httpx.Response) -> str:
    """The servers' error text: TEI ``{"error"}``, Infinity/vLLM/llama.cpp ``{"error": {"message"}}``,
    FastAPI ``{"detail"}``, or the plain body (axum's JSON rejections)."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    text = response.text
    if isinstance(body, dict):
        error = body.get("error", body.get("detail"))
        if isinstance(error, dict):
            error = error.get("message")
        text = str(error) if error else text
    return " ".join(text.split())[:300] or "no detail"
