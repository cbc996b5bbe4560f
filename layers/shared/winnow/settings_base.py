"""How every settings class reads the environment: one prefix per concern, unknown variables ignored,
names case-insensitive (``winnow.settings``, ``winnow.settings_answers``)."""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict


def env_config(prefix: str) -> SettingsConfigDict:
    return SettingsConfigDict(env_prefix=prefix, extra="ignore", case_sensitive=False)
