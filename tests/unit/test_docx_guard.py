"""A DOCX whose XML would build a tree too big to parse is refused before python-docx builds it."""

from __future__ import annotations

import io
import zipfile

import pytest
from lxml import etree

from tests.support.documents import DocxHeading, DocxParagraph, make_docx, make_docx_paragraph_bomb
from winnow.errors import OversizedDocument
from winnow.parsing import parse_document
from winnow.parsing.docx import _count_start_tags
from winnow.settings import IngestSettings


@pytest.fixture(scope="module")
def paragraph_bomb() -> bytes:
    return make_docx_paragraph_bomb()


def test_a_paragraph_bomb_under_the_ratio_rule_is_refused_before_its_tree_is_built(
    paragraph_bomb: bytes,
) -> None:
    # Given a 1.1 MB DOCX whose document.xml inflates to about 100 MB of tiny paragraphs, under the
    # compression-ratio rule and under the total uncompressed limit
    settings = IngestSettings()
    with zipfile.ZipFile(io.BytesIO(paragraph_bomb)) as archive:
        member = archive.getinfo("word/document.xml")
        total = sum(info.file_size for info in archive.infolist())
    assert len(paragraph_bomb) < 1_500_000 and member.file_size > 100_000_000
    assert member.file_size / member.compress_size < settings.max_compression_ratio
    assert total < settings.max_uncompressed_bytes
    # When it is parsed
    with pytest.raises(OversizedDocument) as raised:
        parse_document("acme/bomb.docx", paragraph_bomb, settings)
    # Then it is refused from the part's declared size, with a one-line reason
    expected = f"DOCX part word/document.xml is {member.file_size} bytes of XML (limit {64 * 1024 * 1024})"
    assert str(raised.value) == expected


def test_a_paragraph_bomb_within_the_part_size_limit_is_refused_for_its_element_count(
    paragraph_bomb: bytes,
) -> None:
    # Given a part-size limit raised above the bomb's 103 MB of XML
    settings = IngestSettings(max_docx_xml_part_bytes=256 * 1024 * 1024)
    # When the bomb is parsed
    with pytest.raises(OversizedDocument) as raised:
        parse_document("acme/bomb.docx", paragraph_bomb, settings)
    # Then its three million paragraphs are counted (streamed, no tree) and refused
    assert str(raised.value) == "DOCX has more than 1500000 XML elements (limit 1500000)"


def test_a_real_document_within_the_element_limit_is_parsed_and_one_over_it_is_refused() -> None:
    # Given a real report of 200 paragraphs under two headings
    body = [DocxHeading("Results", 1)] + [DocxParagraph(f"Paragraph {n} of the results.") for n in range(100)]
    body += [DocxHeading("Method", 1)] + [DocxParagraph(f"Paragraph {n} of the method.") for n in range(100)]
    data = make_docx(body)
    # When it is parsed with the default limits
    document = parse_document("acme/report.docx", data)
    # Then every paragraph is there
    assert sum("of the" in block.text for block in document.blocks) == 200
    # and with a limit below its element count it is refused, not half parsed
    with pytest.raises(OversizedDocument, match="more than 300 XML elements"):
        parse_document("acme/report.docx", data, IngestSettings(max_docx_xml_elements=300))


@pytest.mark.parametrize("read_size", [1, 2, 3, 7, 64, 4096])
def test_start_tags_are_counted_exactly_whatever_the_read_boundaries(read_size: int) -> None:
    # Given a real document.xml and reads of awkward sizes, so "</" is split across reads
    with zipfile.ZipFile(io.BytesIO(make_docx([DocxHeading("T", 1), DocxParagraph("x")]))) as archive:
        xml = archive.read("word/document.xml")
    expected = sum(1 for _ in etree.fromstring(xml).iter()) + xml.count(b"<?")  # elements + the declaration

    class Chunked(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            return super().read(read_size)

    # When its start tags are counted
    # Then the count is the element count (plus the XML declaration), at every read size
    assert _count_start_tags(Chunked(xml), 10**9) == expected
