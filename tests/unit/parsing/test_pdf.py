"""PDFs into blocks: pages, bookmark sections, joined lines, and encrypted, scanned or broken files
refused with the right reason."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.documents import (
    make_corrupt_pdf,
    make_encrypted_pdf,
    make_pdf,
    make_scanned_pdf,
    make_truncated_pdf,
)
from tests.support.samples import assert_one_line_reason, block_texts
from winnow.errors import CorruptDocument, EmptyDocument, EncryptedDocument
from winnow.parsing import parse_document

REPO_ROOT = Path(__file__).resolve().parents[3]


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
    assert block_texts(doc) == [long_paragraph, "A short closing paragraph."]
    assert all(block.page == 1 for block in doc.blocks)


def test_a_line_break_at_a_compound_words_own_hyphen_keeps_the_hyphen() -> None:

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
    from winnow.parsing.pdf_lines import join_lines

    assert join_lines(["an exam-", "ple of it"], frozenset({"royalty-free"})) == "an example of it"


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
    assert block_texts(parse_document("acme/junk.pdf", data)) == ["Still readable."]


def test_scanned_pdf_without_text_layer_is_empty_with_a_hint() -> None:
    with pytest.raises(EmptyDocument, match=r"no text layer \(scanned PDF\?\)"):
        parse_document("acme/scan.pdf", make_scanned_pdf())


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
def test_pdf_with_a_user_password_is_encrypted(algorithm: str) -> None:
    data = make_encrypted_pdf(["Secret plans."], user_password="s3cret", algorithm=algorithm)
    with pytest.raises(EncryptedDocument) as caught:
        parse_document("acme/locked.pdf", data)
    assert "password" in str(caught.value)
    assert_one_line_reason(caught.value)


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_pdf_with_only_an_owner_password_opens_with_the_empty_password(algorithm: str) -> None:
    data = make_encrypted_pdf(
        ["Printing is restricted, reading is not."], user_password="", algorithm=algorithm
    )
    assert block_texts(parse_document("acme/restricted.pdf", data)) == [
        "Printing is restricted, reading is not."
    ]


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
    assert_one_line_reason(caught.value)


def test_pdf_line_joining_undoes_hyphenation_only_before_a_lowercase_continuation() -> None:
    from winnow.parsing.pdf_lines import join_lines

    assert join_lines(["The exam-", "ple shows it"]) == "The example shows it"
    assert join_lines(["Covid-", "19 cases"]) == "Covid- 19 cases"
    assert join_lines(["Ends with Anglo-", "Saxon"]) == "Ends with Anglo- Saxon"
