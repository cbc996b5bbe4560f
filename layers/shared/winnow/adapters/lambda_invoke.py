"""Asynchronous self-invocation for the reconcile function: a large bucket continues in a fresh
invocation (``InvocationType=Event``) instead of racing the 15-minute limit. Lambda queues the event and
retries it twice on failure, so a page that fails is retried from the same continuation token."""

from __future__ import annotations

import json
from typing import Any

from winnow.adapters import _aws
from winnow.ports import FunctionInvoker


class LambdaAsyncInvoker(FunctionInvoker):
    def __init__(self, client: Any = None) -> None:
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _aws.make_client("lambda")
        return self._client

    def invoke(self, function: str, payload: dict[str, Any]) -> None:
        """Queue an invocation of ``function`` (name or ARN) with ``payload``; returns once Lambda
        accepted it. Raises ``TransientError``/``ConfigurationError`` subclasses on failure."""
        body = json.dumps(payload).encode("utf-8")
        try:
            response = self.client.invoke(FunctionName=function, InvocationType="Event", Payload=body)
        except Exception as exc:
            error = _aws.translate(exc, "lambda invoke")
            if error is None:
                raise
            raise error from exc
        status = int(response.get("StatusCode", 0))
        if status != 202:
            from winnow.errors import ProviderUnavailable

            raise ProviderUnavailable(f"lambda invoke: unexpected status {status}")
