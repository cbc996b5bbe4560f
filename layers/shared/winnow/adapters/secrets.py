"""API keys from Secrets Manager, cached for ``SecretsMaxAgeSeconds`` and re-read on demand.

Why not cache the key in the client: a warm Lambda lives for hours, so a key rotated with
``put-secret-value`` would never reach it. The providers ask ``SecretCache.get`` on every request
(a dictionary lookup while the value is fresh), the value is fetched again once it is older than the
max age, and a provider's 401 asks for ``refresh=True`` (a rotation that happened a second ago). The
clock is injected, so tests step time instead of sleeping."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from winnow.errors import ConfigurationError, TransientError

Fetch = Callable[[str], str]
# A provider's current key; ``refresh=True`` after a 401 asks for a fresh read (bypassing any cache).
KeySource = Callable[[bool], str]


def key_from_secret(text: str, name: str) -> str:
    """The API key in a secret's string: a JSON secret may hold it under ``api_key`` (or ``apiKey``,
    ``key``); a plain string secret is the key itself."""
    text = text.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return text
        for field in ("api_key", "apiKey", "key"):
            if isinstance(data, dict) and data.get(field):
                return str(data[field])
    if not text:
        raise ConfigurationError(f"secret {name} is empty: put the API key in it")
    return text


def _short_name(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


class SecretCache:
    """Secret values by ARN, each fetched again when older than ``max_age`` seconds or when asked."""

    def __init__(
        self,
        max_age: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        fetch: Fetch | None = None,
    ) -> None:
        self._max_age = max_age
        self._clock = clock
        self._fetch = fetch or _secrets_manager_fetch()
        self._lock = threading.Lock()
        self._values: dict[str, tuple[float, str]] = {}
        self.fetches = 0  # how many times Secrets Manager was asked (tests and logs read it)

    def get(self, arn: str, *, refresh: bool = False) -> str:
        now = self._clock()
        with self._lock:
            cached = self._values.get(arn)
            if cached is not None and not refresh and now - cached[0] < self._max_age:
                return cached[1]
        value = key_from_secret(self._fetch(arn), _short_name(arn))
        with self._lock:
            self._values[arn] = (now, value)
            self.fetches += 1
        return value

    def source(self, arn: str) -> KeySource:
        """A provider's key source: the cached value, or a fresh read when ``refresh`` is true."""
        return lambda refresh: self.get(arn, refresh=refresh)


def _secrets_manager_fetch() -> Fetch:
    client: list[Any] = []  # built on first use: boto3 is imported only when a secret is read

    def fetch(arn: str) -> str:
        from winnow.adapters._aws import make_client, translate

        try:
            if not client:
                client.append(make_client("secretsmanager"))
            answer = client[0].get_secret_value(SecretId=arn)
        except Exception as exc:  # botocore errors and missing credentials alike
            ours = translate(exc, f"Secrets Manager ({_short_name(arn)})")
            if isinstance(ours, TransientError):
                raise ours from exc  # throttled or down: a 503 with Retry-After, not a misconfiguration
            reason = type(exc).__name__ if ours is None else f"{type(exc).__name__}: {ours}"
            raise ConfigurationError(f"cannot read secret {_short_name(arn)}: {reason}") from exc
        value = answer.get("SecretString")
        if value is None:
            binary = answer.get("SecretBinary") or b""
            value = binary.decode() if isinstance(binary, bytes) else str(binary)
        return str(value)

    return fetch
