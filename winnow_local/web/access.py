"""Who ``winnow serve`` answers: its settings and the host-name rules behind the DNS-rebinding check."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServeSettings(BaseSettings):
    """Who ``winnow serve`` answers and how long it waits. Lists are comma-separated host names (no
    port) or origins (``scheme://host[:port]``); loopback is always allowed, ``*`` allows any."""

    model_config = SettingsConfigDict(env_prefix="WINNOW_SERVE_", extra="ignore", case_sensitive=False)

    allowed_hosts: str = Field(
        default="", description="Host names besides loopback this server answers to, e.g. for LAN use."
    )
    allowed_origins: str = Field(
        default="", description="Browser origins besides loopback ones that may call the API."
    )
    max_connections: int = Field(default=64, ge=1, le=4096)
    idle_timeout_seconds: float = Field(default=15.0, gt=0, le=3600)
    request_timeout_seconds: float = Field(default=60.0, gt=0, le=3600)

    @staticmethod
    def _split(text: str) -> frozenset[str]:
        return frozenset(item.strip().lower().rstrip("/") for item in text.split(",") if item.strip())

    @property
    def host_names(self) -> frozenset[str]:
        return self._split(self.allowed_hosts)

    @property
    def origins(self) -> frozenset[str]:
        return self._split(self.allowed_origins)


def is_loopback_name(name: str) -> bool:
    name = name.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(authority: str) -> str | None:
    """``example.com:3000`` → ``example.com``; ``[::1]:3000`` → ``::1``; None when malformed."""
    authority = authority.strip().lower()
    if not authority or any(ch in authority for ch in "/?#@ \t"):
        return None
    try:
        parsed = urlsplit(f"//{authority}")
        _ = parsed.port  # raises on a non-numeric or out-of-range port
    except ValueError:
        return None
    return parsed.hostname or None
