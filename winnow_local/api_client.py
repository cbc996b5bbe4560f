"""The one HTTP client of the search API for this machine's commands: ``winnow mcp --api-url`` and the
CLI's ``search``, ``documents``, ``ask`` and ``chat --api-url``. It talks to a deployed API (API Gateway,
JWT authorizer: the bearer token names the tenant) or to a running ``winnow serve`` (no authorizer: the
``x-winnow-*`` headers stand in for the token's claims).

The token comes from an environment variable (``--token-env``, default ``WINNOW_API_TOKEN``) or from a
command (``--token-command``) that prints one; never from the command line, where other users of the
machine see it in the process list. A token from a command is fetched again when it has expired (its
``exp`` claim) or the API answers 401, so a long-running ``winnow mcp`` outlives Cognito's one-hour ID
tokens."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

DEFAULT_TOKEN_ENV = "WINNOW_API_TOKEN"  # noqa: S105 (the name of a variable, not a token)
TOKEN_COMMAND_TIMEOUT_SECONDS = 60
EXPIRY_MARGIN_SECONDS = 60  # fetch a new token this long before the old one expires


class ApiUnavailable(Exception):
    """The API could not be asked (unreachable, or no token could be had): one line for the user."""


def token_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT, read without verifying it (the API verifies; this only decides when to
    fetch a new one); None for a token that is not a JWT or has no ``exp``."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


class CommandToken:
    """A bearer token printed by a command (``aws cognito-idp initiate-auth ... --output text``), run
    again when the token has expired or was refused."""

    def __init__(self, command: str, clock: Callable[[], float] = time.time) -> None:
        self.command = command
        self._clock = clock
        self._token: str | None = None

    def current(self) -> str:
        if self._token is None or self._expired(self._token):
            self._token = self._run()
        return self._token

    def refresh(self) -> str:
        """A new token, after the API refused the last one."""
        self._token = self._run()
        return self._token

    def _expired(self, token: str) -> bool:
        exp = token_expiry(token)
        return exp is not None and exp - EXPIRY_MARGIN_SECONDS <= self._clock()

    def _run(self) -> str:
        try:
            # The user's own command on the user's own machine, as a shell line (pipes, quoting).
            done = subprocess.run(  # noqa: S602
                self.command,
                shell=True,
                capture_output=True,
                text=True,
                timeout=TOKEN_COMMAND_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ApiUnavailable(
                f"--token-command did not finish in {TOKEN_COMMAND_TIMEOUT_SECONDS} s"
            ) from exc
        token = done.stdout.strip()
        if done.returncode != 0 or not token or len(token.split()) != 1:
            why = (done.stderr.strip().splitlines() or [""])[-1][:200]
            got = f"exit {done.returncode}" if done.returncode else "no single token on stdout"
            raise ApiUnavailable(f"--token-command failed ({got}){': ' + why if why else ''}")
        return token


class HttpBackend:
    """A deployed API (API Gateway, JWT authorizer): the bearer token names the tenant. For a local
    ``winnow serve`` (no authorizer) the tenant header stands in for the token."""

    def __init__(
        self,
        api_url: str,
        token: str | CommandToken | None,
        tenant_header: str | None = None,
        user: str | None = None,
        groups: Sequence[str] = (),
    ) -> None:
        import httpx

        # httpx logs every request at INFO; the MCP SDK's logging set-up would show them on stderr.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        self.token = token
        self.headers = {"accept": "application/json", "user-agent": "winnow-cli"}
        self.headers |= identity_headers(tenant_header, user, groups)
        self.api_url = api_url.rstrip("/")
        self._client = httpx.Client(base_url=self.api_url, headers=self.headers, timeout=35.0)

    def send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One request, as an ``httpx.Response``; a refused token from a command is fetched again once."""
        import httpx

        try:
            response = self._client.request(
                method, path, json=body, params=dict(query or {}), headers=self._auth(headers, refresh=False)
            )
            if response.status_code == 401 and isinstance(self.token, CommandToken):
                response = self._client.request(
                    method,
                    path,
                    json=body,
                    params=dict(query or {}),
                    headers=self._auth(headers, refresh=True),
                )
        except httpx.HTTPError as exc:
            raise ApiUnavailable(f"cannot reach {self.api_url}: {type(exc).__name__}") from exc
        return response

    def _auth(self, headers: Mapping[str, str] | None, *, refresh: bool) -> dict[str, str]:
        sent = dict(headers or {})
        if isinstance(self.token, CommandToken):
            token: str | None = self.token.refresh() if refresh else self.token.current()
        else:
            token = self.token
        if token:
            sent["authorization"] = f"Bearer {token}"
        return sent

    def request(
        self, method: str, path: str, *, body: Any = None, query: Mapping[str, Any] | None = None
    ) -> tuple[int, Any]:
        response = self.send(method, path, body=body, query=query)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, response.text

    def why_nothing(self) -> str | None:
        return None  # a deployed API: its documents are not this machine's business


def identity_headers(tenant: str | None, user: str | None, groups: Sequence[str]) -> dict[str, str]:
    """What a local ``winnow serve`` reads in place of a token's claims (nothing without a tenant)."""
    if not tenant:
        return {}
    headers = {"x-winnow-tenant": tenant}
    if user:
        headers["x-winnow-user"] = user
    if groups:
        headers["x-winnow-groups"] = ",".join(groups)
    return headers


# --- the options -----------------------------------------------------------------------------------------
def add_api_arguments(parser: Any, *, what: str) -> None:
    """``--api-url``, ``--token-env`` and ``--token-command``: alike on every command that asks the API."""
    parser.add_argument(
        "--api-url",
        default=None,
        metavar="URL",
        help=f"{what} through this API instead of WINNOW_HOME: a running `winnow serve` "
        "(http://127.0.0.1:3000) or a deployed stack's ApiUrl",
    )
    parser.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_ENV,
        metavar="NAME",
        help=f"with --api-url: environment variable holding the bearer token (default {DEFAULT_TOKEN_ENV})",
    )
    parser.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="with --api-url: the bearer token itself (other users of this machine can read it in the "
        "process list, and it stays in shell history: prefer --token-env or --token-command)",
    )
    parser.add_argument(
        "--token-command",
        default=None,
        metavar="COMMAND",
        help="with --api-url: a shell command that prints a bearer token; run again when it expires or "
        "the API refuses it (e.g. an `aws cognito-idp initiate-auth ... --output text` line)",
    )


def check_api_url(api_url: str) -> str:
    from winnow_local.errors import CliError

    if not api_url.startswith(("https://", "http://127.", "http://localhost", "http://[::1]")):
        raise CliError(f"--api-url {api_url!r}: use https:// (plain http only to this machine)")
    return api_url


def token_for(args: Any, environ: Mapping[str, str] | None = None) -> str | CommandToken | None:
    """The token the options name: a command's (refreshed as needed), else the environment variable's."""
    if getattr(args, "token_command", None):
        return CommandToken(args.token_command)
    if getattr(args, "token", None):
        return str(args.token)
    env = os.environ if environ is None else environ
    return env.get(args.token_env) or None
