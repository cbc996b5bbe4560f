"""``--api-url``: the CLI's commands that read the index, asking an API over HTTP instead of opening
``WINNOW_HOME`` (which a running ``winnow serve`` holds locked), through the client ``winnow mcp`` uses."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from winnow_local.api_client import HttpBackend, check_api_url, identity_headers, token_for
from winnow_local.apigw import QueryValue
from winnow_local.runtime import ApiResponse, LocalRuntime


class ApiRuntime(Protocol):
    """What the reading commands need: the search API, here or over HTTP."""

    def call_api(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, QueryValue] | str | None = None,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        user: str | None = None,
        groups: Sequence[str] = (),
    ) -> ApiResponse: ...

    def has_documents(self, tenant: str) -> bool: ...


class RemoteRuntime:
    """``LocalRuntime``'s search API over HTTP. With a token, the token says who asks (a deployed API);
    without, the tenant, user and groups go as ``x-winnow-*`` headers (a local ``winnow serve``)."""

    def __init__(self, backend: HttpBackend, user: str | None = None, groups: Sequence[str] = ()) -> None:
        self.backend = backend
        self.user = user
        self.groups = tuple(groups)

    def call_api(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, QueryValue] | str | None = None,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        user: str | None = None,
        groups: Sequence[str] = (),
    ) -> ApiResponse:
        sent = dict(headers or {})
        if self.backend.token is None:
            sent |= identity_headers(tenant, user or self.user, groups or self.groups)
        params = dict(query) if isinstance(query, Mapping) else None
        if isinstance(query, str):
            path = f"{path}?{query}"
        response = self.backend.send(method, path, body=body, query=params, headers=sent)
        return ApiResponse(response.status_code, dict(response.headers), response.content)

    def has_documents(self, tenant: str) -> bool:
        return True  # another machine's documents: its "nothing relevant" stands


def runtime_for(args: argparse.Namespace, user: str | None, groups: Sequence[str]) -> ApiRuntime:
    """The handlers in this process on ``WINNOW_HOME``, or the API ``--api-url`` names."""
    if getattr(args, "api_url", None) is None:
        return LocalRuntime(user, groups)
    return RemoteRuntime(HttpBackend(check_api_url(args.api_url), token_for(args)), user, groups)
