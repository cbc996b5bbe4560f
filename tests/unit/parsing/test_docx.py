"""DOCX into blocks: headings as section paths, tables as rows, titles, and zip and XML bombs refused
before anything is inflated or built."""

from __future__ import annotations

import io
import zipfile

import pytest
from lxml import etree

from tests.support.documents import (
    DocxHeading,
    DocxParagraph,
    DocxTable,
    make_docx,
    make_docx_paragraph_bomb,
    make_docx_zip_bomb,
)
from tests.support.samples import assert_one_line_reason, block_texts
from winnow.errors import CorruptDocument, EmptyDocument, OversizedDocument
from winnow.parsing import parse_document
from winnow.parsing.docx import _count_start_tags
from winnow.settings import IngestSettings


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
    assert_one_line_reason(caught.value)


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
    assert block_texts(parse_document("acme/ratio.docx", bomb, lenient)) == ["Looks harmless."]


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
    assert_one_line_reason(caught.value)


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


def test_docx_with_a_damaged_central_directory_is_corrupt() -> None:
    # Given a DOCX whose central directory claims a zip version Python cannot extract (zipfile raises
    # NotImplementedError for it, found by fuzzing)
    data = bytearray(make_docx([DocxParagraph("Text.")]))
    central = data.find(b"PK\x01\x02")
    data[central + 6 : central + 8] = (200).to_bytes(2, "little")
    with pytest.raises(CorruptDocument, match="zip container is unreadable"):
        parse_document("acme/damaged.docx", bytes(data))


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


def _code_sample_docx() -> bytes:
    """A runbook as Word users write one: a sample file in Courier New with manual line breaks, and
    one in a custom "Code Block" style (Consolas, based on Normal), a paragraph per line."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    document.add_heading("Agent configuration", 1)
    document.add_paragraph("The agent reads pgsnap.conf. A typical file:")
    sample = document.add_paragraph()
    lines = ["[backup]", 'schedule = "02:30"', "retention_days = 35", "compress = zstd"]
    for number, line in enumerate(lines):
        run = sample.add_run(line)
        run.font.name = "Courier New"
        if number < len(lines) - 1:
            run.add_break()
    document.add_paragraph("A manual break in prose\nis still running text.")
    style = document.styles.add_style("Code Block", WD_STYLE_TYPE.PARAGRAPH)
    style.base_style = document.styles["Normal"]
    style.font.name = "Consolas"
    for line in ["[notify]", "", '  on_failure = "dba@example.org"']:
        document.add_paragraph(line, style="Code Block")
    document.add_paragraph("Restart the agent after a change.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_monospaced_paragraphs_keep_their_lines_and_indentation() -> None:
    doc = parse_document("acme/runbook.docx", _code_sample_docx())
    assert block_texts(doc) == [
        "The agent reads pgsnap.conf. A typical file:",
        '[backup]\nschedule = "02:30"\nretention_days = 35\ncompress = zstd',
        "A manual break in prose is still running text.",
        '[notify]\n\n  on_failure = "dba@example.org"',
        "Restart the agent after a change.",
    ]


def test_docx_code_sample_keeps_its_lines_in_the_passage() -> None:
    from winnow.text.chunking import chunk_document

    chunks = chunk_document(parse_document("acme/runbook.docx", _code_sample_docx()))
    text = "\n\n".join(chunk.text for chunk in chunks)
    assert 'schedule = "02:30"\nretention_days = 35\ncompress = zstd' in text


def test_docx_list_items_carry_the_numbers_word_draws_and_stay_with_their_introduction() -> None:
    import docx

    document = docx.Document()
    document.add_heading("Restoring a database", 1)
    document.add_paragraph("To restore one database into the recovery cluster:")
    for step in ["List the snapshots.", "Run pgsnap restore.", "Check the row counts."]:
        document.add_paragraph(step, style="List Number")
    document.add_paragraph("Before you start, check:")
    for check in ["the disk has room", "nobody else is restoring"]:
        document.add_paragraph(check, style="List Bullet")
    document.add_paragraph("Tell the requester when it is done.")
    out = io.BytesIO()
    document.save(out)
    doc = parse_document("acme/runbook.docx", out.getvalue())
    # Then each item reads as Word shows it, and a list is one block led by its introduction
    assert [(block.text, block.head) for block in doc.blocks] == [
        (
            "To restore one database into the recovery cluster:\n"
            "1. List the snapshots.\n2. Run pgsnap restore.\n3. Check the row counts.",
            "To restore one database into the recovery cluster:",
        ),
        (
            "Before you start, check:\n\u2022 the disk has room\n\u2022 nobody else is restoring",
            "Before you start, check:",
        ),
        ("Tell the requester when it is done.", ""),
    ]


def test_docx_nested_list_levels_count_as_word_counts_them() -> None:
    import docx
    from docx.oxml import parse_xml

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    document = docx.Document()
    numbering = document.part.numbering_part.element
    numbering.insert(
        0,
        parse_xml(
            f'<w:abstractNum {w} w:abstractNumId="90">'
            '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
            '<w:lvlText w:val="%1."/></w:lvl>'
            '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/>'
            '<w:lvlText w:val="%2)"/></w:lvl>'
            "</w:abstractNum>"
        ),
    )
    numbering.append(parse_xml(f'<w:num {w} w:numId="90"><w:abstractNumId w:val="90"/></w:num>'))
    document.add_paragraph("Do this, in order:")
    for level, text in [
        (0, "Stop the service."),
        (1, "drain the queue"),
        (1, "wait"),
        (0, "Upgrade."),
        (1, "check"),
    ]:
        paragraph = document.add_paragraph(text)
        paragraph._p.get_or_add_pPr().append(
            parse_xml(f'<w:numPr {w}><w:ilvl w:val="{level}"/><w:numId w:val="90"/></w:numPr>')
        )
    out = io.BytesIO()
    document.save(out)
    [listing] = parse_document("acme/upgrade.docx", out.getvalue()).blocks
    # Then a deeper level restarts after each item above it, in its own format
    assert listing.text == (
        "Do this, in order:\n1. Stop the service.\na) drain the queue\nb) wait\n2. Upgrade.\na) check"
    )
