"""Passages that read as passages in manual pages and info manuals (issue 46): an exit-status list stays
with its introduction, a long option entry keeps the option's name in every piece, and a sample file
keeps its lines. The fixtures reproduce wget(1) and wget.info as ``man -P cat`` and makeinfo lay them out."""

from __future__ import annotations

from winnow.models import Chunk
from winnow.parsing import parse_document
from winnow.settings import ChunkingSettings
from winnow.text.chunking import chunk_document

SMALL = ChunkingSettings(target_chars=300, overlap_chars=60, min_chars=80)

_FILLER = """       Wget is a free utility for non-interactive download of files from the
       Web.  It supports HTTP, HTTPS, and FTP protocols, as well as retrieval
       through HTTP proxies.  Wget is non-interactive, meaning that it can work
       in the background, while the user is not logged on.  This allows you to
       start a retrieval and disconnect from the system, letting Wget finish
       the work.
"""

WGET_MAN = f"""WGET(1)                            GNU Wget                            WGET(1)

NAME
       Wget - The non-interactive network downloader.

DESCRIPTION
{_FILLER}
{_FILLER}
OPTIONS
   Download Options
       -t number
       --tries=number
           Set number of tries to number.  Specify 0 or inf for infinite
           retrying.  The default is to retry 20 times, with the exception of
           fatal errors like "connection refused" or "not found" (404), which
           are not retried.

       -O file
       --output-document=file
           The documents will not be written to the appropriate files, but all
           will be concatenated together and written to file.  If - is used as
           file, documents will be printed to standard output, disabling link
           conversion.  (Use ./- to print to a file literally named -.)

           Use of -O is not intended to mean simply "use the name file instead
           of the one in the URL;" rather, it is analogous to shell
           redirection: wget -O file http://foo is intended to work like wget
           -O - http://foo > file; file will be truncated immediately, and all
           downloaded content will be written there.

           For this reason, -N (for timestamp-checking) is not supported in
           combination with -O: since file is always newly created, it will
           always have a very new timestamp. A warning will be issued if this
           combination is used.

EXIT STATUS
       Wget may return one of several error codes if it encounters problems.

       0   No problems occurred.

       1   Generic error code.

       2   Parse error---for instance, when parsing command-line options, the
           .wgetrc or .netrc...

       3   File I/O error.

       4   Network failure.

       5   SSL verification failure.

       6   Username/password authentication failure.

       7   Protocol errors.

       8   Server issued an error response.

       With the exceptions of 0 and 1, the lower-numbered exit codes take
       precedence over higher-numbered ones, when multiple types of errors are
       encountered.

GNU Wget 1.21.3                    2024-01-01                            WGET(1)
"""

WGET_INFO = """This is wget.info, produced by makeinfo version 6.8 from wget.texi.

\x1f
File: wget.info,  Node: Sample Wgetrc,  Prev: Wgetrc Commands,  Up: Startup File

6.4 Sample Wgetrc
=================

This is the sample initialization file, as given in the distribution.
It is divided in two section--one for global usage (suitable for global
startup file), and one for local usage (suitable for '$HOME/.wgetrc').
Be careful about the things you change.

     ###
     ### Sample Wget initialization file .wgetrc
     ###

     ##
     ## Global settings (useful for setting up in /etc/wgetrc).
     ## Think well before you change them, since they may reduce wget's
     ## functionality, and make it behave contrary to the documentation:
     ##

     # You can lower (or raise) the default number of retries when
     # downloading a file (default is 20).
     #tries = 20

     # Lowering the maximum depth of the recursive retrieval is handy to
     # prevent newbies from going too "deep" when they unwittingly start
     # the recursive retrieval.  The default is 5.
     #reclevel = 5

   Note that almost all the lines are commented out.  For a command to
have any effect, you must remove the '#' character at the beginning of
its line.
"""


def _chunks(name: str, text: str, settings: ChunkingSettings = SMALL) -> list[Chunk]:
    return chunk_document(parse_document(f"acme/{name}", text.encode()), settings)


def test_an_exit_status_list_is_one_passage_with_its_introduction() -> None:
    # Given wget(1)'s EXIT STATUS list, whose items were split over two passages (the top one gave
    # the wrong status)
    chunks = [
        c for c in _chunks("wget.1.txt", WGET_MAN, ChunkingSettings()) if c.section_path == ("EXIT STATUS",)
    ]
    # Then the introduction and every status are in one passage, one status a line
    [listed] = [chunk for chunk in chunks if "Generic error code." in chunk.text]
    assert listed.text.startswith("Wget may return one of several error codes if it encounters problems.\n")
    for status in range(9):
        assert f"\n{status} " in listed.text
    assert "8 Server issued an error response." in listed.text


def test_a_long_list_leads_every_piece_with_its_introduction() -> None:
    tight = ChunkingSettings(target_chars=240, overlap_chars=0, min_chars=20)
    chunks = [c for c in _chunks("wget.1.txt", WGET_MAN, tight) if c.section_path == ("EXIT STATUS",)]
    pieces = [chunk for chunk in chunks if "error" in chunk.text and "precedence" not in chunk.text]
    assert len(pieces) >= 2
    intro = "Wget may return one of several error codes if it encounters problems."
    assert all(piece.text.startswith(intro + "\n") for piece in pieces)
    statuses = "\n".join(piece.text for piece in pieces)
    assert all(f"\n{status} " in statuses for status in range(9))


def test_a_long_option_entry_keeps_the_options_name_in_every_piece() -> None:
    # Given wget's -O entry, longer than a passage: its later pieces lacked the option's name
    chunks = [
        chunk
        for chunk in _chunks("wget.1.txt", WGET_MAN)
        if "timestamp" in chunk.text or "documents" in chunk.text
    ]
    pieces = [chunk for chunk in chunks if "-O file" in chunk.text or "truncated" in chunk.text]
    # Then every piece starts with the option's name, on a line of its own
    assert len(pieces) >= 2
    assert all(piece.text.startswith("-O file --output-document=file\n") for piece in pieces)
    assert all(len(piece.text) <= SMALL.target_chars for piece in pieces)


def test_the_wgetrc_sample_keeps_its_lines() -> None:
    # Given the sample wgetrc of wget's info manual, which read "## ## Global settings ... #tries = 20"
    chunks = _chunks("wget.info", WGET_INFO, ChunkingSettings())
    text = "\n\n".join(chunk.text for chunk in chunks)
    # Then each line of the sample is a line of the passage, its comments and settings apart
    assert "##\n## Global settings (useful for setting up in /etc/wgetrc).\n## Think well" in text
    assert "# downloading a file (default is 20).\n#tries = 20" in text
    assert "###\n### Sample Wget initialization file .wgetrc\n###" in text
    # and the prose around it is still prose, its lines joined
    assert "This is the sample initialization file, as given in the distribution. It is divided" in text
    assert "For a command to have any effect, you must remove" in text


def test_an_example_inside_an_info_entry_keeps_its_lines_and_indentation() -> None:
    node = """\x1f
File: wget.info,  Node: Logging,  Next: Download,  Up: Invoking

2.4 Logging Options
===================

'-o LOGFILE'
     Log all messages to LOGFILE.

          wget -o log.txt \\
              https://example.com/
          wget -a log.txt URL

Back at the margin.
"""
    doc = parse_document("acme/wget.info", node.encode())
    assert [(block.text, block.entry, block.head) for block in doc.blocks] == [
        (
            "'-o LOGFILE' Log all messages to LOGFILE.\n"
            "     wget -o log.txt \\\n         https://example.com/\n     wget -a log.txt URL",
            True,
            "'-o LOGFILE'",
        ),
        ("Back at the margin.", False, ""),
    ]


def test_filled_prose_with_short_lines_is_not_mistaken_for_a_sample() -> None:
    # Given a man page's filled paragraph, and a term's lines over its description
    doc = parse_document("acme/wget.1.txt", WGET_MAN.encode())
    [tries] = [block for block in doc.blocks if "--tries=number" in block.text]
    assert "\n" not in tries.text
    assert tries.head == "-t number --tries=number"
    assert not any("\n" in block.text for block in doc.blocks if block.section_path == ("DESCRIPTION",))
