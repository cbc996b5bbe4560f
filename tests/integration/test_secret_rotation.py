"""Secrets rotate: a Voyage or Qdrant key put into Secrets Manager (moto over HTTP) reaches a warm container
within ``SecretsMaxAgeSeconds``, and a 401 re-reads the secret at once. Time is a stepped clock, never a
sleep; Qdrant is the strict stand-in, which refuses a rotated-out key as Qdrant Cloud does."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from tests.support.stack import voyage_settings
from winnow.adapters.secrets import SecretCache, key_from_secret
from winnow.errors import ConfigurationError, ProviderRejected
from winnow.factory import Container, Settings
from winnow.settings import ProviderSettings, QdrantSettings
from winnow_fakes.fake_qdrant import FakeQdrantServer
from winnow_fakes.fake_voyage import FakeVoyageServer, embed_text

MAX_AGE = 300


class SteppedClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def secret(aws_client: Any, fake_voyage: FakeVoyageServer) -> tuple[Any, str]:
    client = aws_client("secretsmanager")
    name = f"winnow-voyage-{uuid.uuid4().hex[:12]}"  # one moto server per session: unique names
    arn = client.create_secret(Name=name, SecretString=fake_voyage.api_key)["ARN"]
    return client, arn


def warm_container(fake: FakeVoyageServer, arn: str, clock: SteppedClock) -> Container:
    settings = Settings(
        voyage=voyage_settings(fake, api_key=None, api_key_secret_arn=arn, output_dimension=1024),
        providers=ProviderSettings(embedder="voyage", reranker="voyage", secrets_max_age_seconds=MAX_AGE),
    )
    container = Container(settings)
    container.secrets = SecretCache(MAX_AGE, clock=clock)
    return container


def test_a_put_secret_value_reaches_a_warm_container_after_the_max_age(
    fake_voyage: FakeVoyageServer, secret: tuple[Any, str]
) -> None:
    client, arn = secret
    clock = SteppedClock()
    container = warm_container(fake_voyage, arn, clock)
    old = fake_voyage.api_key
    assert container.embedder.embed(["first"], "query") == [embed_text("first", 1024)]
    # Given a new key issued (the old one still valid) and put into the secret
    fake_voyage.rotate_key("pa-second-key", revoke_old=False)
    client.put_secret_value(SecretId=arn, SecretString='{"api_key": "pa-second-key"}')
    # When requests come within the max age, then after it
    clock.now += MAX_AGE - 1
    container.embedder.embed(["within"], "query")
    container.reranker.rerank("within", ["a doc"])  # type: ignore[union-attr]
    clock.now += 2
    container.embedder.embed(["after"], "query")
    container.reranker.rerank("after", ["a doc"])  # type: ignore[union-attr]
    # Then the cached key was sent until the max age passed, the new one from then on, by both
    keys = [r.api_key for r in fake_voyage.requests]
    assert keys == [old, old, old, "pa-second-key", "pa-second-key"]
    assert container.secrets.fetches == 2
    # And the old key can be revoked without a single failure
    fake_voyage.revoke(old)
    container.embedder.embed(["later"], "query")
    assert {r.status for r in fake_voyage.requests} == {200}


def test_a_401_re_reads_the_secret_at_once(fake_voyage: FakeVoyageServer, secret: tuple[Any, str]) -> None:
    client, arn = secret
    clock = SteppedClock()
    container = warm_container(fake_voyage, arn, clock)
    container.embedder.embed(["first"], "query")
    # Given the key rotated and revoked at Voyage, and the secret updated, long before the max age
    old = fake_voyage.rotate_key("pa-rotated-now")
    client.put_secret_value(SecretId=arn, SecretString="pa-rotated-now")
    clock.now += 1
    # When the next request is made
    vectors = container.embedder.embed(["second"], "query")
    # Then one 401, one re-read, and the same request answered with the new key
    assert vectors == [embed_text("second", 1024)]
    assert [(r.status, r.api_key) for r in fake_voyage.requests] == [
        (200, old),
        (401, old),
        (200, "pa-rotated-now"),
    ]
    assert container.secrets.fetches == 2


def test_a_401_without_a_new_secret_fails_once_re_read(
    fake_voyage: FakeVoyageServer, secret: tuple[Any, str]
) -> None:
    _client, arn = secret
    container = warm_container(fake_voyage, arn, SteppedClock())
    container.embedder.embed(["first"], "query")
    fake_voyage.rotate_key("pa-nobody-told-the-secret")
    with pytest.raises(ProviderRejected, match="HTTP 401"):
        container.embedder.embed(["second"], "query")
    assert container.secrets.fetches == 2  # read at start, re-read once on the 401, no more


def test_a_missing_secret_names_it_and_a_json_secret_gives_its_key(aws_endpoint: str) -> None:
    cache = SecretCache(MAX_AGE)
    with pytest.raises(ConfigurationError, match="cannot read secret nope-AbCdEf"):
        cache.get("arn:aws:secretsmanager:us-east-1:000000000000:secret:nope-AbCdEf")
    assert key_from_secret('{"api_key": "k1"}', "n") == "k1"
    assert key_from_secret("  k2 \n", "n") == "k2"
    with pytest.raises(ConfigurationError, match="empty"):
        key_from_secret("  ", "n")


def test_a_plain_key_setting_is_used_as_it_is(fake_voyage: FakeVoyageServer) -> None:
    settings = Settings(
        voyage=voyage_settings(fake_voyage, api_key=SecretStr(fake_voyage.api_key)),
        providers=ProviderSettings(embedder="voyage"),
    )
    Container(settings).embedder.embed(["x"], "query")
    assert [r.api_key for r in fake_voyage.requests] == [fake_voyage.api_key]


# --- Qdrant ---------------------------------------------------------------------------------------------
@pytest.fixture
def fake_qdrant() -> Iterator[FakeQdrantServer]:
    with FakeQdrantServer(api_key="qk-first") as server:
        yield server


@pytest.fixture
def qdrant_secret(aws_client: Any) -> tuple[Any, str]:
    client = aws_client("secretsmanager")
    name = f"winnow-qdrant-{uuid.uuid4().hex[:12]}"
    arn = client.create_secret(Name=name, SecretString='{"api_key": "qk-first"}')["ARN"]
    return client, arn


def warm_qdrant_container(
    qdrant: FakeQdrantServer, voyage: FakeVoyageServer, arn: str, clock: SteppedClock
) -> Container:
    """A container whose Qdrant key comes from the secret (Voyage's is a plain setting here)."""
    settings = Settings(
        voyage=voyage_settings(voyage),
        qdrant=QdrantSettings(url=qdrant.origin, api_key_secret_arn=arn, timeout_seconds=10),
        providers=ProviderSettings(embedder="voyage", reranker="none", secrets_max_age_seconds=MAX_AGE),
    )
    container = Container(settings)
    container.secrets = SecretCache(MAX_AGE, clock=clock)
    return container


def test_a_rotated_qdrant_key_reaches_a_warm_container_after_the_max_age(
    fake_qdrant: FakeQdrantServer, fake_voyage: FakeVoyageServer, qdrant_secret: tuple[Any, str]
) -> None:
    client, arn = qdrant_secret
    clock = SteppedClock()
    container = warm_qdrant_container(fake_qdrant, fake_voyage, arn, clock)
    store = container.store  # built and checked with the first key
    # Given a new key issued (the old one still valid) and put into the secret
    fake_qdrant.rotate_key("qk-second", revoke_old=False)
    client.put_secret_value(SecretId=arn, SecretString="qk-second")
    fake_qdrant.keys.clear()
    # When the store is used within the max age, then after it
    clock.now += MAX_AGE - 1
    store.point_ids("t1", "a.txt")
    clock.now += 2
    store.point_ids("t1", "a.txt")
    # Then the cached key was sent until the max age passed, the new one from then on
    assert fake_qdrant.keys == [("qk-first", 0), ("qk-second", 0)]
    assert container.secrets.fetches == 2
    # And the old key can be revoked without a single refusal
    fake_qdrant.revoke("qk-first")
    store.point_ids("t1", "a.txt")
    assert fake_qdrant.keys[-1] == ("qk-second", 0)


def test_a_qdrant_401_re_reads_the_secret_at_once(
    fake_qdrant: FakeQdrantServer, fake_voyage: FakeVoyageServer, qdrant_secret: tuple[Any, str]
) -> None:
    client, arn = qdrant_secret
    clock = SteppedClock()
    container = warm_qdrant_container(fake_qdrant, fake_voyage, arn, clock)
    store = container.store
    # Given the key rotated and revoked at Qdrant, and the secret updated, long before the max age
    fake_qdrant.rotate_key("qk-rotated-now")
    client.put_secret_value(SecretId=arn, SecretString="qk-rotated-now")
    clock.now += 1
    fake_qdrant.keys.clear()
    # When the next call is made (a write: its body is sent twice)
    assert store.delete_document("t1", "a.txt") == 0
    store.point_ids("t1", "a.txt")
    # Then one 401, one re-read, the same request answered with the new key, which stays
    assert fake_qdrant.keys[:2] == [("qk-first", 401), ("qk-rotated-now", 0)]
    assert {key for key, _ in fake_qdrant.keys[2:]} == {"qk-rotated-now"}
    assert container.secrets.fetches == 2


def test_a_qdrant_401_without_a_new_secret_fails_once_re_read(
    fake_qdrant: FakeQdrantServer, fake_voyage: FakeVoyageServer, qdrant_secret: tuple[Any, str]
) -> None:
    _client, arn = qdrant_secret
    container = warm_qdrant_container(fake_qdrant, fake_voyage, arn, SteppedClock())
    store = container.store
    fake_qdrant.rotate_key("qk-nobody-told-the-secret")
    fake_qdrant.keys.clear()
    with pytest.raises(ConfigurationError, match="HTTP 401"):
        store.point_ids("t1", "a.txt")
    assert fake_qdrant.keys == [("qk-first", 401)]  # not sent again with the same key
    assert container.secrets.fetches == 2  # read at start, re-read once on the 401, no more
