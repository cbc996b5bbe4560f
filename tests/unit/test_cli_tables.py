"""``winnow search`` prints a table passage as a table: a header, a rule, one row a line with its cells
under their columns, within the terminal's 100 columns; too many columns for that, one block per row."""

from __future__ import annotations

from winnow.models import Table
from winnow.text.tables import read_rendered, table_pieces
from winnow_local.cli.common import passage_text

STATUS = Table(
    header=("Code", "Enum Name", "Details"),
    rows=(
        (
            "451",
            "UNAVAILABLE_FOR_LEGAL_REASONS",
            "Unavailable For Legal Reasons, RFC 7725: the server "
            "is denying access to the resource as a consequence of a legal demand",
        ),
        ("500", "INTERNAL_SERVER_ERROR", "Internal Server Error"),
        ("503", "SERVICE_UNAVAILABLE", "Service Unavailable"),
    ),
    caption="HTTP status codes",
)


def test_a_table_passage_reads_back_to_its_caption_columns_and_rows() -> None:
    (piece,) = table_pieces(STATUS, 1200)
    assert read_rendered(piece) == (
        "HTTP status codes",
        ["Code", "Enum Name", "Details"],
        [dict(zip(STATUS.header, row, strict=True)) for row in STATUS.rows],
    )
    assert read_rendered("just prose | with a bar") is None


def test_a_table_passage_prints_one_row_a_line_under_a_header() -> None:
    # Given a table chunk as the search API returns it
    (piece,) = table_pieces(STATUS, 1200)
    # When the CLI prints it
    lines = passage_text({"kind": "table", "text": piece}).split("\n")
    # Then: caption, a header naming every column, a rule, then each row starting on its own line
    assert lines[0].strip() == "HTTP status codes"
    assert [cell.strip() for cell in lines[1].split("|")] == ["Code", "Enum Name", "Details"]
    assert set(lines[2].strip()) <= {"-", "+"}
    starts = [line.split("|")[0].strip() for line in lines[3:]]
    assert [s for s in starts if s] == ["451", "500", "503"]
    # with the columns aligned, the long cell wrapped inside its column, and nothing run together
    bars = {tuple(i for i, c in enumerate(line) if c == "|") for line in lines[1:] if "|" in line}
    assert len(bars) == 1
    assert all(len(line) <= 100 for line in lines)
    assert "Details Code" not in "\n".join(lines) and "Columns:" not in "\n".join(lines)
    (continued,) = [line for line in lines if "legal demand" in line]
    assert continued.split("|")[0].strip() == ""  # a wrapped cell goes on below, in its own column


def test_a_table_too_wide_for_a_grid_prints_a_block_per_row() -> None:
    wide = Table(header=tuple(f"Column {i}" for i in range(14)), rows=(tuple(f"v{i}" for i in range(14)),))
    (piece,) = table_pieces(wide, 1200)
    lines = passage_text({"kind": "table", "text": piece}).split("\n")
    assert [line.split() for line in lines] == [["Column", str(i), f"v{i}"] for i in range(14)]


def test_prose_stays_wrapped_prose() -> None:
    text = "Every employee receives twenty-eight days of paid holiday. " * 4
    printed = passage_text({"kind": "text", "text": text})
    assert all(line.startswith("    ") and len(line) <= 100 for line in printed.split("\n"))


def test_preformatted_lines_keep_their_breaks_and_indentation() -> None:
    # issue 46: the sample wgetrc printed as "## ## Global settings ... #tries = 20"
    text = "A sample:\n\n##\n## Global settings\n#tries = 20\nif x:\n    y = 1"
    printed = passage_text({"kind": "text", "text": text})
    assert printed.split("\n") == [
        "    A sample:",
        "    ##",
        "    ## Global settings",
        "    #tries = 20",
        "    if x:",
        "        y = 1",
    ]
