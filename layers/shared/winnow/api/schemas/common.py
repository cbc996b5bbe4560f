"""What every route of the API shares: the text check, strict numbers, the error body and health."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


def unicode_text(value: str) -> str:
    """Text must be encodable as UTF-8: JSON can carry a lone surrogate (``"\\ud800"``), which is not
    text, and every later step (tokenising, embedding, the vector store) would fail on it. (Strict
    strings, as in filters, get the same check from pydantic itself: ``string_unicode``.)"""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it holds a lone UTF-16 surrogate)") from None
    return value


# Strict numbers: JSON booleans and numeric strings are rejected, integers are accepted as floats.
StrictInt = Annotated[int, Field(strict=True)]
StrictFloat = Annotated[float, Field(strict=True)]


class Health(BaseModel):
    status: Literal["ok"]
    version: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody
    correlation_id: str
