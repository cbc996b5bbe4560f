"""Reading a zip's central directory safely: the listing only, nothing inflated."""

from __future__ import annotations

import zipfile
from io import BytesIO

from winnow.errors import CorruptDocument
from winnow.parsing.blocks import one_line


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
