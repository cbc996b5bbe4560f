"""Parsing real generated files of every supported format into blocks, and refusing bad ones with the
right DocumentError and a one-line reason."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.documents import (
    CP1252_SAMPLE,
    HTML_NOISE_MARKERS,
    LATIN1_SAMPLE,
    SAMPLE_PDF_OUTLINE,
    SAMPLE_PDF_PAGES,
    UTF16_SAMPLE,
    BadInput,
    DocxHeading,
    DocxParagraph,
    DocxTable,
    make_binary,
    make_corrupt_pdf,
    make_docx,
    make_docx_zip_bomb,
    make_encrypted_pdf,
    make_html,
    make_markdown,
    make_pdf,
    make_scanned_pdf,
    make_text,
    make_truncated_pdf,
)
from winnow.errors import (
    CorruptDocument,
    DocumentError,
    EmptyDocument,
    EncryptedDocument,
    OversizedDocument,
    UnsupportedDocument,
)
from winnow.models import ParsedDocument
from winnow.parsing import detect_type, parse_document
from winnow.parsing.text_decoding import binary_reason, decode_text
from winnow.settings import IngestSettings

REPO_ROOT = Path(__file__).resolve().parents[2]


def _texts(doc: ParsedDocument) -> list[str]:
    return [block.text for block in doc.blocks]


def _all_text(doc: ParsedDocument) -> str:
    return "\n".join(_texts(doc))


def _assert_one_line_reason(error: DocumentError) -> None:
    message = str(error)
    assert message.strip(), "a reason must be given"
    assert "\n" not in message
    assert len(message) < 300


# --- type detection ----------------------------------------------------------------------------------
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
    _assert_one_line_reason(caught.value)


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


# --- PDF ---------------------------------------------------------------------------------------------
def test_pdf_blocks_carry_their_page_and_the_bookmark_section(sample_pdf: bytes) -> None:
    doc = parse_document("acme/sample.pdf", sample_pdf)
    assert doc.source_type == "pdf"
    assert doc.title == "Winnow Sample"
    # Then every block knows its 1-based page and the bookmark it sits under, and the heading line
    # itself became the path rather than body text
    by_page = {page: [b for b in doc.blocks if b.page == page] for page in (1, 2, 3)}
    assert [b.section_path for b in by_page[1]] == [("Introduction",), ("Introduction",)]
    assert by_page[1][1].text == "A second paragraph on the first page."
    assert by_page[2][0].section_path == ("Method",)
    assert by_page[2][0].text.startswith("The method page explains how chunks follow")
    assert by_page[3][0].section_path == ("Results",)
    assert not any(block.text in ("Introduction", "Method", "Results") for block in doc.blocks)


def test_pdf_paragraphs_become_separate_blocks_and_wrapped_lines_are_joined() -> None:
    long_paragraph = " ".join(["Wrapped sentences keep flowing across the line ends of the page."] * 5)
    data = make_pdf([f"{long_paragraph}\n\nA short closing paragraph."])
    doc = parse_document("acme/flow.pdf", data)
    assert _texts(doc) == [long_paragraph, "A short closing paragraph."]
    assert all(block.page == 1 for block in doc.blocks)


def test_a_line_break_at_a_compound_words_own_hyphen_keeps_the_hyphen() -> None:
    import io

    import pypdf

    # Given a paragraph whose lines break after the hyphen of "royalty-free" (as word processors and
    # typewriters break lines) and after a syllable hyphen ("exam-" / "ple") the document never writes
    clauses = " ".join(f"Clause {n} grants a worldwide royalty-free licence to the holder." for n in range(9))
    compound = f"Under this agreement, signed at the Nnnnnn office, {clauses}"
    data = make_pdf([compound])
    raw = pypdf.PdfReader(io.BytesIO(data)).pages[0].extract_text()
    assert any(line.endswith("royalty-") for line in raw.splitlines())
    # When it is parsed
    [block] = parse_document("acme/licence.pdf", data).blocks
    # Then every "royalty-free" is whole with its hyphen, so a search for either half finds it
    assert block.text == compound
    assert "royaltyfree" not in block.text
    # And a word hyphenated only to break the line is still joined without its hyphen
    from winnow.parsing.pdf import _join_lines

    assert _join_lines(["an exam-", "ple of it"], frozenset({"royalty-free"})) == "an example of it"


def test_pdf_nested_outline_builds_section_paths_and_switches_at_the_heading_line() -> None:
    # Given chapter 2 starting half-way down page 2 and a sub-section under chapter 1
    pages = [
        "Chapter One\n\nOpening words of the first chapter.\n\nDetails\n\nThe details of chapter one.",
        "Still the details of chapter one.\n\nChapter Two\n\nChapter two begins here.",
    ]
    outline = [("Chapter One", 0, 0), ("Details", 0, 1), ("Chapter Two", 1, 0)]
    doc = parse_document("acme/book.pdf", make_pdf(pages, outline=outline))
    paths = {block.text: (block.page, block.section_path) for block in doc.blocks}
    assert paths["Opening words of the first chapter."] == (1, ("Chapter One",))
    assert paths["The details of chapter one."] == (1, ("Chapter One", "Details"))
    # Then text above the next heading stays in the previous section
    assert paths["Still the details of chapter one."] == (2, ("Chapter One", "Details"))
    assert paths["Chapter two begins here."] == (2, ("Chapter Two",))


def test_pdf_section_changing_mid_page_under_a_bookmark_spelt_differently_is_cited_where_the_text_is() -> (
    None
):
    # Given (as shared-mime-info's spec, page 15) a section that goes on at the top of a page, and the
    # next one starting half-way down, whose bookmark says "Nonregular" where the heading says
    # "Non-regular"
    pages = [
        "2.12. Recommended checking order\n\nApplications choose the order of the checks they run.",
        "If a MIME type is provided explicitly then that should be used instead of guessing.\n\n"
        "2.13. Non-regular files\n\nSometimes it is useful to assign MIME types to directories.",
    ]
    outline = [("2.12. Recommended checking order", 0, 0), ("2.13. Nonregular files", 1, 0)]
    doc = parse_document("acme/spec.pdf", make_pdf(pages, outline=outline))
    paths = {block.text: (block.page, block.section_path) for block in doc.blocks}
    # Then the top of page 2 is still cited as 2.12, and only the text below the heading as 2.13
    assert paths["If a MIME type is provided explicitly then that should be used instead of guessing."] == (
        2,
        ("2.12. Recommended checking order",),
    )
    assert paths["Sometimes it is useful to assign MIME types to directories."] == (
        2,
        ("2.13. Nonregular files",),
    )
    assert "2.13. Non-regular files" not in paths  # the heading is the section's name, not a passage


def test_pdf_without_outline_or_title_has_empty_paths_and_a_title_from_the_file_name() -> None:
    doc = parse_document("acme/reports/q3_sales-report.pdf", make_pdf(["Revenue grew.", "Costs fell."]))
    assert doc.title == "q3 sales report"
    assert [(b.page, b.section_path) for b in doc.blocks] == [(1, ()), (2, ())]


def test_pdf_with_junk_before_the_header_is_still_a_pdf() -> None:
    data = b"\r\n\x00garbage\n" + make_pdf(["Still readable."])
    assert _texts(parse_document("acme/junk.pdf", data)) == ["Still readable."]


def test_scanned_pdf_without_text_layer_is_empty_with_a_hint() -> None:
    with pytest.raises(EmptyDocument, match=r"no text layer \(scanned PDF\?\)"):
        parse_document("acme/scan.pdf", make_scanned_pdf())


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
def test_pdf_with_a_user_password_is_encrypted(algorithm: str) -> None:
    data = make_encrypted_pdf(["Secret plans."], user_password="s3cret", algorithm=algorithm)
    with pytest.raises(EncryptedDocument) as caught:
        parse_document("acme/locked.pdf", data)
    assert "password" in str(caught.value)
    _assert_one_line_reason(caught.value)


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_pdf_with_only_an_owner_password_opens_with_the_empty_password(algorithm: str) -> None:
    data = make_encrypted_pdf(
        ["Printing is restricted, reading is not."], user_password="", algorithm=algorithm
    )
    assert _texts(parse_document("acme/restricted.pdf", data)) == ["Printing is restricted, reading is not."]


def test_aes_pdf_without_an_aes_library_is_reported_not_crashed(tmp_path: Path) -> None:
    # Given an owner-only AES PDF and a Python where the cryptography package cannot be imported
    data = make_encrypted_pdf(["Readable with AES support."], user_password="", algorithm="AES-256")
    path = tmp_path / "aes.pdf"
    path.write_bytes(data)
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["cryptography"] = None
        sys.modules["Crypto"] = None
        from winnow.errors import EncryptedDocument
        from winnow.parsing import parse_document
        try:
            parse_document("acme/aes.pdf", open({str(path)!r}, "rb").read())
        except EncryptedDocument as error:
            print("ENCRYPTED:", error)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={"PYTHONPATH": f"{REPO_ROOT / 'layers' / 'shared'}", "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    # Then it is recorded as an encryption problem naming AES, not a crash
    assert result.returncode == 0, result.stderr
    assert "ENCRYPTED:" in result.stdout
    assert "AES" in result.stdout


@pytest.mark.parametrize("data_factory", [make_truncated_pdf, make_corrupt_pdf])
def test_truncated_and_corrupt_pdfs_are_corrupt(data_factory: object) -> None:
    assert callable(data_factory)
    with pytest.raises(CorruptDocument) as caught:
        parse_document("acme/broken.pdf", data_factory())
    assert "PDF" in str(caught.value)
    _assert_one_line_reason(caught.value)


def test_pdf_line_joining_undoes_hyphenation_only_before_a_lowercase_continuation() -> None:
    from winnow.parsing.pdf import _join_lines

    assert _join_lines(["The exam-", "ple shows it"]) == "The example shows it"
    assert _join_lines(["Covid-", "19 cases"]) == "Covid- 19 cases"
    assert _join_lines(["Ends with Anglo-", "Saxon"]) == "Ends with Anglo- Saxon"


# --- DOCX --------------------------------------------------------------------------------------------
def test_docx_headings_become_section_paths_and_tables_stay_as_rows(sample_docx: bytes) -> None:
    doc = parse_document("acme/handbook.docx", sample_docx)
    assert doc.source_type == "docx"
    # Then the Title paragraph is the document title and is not repeated in the paths
    assert doc.title == "Employee Handbook"
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        (("Leave",), "Employees get twenty-five days of paid leave per year."),
        (("Leave", "Parental leave"), "Parents get sixteen weeks of paid parental leave."),
        (
            ("Leave", "Parental leave"),
            # a table block: caption from the nearest heading, each row naming its columns
            "Parental leave\nColumns: Country | Days\n"
            "Country: France | Days: 25\nCountry: Germany | Days: 30",
        ),
        (("Expenses",), "Submit receipts within thirty days."),
    ]
    assert all(block.page is None for block in doc.blocks)


def test_docx_core_title_wins_and_a_different_title_paragraph_stays_in_the_path() -> None:
    data = make_docx(
        [DocxHeading("Draft handbook", 0), DocxHeading("Leave", 1), DocxParagraph("Body.")],
        core_title="Official Handbook",
    )
    doc = parse_document("acme/handbook.docx", data)
    assert doc.title == "Official Handbook"
    assert doc.blocks[0].section_path == ("Draft handbook", "Leave")


def test_docx_title_falls_back_to_first_heading_then_file_name() -> None:
    with_heading = make_docx([DocxHeading("Security policy", 1), DocxParagraph("Use strong passwords.")])
    assert parse_document("acme/p.docx", with_heading).title == "Security policy"
    plain = make_docx([DocxParagraph("No headings at all.")])
    assert parse_document("acme/meeting_notes-2024.docx", plain).title == "meeting notes 2024"


def test_docx_heading_levels_close_deeper_sections() -> None:
    data = make_docx(
        [
            DocxHeading("A", 1),
            DocxHeading("A.1", 2),
            DocxHeading("A.1.a", 3),
            DocxParagraph("deep"),
            DocxHeading("B", 1),
            DocxParagraph("shallow"),
            DocxHeading("B.1", 2),
            DocxParagraph("middle"),
        ]
    )
    doc = parse_document("acme/levels.docx", data)
    # The first heading is also the fallback title, so it is dropped from the paths below it
    assert doc.title == "A"
    assert [(b.text, b.section_path) for b in doc.blocks] == [
        ("deep", ("A.1", "A.1.a")),
        ("shallow", ("B",)),
        ("middle", ("B", "B.1")),
    ]


def test_docx_custom_heading_styles_content_controls_and_merged_cells() -> None:
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml import OxmlElement

    document = docx.Document()
    document.core_properties.title = "Custom"
    fancy = document.styles.add_style("Fancy Heading", WD_STYLE_TYPE.PARAGRAPH)
    fancy.base_style = document.styles["Heading 2"]
    document.add_heading("Top", 1)
    document.add_paragraph("Section by custom style", style="Fancy Heading")
    document.add_paragraph("Under the custom heading.")
    # a paragraph wrapped in a content control (w:sdt), as cover pages and forms are
    wrapped = document.add_paragraph("Inside a content control.")
    sdt, content = OxmlElement("w:sdt"), OxmlElement("w:sdtContent")
    wrapped._p.addprevious(sdt)
    sdt.append(content)
    content.append(wrapped._p)
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 1))
    merged.text = "Merged header"
    table.cell(0, 2).text = "Other"
    table.cell(1, 0).text = "x"
    table.cell(1, 1).text = "y"
    table.cell(1, 2).text = "z"
    buffer = io.BytesIO()
    document.save(buffer)

    doc = parse_document("acme/custom.docx", buffer.getvalue())
    assert [(b.text, b.section_path) for b in doc.blocks] == [
        ("Under the custom heading.", ("Top", "Section by custom style")),
        ("Inside a content control.", ("Top", "Section by custom style")),
        (
            # a cell merged across two columns names both (the second numbered), so each value stays
            # under its own header
            "Section by custom style\nColumns: Merged header | Merged header (2) | Other\n"
            "Merged header: x | Merged header (2): y | Other: z",
            ("Top", "Section by custom style"),
        ),
    ]


def test_docx_cell_merged_down_rows_names_each_row_and_a_long_merged_cell_is_said_once() -> None:
    import docx

    # Given a table whose "Region" cell is merged down two rows, and a note merged across two columns
    document = docx.Document()
    table = document.add_table(rows=4, cols=3)
    for r, row in enumerate(
        [["Region", "City", "Depot"], ["North", "Groningen", "GR-1"], ["", "Assen", "AS-2"]]
    ):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(1, 0).merge(table.cell(2, 0))
    note = "Depots close on public holidays; " * 10
    table.cell(3, 0).text = "Note"
    table.cell(3, 1).merge(table.cell(3, 2)).text = note
    buffer = io.BytesIO()
    document.save(buffer)
    # When it is parsed
    [block] = parse_document("acme/depots.docx", buffer.getvalue()).blocks
    # Then the merged region names both rows it covers, so each row is whole on its own
    assert block.table is not None
    assert block.table.rows[:2] == (("North", "Groningen", "GR-1"), ("North", "Assen", "AS-2"))
    # And the long note merged across two columns is said once, not twice
    assert block.table.rows[2] == ("Note", " ".join(note.split()), "")
    assert block.text.count("public holidays") == 10


def test_docx_zip_bomb_with_a_huge_declared_size_is_refused_before_inflating() -> None:
    with pytest.raises(OversizedDocument, match="zip bomb") as caught:
        parse_document("acme/bomb.docx", make_docx_zip_bomb("declared", declared_bytes=3_000_000_000))
    assert "3000" in str(caught.value)
    _assert_one_line_reason(caught.value)


def test_docx_zip_bomb_limits_come_from_settings() -> None:
    bomb = make_docx_zip_bomb("ratio")  # 32 MiB of zeros at about 1000:1
    # With the default ratio limit it is refused
    with pytest.raises(OversizedDocument, match="compression ratio"):
        parse_document("acme/ratio.docx", bomb, IngestSettings())
    # With a lower total size limit it is refused for its size
    with pytest.raises(OversizedDocument, match="uncompressed bytes"):
        parse_document("acme/ratio.docx", bomb, IngestSettings(max_uncompressed_bytes=1_000_000))
    # And when the operator allows such ratios, the same file parses
    lenient = IngestSettings(max_compression_ratio=10_000)
    assert _texts(parse_document("acme/ratio.docx", bomb, lenient)) == ["Looks harmless."]


def test_docx_member_whose_data_exceeds_its_declared_size_is_corrupt_not_inflated() -> None:
    # Given a DOCX whose document.xml claims to be 10 bytes long
    data = bytearray(make_docx([DocxParagraph("Real text that is longer than ten bytes.")]))
    from tests.support.documents import _patch_declared_size

    _patch_declared_size(data, b"word/document.xml", 10)
    # Then reading stops at the declared size and the archive is reported corrupt
    with pytest.raises(CorruptDocument):
        parse_document("acme/liar.docx", bytes(data))


@pytest.mark.parametrize("keep", [0.3, 0.7, 0.95])
def test_truncated_docx_is_corrupt(keep: float) -> None:
    data = make_docx([DocxParagraph("Some text " * 200)])
    with pytest.raises(CorruptDocument) as caught:
        parse_document("acme/cut.docx", data[: int(len(data) * keep)])
    _assert_one_line_reason(caught.value)


def test_docx_with_broken_xml_is_corrupt() -> None:
    source = make_docx([DocxParagraph("Fine.")])
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as original, zipfile.ZipFile(buffer, "w") as broken:
        for member in original.infolist():
            content = original.read(member.filename)
            if member.filename == "word/document.xml":
                content = content[: len(content) // 2]
            broken.writestr(member, content)
    with pytest.raises(CorruptDocument, match="DOCX"):
        parse_document("acme/broken.docx", buffer.getvalue())


def test_docx_without_text_is_empty() -> None:
    with pytest.raises(EmptyDocument, match="no text"):
        parse_document("acme/blank.docx", make_docx([DocxParagraph("   "), DocxTable([["", ""]])]))


# --- Markdown ----------------------------------------------------------------------------------------
def test_markdown_atx_headings_become_paths_and_the_first_h1_is_the_title(sample_markdown: bytes) -> None:
    doc = parse_document("acme/ops.md", sample_markdown)
    assert doc.source_type == "markdown"
    assert doc.title == "Operations guide"
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        ((), "How to run the service."),
        (("Install",), "Run the installer, then check the logs."),
        (("Upgrade",), "Stop the service before upgrading."),
        (("Upgrade", "Rollback"), "Restore the previous release from backup."),
    ]


def test_markdown_setext_headings_and_front_matter_title() -> None:
    data = make_markdown(
        [(1, "Guide", ["Intro."]), (2, "Setup", ["Do this."]), (3, "Detail", ["Fine print."])],
        title="Front matter title",
        front_matter=True,
        setext=True,
    )
    doc = parse_document("acme/guide.markdown", data)
    assert doc.title == "Front matter title"
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        (("Guide",), "Intro."),
        (("Guide", "Setup"), "Do this."),
        (("Guide", "Setup", "Detail"), "Fine print."),
    ]


def test_markdown_code_fences_keep_lines_and_hide_headings_inside_them() -> None:
    source = textwrap.dedent(
        """\
        # Tool

        ## Usage ##

        Run it like this:

        ```bash
        # not a heading
        tool --flag   value
        ```

        See [the docs](https://example.com/docs) and ![diagram](img.png).

        - first item
        - second item

        ---

        After the rule.
        """
    )
    doc = parse_document("acme/tool.md", source.encode())
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        (("Usage",), "Run it like this:"),
        (("Usage",), "# not a heading\ntool --flag value"),
        (("Usage",), "See the docs and diagram."),
        (("Usage",), "- first item\n- second item"),
        (("Usage",), "After the rule."),
    ]


def test_markdown_wrapped_paragraph_lines_are_joined() -> None:
    doc = parse_document("acme/wrap.md", b"First line\nsecond line\n\nNext paragraph\n")
    assert _texts(doc) == ["First line second line", "Next paragraph"]


# --- plain text and decoding -------------------------------------------------------------------------
def test_text_paragraphs_split_on_blank_lines_and_lines_are_joined() -> None:
    data = (
        b"First paragraph\r\ncontinues here.\r\n\r\n  \r\nSecond   paragraph.\n\n\n\fThird after a form feed."
    )
    doc = parse_document("acme/notes_2024.txt", data)
    assert doc.source_type == "text"
    assert doc.title == "notes 2024"
    assert _texts(doc) == ["First paragraph continues here.", "Second paragraph.", "Third after a form feed."]
    assert all(block.section_path == () and block.page is None for block in doc.blocks)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (make_text(LATIN1_SAMPLE, "latin-1"), LATIN1_SAMPLE),
        (make_text(CP1252_SAMPLE, "cp1252"), CP1252_SAMPLE),
        (make_text(UTF16_SAMPLE, "utf-16-le", bom=True), UTF16_SAMPLE),
        (make_text(UTF16_SAMPLE, "utf-16-be", bom=True), UTF16_SAMPLE),
        (make_text(UTF16_SAMPLE, "utf-16-le"), UTF16_SAMPLE),
        (make_text(UTF16_SAMPLE, "utf-16-be"), UTF16_SAMPLE),
        (make_text(UTF16_SAMPLE, "utf-8", bom=True), UTF16_SAMPLE),
        (UTF16_SAMPLE.encode("utf-32"), UTF16_SAMPLE),
    ],
)
def test_text_in_other_encodings_is_decoded_not_garbled(data: bytes, expected: str) -> None:
    assert _texts(parse_document("acme/encoded.txt", data)) == [expected]


def test_decoder_reports_which_encoding_it_used() -> None:
    assert decode_text("naïve".encode()).encoding == "utf-8"
    assert decode_text("naïve".encode("latin-1")).encoding == "cp1252"
    assert decode_text(b"caf\xe9 \x81").encoding == "latin-1"  # 0x81 is undefined in cp1252
    assert decode_text("text".encode("utf-16-le")).encoding == "utf-16-le"
    assert decode_text("caf\u00e9".encode("cp1252"), "iso-8859-15").encoding == "iso-8859-15"
    assert decode_text(b"caf\xe9", "no-such-codec").encoding == "cp1252"


@pytest.mark.parametrize("key", ["acme/binary.txt", "acme/binary.md", "acme/binary.html"])
def test_binary_bytes_named_as_text_are_unsupported(key: str) -> None:
    with pytest.raises(UnsupportedDocument, match="binary"):
        parse_document(key, make_binary())


def test_binary_without_nul_bytes_is_caught_by_its_control_characters() -> None:
    data = bytes(range(1, 32)) * 50 + b"some letters"
    assert binary_reason(decode_text(data).text) is not None
    with pytest.raises(UnsupportedDocument, match="control characters"):
        parse_document("acme/controls.txt", data)


def test_text_with_a_few_stray_control_characters_is_still_text() -> None:
    data = ("A log line\x1b[0m with an escape code.\n" * 20 + "\x1a").encode()
    assert "escape code" in _all_text(parse_document("acme/log.txt", data))


def test_whitespace_only_text_is_empty() -> None:
    with pytest.raises(EmptyDocument):
        parse_document("acme/blank.txt", b" \n\t\n\n  ")


# --- HTML --------------------------------------------------------------------------------------------
def test_html_headings_become_paths_and_scripts_styles_navigation_are_dropped(sample_html: bytes) -> None:
    doc = parse_document("acme/release.html", sample_html)
    assert doc.source_type == "html"
    assert doc.title == "Release notes"
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        ((), "What changed in this release."),
        (("Search",), "Hybrid search now fuses dense and sparse results."),
        (("Search", "Filters"), "Metadata filters apply before ranking."),
        (("Ingest",), "DOCX tables are kept as text rows."),
    ]
    text = _all_text(doc).lower()
    for marker in HTML_NOISE_MARKERS:
        assert marker not in text


def test_html_title_falls_back_to_first_h1_and_article_header_is_kept() -> None:
    html = b"""<html><body><nav>Menu</nav><article><header><h1>Article heading</h1>
    <p class="byline">By the team</p></header><p>Body <b>bold</b> and <a href="#">link</a>.</p>
    <table><caption>Prices</caption><tr><th>Item</th><th>Cost</th></tr>
    <tr><td>Tea</td><td>2</td></tr></table>
    <pre>line one
        line two</pre><div style="display: none">invisible</div>
    <p>Line<br>break</p></article></body></html>"""
    doc = parse_document("acme/article.htm", html)
    assert doc.title == "Article heading"
    assert _texts(doc) == [
        "By the team",
        "Body bold and link.",
        "Prices\nColumns: Item | Cost\nItem: Tea | Cost: 2",  # a table block: each row names its columns
        "line one\nline two",
        "Line break",
    ]


def test_html_header_row_of_th_cells_between_empty_td_spacers_is_a_header() -> None:
    # Given a table as Texinfo writes its index: header cells <th>, spacer cells empty <td>
    html = b"""<html><body><h1>Index</h1><table>
    <tr><td></td><th>Index Entry</th><td>&nbsp;</td><th>Section</th></tr>
    <tr><td></td><td>ABI</td><td>&nbsp;</td><td>Introduction</td></tr>
    <tr><td></td><td>closures</td><td>&nbsp;</td><td>The Closure API</td></tr></table></body></html>"""
    # When it is parsed
    [table] = [block.table for block in parse_document("acme/index.html", html).blocks if block.table]
    # Then its first row names the columns
    assert table.header == ("Index Entry", "Section")
    assert table.rows == (("ABI", "Introduction"), ("closures", "The Closure API"))


def test_html_one_cell_table_is_read_as_the_content_it_frames() -> None:
    # Given a page as DocBook writes one: a code listing framed by a one-cell table, and a table of
    # values inside another one-cell frame
    html = b"""<html><body><h1>Properties</h1>
    <table border="0"><tr><td><pre>  Property   Type
  family     String
  size       Double</pre></td></tr></table>
    <table><tr><td><table><tr><th>Name</th><th>Value</th></tr><tr><td>MATCH</td><td>1</td></tr></table>
    </td></tr></table></body></html>"""
    # When it is parsed
    doc = parse_document("acme/props.html", html)
    # Then the listing keeps its lines, and the framed table is a table of its own
    assert [block.text for block in doc.blocks if block.table is None] == [
        "Property Type\nfamily String\nsize Double"
    ]
    [table] = [block.table for block in doc.blocks if block.table is not None]
    assert table.header == ("Name", "Value") and table.rows == (("MATCH", "1"),)


def test_html_meta_charset_is_honoured_for_legacy_encodings() -> None:
    data = make_html("Caf\u00e9", [(1, "Men\u00fc", [CP1252_SAMPLE])], noise=False, encoding="windows-1252")
    doc = parse_document("acme/legacy.html", data)
    assert doc.title == "Caf\u00e9"
    assert _texts(doc) == [CP1252_SAMPLE]
    assert doc.blocks[0].section_path == ("Men\u00fc",)


def test_html_in_utf16_with_bom_parses() -> None:
    data = b"\xff\xfe" + make_html(
        "Wide", [(2, "Part", ["Wide characters \u00e9\u00e8."])], encoding="utf-16-le"
    )
    assert _texts(parse_document("acme/wide.html", data)) == ["Wide characters \u00e9\u00e8."]


def test_html_with_xml_declaration_and_unclosed_tags_still_parses() -> None:
    data = b'<?xml version="1.0" encoding="UTF-8"?><html><body><p>Unclosed <b>bold<p>Next <i>para'
    assert _texts(parse_document("acme/messy.html", data)) == ["Unclosed bold", "Next para"]


@pytest.mark.parametrize(
    "data", [b"<html></html>", b"   \n ", b"<html><body><script>x()</script></body></html>"]
)
def test_html_without_visible_text_is_empty(data: bytes) -> None:
    with pytest.raises(EmptyDocument):
        parse_document("acme/blank.html", data)


# --- the shared bad-input corpus ---------------------------------------------------------------------
def test_every_bad_input_gets_its_expected_outcome(bad_inputs: list[BadInput]) -> None:
    for bad in bad_inputs:
        if bad.expected is None:
            doc = parse_document(bad.key, bad.data)
            assert doc.blocks, bad.name
            continue
        with pytest.raises(bad.expected) as caught:
            parse_document(bad.key, bad.data)
        _assert_one_line_reason(caught.value)


# --- property tests: nothing but DocumentError escapes ----------------------------------------------
_KEYS = [
    "a/x.pdf",
    "a/x.docx",
    "a/x.md",
    "a/x.txt",
    "a/x.html",
    "a/x.xlsx",
    "a/x.pptx",
    "a/x.epub",
    "a/x.csv",
]
_KEYS += ["a/x.rst", "a/x.png", "a/noext"]
_PREFIXES = [b"", b"%PDF-1.7\n", b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", b"\xff\xfe", b"<html>"]
_FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_or_document_error(key: str, data: bytes) -> None:
    try:
        doc = parse_document(key, data)
    except DocumentError as error:
        _assert_one_line_reason(error)
        return
    # A parsed document always has a title and non-empty, whitespace-normalised blocks
    assert doc.title
    assert doc.blocks
    for block in doc.blocks:
        assert block.text and block.text == block.text.strip()
        assert "  " not in block.text


@_FUZZ
@given(key=st.sampled_from(_KEYS), prefix=st.sampled_from(_PREFIXES), body=st.binary(max_size=3000))
def test_random_bytes_never_raise_anything_but_document_errors(key: str, prefix: bytes, body: bytes) -> None:
    _parse_or_document_error(key, prefix + body)


@_FUZZ
@given(key=st.sampled_from(["a/x.md", "a/x.txt", "a/x.html"]), text=st.text(max_size=2000))
def test_random_text_never_raises_anything_but_document_errors(key: str, text: str) -> None:
    _parse_or_document_error(key, text.encode("utf-8", "surrogatepass"))


_REAL_FILES = {
    "a/x.pdf": make_pdf(SAMPLE_PDF_PAGES, title="T", outline=SAMPLE_PDF_OUTLINE),
    "a/y.docx": make_docx([DocxHeading("H", 1), DocxParagraph("Body text."), DocxTable([["a", "b"]])]),
    "a/z.html": make_html("T", [(1, "H", ["Paragraph."])]),
}


@_FUZZ
@given(
    key=st.sampled_from(sorted(_REAL_FILES)),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.floats(0.05, 1)),
)
def test_damaged_real_files_never_raise_anything_but_document_errors(
    key: str, edits: list[tuple[float, int]], cut: float | None
) -> None:
    # Given a real file with a few bytes overwritten and maybe its end cut off
    data = bytearray(_REAL_FILES[key])
    for position, value in edits:
        data[int(position * len(data))] = value
    if cut is not None:
        data = data[: max(1, int(cut * len(data)))]
    _parse_or_document_error(key, bytes(data))


def test_ascii_only_utf16_without_bom_is_text_not_binary() -> None:
    # NUL bytes are valid UTF-8, so this must be recognised by its NUL pattern before UTF-8 is tried
    for encoding in ("utf-16-le", "utf-16-be"):
        data = make_text("Plain ASCII notes.\n\nSecond paragraph.", encoding)
        assert _texts(parse_document("acme/ascii16.txt", data)) == ["Plain ASCII notes.", "Second paragraph."]


def test_docx_with_a_damaged_central_directory_is_corrupt() -> None:
    # Given a DOCX whose central directory claims a zip version Python cannot extract (zipfile raises
    # NotImplementedError for it, found by fuzzing)
    data = bytearray(make_docx([DocxParagraph("Text.")]))
    central = data.find(b"PK\x01\x02")
    data[central + 6 : central + 8] = (200).to_bytes(2, "little")
    with pytest.raises(CorruptDocument, match="zip container is unreadable"):
        parse_document("acme/damaged.docx", bytes(data))


def test_files_over_the_object_size_limit_are_oversized_and_the_limit_is_configurable() -> None:
    data = b"Some text. " * 200
    with pytest.raises(OversizedDocument, match="limit 1000"):
        parse_document("acme/big.txt", data, IngestSettings(max_object_bytes=1000))
    assert parse_document("acme/big.txt", data, IngestSettings(max_object_bytes=len(data))).blocks


@pytest.mark.slow
def test_a_50_mb_text_file_is_oversized_by_default_and_parses_when_allowed() -> None:
    from tests.support.documents import bad_input_corpus

    (large,) = [bad for bad in bad_input_corpus(include_large=True) if bad.name == "50 MB text"]
    with pytest.raises(OversizedDocument):
        parse_document(large.key, large.data)
    doc = parse_document(large.key, large.data, IngestSettings(max_object_bytes=60_000_000))
    assert sum(len(block.text) for block in doc.blocks) > 45_000_000


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
