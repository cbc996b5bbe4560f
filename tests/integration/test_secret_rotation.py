"""Secrets rotate: a Voyage key put into Secrets Manager (moto over HTTP) reaches a warm container within
``SecretsMaxAgeSeconds``, and a 401 re-reads the secret at once. Time is a stepped clock, never a sleep."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import SecretStr

from tests.support.stack import voyage_settings
from winnow.adapters.secrets import SecretCache, key_from_secret
from winnow.errors import ConfigurationError, ProviderRejected
from winnow.factory import Container, Settings
from winnow.settings import ProviderSettings
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
