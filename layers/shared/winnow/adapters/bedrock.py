"""Amazon Bedrock's Converse API as a ``Generator`` (boto3 ``bedrock-runtime``; boto3 comes from the
Lambda runtime and is imported only when the first answer is asked for, never at cold start).

The API (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
``POST /model/{modelId}/converse`` with ``system`` (text blocks), ``messages`` and ``inferenceConfig``
(``maxTokens``, ``temperature``); the answer has ``output.message.content[].text``, ``stopReason`` and
``usage.{inputTokens, outputTokens, totalTokens}``. Errors: ``ThrottlingException`` (429),
``ServiceUnavailableException`` (503), ``InternalServerException`` (500), ``ModelTimeoutException``
(408), ``ModelNotReadyException`` (429), ``ModelErrorException`` (424), and the permanent
``ValidationException``, ``AccessDeniedException``, ``ResourceNotFoundException``.

botocore's own retries are off (``total_max_attempts: 1``): the retry policy all providers share
(``_retry``) retries with our bounds and our deadline, and translates everything into Winnow's
exceptions."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from winnow.adapters._generation import with_retries
from winnow.adapters._retry import Retryable, Sleep
from winnow.errors import ConfigurationError, ProviderRejected, ProviderResponseError
from winnow.observability import logger
from winnow.ports import Generation, Generator, Prompt

if TYPE_CHECKING:
    from winnow.settings import AnswerSettings

RATE_LIMITED = {
    "ThrottlingException",
    "TooManyRequestsException",
    "ModelNotReadyException",
    "ServiceQuotaExceededException",
}
UNAVAILABLE = {
    "ServiceUnavailableException",
    "InternalServerException",
    "ModelTimeoutException",
    "ModelErrorException",
    "RequestTimeout",
    "RequestTimeoutException",
}
_RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


def bedrock_runtime_client(settings: AnswerSettings, timeout_seconds: float) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=min(5.0, timeout_seconds),
        read_timeout=timeout_seconds,
        retries={"total_max_attempts": 1, "mode": "standard"},
        user_agent_extra="winnow-answer",
    )
    return boto3.client(
        "bedrock-runtime",
        region_name=settings.bedrock_region,
        endpoint_url=settings.bedrock_endpoint_url,
        config=config,
    )


class BedrockGenerator(Generator):
    """``Generator`` on Bedrock's Converse API for one model (or inference profile) id."""

    def __init__(
        self,
        settings: AnswerSettings,
        client: Any | None = None,
        *,
        sleep: Sleep = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if not settings.bedrock_model_id:
            raise ConfigurationError(
                "Bedrock answers need a model id: set WINNOW_ANSWER_BEDROCK_MODEL_ID "
                "(the stack's BedrockModelId parameter)"
            )
        self._settings = settings
        self._model_id = settings.bedrock_model_id
        self._client = client
        self._sleep = sleep
        self._rng = rng

    @property
    def model(self) -> str:
        return self._model_id

    def _runtime(self) -> Any:
        if self._client is None:
            self._client = bedrock_runtime_client(self._settings, self._settings.timeout_seconds)
        return self._client

    def generate(self, prompt: Prompt, deadline: float | None = None) -> Generation:
        # The client's read timeout is fixed when it is built, so an attempt needs all of it.
        return with_retries(
            "Bedrock",
            self._settings,
            lambda _timeout: self._attempt(prompt),
            deadline=deadline,
            min_attempt_seconds=self._settings.timeout_seconds,
            sleep=self._sleep,
            rng=self._rng,
        )

    def _attempt(self, prompt: Prompt) -> Generation:
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectTimeoutError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        client = self._runtime()
        try:
            response = client.converse(
                modelId=self._model_id,
                system=[{"text": prompt.system}],
                messages=[{"role": "user", "content": _content(prompt)}],
                inferenceConfig={"maxTokens": prompt.max_tokens, "temperature": prompt.temperature},
            )
        except ClientError as exc:
            raise _translate(exc) from exc
        except (ReadTimeoutError, ConnectTimeoutError) as exc:
            raise Retryable("unavailable", f"Bedrock converse timed out ({type(exc).__name__})") from exc
        except NoCredentialsError as exc:
            raise ConfigurationError("Bedrock: no AWS credentials for the bedrock-runtime client") from exc
        except BotoCoreError as exc:  # connection refused / closed, DNS, a response botocore cannot parse
            raise Retryable("unavailable", f"Bedrock converse failed ({type(exc).__name__})") from exc
        try:
            return _parse(response, self._model_id)
        except ProviderResponseError as exc:
            raise Retryable("response", str(exc)) from exc


def _content(prompt: Prompt) -> list[dict[str, Any]]:
    """The user turn: a figure's image block first (Converse's ``image`` with raw bytes; boto3 encodes
    them), then the text."""
    if not prompt.image:
        return [{"text": prompt.user}]
    image = {"image": {"format": prompt.image_format or "png", "source": {"bytes": prompt.image}}}
    return [image, {"text": prompt.user}]


def _translate(exc: Any) -> Exception:
    error = exc.response.get("Error", {}) if isinstance(exc.response, dict) else {}
    code = str(error.get("Code") or "")
    status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    detail = " ".join(str(error.get("Message") or "").split())[:300] or "no detail"
    if code in RATE_LIMITED or status == 429:
        return Retryable("rate_limited", f"Bedrock throttled the request ({code or status})")
    if code in UNAVAILABLE or status in _RETRYABLE_STATUS:
        return Retryable("unavailable", f"Bedrock converse failed ({code or status})")
    hint = ""
    if code == "AccessDeniedException":
        hint = " (the role needs bedrock:InvokeModel on this model, and the account access to the model)"
    logger.error("Bedrock rejected the request", extra={"code": code, "status": status, "detail": detail})
    return ProviderRejected(f"Bedrock rejected the request ({code or status}): {detail}{hint}")


def _parse(response: Any, model_id: str) -> Generation:
    if not isinstance(response, dict):
        raise ProviderResponseError("Bedrock converse answer is not an object")
    message = (response.get("output") or {}).get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        raise ProviderResponseError("Bedrock converse answer has no output message")
    text = "".join(str(block["text"]) for block in content if isinstance(block, dict) and "text" in block)
    usage = response.get("usage") or {}
    input_tokens = usage.get("inputTokens")
    output_tokens = usage.get("outputTokens")
    if type(input_tokens) is not int or type(output_tokens) is not int:
        raise ProviderResponseError("Bedrock converse answer has no token usage")
    return Generation(
        text=text,
        model=model_id,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        stop_reason=response.get("stopReason"),
    )
