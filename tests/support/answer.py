"""Fixtures for ``POST /answer``: loopback fake Bedrock and Ollama servers (one each per session, reset
before every test) and embedded stacks whose generator is our real adapter pointed at one of them.

Import the fixtures a test module uses from here (``from tests.support.answer import ...``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import EmbeddedStack
from winnow.settings import AnswerSettings
from winnow_fakes.fake_bedrock import DEFAULT_MODEL_ID, FakeBedrockServer
from winnow_fakes.fake_ollama import DEFAULT_MODEL, FakeOllamaServer
from winnow_fakes.fake_voyage import FakeVoyageServer


def bedrock_settings(fake: FakeBedrockServer, **overrides: Any) -> AnswerSettings:
    values: dict[str, Any] = {
        "generator": "bedrock",
        "bedrock_model_id": DEFAULT_MODEL_ID,
        "bedrock_region": "us-east-1",
        "bedrock_endpoint_url": fake.url,
        "timeout_seconds": 2.0,
        "max_attempts": 3,
        "backoff_base_seconds": 0.0,
        "backoff_max_seconds": 0.0,
    }
    values.update(overrides)
    return AnswerSettings(**values)


def ollama_settings(fake: FakeOllamaServer, **overrides: Any) -> AnswerSettings:
    values: dict[str, Any] = {
        "generator": "auto",
        "ollama_host": fake.url,
        "ollama_model": DEFAULT_MODEL,
        "timeout_seconds": 2.0,
        "max_attempts": 3,
        "backoff_base_seconds": 0.0,
        "backoff_max_seconds": 0.0,
    }
    values.update(overrides)
    return AnswerSettings(**values)


@pytest.fixture(scope="session")
def fake_bedrock_server() -> Iterator[FakeBedrockServer]:
    with FakeBedrockServer() as server:
        yield server


@pytest.fixture
def fake_bedrock(fake_bedrock_server: FakeBedrockServer) -> Iterator[FakeBedrockServer]:
    fake_bedrock_server.reset()
    yield fake_bedrock_server
    fake_bedrock_server.reset()


@pytest.fixture(scope="session")
def fake_ollama_server() -> Iterator[FakeOllamaServer]:
    with FakeOllamaServer() as server:
        yield server


@pytest.fixture
def fake_ollama(fake_ollama_server: FakeOllamaServer) -> Iterator[FakeOllamaServer]:
    fake_ollama_server.reset()
    yield fake_ollama_server
    fake_ollama_server.reset()


def stack_with(home: Path, fake_voyage: FakeVoyageServer, answer: AnswerSettings) -> EmbeddedStack:
    stack = EmbeddedStack(home, fake_voyage)
    stack.container.settings.answer = answer
    return stack


@pytest.fixture
def bedrock_stack(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fake_bedrock: FakeBedrockServer
) -> Iterator[EmbeddedStack]:
    """The embedded stack (fake Voyage) answering through the real Bedrock adapter and the fake runtime."""
    s = stack_with(tmp_path / "home", fake_voyage, bedrock_settings(fake_bedrock))
    yield s
    s.close()


@pytest.fixture
def ollama_stack(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fake_ollama: FakeOllamaServer
) -> Iterator[EmbeddedStack]:
    s = stack_with(tmp_path / "home", fake_voyage, ollama_settings(fake_ollama))
    yield s
    s.close()
