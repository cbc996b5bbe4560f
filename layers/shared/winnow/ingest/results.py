"""What ingest did with one object event: the outcome the handler counts in metrics and returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class IngestOutcome(StrEnum):
    """What ingest did with one object event. ``RETRY``: a transient problem; nothing was recorded and
    the event should be redelivered."""

    INDEXED = "indexed"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    DELETED = "deleted"
    SKIPPED = "skipped"
    RETRY = "retry"


@dataclass
class IngestResult:
    """What happened to one object."""

    key: str
    status: IngestOutcome
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    error: str | None = None
    tenant: str | None = None
    duration_ms: float = 0.0
    ocr_pages: int = 0
    vision_calls: int = 0  # figures described by a vision model, and the tokens that cost
    vision_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: d[k] for k in ("key", "status", "chunks", "embedded", "reused", "error")}


__all__ = ["IngestOutcome", "IngestResult"]
