"""Ollama's chat API as a ``Generator`` for the embedded default (httpx; no Ollama SDK).

The API (github.com/ollama/ollama, docs/api.md "Generate a chat completion"): ``POST {host}/api/chat``
with ``model``, ``messages`` (``system`` / ``user`` roles), ``stream: false`` and ``options``
(``num_predict``: the most tokens to generate, ``temperature``). The answer has ``message.content``,
``done_reason``, ``prompt_eval_count`` (input tokens) and ``eval_count`` (output tokens). Errors are
``{"error": "..."}``: 404 for a model that is not pulled, 503 when the server's queue is full, 500 for
a model that failed to load."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from winnow.adapters._generation import with_retries
from winnow.adapters._retry import Retryable, Sleep, parse_retry_after
from winnow.adapters.tls import tls_context
from winnow.errors import ConfigurationError, ProviderRejected, ProviderResponseError
from winnow.ports import Generation, Generator, Prompt

if TYPE_CHECKING:
    from winnow.settings import AnswerSettings


def _host_url(host: str) -> str:
    """``OLLAMA_HOST`` as Ollama's CLI reads it: ``host:port`` without a scheme means http."""
    host = host.strip().rstrip("/")
    if "://" not in host:
        host = f"http://{host}"
    return host


class OllamaGenerator(Generator):
    def __init__(
        self,
        settings: AnswerSettings,
        client: httpx.Client | None = None,
        *,
        sleep: Sleep = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if not settings.ollama_host:
            raise ConfigurationError("Ollama answers need OLLAMA_HOST, e.g. http://127.0.0.1:11434")
        self._settings = settings
        self._url = f"{_host_url(settings.ollama_host)}/api/chat"
        self._owns_client = client is None
        self._client = client or httpx.Client(
            timeout=httpx.Timeout(settings.timeout_seconds), verify=tls_context()
        )
        self._sleep = sleep
        self._rng = rng

    @property
    def model(self) -> str:
        return self._settings.ollama_model

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def generate(self, prompt: Prompt, deadline: float | None = None) -> Generation:
        payload = {
            "model": self._settings.ollama_model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user, **_images(prompt)},
            ],
            "stream": False,
            "options": {"num_predict": prompt.max_tokens, "temperature": prompt.temperature},
        }
        body = json.dumps(payload).encode("utf-8")
        return with_retries(
            "Ollama",
            self._settings,
            lambda timeout: self._attempt(body, timeout),
            deadline=deadline,
            min_attempt_seconds=1.0,
            sleep=self._sleep,
            rng=self._rng,
        )

    def _attempt(self, body: bytes, timeout: float) -> Generation:
        try:
            response = self._client.post(
                self._url,
                content=body,
                headers={"Content-Type": "application/json"},
                timeout=httpx.Timeout(timeout),
            )
        except httpx.TimeoutException as exc:
            raise Retryable("unavailable", f"Ollama chat timed out ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise Retryable("unavailable", f"Ollama is not reachable ({type(exc).__name__})") from exc
        status = response.status_code
        if status == 200:
            try:
                return self._parse(response.json())
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise Retryable("response", "Ollama answered with malformed JSON") from exc
            except ProviderResponseError as exc:
                raise Retryable("response", str(exc)) from exc
        detail = _detail(response)
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if status == 429:
            raise Retryable("rate_limited", "Ollama answered HTTP 429", retry_after)
        if status in (408, 500, 502, 503, 504):
            raise Retryable("unavailable", f"Ollama answered HTTP {status}: {detail}", retry_after)
        if status == 404:
            model = self._settings.ollama_model
            raise ConfigurationError(
                f"Ollama has no model {model!r}: run `ollama pull {model}` or set WINNOW_ANSWER_OLLAMA_MODEL"
            )
        raise ProviderRejected(f"Ollama rejected the request (HTTP {status}): {detail}")

    def _parse(self, body: Any) -> Generation:
        message = body.get("message") if isinstance(body, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise ProviderResponseError("Ollama chat answer has no message content")
        prompt_tokens = body.get("prompt_eval_count", 0)
        output_tokens = body.get("eval_count", 0)
        if type(prompt_tokens) is not int or type(output_tokens) is not int:
            raise ProviderResponseError("Ollama chat answer has non-integer token counts")
        return Generation(
            text=content,
            model=str(body.get("model") or self._settings.ollama_model),
            input_tokens=prompt_tokens,
            output_tokens=output_tokens,
            stop_reason=body.get("done_reason"),
        )


def _images(prompt: Prompt) -> dict[str, list[str]]:
    """A figure for a vision model: Ollama's chat takes base64 images beside the text."""
    import base64

    return {"images": [base64.b64encode(prompt.image).decode("ascii")]} if prompt.image else {}


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("error")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        detail = None
    text = str(detail) if detail else response.text
    return " ".join(text.split())[:300] or "no detail"
