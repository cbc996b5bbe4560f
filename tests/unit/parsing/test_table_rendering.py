"""Table chunks read back without guessing: every non-empty cell comes back under its own column from
the rendered text alone (as the search page reads it), whatever the cells and column names hold, and no
cell is cut off to fit a chunk."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from winnow.models import Table
from winnow.parsing.tables import make_table_block
from winnow.text.tables import COLUMNS_PREFIX, PAIR_SEPARATOR, render_table, table_pieces


def _read_back(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """The column line and the rows of a rendered table, read the way the search page reads them:
    split at " | ", a pair's name ends at its first ": ", then the escapes undone."""
    lines = text.split("\n")
    at = next(index for index, line in enumerate(lines) if line.startswith(COLUMNS_PREFIX))

    def cells(line: str) -> list[str]:
        return [cell.replace("\\|", "|") for cell in line.split(PAIR_SEPARATOR)]

    columns = [name.replace(":\u00a0", ": ") for name in cells(lines[at][len(COLUMNS_PREFIX) :])]
    rows = []
    for line in lines[at + 1 :]:
        row = {}
        for pair in cells(line):
            name, _, value = pair.partition(": ")
            row[name.replace(":\u00a0", ": ")] = value
        rows.append(row)
    return columns, rows


def test_prefix_names_and_separators_inside_cells_read_back_under_their_columns() -> None:
    # Given a table whose names are prefixes of each other, hold ": " and "|", with cells holding both
    header = ["Port", "Port/protocol", "Note: legacy", "A|B"]
    rows = [["22", "22 | tcp", "", "x|y"], ["", "53 | udp", "dns: internal", "C:\\"]]
    block = make_table_block([header, *rows], caption="Services")
    assert block is not None and block.table is not None
    # When its rendering is read back
    columns, read = _read_back(render_table(block.table))
    # Then every column and every non-empty cell comes back exactly, under its own column
    assert columns == header
    assert read == [{name: value for name, value in zip(header, row, strict=True) if value} for row in rows]


def test_a_column_name_used_twice_is_numbered_so_each_value_keeps_its_own_column() -> None:
    # Given a table whose header repeats a name (a header cell merged across two columns)
    block = make_table_block([["Contact", "Contact", "Site"], ["", "ops@example.org", "Delft"]])
    assert block is not None and block.table is not None
    # Then the second use is numbered, and the value in it is not taken for the first column's
    assert block.table.header == ("Contact", "Contact (2)", "Site")
    assert _read_back(render_table(block.table))[1] == [{"Contact (2)": "ops@example.org", "Site": "Delft"}]


def test_a_cell_longer_than_a_chunk_goes_on_over_lines_that_name_its_row_and_column() -> None:
    # Given a table whose cell holds a whole paragraph, longer than a table chunk
    paragraph = " ".join(f"word{n}" for n in range(200))
    table = Table(header=("Clause", "Text"), rows=(("7.2", paragraph), ("7.3", "Short.")), caption="Terms")
    # When it is cut into chunks of 400 characters
    pieces = table_pieces(table, 400)
    # Then no chunk is longer, each starts with the caption and column line, and every word of the
    # paragraph is kept, in order, on lines that say their row and their column
    assert all(len(piece) <= 400 for piece in pieces)
    assert all(piece.startswith("Terms\nColumns: Clause | Text\n") for piece in pieces)
    lines = [line for piece in pieces for line in piece.split("\n")[2:]]
    continued = [line for line in lines if line.startswith("Clause: 7.2 | Text: ")]
    assert len(continued) > 1
    assert " ".join(line.removeprefix("Clause: 7.2 | Text: ") for line in continued) == paragraph
    assert lines[-1] == "Clause: 7.3 | Text: Short."


def test_a_row_wider_than_a_chunk_repeats_its_first_cell_on_every_line() -> None:
    # Given a table of 100 columns whose rows are longer than a chunk
    header = tuple(f"Measurement {n}" for n in range(100))
    table = Table(header=("Sample", *header), rows=(("S-1", *(str(n) for n in range(100))),))
    # When it is cut into chunks
    lines = [line for piece in table_pieces(table, 400) for line in piece.split("\n")[1:]]
    # Then every line of the row starts with the row's first cell, so each chunk says whose values
    # it holds
    assert len(lines) > 1
    assert all(line.startswith("Sample: S-1 | ") for line in lines)


def test_a_column_line_too_long_for_a_chunk_is_cut_after_a_whole_name() -> None:
    # Given a table of 100 columns, whose column line is longer than half a chunk
    header = tuple(f"Measurement {n}" for n in range(100))
    table = Table(header=header, rows=(tuple(str(n) for n in range(100)),), caption="Readings")
    # When it is cut into chunks
    pieces = table_pieces(table, 400)
    # Then each chunk's column line holds whole names only, and every value still names its column
    column_line = pieces[0].split("\n")[1][len(COLUMNS_PREFIX) :]
    assert set(column_line.split(PAIR_SEPARATOR)) <= set(header)
    read = {name: value for piece in pieces for row in _read_back(piece)[1] for name, value in row.items()}
    assert read == {f"Measurement {n}": str(n) for n in range(100)}


_cell_text = st.text(alphabet=st.sampled_from("ab :|\\-"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    header=st.lists(_cell_text, min_size=2, max_size=5),
    rows=st.lists(st.lists(_cell_text, min_size=2, max_size=5), min_size=1, max_size=4),
)
def test_any_cells_read_back_as_the_table_block_holds_them(header: list[str], rows: list[list[str]]) -> None:
    # Given any small table of cells made of spaces, colons, pipes, backslashes and letters
    block = make_table_block([header, *rows])
    if block is None or block.table is None or not block.table.header:
        return  # nothing to read back: no text, a list, or no header row
    table = block.table
    # When its rendering is read back
    columns, read = _read_back(render_table(table))
    # Then the columns are the table's, and each row's non-empty cells come back under their columns
    assert columns == list(table.header)
    expected = [
        {name: value for name, value in zip(table.header, row, strict=True) if value} for row in table.rows
    ]
    assert [row for row in read if row] == [row for row in expected if row]
