"""``winnow ask`` end to end: the command's ``main`` in this process on the embedded default (local ONNX
model, Qdrant local mode) answering through the real Ollama adapter and the loopback fake Ollama."""

from __future__ import annotations

import socket

import pytest

from tests.support.cli import LEAVE, InProcessWinnow, Winnow
from winnow_fakes.fake_ollama import FakeOllamaServer

pytestmark = pytest.mark.slow

QUESTION = "How many weeks of paid parental leave do new parents receive?"


@pytest.fixture(scope="module")
def winnow(tmp_path_factory: pytest.TempPathFactory) -> Winnow:
    root = tmp_path_factory.mktemp("ask")
    (root / "leave.md").write_text(LEAVE)
    runner = InProcessWinnow(root / "home")
    run = runner("ingest", str(root / "leave.md"), "--tenant", "acme")
    assert run.code == 0, run.stderr
    return runner


def test_ask_prints_the_answer_and_its_sources(winnow: Winnow, fake_ollama: FakeOllamaServer) -> None:
    run = winnow("ask", QUESTION, "--tenant", "acme", OLLAMA_HOST=fake_ollama.url)
    assert run.code == 0, run.stderr
    answer, _, rest = run.stdout.partition("\nSources:\n")
    assert "eighteen weeks" in answer
    marker = answer[answer.rindex("[") : answer.rindex("]") + 1]
    assert rest.startswith(f"{marker} Parental Leave -- leave.md, section")
    assert "llama3.2" in rest and "input" in rest
    assert len(fake_ollama.chat_requests()) == 1


def test_ask_json_prints_the_response_body(winnow: Winnow, fake_ollama: FakeOllamaServer) -> None:
    import json

    run = winnow(
        "ask",
        QUESTION,
        "--tenant",
        "acme",
        "--json",
        "--max-answer-tokens",
        "64",
        OLLAMA_HOST=fake_ollama.url,
    )
    assert run.code == 0, run.stderr
    body = json.loads(run.stdout)
    assert body["relevant"] is True
    (cited,) = body["citations"]
    by_rank = {r["rank"]: r for r in body["results"]}
    assert "eighteen weeks" in by_rank[cited["rank"]]["text"]
    assert fake_ollama.chat_requests()[0].body["options"]["num_predict"] == 64


def test_ask_with_nothing_relevant_says_so_without_a_model_call(
    winnow: Winnow, fake_ollama: FakeOllamaServer
) -> None:
    run = winnow("ask", "orbital period of neptune moons", "--tenant", "acme", OLLAMA_HOST=fake_ollama.url)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "No relevant passages found"
    assert fake_ollama.total_requests == 0


def test_ask_without_a_generator_shows_the_passages_then_how_to_enable_answers(winnow: Winnow) -> None:
    # Given no answer model configured (no OLLAMA_HOST)
    run = winnow("ask", QUESTION, "--tenant", "acme")
    # Then the passages the answer would come from are printed, and stderr says how to enable answers
    assert run.code == 0, run.stderr
    assert "eighteen weeks" in run.stdout and "leave.md" in run.stdout
    assert "no answer model is configured" in run.stderr and "OLLAMA_HOST" in run.stderr
    assert "Traceback" not in run.stderr


def test_ask_with_nothing_listening_names_the_answer_model_and_its_host(winnow: Winnow) -> None:
    # Given OLLAMA_HOST naming a port nothing listens on
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run = winnow(
        "ask",
        QUESTION,
        "--tenant",
        "acme",
        OLLAMA_HOST=f"127.0.0.1:{port}",
        WINNOW_ANSWER_MAX_ATTEMPTS="1",
    )
    # Then the passages are still shown, and the error names the answer model and where it was sought
    assert run.code == 1
    assert "eighteen weeks" in run.stdout
    assert "the answer model (Ollama model 'llama3.2' at" in run.stderr
    assert f"http://127.0.0.1:{port}" in run.stderr
    assert "search provider" not in run.stderr and "Traceback" not in run.stderr
