"""``--api-url`` on the commands that read the index: beside a running ``winnow serve`` (which holds
``WINNOW_HOME`` locked) and against a deployed API (a loopback stand-in for API Gateway's JWT authorizer in
front of the real search handler), with a token from a command that is run again when it is refused."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import LEAVE, Winnow
from tests.support.serve import serving, upload
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WinnowHTTPServer, Winnow]]:
    """A `winnow serve` on its home with one acme document (so it holds the folder), and the CLI on it."""
    home = tmp_path_factory.mktemp("api-url") / "home"
    with serving(home) as httpd:
        upload(httpd, "acme", "leave.md", LEAVE.encode())
        yield httpd, Winnow(home)


def url_of(httpd: WinnowHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def test_beside_a_running_server_the_cli_says_to_ask_it(server: tuple[WinnowHTTPServer, Winnow]) -> None:
    _, winnow = server
    run = winnow("search", "parental leave", "--tenant", "acme")
    assert run.code == 1
    assert "in use by another process" in run.stderr and "--api-url http://127.0.0.1:3000" in run.stderr


def test_search_documents_ask_and_chat_go_through_a_running_server(
    server: tuple[WinnowHTTPServer, Winnow],
) -> None:
    httpd, winnow = server
    api = ("--api-url", url_of(httpd), "--tenant", "acme")
    found = winnow("search", "How many weeks of parental leave do new parents get?", *api)
    assert found.code == 0, found.stderr
    assert "eighteen weeks" in found.stdout and "leave.md" in found.stdout
    listed = winnow("documents", *api)
    assert listed.code == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:2] == ["indexed", "leave.md"]
    other = winnow("documents", "--api-url", url_of(httpd), "--tenant", "globex")
    assert other.code == 0 and other.stdout == ""  # the tenant header reached the server
    asked = winnow("ask", "How long is parental leave?", *api)
    assert asked.code == 0, asked.stderr
    assert "eighteen weeks" in asked.stdout and "no answer model is configured" in asked.stderr
    chat = with_input(winnow, "How long is parental leave?\n", "chat", *api, "--top-k", "1")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.count("leave.md") == 1 and "1 passage for" in chat.stdout


def with_input(winnow: Winnow, lines: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "winnow_local", *args],
        input=lines,
        cwd=winnow.home.parent,
        env=winnow.env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_an_unreachable_api_is_one_line(tmp_path: Path) -> None:
    winnow = Winnow(tmp_path / "home")
    run = winnow("documents", "--api-url", "http://127.0.0.1:9")
    assert run.code == 1
    assert run.stderr.strip() == "winnow: cannot reach http://127.0.0.1:9: ConnectError"
    assert not (tmp_path / "home").exists()


def test_a_reader_that_stops_early_gets_no_traceback(server: tuple[WinnowHTTPServer, Winnow]) -> None:
    # `winnow documents --json | head -0`: the reader has gone before the first line is written
    httpd, winnow = server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "winnow_local",
            "documents",
            "--json",
            "--api-url",
            url_of(httpd),
            "--tenant",
            "acme",
        ],
        cwd=winnow.home.parent,
        env=winnow.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 141, stderr
    assert stderr == ""
