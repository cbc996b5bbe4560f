"""The one Qdrant error translator and the caller: real errors of each engine (an HTTP answer of Qdrant
Cloud, qdrant-client's local mode, a Qdrant Edge shard) become Winnow's permanent or transient errors;
transient ones are retried a bounded number of times by the one retry policy (``_retry``), the others
never."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from winnow.adapters.qdrant_errors import CollectionNotFound, QdrantCaller, translate
from winnow.errors import (
    ConfigurationError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
    QueryRejected,
    TransientError,
)


def http_error(
    status: int, detail: str = "boom", headers: dict[str, str] | None = None
) -> UnexpectedResponse:
    body = json.dumps({"status": {"error": detail}}).encode()
    return UnexpectedResponse(status, "reason", body, httpx.Headers(headers or {}))


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (500, ProviderUnavailable),
        (503, ProviderUnavailable),
        (401, ConfigurationError),
        (403, ConfigurationError),
        (404, CollectionNotFound),
        (400, QueryRejected),
        (422, QueryRejected),
    ],
)
def test_http_answers_of_a_qdrant_server(status: int, expected: type[Exception]) -> None:
    # Given Qdrant Cloud answering with this status, When it is translated for a search
    error = translate(http_error(status, "Bad request: wrong filter"), "search", QueryRejected)
    # Then it is the error of its family, and a rejection carries the server's detail
    assert type(error) is expected
    if expected is QueryRejected:
        assert "wrong filter" in str(error)


def test_a_missing_collection_is_named() -> None:
    error = translate(http_error(404, "Not found: Collection `x` doesn't exist!"), "count", collection="t_x")
    assert isinstance(error, CollectionNotFound) and "collection t_x not found" in str(error)


def test_a_throttled_call_keeps_the_servers_retry_after() -> None:
    error = translate(http_error(429, headers={"Retry-After": "3"}), "upsert")
    assert isinstance(error, ProviderRateLimited) and error.retry_after == 3.0


def test_a_retry_after_date_is_read_by_the_one_parser() -> None:
    # Given a 429 whose Retry-After is an HTTP date about 30 s ahead (RFC 9110 allows either form)
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    error = translate(http_error(429, headers={"Retry-After": when}), "upsert")
    # Then it is honoured as seconds, like Voyage's and Ollama's
    assert isinstance(error, ProviderRateLimited) and error.retry_after is not None
    assert 20 <= error.retry_after <= 31


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
        ConnectionRefusedError("refused"),
        TimeoutError(),
        ResponseHandlingException(httpx.ConnectError("refused")),
    ],
)
def test_transport_failures_are_transient(exc: Exception) -> None:
    assert isinstance(translate(exc, "scroll"), ProviderUnavailable)


def test_local_mode_bad_requests_are_rejections() -> None:
    # Given qdrant-client's local mode asked about a collection it does not have
    client = QdrantClient(":memory:")
    with pytest.raises(ValueError, match="not found") as raised:
        client.get_collection("missing")
    # Then its ValueError is a rejection of the request (the store asks the engine whether it was the
    # collection that is missing), never a transient failure
    assert type(translate(raised.value, "read collection")) is ProviderRejected
    client.close()


def test_edge_engine_failures_are_transient(tmp_path: Path) -> None:
    import qdrant_edge as E

    # Given a Qdrant Edge shard that cannot be opened (its files are gone)
    with pytest.raises(Exception, match="cannot load edge shard") as raised:
        E.EdgeShard.load(str(tmp_path / "gone"))
    # Then Edge's bare Exception is the engine failing, not the caller's input
    error = translate(raised.value, "open collection")
    assert isinstance(error, ProviderUnavailable) and "Qdrant Edge" in str(error)


def test_bugs_are_not_translated() -> None:
    assert translate(TypeError("unexpected keyword"), "search") is None
    assert translate(KeyError("dense"), "search") is None


def failing(errors: list[Exception]) -> tuple[list[int], object]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "done"

    return calls, call


def test_the_caller_retries_transient_errors_within_its_attempts() -> None:
    # Given two connection failures, then success, and three attempts
    sleeps: list[float] = []
    calls, call = failing([ConnectionRefusedError(), ConnectionRefusedError()])
    # When the caller runs it, Then it succeeds on the third attempt after two pauses
    assert QdrantCaller(3, sleeps.append)("upsert", call) == "done"  # type: ignore[arg-type]
    assert len(calls) == 3 and len(sleeps) == 2 and all(0 <= s <= 2.0 for s in sleeps)


def test_the_caller_gives_up_after_its_attempts_and_honours_retry_after() -> None:
    sleeps: list[float] = []
    calls, call = failing([http_error(429, headers={"Retry-After": "60"})] * 5)
    with pytest.raises(ProviderRateLimited):
        QdrantCaller(3, sleeps.append)("search", call)  # type: ignore[arg-type]
    assert len(calls) == 3 and sleeps == [10.0, 10.0]  # Retry-After, capped


def test_the_caller_never_retries_a_rejection_or_when_told_not_to() -> None:
    sleeps: list[float] = []
    calls, call = failing([http_error(400)])
    with pytest.raises(ProviderRejected):
        QdrantCaller(3, sleeps.append)("upsert", call)  # type: ignore[arg-type]
    assert len(calls) == 1
    calls, call = failing([ConnectionRefusedError()])
    with pytest.raises(TransientError):
        QdrantCaller(3, sleeps.append)("create collection", call, retry=False)  # type: ignore[arg-type]
    assert len(calls) == 1 and sleeps == []
