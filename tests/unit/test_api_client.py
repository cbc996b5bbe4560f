"""The API client's token from a command: fetched once, again when its ``exp`` is near or it was refused,
and a failing command is one line."""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

import pytest

from tests.support.tokens import counting_token_command
from winnow_local.api_client import ApiUnavailable, CommandToken, add_api_arguments, token_expiry, token_for


def jwt(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


def test_the_expiry_is_read_from_a_jwt_and_nothing_else() -> None:
    assert token_expiry(jwt({"exp": 1_700_000_000, "custom:tenant": "acme"})) == 1_700_000_000
    assert token_expiry(jwt({"sub": "x"})) is None
    assert token_expiry("an-opaque-token") is None
    assert token_expiry("a.b.c") is None


def test_a_command_token_is_kept_until_it_nears_expiry(tmp_path: Path) -> None:
    script = tmp_path / "print_a_jwt.py"
    runs = tmp_path / "runs"
    script.write_text(f"open({str(runs)!r}, 'a').write('.')\nprint({jwt({'exp': 1000})!r})\n")
    now = [0.0]
    token = CommandToken(f"{sys.executable} {script}", clock=lambda: now[0])
    token.current()
    now[0] = 900.0  # more than a minute left: kept
    token.current()
    assert runs.read_text() == "."
    now[0] = 950.0  # within the margin: fetched again
    token.current()
    assert runs.read_text() == ".."


def test_an_opaque_token_is_fetched_again_only_when_refused(tmp_path: Path) -> None:
    token = CommandToken(counting_token_command(tmp_path))
    assert token.current() == "token-1"
    assert token.current() == "token-1"
    assert token.refresh() == "token-2"
    assert token.current() == "token-2"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("echo no such user >&2; exit 3", "--token-command failed (exit 3): no such user"),
        ("true", "--token-command failed (no single token on stdout)"),
        ("echo two words", "--token-command failed (no single token on stdout)"),
    ],
)
def test_a_failing_command_is_one_line(command: str, message: str) -> None:
    with pytest.raises(ApiUnavailable) as raised:
        CommandToken(command).current()
    assert str(raised.value) == message


def test_the_token_option_order_is_command_then_flag_then_variable() -> None:
    parser = argparse.ArgumentParser()
    add_api_arguments(parser, what="ask")
    env = {"WINNOW_API_TOKEN": "from-env"}
    assert token_for(parser.parse_args([]), env) == "from-env"
    assert token_for(parser.parse_args(["--token", "from-flag"]), env) == "from-flag"
    chosen = token_for(parser.parse_args(["--token", "t", "--token-command", "echo c"]), env)
    assert isinstance(chosen, CommandToken) and chosen.command == "echo c"
