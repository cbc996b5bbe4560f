"""Conversations at the terminal: ``winnow search``/``ask --conversation ID`` (the command's ``main`` in this
process) and the ``winnow chat`` REPL (``python -m winnow_local`` in a subprocess, reading its stdin) on
the embedded default (local ONNX model), answering through the real Ollama adapter and the fake Ollama."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.integration.test_cli import ROUTER
from tests.support.cli import LEAVE, InProcessWinnow, Winnow
from winnow_fakes.fake_ollama import FakeOllamaServer

pytestmark = pytest.mark.slow
CONVERSATION = re.compile(r"\(conversation ([0-9a-f]{32}): continue with --conversation \1\)")


@pytest.fixture(scope="module")
def winnow(tmp_path_factory: pytest.TempPathFactory) -> Winnow:
    root = tmp_path_factory.mktemp("chat")
    (root / "leave.md").write_text(LEAVE)
    (root / "router.txt").write_text(ROUTER)
    runner = InProcessWinnow(root / "home")
    for name in ("leave.md", "router.txt"):
        run = runner("ingest", str(root / name), "--tenant", "acme")
        assert run.code == 0, run.stderr
    return runner


def test_search_prints_the_conversation_and_a_follow_up_continues_it(winnow: Winnow) -> None:
    first = winnow(
        "search", "How many weeks of parental leave do new parents get?", "--user", "ann", "--tenant", "acme"
    )
    assert first.code == 0, first.stderr
    found = CONVERSATION.search(first.stdout)
    assert found, first.stdout
    follow = winnow(
        "search", "can it be split?", "--user", "ann", "--tenant", "acme", "--conversation", found.group(1)
    )
    assert follow.code == 0, follow.stderr
    assert "(searched: can it be split? many weeks parental leave new parents get)" in follow.stdout
    assert "leave.md" in follow.stdout and f"--conversation {found.group(1)}" in follow.stdout
    # Another user, or no user at all, cannot continue it
    other = winnow(
        "search", "can it be split?", "--user", "bob", "--tenant", "acme", "--conversation", found.group(1)
    )
    assert other.code != 0 and "no such conversation" in other.stderr
    anonymous = winnow("search", "can it be split?", "--tenant", "acme", "--conversation", found.group(1))
    assert anonymous.code != 0 and "without conversation_id" in anonymous.stderr
    assert "Traceback" not in other.stderr + anonymous.stderr


def test_chat_keeps_one_conversation_across_lines(winnow: Winnow, fake_ollama: FakeOllamaServer) -> None:
    lines = "How many weeks of parental leave do new parents get?\n\ncan it be split?\nexit\nnever asked\n"
    done = subprocess.run(
        [sys.executable, "-m", "winnow_local", "chat", "--tenant", "acme", "--user", "ann"],
        input=lines,
        cwd=winnow.home.parent,
        env={**winnow.env, "OLLAMA_HOST": fake_ollama.url},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Sources:") == 2
    assert "eighteen weeks" in done.stdout
    # The second line was a follow-up: rewritten by the model (the fake's naive rewrite), then answered
    requests = fake_ollama.chat_requests()
    assert len(requests) == 3
    rewrite = requests[1].body["messages"][-1]["content"]
    assert "<follow_up>\ncan it be split?\n</follow_up>" in rewrite
    assert "(searched: can it be split? How many weeks of parental leave" in done.stdout
    assert CONVERSATION.search(done.stderr)
    assert "never asked" not in done.stdout


def test_nothing_found_offers_no_conversation_to_continue(winnow: Winnow) -> None:
    run = winnow("search", "quantum chromodynamics on a lattice", "--user", "ann", "--tenant", "acme")
    assert run.code == 0, run.stderr
    assert "No relevant passages" in run.stdout or "no relevant" in run.stdout.lower()
    assert "conversation" not in run.stdout
