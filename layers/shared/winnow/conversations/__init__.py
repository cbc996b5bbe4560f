"""Conversations and long-term memory, per verified (tenant, user): follow-ups searched with what they
mean (``followup``), turns and memories kept by a ``ConversationStore`` (``store``), the two woven into
search and answer (``service``). This package's ``__init__`` imports nothing, so the handler can ask
``in_conversation`` on every request and a one-shot request loads none of the rest."""

from __future__ import annotations

from typing import Any


def new_conversation_id() -> str:
    """128 random bits: ids are never guessed, and every read is scoped to its owner anyway."""
    import secrets

    return secrets.token_hex(16)


def in_conversation(user: str | None, conversation_id: str | None) -> bool:
    """Whether a request goes through conversations: a caller with a user id (a new or continued
    conversation), or an id sent without one (answered 400). Anything else is one-shot: no store call."""
    return user is not None or conversation_id is not None


def owner_key(tenant: str, user: str) -> str:
    """One key per (tenant, user): a tenant name never holds '#' (``winnow.rules.TENANT_RULE``)."""
    return f"{tenant}#{user}"


def clip(text: Any, limit: int) -> str:
    return str(text)[:limit]
