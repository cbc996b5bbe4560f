"""The memory and conversations routes' models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class MemoryItem(BaseModel):
    """One remembered exchange of the caller (``GET /memory``)."""

    id: str
    conversation_id: str
    question: str
    answer: str
    at: str = Field(description="When it was answered (ISO 8601, UTC).")


class MemoryList(BaseModel):
    memories: list[MemoryItem] = Field(description="Newest first.")


class Forgotten(BaseModel):
    deleted: int = Field(description="Memories and conversation turns removed for good.")


class ConversationDeleted(BaseModel):
    conversation_id: str
    status: Literal["deleted"]
