"""Reading a zip's central directory safely: the listing only, nothing inflated."""

from __future__ import annotations

import zipfile
from io import BytesIO

from winnow.errors import CorruptDocument, OversizedDocument
from winnow.parsing.blocks import one_line
from winnow.settings import IngestSettings

MAX_MEMBERS = 10_000
# Small members compress extremely well when they are repetitive XML; only a member big enough to
# hurt is judged by its ratio. The total declared size is checked for every archive.
_RATIO_CHECK_MIN_BYTES = 1024 * 1024


def zip_members(data: bytes, what: str = "DOCX") -> list[zipfile.ZipInfo]:
    """The archive's members as its central directory declares them. A damaged directory makes
    zipfile raise anything from ``BadZipFile`` to ``NotImplementedError`` ("zip file version") or
    ``struct.error``; all of them mean the same to us: the container is unreadable."""
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            return archive.infolist()
    except ImportError:
        raise
    except Exception as error:
        raise CorruptDocument(f"{what} zip container is unreadable ({one_line(error)})") from error


def check_archive(data: bytes, settings: IngestSettings, what: str) -> list[zipfile.ZipInfo]:
    """Refuse an archive whose central directory promises more than we are willing to inflate."""
    members = zip_members(data, what)
    if len(members) > MAX_MEMBERS:
        raise OversizedDocument(f"{what} zip has {len(members)} members (limit {MAX_MEMBERS})")
    declared = sum(member.file_size for member in members)
    if declared > settings.max_uncompressed_bytes:
        raise OversizedDocument(
            f"{what} declares {declared} uncompressed bytes"
            f" (limit {settings.max_uncompressed_bytes}): zip bomb?"
        )
    for member in members:
        if member.file_size < _RATIO_CHECK_MIN_BYTES:
            continue
        ratio = member.file_size / max(member.compress_size, 1)
        if ratio > settings.max_compression_ratio:
            raise OversizedDocument(
                f"{what} member compression ratio {ratio:.0f}:1 exceeds"
                f" {settings.max_compression_ratio:.0f}:1 (zip bomb?)"
            )
    return members
