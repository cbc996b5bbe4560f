"""The documents routes' models: a document's ingest status, a page of them, a delete, an upload form."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from winnow.access import UPLOAD_METADATA_NAME
from winnow.api.schemas.common import unicode_text
from winnow.models import DocumentStatus, LedgerRecord
from winnow.rules import FIELD_NAME_RULE, is_field_name
from winnow.search.results import AccessModel


class DocumentStatusModel(BaseModel):
    """A document's ingest state; ``pending`` while it is in the bucket and ingest has not recorded it.
    Timestamps are named ``*_at``, as in the ledger."""

    key: str
    status: DocumentStatus | Literal["pending"]
    chunks: int
    embedded: int
    reused: int
    error: str | None
    title: str | None
    source_type: str | None
    created_at: str | None
    updated_at: str | None

    @classmethod
    def of(cls, record: LedgerRecord | None, key: str) -> DocumentStatusModel:
        """``record``'s state, or ``pending`` for ``key`` when ingest has no record of it yet."""
        if record is None:
            return cls(
                key=key,
                status="pending",
                chunks=0,
                embedded=0,
                reused=0,
                error=None,
                title=None,
                source_type=None,
                created_at=None,
                updated_at=None,
            )
        return cls(
            key=record.key,
            status=record.status,
            chunks=record.chunks,
            embedded=record.embedded,
            reused=record.reused,
            error=record.error,
            title=record.title,
            source_type=record.source_type,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )


class DocumentsPage(BaseModel):
    documents: list[DocumentStatusModel]
    next_cursor: str | None


class UploadRequest(BaseModel):
    """``POST /uploads``: where the file goes within the caller's tenant, its type and metadata."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1,
        max_length=1024,
        description="Where the file goes within the caller's tenant, e.g. handbook/leave.pdf; the object "
        "key is <tenant>/<path>.",
    )
    content_type: str | None = Field(
        default=None, max_length=255, description="The file's media type; default: guessed from the path."
    )
    metadata: dict[str, Annotated[str, Field(max_length=1024)]] = Field(
        default_factory=dict,
        max_length=50,
        description="Filterable metadata (stored as x-amz-meta-*): printable ASCII values; names follow "
        "the metadata field-name rule.",
    )
    access: AccessModel | None = Field(
        default=None,
        description="Who may read the document (pinned in the signed form as x-amz-meta-winnow-access); "
        "without it, a document that exists keeps its list, and a new one is read by every member of the "
        "tenant (or only the admins with DefaultAccess=deny). Only admins may grant a group they are not in.",
    )

    @field_validator("path")
    @classmethod
    def _path_text(cls, value: str) -> str:
        return unicode_text(value)

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not is_field_name(name):
                raise ValueError(f"metadata field {name[:40]!r} is not allowed: use {FIELD_NAME_RULE}")
            if name.lower() == UPLOAD_METADATA_NAME:
                raise ValueError(f"metadata field {name!r} is reserved: send the access list in 'access'")
            if not all(" " <= ch <= "~" for ch in text):
                raise ValueError(f"metadata field {name!r}: values must be printable ASCII")
        return value


class UploadResponse(BaseModel):
    key: str = Field(description="The object key the form writes: <tenant>/<path>.")
    url: str = Field(description="POST the form here (multipart/form-data).")
    fields: dict[str, str] = Field(description="Send these form fields first, then the file as 'file'.")
    expires_in: int = Field(description="Seconds the form stays valid.")


class DeleteResponse(BaseModel):
    key: str
    status: Literal["deleting"] = Field(
        description="The object is gone; its passages leave the index when ingest handles the removal."
    )
