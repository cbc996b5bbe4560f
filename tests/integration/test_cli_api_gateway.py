"""``--api-url`` against a deployed API: a loopback stand-in for API Gateway's JWT authorizer in front of
the real search handler, with a token from the environment or from a command that is run again when it
is refused. Apart from test_cli_api_url.py, whose module-scoped ``winnow serve`` must not share a module
with the ``stack`` fixture (which rebuilds the process's container under the running server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_mcp import HANDBOOK, FakeApiGateway
from tests.support.cli import Winnow
from tests.support.stack import EmbeddedStack
from tests.support.tokens import counting_token_command

pytestmark = pytest.mark.slow


@pytest.fixture
def gateway(stack: EmbeddedStack) -> Iterator[FakeApiGateway]:
    stack.upload("acme/handbook.md", HANDBOOK.encode())
    api = FakeApiGateway(stack, {"token-2": "acme"})  # token-1 has expired
    try:
        yield api
    finally:
        api.close()


def test_a_refused_token_from_the_token_command_is_fetched_again(
    gateway: FakeApiGateway, tmp_path: Path
) -> None:
    (tmp_path / "cli").mkdir()
    winnow = Winnow(tmp_path / "cli" / "home")
    run = winnow(
        "search",
        "how many days of paid holiday",
        "--api-url",
        gateway.url,
        "--token-command",
        counting_token_command(tmp_path),
    )
    assert run.code == 0, run.stderr
    assert "twenty-eight days" in run.stdout
    assert [auth for _, _, auth in gateway.seen] == ["Bearer token-1", "Bearer token-2"]
    assert not (tmp_path / "cli" / "home").exists()  # nothing local was opened


def test_a_token_from_the_environment_is_sent_and_a_refusal_says_so(
    gateway: FakeApiGateway, tmp_path: Path
) -> None:
    winnow = Winnow(tmp_path / "home")
    ok = winnow("documents", "--api-url", gateway.url, WINNOW_API_TOKEN="token-2")
    assert ok.code == 0, ok.stderr
    assert "handbook.md" in ok.stdout
    refused = winnow("documents", "--api-url", gateway.url, WINNOW_API_TOKEN="token-1")
    assert refused.code == 1
    assert "HTTP 401: Unauthorized" in refused.stderr and "expired" in refused.stderr
