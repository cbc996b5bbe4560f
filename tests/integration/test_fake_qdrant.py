"""The strict Qdrant stand-in refuses what Qdrant Cloud's strict mode refuses, by the server's own rules
(``winnow_fakes.qdrant_strict``), and only that: each refusal here is checked against the message text
of qdrant/qdrant's ``CollectionError::strict_mode``, and each allowed case runs to an answer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from qdrant_client import QdrantClient
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http import models as qm
from qdrant_client.http.exceptions import UnexpectedResponse

from tests.support.qdrant import stand_in_client
from winnow_fakes.fake_qdrant import FakeQdrantServer

C = "docs"
JAN_1 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def server() -> Iterator[FakeQdrantServer]:
    with FakeQdrantServer() as s:
        yield s


@pytest.fixture
def client(server: FakeQdrantServer) -> Iterator[QdrantClient]:
    c = stand_in_client(server)
    c.create_collection(C, vectors_config={"v": qm.VectorParams(size=2, distance=qm.Distance.COSINE)})
    c.upsert(
        C,
        points=[
            qm.PointStruct(
                id=1,
                vector={"v": [1.0, 0.0]},
                payload={"name": "a", "n": 3, "x": 0.5, "ok": True, "at": "2026-01-02T00:00:00Z"},
            )
        ],
    )
    yield c
    c.close()


def where(condition: Any) -> qm.Filter:
    return qm.Filter(must=[condition])


def field(key: str, **kwargs: Any) -> qm.FieldCondition:
    return qm.FieldCondition(key=key, **kwargs)


def refusal(call: Any) -> str:
    with pytest.raises(UnexpectedResponse) as caught:
        call()
    assert caught.value.status_code == 400
    body = caught.value.structured()
    return str(body["status"]["error"])


def unindexed(key: str, types: str) -> str:
    return (
        f'Bad request: Index required but not found for "{key}" of one of the following types: '
        f"[{types}]. Help: Create an index for this key or use a different filter."
    )


CASES = [
    # (condition, the index types that serve it, as the server names them)
    (field("name", match=qm.MatchValue(value="a")), "keyword"),
    (field("name", match=qm.MatchValue(value="6f1c2f7e-1d9b-4c1e-9a55-0d4b7c7f8a11")), "keyword, uuid"),
    (field("name", match=qm.MatchAny(any=["a", "b"])), "keyword"),
    (field("n", match=qm.MatchValue(value=3)), "integer"),
    (field("n", match=qm.MatchAny(any=[3, 4])), "integer"),
    (field("n", range=qm.Range(gte=1)), "float, integer"),
    (field("ok", match=qm.MatchValue(value=True)), "bool"),
    (field("at", range=qm.DatetimeRange(gte=JAN_1)), "datetime"),
]


@pytest.mark.parametrize(("condition", "types"), CASES)
def test_every_read_on_an_unindexed_field_is_refused_with_the_servers_message(
    client: QdrantClient, condition: Any, types: str
) -> None:
    key = condition.key
    expected = unindexed(key, types)
    assert refusal(lambda: client.scroll(C, scroll_filter=where(condition))) == expected
    assert refusal(lambda: client.count(C, count_filter=where(condition))) == expected
    request = qm.QueryRequest(query=[1.0, 0.0], using="v", filter=where(condition))
    assert refusal(lambda: client.query_batch_points(C, requests=[request])) == expected
    # a filter nested in should / must_not, or in an IDF corpus, is checked all the same
    assert refusal(lambda: client.count(C, count_filter=qm.Filter(should=[where(condition)]))) == expected
    idf = qm.QueryRequest(
        query=[1.0, 0.0], using="v", params=qm.SearchParams(idf=qm.IdfCorpusParams(corpus=where(condition)))
    )
    assert refusal(lambda: client.query_batch_points(C, requests=[idf])) == expected


def test_a_filtered_update_or_delete_on_an_unindexed_field_is_refused(client: QdrantClient) -> None:
    selector = qm.FilterSelector(filter=where(field("name", match=qm.MatchValue(value="a"))))
    assert refusal(lambda: client.delete(C, points_selector=selector)) == unindexed("name", "keyword")
    assert refusal(lambda: client.set_payload(C, payload={"y": 1}, points=selector)) == unindexed(
        "name", "keyword"
    )
    assert client.count(C).count == 1  # nothing was deleted


SERVED = [
    ("keyword", field("name", match=qm.MatchValue(value="a"))),
    ("integer", field("n", match=qm.MatchValue(value=3))),
    ("integer", field("n", range=qm.Range(gte=1, lte=3))),
    ("float", field("x", range=qm.Range(gte=0.1))),
    ("bool", field("ok", match=qm.MatchValue(value=True))),
    ("datetime", field("at", range=qm.DatetimeRange(gte=JAN_1))),
]


@pytest.mark.parametrize(("schema", "condition"), SERVED)
def test_an_index_of_a_fitting_type_serves_the_condition(
    client: QdrantClient, schema: str, condition: Any
) -> None:
    client.create_payload_index(C, condition.key, field_schema=qm.PayloadSchemaType(schema))
    assert client.count(C, count_filter=where(condition)).count == 1
    points, _ = client.scroll(C, scroll_filter=where(condition))
    assert [p.id for p in points] == [1]


@pytest.mark.parametrize(
    ("schema", "condition", "types"),
    [
        ("keyword", field("n", match=qm.MatchValue(value=3)), "integer"),  # stored as a number
        ("float", field("n", match=qm.MatchValue(value=3)), "integer"),  # float serves ranges only
        ("keyword", field("n", range=qm.Range(gte=1)), "float, integer"),
        ("integer", field("at", range=qm.DatetimeRange(gte=JAN_1)), "datetime"),
        ("keyword", field("ok", match=qm.MatchValue(value=True)), "bool"),
    ],
)
def test_an_index_of_another_type_does_not_serve_it(
    client: QdrantClient, schema: str, condition: Any, types: str
) -> None:
    client.create_payload_index(C, condition.key, field_schema=qm.PayloadSchemaType(schema))
    assert refusal(lambda: client.count(C, count_filter=where(condition))) == unindexed(condition.key, types)


def test_conditions_that_need_no_index_are_allowed(client: QdrantClient) -> None:
    assert client.count(C, count_filter=where(qm.HasIdCondition(has_id=[1]))).count == 1
    assert client.count(C, count_filter=where(field("name", match=qm.MatchAny(any=[])))).count == 0


def test_is_empty_takes_an_index_of_any_type(client: QdrantClient) -> None:
    empty = where(qm.IsEmptyCondition(is_empty=qm.PayloadField(key="ok")))
    assert "Index required" in refusal(lambda: client.count(C, count_filter=empty))
    client.create_payload_index(C, "ok", field_schema=qm.PayloadSchemaType.BOOL)
    assert client.count(C, count_filter=empty).count == 0


def test_collections_get_cloud_strict_mode_and_keep_what_the_request_says(
    server: FakeQdrantServer, client: QdrantClient
) -> None:
    strict = client.get_collection(C).config.strict_mode_config
    assert strict is not None
    assert (strict.enabled, strict.unindexed_filtering_retrieve, strict.unindexed_filtering_update) == (
        True,
        False,
        False,
    )
    assert strict.max_payload_index_count == 100
    client.create_collection(
        "lenient",
        vectors_config={"v": qm.VectorParams(size=2, distance=qm.Distance.COSINE)},
        strict_mode_config=qm.StrictModeConfig(enabled=True, unindexed_filtering_retrieve=True),
        replication_factor=2,
    )
    assert server.strict_mode("lenient")["unindexed_filtering_retrieve"] is True
    assert server.strict_mode("lenient")["unindexed_filtering_update"] is False
    assert server.params("lenient") == {"replication_factor": 2, "write_consistency_factor": 1}
    assert client.get_collection("lenient").config.params.replication_factor == 2
    lenient = where(field("name", match=qm.MatchValue(value="a")))
    assert client.count("lenient", count_filter=lenient).count == 0


def test_at_most_max_payload_index_count_indexes(server: FakeQdrantServer, client: QdrantClient) -> None:
    client.update_collection(C, strict_mode_config=qm.StrictModeConfig(max_payload_index_count=3))
    for name in ("f1", "f2", "f3"):
        client.create_payload_index(C, name, field_schema=qm.PayloadSchemaType.KEYWORD)
    message = refusal(lambda: client.create_payload_index(C, "f4", field_schema=qm.PayloadSchemaType.KEYWORD))
    assert message == (
        "Bad request: Collection already has the maximum number of payload indices (3). "
        "Help: Please delete an existing index before creating a new one."
    )
    client.create_payload_index(C, "f1", field_schema=qm.PayloadSchemaType.INTEGER)  # a re-type is no new one
    assert server.indexes(C) == {"f1": "integer", "f2": "keyword", "f3": "keyword"}


def test_it_answers_429_with_retry_after_when_asked(server: FakeQdrantServer, client: QdrantClient) -> None:
    server.throttle(times=2, retry_after=7)
    for _ in range(2):
        with pytest.raises(ResourceExhaustedResponse) as caught:
            client.count(C)
        assert caught.value.retry_after_s == 7
    assert client.count(C).count == 1
    server.throttle(times=1, retry_after=None)
    with pytest.raises(UnexpectedResponse) as plain:
        client.count(C)
    assert plain.value.status_code == 429


def test_it_reports_its_version_and_checks_the_api_key() -> None:
    with FakeQdrantServer(api_key="secret", version="1.19.2") as server:
        good = stand_in_client(server, "secret")
        assert good.info().version == "1.19.2"
        bad = stand_in_client(server, "wrong")
        with pytest.raises(UnexpectedResponse) as caught:
            bad.get_collections()
        assert caught.value.status_code == 401
        good.close()
        bad.close()


def test_it_takes_the_key_as_a_bearer_token_and_refuses_a_rotated_out_key() -> None:
    with FakeQdrantServer(api_key="k1") as server:

        def status(headers: dict[str, str]) -> int:
            return httpx.get(f"{server.origin}/collections", headers=headers).status_code

        # As Qdrant reads it: the api-key header, else an Authorization bearer token
        assert status({"api-key": "k1"}) == 200
        assert status({"Authorization": "Bearer k1"}) == 200
        assert status({"Authorization": "k1"}) == 401
        assert status({"api-key": "k2", "Authorization": "Bearer k1"}) == 401  # the header comes first
        # A new key issued with the old one kept, then the old one revoked
        assert server.rotate_key("k2", revoke_old=False) == "k1"
        assert (status({"api-key": "k1"}), status({"api-key": "k2"})) == (200, 200)
        server.revoke("k1")
        assert (status({"api-key": "k1"}), status({"Authorization": "Bearer k2"})) == (401, 200)
        # Rotated with the old key revoked at once
        server.rotate_key("k3")
        assert (status({"api-key": "k2"}), status({"api-key": "k3"})) == (401, 200)
        assert server.keys[-2:] == [("k2", 401), ("k3", 0)]


def test_a_missing_collection_is_404_and_an_unknown_body_field_400(
    server: FakeQdrantServer, client: QdrantClient
) -> None:
    with pytest.raises(UnexpectedResponse) as caught:
        client.count("nope")
    assert caught.value.status_code == 404
    assert client.collection_exists("nope") is False
    bad = httpx.post(f"{server.origin}/collections/{C}/points/count", json={"filter": None, "bogus": 1})
    assert bad.status_code == 400
    assert bad.json()["status"]["error"].startswith("Format error in JSON body")
