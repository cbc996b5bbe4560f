"""Conversations and long-term memory, per verified (tenant, user): follow-ups searched with what they
mean (``followup``), turns and memories kept by a ``ConversationStore`` (``store``), the two woven into
search and answer (``service``). The handler asks ``winnow.rules.in_conversation`` of every request, so
cold start and one-shot requests load none of this package."""

from __future__ import annotations


def new_conversation_id() -> str:
    """128 random bits: ids are never guessed, and every read is scoped to its owner anyway."""
    import secrets

    return secrets.token_hex(16)


def owner_key(tenant: str, user: str) -> str:
    """One key per (tenant, user): a tenant name never holds '#' (``winnow.rules.TENANT_RULE``)."""
    return f"{tenant}#{user}"
