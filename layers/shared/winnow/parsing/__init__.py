"""Document parsing: bytes in, a :class:`ParsedDocument` of cleaned blocks out, or a one-line reason.

``parse_document`` is the only entry point the ingest service needs. It decides the type from the
extension, checks it against the first bytes (a ``.txt`` that is really a PDF, or a ``.docx`` that is
not a zip, is refused rather than indexed as garbage), and hands the bytes to one module per format.
The parsers (pypdf, python-docx, lxml) are imported inside those modules' functions, so importing
this package costs nothing and the search Lambda, which never parses, never loads them.

Every failure is a :class:`winnow.errors.DocumentError` subclass whose message is a single line fit
for the ledger: ``UnsupportedDocument``, ``CorruptDocument``, ``EncryptedDocument``, ``EmptyDocument``
or ``OversizedDocument``. Nothing else escapes, whatever the bytes.

Titles come from the format when it has one (PDF metadata, DOCX core properties, HTML ``<title>``,
Markdown front matter), then from the first top-level heading, then from the file name. Headings
become each block's ``section_path``; a first path element equal to the title is dropped because
``Chunk.embed_text`` already starts with the title.
"""

from __future__ import annotations

import re
from io import BytesIO
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from winnow.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    OversizedDocument,
    UnsupportedDocument,
)
from winnow.models import ParsedDocument
from winnow.parsing.containers import zip_members
from winnow.parsing.extensions import TYPE_BY_EXTENSION, document_extension, is_document_extension
from winnow.parsing.images import sniff_image
from winnow.parsing.text_decoding import DecodedText, binary_reason, decode_text
from winnow.settings import IngestSettings

if TYPE_CHECKING:
    from winnow.ports import Ocr
    from winnow.settings import OcrSettings

__all__ = ["SOURCE_TYPES", "detect_type", "is_document_extension", "parse_document"]

SOURCE_TYPES = ("pdf", "docx", "markdown", "text", "html", "image", "pptx", "xlsx", "csv", "rst", "epub")
# The member that makes a zip one kind of document and not another.
_ZIP_MARKERS = {
    "docx": "word/document.xml",
    "pptx": "ppt/presentation.xml",
    "xlsx": "xl/workbook.xml",
    "epub": "META-INF/container.xml",
}
_ZIP_NAMES = {"docx": "DOCX", "pptx": "PPTX", "xlsx": "XLSX", "epub": "EPUB"}

_GZIP_MAGIC = b"\x1f\x8b"
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"
# Text that is really markup of a format we do not read: indexed as text it would be tags and drawing.
_MARKUP_SIGNATURES = (
    ("<?xml", "XML markup"),
    ("<svg", "an SVG drawing"),
    ("{\\rtf", "RTF (save it as DOCX or PDF)"),
    ("%!ps", "PostScript (save it as PDF)"),
)
# A manual page's source (ls.1.gz): a .TH (man) or .Dd (mdoc) request near the top, or a .so link.
_TROFF_WINDOW = 16 * 1024
_TROFF_PAGE = re.compile(r"^\.(?:TH|Dd|so)[ \t]", re.MULTILINE)
# The PDF spec lets a few bytes of junk precede the header; readers accept it within the first KiB.
_PDF_HEADER_WINDOW = 1024


def parse_document(
    key: str,
    data: bytes,
    settings: IngestSettings | None = None,
    *,
    ocr: Ocr | None = None,
    ocr_settings: OcrSettings | None = None,
) -> ParsedDocument:
    """Parse one document. Raises only ``DocumentError`` subclasses, each with a one-line reason.
    ``ocr`` reads PDF pages without a text layer and image files; without it they are refused."""
    settings = settings or IngestSettings()
    if len(data) > settings.max_object_bytes:
        # Ingest refuses these from HEAD before downloading; this guards every other caller.
        raise OversizedDocument(f"file is {len(data)} bytes (limit {settings.max_object_bytes})")
    key, data = _gunzipped(key, data, settings.max_object_bytes)
    parsed = _parse_type(key, data, settings, ocr, ocr_settings)
    if any(block.figure is not None for block in parsed.blocks):
        from winnow.parsing.figures import resolve_figures

        return resolve_figures(parsed, settings, ocr, ocr_settings)
    return parsed


def _parse_type(
    key: str, data: bytes, settings: IngestSettings, ocr: Ocr | None, ocr_settings: OcrSettings | None
) -> ParsedDocument:
    source_type, decoded = _detect(key, data)
    if source_type == "pdf":
        from winnow.parsing.pdf import parse_pdf

        return parse_pdf(key, data, settings, ocr, ocr_settings)
    if source_type == "docx":
        from winnow.parsing.docx import parse_docx

        return parse_docx(key, data, settings)
    if source_type == "image":
        from winnow.parsing.image import parse_image

        return parse_image(key, data, ocr, ocr_settings)
    if source_type == "pptx":
        from winnow.parsing.pptx import parse_pptx

        return parse_pptx(key, data, settings)
    if source_type == "xlsx":
        from winnow.parsing.xlsx import parse_xlsx

        return parse_xlsx(key, data, settings)
    if source_type == "epub":
        from winnow.parsing.epub import parse_epub

        return parse_epub(key, data, settings)
    assert decoded is not None  # text-like types were decoded by _detect
    if source_type == "csv":
        from winnow.parsing.delimited import parse_delimited

        return parse_delimited(key, decoded.text, tab=PurePosixPath(key).suffix.lower() in (".tsv", ".tab"))
    if source_type == "rst":
        from winnow.parsing.rst import parse_rst

        return parse_rst(key, decoded.text)
    if source_type == "markdown":
        from winnow.parsing.markdown import parse_markdown

        return parse_markdown(key, decoded.text)
    if source_type == "html":
        from winnow.parsing.html import parse_html

        return parse_html(key, data, decoded, settings=settings)
    from winnow.parsing.text import parse_text

    return parse_text(key, decoded.text)


def detect_type(key: str, data: bytes) -> str:
    """The source type of ``key``: one of ``SOURCE_TYPES``. Raises ``UnsupportedDocument`` when the
    extension is unknown or the content does not match it, ``EmptyDocument`` for a 0-byte file.
    A gzip'd file (``grep.info.gz``) is the type of what it holds."""
    return _detect(*_gunzipped(key, data, IngestSettings().max_object_bytes))[0]


def _gunzipped(key: str, data: bytes, limit: int) -> tuple[str, bytes]:
    """A single gzip'd document (``changelog.gz``, ``grep.info.gz``) as the file it holds: its name
    without ``.gz`` and at most ``limit`` bytes of content, inflated in bounded steps (a gzip bomb
    stops at the limit). Anything else is returned unchanged."""
    if PurePosixPath(key).suffix.lower() != ".gz":
        return key, data
    inner = key[: -len(".gz")]
    if not data:
        raise EmptyDocument("empty file (0 bytes)")
    if not data.startswith(_GZIP_MAGIC):
        raise UnsupportedDocument(f"named .gz but {_describe(data)}, not gzip")
    if PurePosixPath(inner).suffix.lower() in (".tar", ".gz", ".tgz"):
        raise UnsupportedDocument("a compressed archive holds many files; upload the documents themselves")
    import gzip
    import zlib

    from winnow.parsing.blocks import one_line

    try:
        with gzip.GzipFile(fileobj=BytesIO(data)) as stream:
            content = stream.read(limit + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise CorruptDocument(f"corrupt gzip ({one_line(error)})") from error
    if len(content) > limit:
        raise OversizedDocument(f"gzip expands past {limit} bytes (limit): gzip bomb?")
    return inner, content


def _detect(key: str, data: bytes) -> tuple[str, DecodedText | None]:
    extension = document_extension(PurePosixPath(key).suffix)
    if not extension:
        if not data:
            raise EmptyDocument("empty file (0 bytes)")
        return _sniff(data)
    source_type = TYPE_BY_EXTENSION.get(extension)
    if not data:
        raise EmptyDocument("empty file (0 bytes)")
    if source_type is None:
        return _sniff_unknown(data, extension)
    if source_type == "pdf":
        if b"%PDF-" not in data[:_PDF_HEADER_WINDOW]:
            raise UnsupportedDocument(f"named {extension} but {_describe(data)}, not a PDF")
        return source_type, None
    if source_type == "docx":
        _check_docx_container(data, extension)
        return source_type, None
    if source_type in ("pptx", "xlsx", "epub"):
        _check_zip_container(data, extension, source_type)
        return source_type, None
    if source_type == "image":
        if sniff_image(data) is None:
            raise UnsupportedDocument(
                f"named {extension} but {_describe(data)}, not a PNG, JPEG or TIFF image"
            )
        return source_type, None
    return source_type, _decode_text_like(data, extension)


def _sniff(data: bytes) -> tuple[str, DecodedText | None]:
    """A file without an extension: its type from its first bytes (and a zip's member names)."""
    if b"%PDF-" in data[:_PDF_HEADER_WINDOW]:
        return "pdf", None
    if sniff_image(data) is not None:
        return "image", None
    if data.startswith((_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)):
        names = {member.filename for member in zip_members(data, "zip")}
        for source_type, marker in _ZIP_MARKERS.items():
            if marker in names:
                return source_type, None
        raise UnsupportedDocument("file has no extension and is a zip archive of no supported kind")
    if data.startswith(_OLE2_MAGIC):
        raise UnsupportedDocument("file has no extension and is a legacy Office (OLE2) file")
    decoded = _without_terminal_codes(decode_text(data))
    reason = binary_reason(decoded.text)
    if reason:
        raise UnsupportedDocument(f"file has no extension and {reason}; supported: {_supported_list()}")
    return _text_or_markup(decoded, "file has no extension and")


def _sniff_unknown(data: bytes, extension: str) -> tuple[str, DecodedText]:
    """A file whose extension names no type we read (``README.Debian``, ``NEWS.old``, ``app.conf``,
    ``build.log``): read when its bytes are text, refused when they are binary. A document format
    under a name we do not know (a ``.xls`` zip, a ``.doc``, a PDF named ``.bak``) is refused, not
    guessed at: its name says it is something else."""
    refusal = f"unsupported file type {extension!r}:"
    kind = _binary_kind(data)
    if kind:
        raise UnsupportedDocument(f"{refusal} {kind}; supported: {_supported_list()}")
    decoded = _without_terminal_codes(decode_text(data))
    reason = binary_reason(decoded.text)
    if reason:
        raise UnsupportedDocument(f"{refusal} {reason}; supported: {_supported_list()}")
    return _text_or_markup(decoded, refusal)


def _text_or_markup(decoded: DecodedText, refusal: str) -> tuple[str, DecodedText]:
    """Text typed by its content alone: HTML (XHTML too) is read as a page; other markup that would
    index as tags and drawing commands (XML, SVG, RTF, PostScript, troff) is refused, all else is text."""
    head = decoded.text[:_PDF_HEADER_WINDOW].lstrip().lower()
    if head.startswith(("<!doctype html", "<html")):
        return "html", decoded
    if head.startswith("<?xml") and re.search(r"<(!doctype\s+)?html[\s>]", head):
        return "html", decoded
    for signature, kind in _MARKUP_SIGNATURES:
        if head.startswith(signature):
            raise UnsupportedDocument(f"{refusal} content is {kind}; supported: {_supported_list()}")
    if head.startswith((".", "'", '\\"')) and _TROFF_PAGE.search(decoded.text[:_TROFF_WINDOW]):
        raise UnsupportedDocument(
            f"{refusal} content is a manual page's troff source; save it as text"
            " (man -P cat NAME > NAME.txt) and upload that"
        )
    return "text", decoded


def _binary_kind(data: bytes) -> str | None:
    """What a document format's magic bytes say the data is, or None."""
    if b"%PDF-" in data[:_PDF_HEADER_WINDOW]:
        return "content is a PDF"
    if data.startswith((_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)):
        return "content is a zip archive"
    if data.startswith(_OLE2_MAGIC):
        return "content is a legacy Office (OLE2) file"
    if sniff_image(data) is not None:
        return "content is an image"
    return None


def _check_zip_container(data: bytes, extension: str, source_type: str) -> None:
    """PPTX, XLSX and EPUB are zips holding a known member; the listing decompresses nothing."""
    what = _ZIP_NAMES[source_type]
    if data.startswith(_OLE2_MAGIC):
        if "EncryptionInfo".encode("utf-16-le") in data:
            raise EncryptedDocument(f"{what} is password protected")
        raise UnsupportedDocument(f"named {extension} but is a legacy Office (OLE2) file")
    if not data.startswith((_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)):
        raise UnsupportedDocument(f"named {extension} but {_describe(data)}, not a {what} (zip) file")
    names = {member.filename for member in zip_members(data, what)}
    if _ZIP_MARKERS[source_type] not in names:
        raise UnsupportedDocument(f"named {extension} but the zip has no {_ZIP_MARKERS[source_type]}")


def _check_docx_container(data: bytes, extension: str) -> None:
    """A DOCX is a zip holding ``word/document.xml``. Reading the central directory is cheap and
    decompresses nothing, so it is safe before the zip-bomb check."""
    if data.startswith(_OLE2_MAGIC):
        if "EncryptionInfo".encode("utf-16-le") in data:
            raise EncryptedDocument("DOCX is password protected")
        raise UnsupportedDocument(f"named {extension} but is a legacy Word .doc (OLE2) file")
    if not data.startswith((_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)):
        raise UnsupportedDocument(f"named {extension} but {_describe(data)}, not a DOCX (zip) file")
    names = {member.filename for member in zip_members(data)}
    if "word/document.xml" not in names:
        raise UnsupportedDocument(f"named {extension} but the zip has no word/document.xml, not a DOCX")


def _decode_text_like(data: bytes, extension: str) -> DecodedText:
    if data.lstrip()[:5] == b"%PDF-" or data.startswith((_ZIP_MAGIC, _OLE2_MAGIC)):
        raise UnsupportedDocument(f"named {extension} but {_describe(data)}")
    decoded = _without_terminal_codes(decode_text(data))
    reason = binary_reason(decoded.text)
    if reason:
        raise UnsupportedDocument(f"named {extension} but {reason}")
    return decoded


def _without_terminal_codes(decoded: DecodedText) -> DecodedText:
    """Terminal output (a saved man page, a log) as a terminal shows it; see ``parsing.cleaning``."""
    from winnow.parsing.cleaning import strip_terminal_codes

    return DecodedText(strip_terminal_codes(decoded.text), decoded.encoding)


def _describe(data: bytes) -> str:
    """What the bytes look like, for a reason that helps the uploader fix the file."""
    head = data[:_PDF_HEADER_WINDOW]
    if b"%PDF-" in head:
        return "content is a PDF"
    if data.startswith(_ZIP_MAGIC):
        return "content is a zip archive"
    if data.startswith(_OLE2_MAGIC):
        return "content is a legacy Office (OLE2) file"
    lowered = head.lower()
    if b"<html" in lowered or b"<!doctype html" in lowered:
        return "content is HTML"
    decoded = decode_text(head)
    if binary_reason(decoded.text):
        return "content is binary"
    return "content is text"


def _supported_list() -> str:
    return ", ".join(sorted(TYPE_BY_EXTENSION)) + ", any of them .gz'd, or text of any name"
