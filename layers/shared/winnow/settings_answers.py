"""Settings of answers and conversations (``winnow.settings`` re-exports them, with every other concern)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from winnow.settings_base import env_config as _config

__all__ = ["AnswerSettings", "ConversationSettings"]


class AnswerSettings(BaseSettings):
    """``POST /answer``: which generator writes answers from the kept passages. ``auto``: Bedrock when
    ``WINNOW_ANSWER_BEDROCK_MODEL_ID`` is set, else Ollama when ``OLLAMA_HOST`` is set, else none (the
    route answers 501 saying how to enable it)."""

    model_config = SettingsConfigDict(**_config("WINNOW_ANSWER_"), populate_by_name=True)

    generator: Literal["auto", "bedrock", "ollama", "none"] = "auto"
    bedrock_model_id: str | None = Field(
        default=None, description="Bedrock model (or inference profile) id, e.g. amazon.nova-lite-v1:0."
    )
    bedrock_region: str | None = Field(default=None, description="Unset: the function's own region.")
    bedrock_endpoint_url: str | None = Field(default=None, description="Override (tests, VPC endpoints).")
    ollama_host: str | None = Field(
        default=None,
        validation_alias="OLLAMA_HOST",
        description="Ollama server, e.g. http://127.0.0.1:11434 (the variable Ollama's own CLI reads).",
    )
    ollama_model: str = Field(default="llama3.2", description="An Ollama model already pulled locally.")
    max_answer_tokens: int = Field(default=512, ge=16, le=4096, description="Default answer length cap.")
    temperature: float = Field(default=0.0, ge=0, le=1)
    timeout_seconds: float = Field(default=30.0, gt=0, le=600, description="Per model request.")
    max_attempts: int = Field(default=3, ge=1, le=10)
    backoff_base_seconds: float = Field(default=0.5, ge=0)
    backoff_max_seconds: float = Field(default=8.0, ge=0)

    @property
    def chosen(self) -> Literal["bedrock", "ollama", "none"]:
        if self.generator != "auto":
            return self.generator
        if self.bedrock_model_id:
            return "bedrock"
        if self.ollama_host:
            return "ollama"
        return "none"


class ConversationSettings(BaseSettings):
    """Conversations and long-term memory (``winnow.conversations``): per (tenant, user), in DynamoDB when
    ``table`` is set, else SQLite beside the ledger. Sizes bound what one follow-up may cost."""

    model_config = _config("WINNOW_CONVERSATION_")

    table: str | None = Field(default=None, description="DynamoDB table; unset means SQLite under home.")
    turns_kept: int = Field(default=20, ge=1, le=200, description="Turns kept per conversation (newest).")
    ttl_days: int = Field(default=30, ge=1, le=3650, description="Turns and memories expire this long after.")
    max_history_tokens: int = Field(
        default=200, ge=16, le=4000, description="Words of earlier turns a follow-up reads."
    )
    rewrite: bool = Field(default=True, description="Let the answer generator rewrite follow-ups when set.")
    rewrite_max_tokens: int = Field(default=96, ge=16, le=512, description="Length cap of a rewrite.")
    memory_limit: int = Field(default=5, ge=0, le=20, description="Memories given to the model per answer.")
    max_recall_tokens: int = Field(
        default=1500,
        ge=16,
        le=20000,
        description="Words of earlier turns and memories an answer prompt holds (newest turns first).",
    )
    memory_floor: float = Field(default=0.35, ge=-1, le=1, description="Least cosine of a memory given.")
    memories_kept: int = Field(default=200, ge=1, le=2000, description="Newest memories kept per user.")
