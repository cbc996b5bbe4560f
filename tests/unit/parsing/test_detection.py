"""Which parser a file gets: by extension checked against its first bytes, by content when the
name says nothing, and a one-line refusal for what Winnow does not read."""

from __future__ import annotations

import io
import zipfile

import pytest

from tests.support.documents import DocxParagraph, make_docx, make_pdf
from tests.support.office import Slide, make_pptx, make_xlsx
from tests.support.samples import STAFF, assert_one_line_reason
from winnow.errors import DocumentError, EmptyDocument, EncryptedDocument, UnsupportedDocument
from winnow.parsing import detect_type, parse_document
from winnow.settings import IngestSettings


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("acme/a.pdf", "pdf"),
        ("acme/A.PDF", "pdf"),
        ("acme/notes.md", "markdown"),
        ("acme/notes.markdown", "markdown"),
        ("acme/readme.txt", "text"),
        ("acme/readme.text", "text"),
        ("acme/page.html", "html"),
        ("acme/page.HTM", "html"),
    ],
)
def test_text_like_types_are_decided_by_extension(key: str, expected: str) -> None:
    data = make_pdf(["Hello."]) if expected == "pdf" else b"Plain words.\n"
    assert detect_type(key, data) == expected


def test_docx_is_detected_from_a_zip_with_word_document_xml() -> None:
    assert detect_type("acme/report.docx", make_docx([DocxParagraph("Hi.")])) == "docx"


@pytest.mark.parametrize(
    ("key", "data", "reason_part"),
    [
        ("acme/noextension", bytes(range(32)) * 20, "no extension"),
        ("acme/sheet.xls", b"\xd0\xcf\x11\xe0", "'.xls'"),
        ("acme/text.xlsx", b"plain text, not a zip", "not a XLSX"),
        ("acme/photo.png", b"GIF89a" + bytes(100), "not a PNG, JPEG or TIFF"),
        ("acme/archive.tar.gz", b"\x1f\x8b", "compressed archive"),
        ("acme/real.pdf", b"Just some text pretending to be a PDF.", "not a PDF"),
        ("acme/zip.pdf", b"PK\x03\x04" + bytes(100), "zip archive"),
        ("acme/pdf.txt", b"%PDF-1.4\n1 0 obj", "content is a PDF"),
        ("acme/pdf.md", b"  %PDF-1.4\n1 0 obj", "content is a PDF"),
        ("acme/zip.html", b"PK\x03\x04" + bytes(100), "zip archive"),
        ("acme/text.docx", b"plain text, not a zip", "not a DOCX"),
        ("acme/legacy.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "legacy Word .doc"),
    ],
)
def test_unknown_extensions_and_mismatched_content_are_unsupported(
    key: str, data: bytes, reason_part: str
) -> None:
    # When the extension is unknown or the first bytes contradict it
    with pytest.raises(UnsupportedDocument) as caught:
        parse_document(key, data, IngestSettings())
    # Then the reason says what is wrong
    assert reason_part in str(caught.value)
    assert_one_line_reason(caught.value)


def test_zip_that_is_not_a_word_document_is_unsupported() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(UnsupportedDocument, match=r"word/document\.xml"):
        parse_document("acme/renamed.docx", buffer.getvalue())


def test_encrypted_docx_container_is_reported_as_encrypted() -> None:
    # Given an OLE2 container holding an EncryptionInfo stream, which is what Word writes for a
    # password-protected .docx
    ole2 = (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500) + "EncryptionInfo".encode("utf-16-le") + bytes(100)
    )
    with pytest.raises(EncryptedDocument, match="password"):
        parse_document("acme/locked.docx", ole2)


def test_zero_byte_file_is_empty() -> None:
    with pytest.raises(EmptyDocument, match="0 bytes"):
        parse_document("acme/empty.pdf", b"")


def test_macro_enabled_word_file_renamed_docx_is_unsupported() -> None:
    # Given a .docm (macro-enabled) package renamed to .docx: its main part has another content type
    source = make_docx([DocxParagraph("Macros inside.")])
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as original, zipfile.ZipFile(buffer, "w") as renamed:
        for member in original.infolist():
            content = original.read(member.filename)
            if member.filename == "[Content_Types].xml":
                content = content.replace(
                    b"wordprocessingml.document.main+xml", b"ms-word.document.macroEnabled.main+xml"
                )
            renamed.writestr(member, content)
    with pytest.raises(UnsupportedDocument, match=r"not a Word document \(content type .*macroEnabled"):
        parse_document("acme/macros.docx", buffer.getvalue())


def test_files_without_an_extension_are_sniffed() -> None:
    assert detect_type("acme/README", b"Plain words in a readme.\n") == "text"
    assert detect_type("acme/page", b"<!DOCTYPE html><html><body><p>x</p></body></html>") == "html"
    assert detect_type("acme/deck", make_pptx([Slide("A", ["b"])])) == "pptx"
    assert detect_type("acme/book", make_xlsx({"S": STAFF})) == "xlsx"
    assert detect_type("acme/scan", b"\x89PNG\r\n\x1a\n" + bytes(40)) == "image"


@pytest.mark.parametrize(
    ("key", "data", "expected"),
    [
        ("acme/README.Debian", b"Notes for Debian\n================\n\nThe daemon starts on boot.\n", "text"),
        ("acme/NEWS.old", "Version 1.2: fixed the caf\u00e9 crash.\n".encode("cp1252"), "text"),
        ("acme/app.conf", b"# where logs go\nlog_dir = /var/log/app\n", "text"),
        ("acme/build.log", b"\x1b[32mok\x1b[0m compiled 12 files\n", "text"),
        ("acme/manual.html.en", b"<!DOCTYPE html><html><body><p>Hello</p></body></html>", "html"),
        ("acme/page.php", b"<?xml version='1.0'?>\n<html xmlns='urn:x'><p>x</p>", "html"),
    ],
)
def test_an_unknown_extension_holding_text_is_read_by_its_content(
    key: str, data: bytes, expected: str
) -> None:
    # Given a file whose extension names no type Winnow reads, but whose bytes are text
    # When its type is decided
    # Then the content decides, as for a file without an extension
    assert detect_type(key, data) == expected


@pytest.mark.parametrize(
    ("key", "title"),
    [
        ("acme/README.Debian", "README.Debian"),
        ("acme/resolv.conf", "resolv.conf"),
        ("acme/q3_notes.txt", "q3 notes"),
    ],
)
def test_a_file_named_with_no_document_extension_keeps_its_whole_name_as_title(key: str, title: str) -> None:
    # Given text without a heading, under a name whose suffix is part of the name, not a format
    # When it is parsed, its title is the name people call it by; only a format's extension goes
    assert parse_document(key, b"nameserver 10.0.0.53\n").title == title


def test_readme_debian_gzipped_is_read_as_text_with_its_heading() -> None:
    # Given a Debian changelog as packages ship it: changelog.Debian.gz
    import gzip

    text = b"Release notes\n=============\n\nThe cache is now flushed on shutdown.\n"
    # When it is parsed
    doc = parse_document("acme/changelog.Debian.gz", gzip.compress(text))
    # Then its words are indexed, under its heading
    assert doc.source_type == "text" and doc.title == "Release notes"
    assert [block.text for block in doc.blocks] == ["The cache is now flushed on shutdown."]


@pytest.mark.parametrize(
    ("key", "data", "reason_part"),
    [
        ("acme/sheet.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "legacy Office (OLE2)"),
        ("acme/letter.odt", make_xlsx({"S": STAFF}), "zip archive"),
        ("acme/report.bak", b"%PDF-1.7\n1 0 obj", "content is a PDF"),
        ("acme/photo.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00" + bytes(64), "binary"),
        ("acme/tool.exe", b"MZ\x90\x00\x03" + bytes(200), "binary"),
        ("acme/logo.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0"/></svg>', "SVG"),
        ("acme/data.xml", b'<?xml version="1.0"?>\n<catalog><book id="1"/></catalog>', "XML"),
        ("acme/letter.rtf", b"{\\rtf1\\ansi Dear reader}", "RTF"),
        ("acme/figure.eps", b"%!PS-Adobe-3.0 EPSF-3.0\n", "PostScript"),
        ("acme/ls.1", b'.\\" DO NOT MODIFY THIS FILE!\n.TH LS "1" "2022"\n.SH NAME\nls \\- list\n', "troff"),
        ("acme/init.1", b".so man1/systemd.1\n", "troff"),
    ],
)
def test_an_unknown_extension_holding_binary_or_markup_is_refused_in_one_line(
    key: str, data: bytes, reason_part: str
) -> None:
    # Given a file whose extension names no type Winnow reads and whose bytes are no text to index
    # When it is parsed
    with pytest.raises(UnsupportedDocument) as caught:
        parse_document(key, data)
    # Then it is refused with one line naming the extension, what the bytes are, and what is read
    # (or how to make it readable)
    reason = str(caught.value)
    assert reason_part in reason and repr(key[key.rindex(".") :]) in reason
    assert "\n" not in reason and ("supported:" in reason or "save it as text" in reason)


def test_extension_is_checked_against_the_first_bytes() -> None:
    with pytest.raises(DocumentError, match="not a PPTX"):
        parse_document("acme/deck.pptx", b"just text")
    with pytest.raises(DocumentError, match=r"ppt/presentation\.xml"):
        parse_document("acme/deck.pptx", make_xlsx({"S": STAFF}))
