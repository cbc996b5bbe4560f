"""Bad files: the shared bad-input corpus gets its expected outcomes, nothing but a DocumentError
escapes a parse of random or damaged bytes, and size limits hold."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.documents import (
    SAMPLE_PDF_OUTLINE,
    SAMPLE_PDF_PAGES,
    BadInput,
    DocxHeading,
    DocxParagraph,
    DocxTable,
    make_docx,
    make_html,
    make_large_text,
    make_pdf,
)
from tests.support.samples import assert_one_line_reason
from winnow.errors import DocumentError, OversizedDocument
from winnow.parsing import parse_document
from winnow.settings import IngestSettings


def test_every_bad_input_gets_its_expected_outcome(bad_inputs: list[BadInput]) -> None:
    for bad in bad_inputs:
        if bad.expected is None:
            doc = parse_document(bad.key, bad.data)
            assert doc.blocks, bad.name
            continue
        with pytest.raises(bad.expected) as caught:
            parse_document(bad.key, bad.data)
        assert_one_line_reason(caught.value)


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
        assert_one_line_reason(error)
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


def test_files_over_the_object_size_limit_are_oversized_and_the_limit_is_configurable() -> None:
    data = b"Some text. " * 200
    with pytest.raises(OversizedDocument, match="limit 1000"):
        parse_document("acme/big.txt", data, IngestSettings(max_object_bytes=1000))
    assert parse_document("acme/big.txt", data, IngestSettings(max_object_bytes=len(data))).blocks


@pytest.mark.slow
def test_a_50_mb_text_file_is_oversized_by_default_and_parses_when_allowed() -> None:
    # Given 50 MB of prose, twice the default object size limit
    data = make_large_text(50_000_000)
    # Then it is refused by default, and read whole when the limit allows it
    with pytest.raises(OversizedDocument):
        parse_document("acme/large.txt", data)
    doc = parse_document("acme/large.txt", data, IngestSettings(max_object_bytes=60_000_000))
    assert sum(len(block.text) for block in doc.blocks) > 45_000_000
