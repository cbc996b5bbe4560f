"""boto3 plumbing shared by the AWS adapters: lazily built clients and the translation of botocore errors
into ours. boto3 comes from the Lambda runtime and is imported only when an AWS adapter is first used."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from winnow.errors import (
    ConfigurationError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
    WinnowError,
)

THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "SlowDown",
        "RequestThrottled",
    }
)
TRANSIENT_CODES = frozenset(
    {
        "InternalServerError",
        "InternalError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "TransactionConflictException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
CONFIG_CODES = frozenset(
    {
        "ResourceNotFoundException",
        "NoSuchBucket",
        "AccessDenied",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidAccessKeyId",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "ExpiredToken",
        "ExpiredTokenException",
        "MissingAuthenticationTokenException",
        "AuthorizationHeaderMalformed",
        "PermanentRedirect",
    }
)


T = TypeVar("T")
_CLIENTS_LOCK = threading.Lock()


TTL_ATTRIBUTE = "ttl"  # the attribute DynamoDB expires items on, in every table of ours


def key_value_table(table_name: str) -> dict[str, Any]:
    """``CreateTable`` arguments of a table keyed by a string partition key ``pk`` and sort key ``sk``,
    on demand: the ledger's and the conversations' (tests build them from this; template.yaml declares
    the same keys). TTL on ``TTL_ATTRIBUTE`` is enabled separately (``UpdateTimeToLive``)."""
    return {
        "TableName": table_name,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }


def make_client(service: str, max_attempts: int = 5, signature_version: str | None = None) -> Any:
    """A boto3 client with botocore's standard retry mode (backoff with jitter on throttles and 5xx) and
    timeouts short enough for a Lambda. ``AWS_ENDPOINT_URL`` (tests: moto) is honoured by boto3 itself."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "max_attempts": max_attempts},
        connect_timeout=5,
        read_timeout=30,
        **({"signature_version": signature_version} if signature_version else {}),
    )
    with _CLIENTS_LOCK:  # boto3's default session is not thread-safe; the clients it makes are
        return boto3.client(service, config=config)


def error_code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code is not None else None
    return None


def http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(status) if status is not None else None
    return None


def translate(exc: Exception, what: str) -> WinnowError | None:
    """Our exception for a botocore error, or None when ``exc`` is not one (a bug: let it surface)."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        NoRegionError,
        ParamValidationError,
        PartialCredentialsError,
    )

    if isinstance(exc, ClientError):
        code = error_code(exc) or ""
        status = http_status(exc) or 0
        if code in THROTTLING_CODES or status == 429:
            return ProviderRateLimited(f"{what}: throttled ({code or status})")
        if code in TRANSIENT_CODES or status >= 500:
            return ProviderUnavailable(f"{what}: {code or 'HTTP'} {status}")
        if code in CONFIG_CODES or status in (401, 403):
            return ConfigurationError(f"{what}: {code or status}")
        return ProviderRejected(f"{what}: {code or status}")
    if isinstance(exc, ParamValidationError):
        return None  # our own bug, not the provider's: retrying cannot help, hiding it would mislead
    if isinstance(exc, NoCredentialsError | PartialCredentialsError | NoRegionError):
        return ConfigurationError(f"{what}: {type(exc).__name__}")
    if isinstance(exc, BotoCoreError | ConnectionError | TimeoutError):
        # EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError, ...
        return ProviderUnavailable(f"{what}: {type(exc).__name__}")
    return None


def call(what: str, fn: Callable[[], T]) -> T:
    """``fn()``, its botocore error raised as ours (``translate``); anything else surfaces as it is."""
    try:
        return fn()
    except Exception as exc:
        error = translate(exc, what)
        if error is None:
            raise
        raise error from exc


def call_conditional(what: str, fn: Callable[[], T]) -> T | None:
    """``call`` for a DynamoDB write with a ``ConditionExpression``: None when the condition failed (the
    write did not apply; boto3 answers a dict, never None, when it did)."""
    try:
        return fn()
    except Exception as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            return None
        error = translate(exc, what)
        if error is None:
            raise
        raise error from exc
