"""The archive under PPTX, XLSX and EPUB: members read one at a time, each bounded, and XML parsed safely.

Every archive is first judged from its central directory (declared sizes, compression ratios, member
count) before anything is inflated (``containers.check_archive``), and every XML parser refuses
entities, DTDs and the network. ``guarded`` turns whatever a parser raises into a one-line reason.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Callable
from io import BytesIO
from typing import Any

from winnow.errors import CorruptDocument, DocumentError, OversizedDocument
from winnow.models import ParsedDocument
from winnow.parsing.blocks import one_line

__all__ = ["MAX_MEMBER_BYTES", "NS", "Package", "guarded"]

MAX_MEMBER_BYTES = 50 * 1024 * 1024

NS = {
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
    "ncx": "http://www.daisy.org/z3986/2005/ncx/",
    "dgm": "http://schemas.openxmlformats.org/drawingml/2006/diagram",
}


def guarded(what: str, parse: Callable[[], ParsedDocument]) -> ParsedDocument:
    try:
        return parse()
    except (DocumentError, ImportError):
        raise
    except RecursionError as error:
        raise CorruptDocument(f"corrupt {what}: structure nested too deeply") from error
    except MemoryError as error:
        raise OversizedDocument(f"{what} needs too much memory to parse") from error
    except Exception as error:
        raise CorruptDocument(f"corrupt {what} ({type(error).__name__}: {one_line(error)})") from error


class Package:
    """Members of a checked archive, read one at a time, each at most ``MAX_MEMBER_BYTES``."""

    def __init__(self, data: bytes, members: list[zipfile.ZipInfo], what: str) -> None:
        self._zip = zipfile.ZipFile(BytesIO(data))
        self._sizes = {member.filename: member.file_size for member in members}
        self.what = what

    def has(self, name: str) -> bool:
        return name in self._sizes

    def read(self, name: str) -> bytes:
        size = self._sizes.get(name)
        if size is None:
            raise CorruptDocument(f"corrupt {self.what}: missing {name[:80]}")
        if size > MAX_MEMBER_BYTES:
            raise OversizedDocument(
                f"{self.what} member {name[:80]} is {size} bytes (limit {MAX_MEMBER_BYTES})"
            )
        return self._zip.read(name)

    def xml(self, name: str) -> Any:
        from lxml import etree

        parser = etree.XMLParser(
            resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
        )
        return etree.fromstring(self.read(name), parser=parser)

    def relationships(self, part: str) -> dict[str, tuple[str, str]]:
        """rId -> (type, target path inside the package) for ``part``."""
        folder, name = posixpath.split(part)
        rels_name = posixpath.join(folder, "_rels", name + ".rels")
        if not self.has(rels_name):
            return {}
        found: dict[str, tuple[str, str]] = {}
        for rel in self.xml(rels_name).iterfind("rel:Relationship", NS):
            if rel.get("TargetMode") == "External":
                continue
            target = posixpath.normpath(posixpath.join(folder, rel.get("Target", "")))
            found[rel.get("Id", "")] = (rel.get("Type", ""), target.lstrip("/"))
        return found
