"""Plain text into blocks: paragraphs, the headings READMEs draw, man pages and GNU info files as
they are saved, terminal codes removed, and legacy encodings decoded rather than garbled."""

from __future__ import annotations

import gzip
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.documents import CP1252_SAMPLE, LATIN1_SAMPLE, UTF16_SAMPLE, make_binary, make_text
from tests.support.samples import INFO_FILE, MAN_PAGE, all_text, block_texts, man_page, sections_by_text
from winnow.errors import CorruptDocument, EmptyDocument, OversizedDocument, UnsupportedDocument
from winnow.parsing import parse_document
from winnow.parsing.cleaning import strip_terminal_codes
from winnow.parsing.text_decoding import binary_reason, decode_text
from winnow.settings import IngestSettings


def test_text_paragraphs_split_on_blank_lines_and_lines_are_joined() -> None:
    data = (
        b"First paragraph\r\ncontinues here.\r\n\r\n  \r\nSecond   paragraph.\n\n\n\fThird after a form feed."
    )
    doc = parse_document("acme/notes_2024.txt", data)
    assert doc.source_type == "text"
    assert doc.title == "notes 2024"
    assert block_texts(doc) == [
        "First paragraph continues here.",
        "Second paragraph.",
        "Third after a form feed.",
    ]
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
    assert block_texts(parse_document("acme/encoded.txt", data)) == [expected]


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
    assert "escape code" in all_text(parse_document("acme/log.txt", data))


def test_whitespace_only_text_is_empty() -> None:
    with pytest.raises(EmptyDocument):
        parse_document("acme/blank.txt", b" \n\t\n\n  ")


def test_ascii_only_utf16_without_bom_is_text_not_binary() -> None:
    # NUL bytes are valid UTF-8, so this must be recognised by its NUL pattern before UTF-8 is tried
    for encoding in ("utf-16-le", "utf-16-be"):
        data = make_text("Plain ASCII notes.\n\nSecond paragraph.", encoding)
        assert block_texts(parse_document("acme/ascii16.txt", data)) == [
            "Plain ASCII notes.",
            "Second paragraph.",
        ]


def _sgr_bold(text: str) -> str:
    return f"\x1b[1m{text}\x1b[0m"


@pytest.mark.parametrize(
    "page", [MAN_PAGE, man_page(_sgr_bold), man_page(str)], ids=["overstrike", "ansi", "plain"]
)
def test_a_manual_page_saved_as_text_gets_its_sections_without_header_footer_or_hyphens(page: str) -> None:
    doc = parse_document("acme/grep.txt", page.encode())
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        (("NAME",), "grep, egrep - print lines that match patterns"),
        (("OPTIONS", "Generic Program Information"), "--help Output a usage message and exit."),
        (
            ("OPTIONS", "Pattern Syntax"),
            "-E, --extended-regexp Interpret PATTERNS as extended regular expressions, which can be located"
            " in a file.",
        ),
    ]


def test_an_option_whose_description_hangs_under_it_is_an_entry() -> None:
    # Given grep(1)'s layout: the flag line, then its description indented further, no blank line
    doc = parse_document("acme/grep.txt", MAN_PAGE.encode())
    # Then that paragraph is a definition-list entry; a one-line option with its text beside it is not
    assert [(block.text[:21], block.entry) for block in doc.blocks] == [
        ("grep, egrep - print l", False),
        ("--help Output a usage", False),
        ("-E, --extended-regexp", True),
    ]


def test_an_info_table_entry_keeps_its_later_paragraphs_and_example() -> None:
    # Given a texinfo @table as makeinfo writes it: terms at the margin, the description five in, a
    # second paragraph and an example deeper still
    node = """\x1f
File: wget.info,  Node: Logging,  Next: Download,  Up: Invoking

2.4 Logging Options
===================

'-o LOGFILE'
'--output-file=LOGFILE'
     Log all messages to LOGFILE.

     The messages are normally reported to standard error.

          wget -o log.txt URL

'-q'
     Turn off the output.

Back at the margin.
"""
    doc = parse_document("acme/wget.info", node.encode())
    # Then each entry is one block with all of its paragraphs, and the text after it is not
    assert [(block.text, block.entry) for block in doc.blocks] == [
        (
            "'-o LOGFILE' '--output-file=LOGFILE' Log all messages to LOGFILE.\n"
            "The messages are normally reported to standard error.\nwget -o log.txt URL",
            True,
        ),
        ("'-q' Turn off the output.", True),
        ("Back at the margin.", False),
    ]


def test_an_info_manual_whose_top_node_is_only_a_menu_is_titled_by_its_name() -> None:
    # Given bc.info's layout: the Top node holds a menu and no heading; the first heading is a chapter's
    manual = (
        "This is bc.info, produced by makeinfo version 6.7 from bc.texi.\n\n"
        "\x1f\nFile: bc.info,  Node: Top,  Next: Introduction,  Up: (dir)\n\n* Menu:\n\n* Introduction::\n\n"
        "\x1f\nFile: bc.info,  Node: Introduction,  Prev: Top,  Up: Top\n\n"
        "1 Introduction\n**************\n\n'bc' is a language that supports arbitrary precision numbers.\n"
    )
    doc = parse_document("acme/bc.info", manual.encode())
    # Then the manual's name is its title (what a citation shows), and the chapter stays its section
    assert doc.title == "bc"
    assert sections_by_text(doc) == {
        "'bc' is a language that supports arbitrary precision numbers.": ("1 Introduction",)
    }


def test_ordinary_info_paragraphs_after_a_one_line_paragraph_are_not_an_entry() -> None:
    # Given texinfo's layout: a paragraph's first line indented 3, a one-line paragraph before them
    node = (
        "\x1f\nFile: x.info,  Node: Intro,  Next: Use,  Up: Top\n\n1 Intro\n*******\n\n"
        "What does this mean?\n\n"
        "   Such an entry denotes a message with plural forms, that is, a\n"
        "message whose text depends on a number.\n\n"
        "   A second ordinary paragraph of the node.\n"
    )
    doc = parse_document("acme/x.info", node.encode())
    # Then they stay three plain paragraphs
    assert [(block.text[:20], block.entry) for block in doc.blocks] == [
        ("What does this mean?", False),
        ("Such an entry denote", False),
        ("A second ordinary pa", False),
    ]


def test_a_list_without_blank_lines_is_cut_where_a_line_returns_to_the_terms_depth() -> None:
    # Given groff's .PD 0 list (bash's Shell Variables): no blank line between the items
    page = (
        "FOO(1)                      User Commands                      FOO(1)\n\nENVIRONMENT\n"
        "       BASH_ENV\n              If set, read this file first.\n"
        "       CDPATH\n              The search path for the cd command.\n"
        "       HOME   The home directory.\n"
    )
    doc = parse_document("acme/foo.txt", page.encode())
    # Then each hanging item is its own entry, and the item written on one line is plain text
    assert [(block.text, block.entry) for block in doc.blocks] == [
        ("BASH_ENV If set, read this file first.", True),
        ("CDPATH The search path for the cd command.", True),
        ("HOME The home directory.", False),
    ]


def test_text_that_only_mentions_a_manual_page_is_plain_text() -> None:
    text = "See grep(1) for patterns.\nNOTES\n   indented line\n"
    doc = parse_document("acme/notes.txt", text.encode())
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        ((), "See grep(1) for patterns. NOTES indented line")
    ]


def test_a_gzipped_info_file_is_read_by_node_without_its_navigation() -> None:
    import gzip

    # Given grep.info.gz as /usr/share/info holds it
    doc = parse_document("acme/grep.info.gz", gzip.compress(INFO_FILE.encode()))
    # Then headings are sections, a node without a heading is named by its node, and nothing of the
    # node lines, menus, directory entry or tag table is indexed
    assert doc.title == "grep"
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        ((), "This manual is for grep, a pattern matching engine."),
        ((), "grep prints lines that contain a match."),
        (("1 Introduction",), "Given one or more patterns, grep searches input files for matches."),
        (("1 Introduction", "2.1.2 Matching Control"), "'-i' Ignore case distinctions."),
        (("Usage",), "Frequently asked questions about grep usage."),
    ]


def test_the_parts_of_a_split_info_manual_are_info_files_too() -> None:
    doc = parse_document("acme/find.info-1", INFO_FILE.encode())
    assert not any("Node:" in block.text or "Menu" in block.text for block in doc.blocks)


def test_gzip_is_inflated_within_the_object_limit_and_refused_when_it_is_not_one() -> None:
    import gzip

    from winnow.errors import UnsupportedDocument

    # A gzip bomb stops at the object size limit
    bomb = gzip.compress(b"a" * 2_000_000)
    with pytest.raises(OversizedDocument, match="gzip"):
        parse_document("acme/notes.txt.gz", bomb, IngestSettings(max_object_bytes=1_000_000))
    # A changelog.gz is text once inflated (no extension: sniffed)
    assert parse_document("acme/changelog.gz", gzip.compress(b"Fixed the parser.\n")).blocks[0].text == (
        "Fixed the parser."
    )
    with pytest.raises(UnsupportedDocument, match="not gzip"):
        parse_document("acme/notes.txt.gz", b"plain text")
    with pytest.raises(CorruptDocument, match="corrupt gzip"):
        parse_document("acme/notes.txt.gz", gzip.compress(b"some text to cut short")[:-12])
    with pytest.raises(UnsupportedDocument, match="archive"):
        parse_document("acme/src.tar.gz", gzip.compress(b"x" * 600))


README = """\
XZ Utils for Debian
===================

Contents:
 1. History
 2. Configuration

History
-------

XZ Utils should have been called LZMA Utils 4.42,
but it came too late.

=====================
Configuration
=====================

The memory usage of xz can vary.
---------------------------------
Set XZ_DEFAULTS in your environment.
"""


def test_a_readme_without_extension_gets_sections_from_its_underlined_headings() -> None:
    doc = parse_document("acme/README", README.encode())
    assert doc.title == "XZ Utils for Debian"
    assert [(block.section_path, block.text) for block in doc.blocks] == [
        ((), "Contents: 1. History 2. Configuration"),
        (("History",), "XZ Utils should have been called LZMA Utils 4.42, but it came too late."),
        (("Configuration",), "The memory usage of xz can vary. Set XZ_DEFAULTS in your environment."),
    ]


DEBIAN_CHANGELOG = """bash (5.2.15-2) unstable; urgency=medium

  * Remove one more pdf file without source. Closes: #1024598.

 -- Matthias Klose <doko@debian.org>  Mon, 02 Jan 2023 13:06:21 +0100

bash (5.2-3) unstable; urgency=medium

  * Apply upstream patches 003 - 015.
  * Enable all hardening flags (Christian Göttsche). Closes: #1021082.

 -- Matthias Klose <doko@debian.org>  Sat, 31 Dec 2022 11:32:01 +0100
"""


def test_a_debian_changelogs_entries_are_the_sections_of_their_items() -> None:
    # Given a changelog.Debian.gz as every Debian package ships one
    doc = parse_document("acme/changelog.Debian.gz", gzip.compress(DEBIAN_CHANGELOG.encode()))
    sections = sections_by_text(doc)
    # Then each item is filed under its version's entry, and the file keeps its name as title
    assert doc.title == "changelog.Debian"
    assert sections[
        "* Apply upstream patches 003 - 015. * Enable all hardening flags (Christian Göttsche)."
        " Closes: #1021082."
    ] == ("bash (5.2-3) unstable; urgency=medium",)
    assert sections["* Remove one more pdf file without source. Closes: #1024598."] == (
        "bash (5.2.15-2) unstable; urgency=medium",
    )


def test_a_heading_deep_inside_a_text_file_is_a_section_not_its_title() -> None:
    # Given a Debian copyright file: fields first, a licence's underlined name far below
    text = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nLicense: UFL-1.0\n"
    text += " ----------------\n UBUNTU FONT LICENCE\n ----------------\n .\n Preamble text.\n"
    doc = parse_document("acme/copyright", text.encode())
    assert doc.title == "copyright"
    assert doc.blocks[-1].section_path == ("UBUNTU FONT LICENCE",)


RUSSIAN = "Русский текст о погоде. Завтра в городе будет тёплый день и лёгкий ветер с юга.\n" * 12  # noqa: RUF001


JAPANESE = "日本語のテキストです。明日の天気は晴れで、南から穏やかな風が吹きます。\n" * 12


CHINESE = "这是中文文本。明天城里天气晴朗，南风轻拂，气温适中。\n" * 12  # noqa: RUF001


@pytest.mark.parametrize(
    ("text", "encoding"),
    [(RUSSIAN, "cp1251"), (RUSSIAN, "koi8-r"), (JAPANESE, "shift_jis"), (CHINESE, "gbk")],
)
def test_text_saved_in_a_legacy_encoding_of_another_script_is_read_not_garbled(
    text: str, encoding: str
) -> None:
    # Given a text file an older tool saved in its locale's encoding (not UTF-8, not Western)
    doc = parse_document("acme/notes.txt", text.encode(encoding))
    # Then its words are read as written (they were mojibake, or refused as "binary")
    assert doc.blocks[0].text.startswith(text.split("\n")[0])


def test_western_text_stays_western_and_random_bytes_stay_binary() -> None:
    import random

    from winnow.errors import UnsupportedDocument

    western = "Größere Änderungen für Übersicht, Straße und Café crème.\n" * 5
    assert parse_document("acme/de.txt", western.encode("cp1252")).blocks[0].text.startswith("Größere")
    generator = random.Random(7)
    with pytest.raises(UnsupportedDocument, match="binary"):
        parse_document("acme/noise.txt", bytes(generator.randrange(128, 256) for _ in range(4096)))


# A README of short Markdown headings: too few words for letter frequencies, so a detector's best guess
# was Mac Cyrillic (every capital a dash) or nothing (cp1252 mojibake, "Æóðíàë").
SHORT_HEADINGS = [
    "# Журнал\n\n## Понедельник\n\nбег\n\n## Вторник\n\nплавание\n\n## Среда\n\nотдых\n",  # noqa: RUF001
    "### Проект\n\nошибки\n\n# Люди\n\nплан\n\n# Цели\n\nрост\n",  # noqa: RUF001
    "### Среда запуск\n\n# Сад запуск\n\n## Сеть еда\n\n\nСеть кот журнал настройка расходы руководство.\n",  # noqa: RUF001
]


@pytest.mark.parametrize("encoding", ["cp1251", "koi8-r"])
@pytest.mark.parametrize("text", SHORT_HEADINGS)
def test_a_file_of_short_cyrillic_headings_is_read_as_cyrillic(text: str, encoding: str) -> None:
    # Given a Markdown file of short Russian headings saved in a legacy Cyrillic encoding
    doc = parse_document("acme/plan.md", text.encode(encoding))
    # Then its headings read as written
    headings = [part for block in doc.blocks for part in block.section_path] + [doc.title or ""]
    words = set(re.findall(r"\w+", " ".join(headings + [block.text for block in doc.blocks])))
    assert words and words <= set(re.findall(r"\w+", text))


def test_high_bytes_without_spaces_stay_binary_though_they_decode_as_cp1251() -> None:
    from winnow.errors import UnsupportedDocument

    generator = random.Random(11)
    noise = bytes(generator.choice([b for b in range(128, 256) if b != 0x98]) for _ in range(4096))
    with pytest.raises(UnsupportedDocument, match="binary"):
        parse_document("acme/noise.txt", noise)


def test_ansi_escapes_and_backspace_overstrike_are_removed() -> None:
    man = "N\bNA\bAM\bME\bE\n     ls - list \x1b[1mdirectory\x1b[0m contents, _\bs_\bo_\br_\bt_\be_\bd\n"
    doc = parse_document("acme/ls.txt", man.encode())
    assert [block.text for block in doc.blocks] == ["NAME ls - list directory contents, sorted"]


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789", min_size=1, max_size=8)


_CODE = st.sampled_from(
    ["\x1b[1m", "\x1b[0m", "\x1b[31;1m", "\x1b]8;;http://x\x07", "\x1b]8;;\x1b\\", "\x1b(B"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_WORD, st.lists(_CODE, max_size=2), st.booleans()), min_size=1, max_size=30))
def test_cleaning_keeps_every_word_and_adds_none(parts: list[tuple[str, list[str], bool]]) -> None:
    # Given words decorated with escape codes and, some of them, overstruck in bold
    source_words = [word for word, _, _ in parts]
    decorated = " ".join(
        "".join(codes) + ("".join(f"{c}\b{c}" for c in word) if bold else word) + "".join(codes)
        for word, codes, bold in parts
    )
    # When it is cleaned
    cleaned = strip_terminal_codes(decorated)
    # Then the words are exactly the source's words: none lost, none added
    assert cleaned.split() == source_words


def test_a_help2man_option_list_keeps_each_flag_with_its_description() -> None:
    # Given sed(1) as `man sed` renders it: each flag line, a blank line, then the description further in
    page = """SED(1)                           User Commands                          SED(1)

NAME
       sed - stream editor for filtering and transforming text

DESCRIPTION
       Sed is a stream editor.

       --follow-symlinks

              follow symlinks when processing in place

       -i[SUFFIX], --in-place[=SUFFIX]

              edit files in place (makes backup if SUFFIX supplied)

              The backup keeps the old contents.

       A closing remark.

       Another paragraph at the same depth.

GNU sed 4.9                       November 2022                          SED(1)
"""
    doc = parse_document("acme/sed.txt", page.encode())
    # Then a flag and its description (every paragraph of it) are one block, marked as an entry;
    # paragraphs at the same depth stay apart
    assert [block.entry for block in doc.blocks] == [False, False, True, True, False, False]
    assert block_texts(doc) == [
        "sed - stream editor for filtering and transforming text",
        "Sed is a stream editor.",
        "--follow-symlinks follow symlinks when processing in place",
        "-i[SUFFIX], --in-place[=SUFFIX] edit files in place (makes backup if SUFFIX supplied)\n"
        "The backup keeps the old contents.",
        "A closing remark.",
        "Another paragraph at the same depth.",
    ]
