"""The Qdrant API key asked for on every request, so a rotated key reaches a warm function.

Why not ``QdrantClient(api_key=...)``: the client keeps that key for the container's life, so a key put
into Secrets Manager would never be sent and a 401 could not be answered by reading the secret again.
This ``httpx.Auth`` (handed to the REST client through ``QdrantClient``'s pass-through keyword
arguments) asks the key source for each request (the secrets cache: a dictionary lookup while fresh,
read again after ``SecretsMaxAgeSeconds``) and sends it in Qdrant's ``api-key`` header. On a 401 it asks
for a fresh read once and, when the key changed, sends the same request again with it."""

from __future__ import annotations

from collections.abc import Generator

import httpx

from winnow.adapters.secrets import KeySource
from winnow.observability import logger

HEADER = "api-key"  # Qdrant also accepts ``Authorization: Bearer <key>``; api-key is its documented form


class QdrantKeyAuth(httpx.Auth):
    """The current key from ``source`` on every request; one fresh read and one resend after a 401."""

    requires_request_body = True  # the request may be sent twice: its body must be read, not streamed

    def __init__(self, source: KeySource) -> None:
        self._source = source

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        key = self._source(False)
        request.headers[HEADER] = key
        response = yield request
        if response.status_code != 401:
            return
        fresh = self._source(True)  # rotated since it was cached? one more try with the new key
        if fresh != key:
            logger.info("Qdrant refused the key: re-read the secret, trying the new key")
            request.headers[HEADER] = fresh
            yield request
