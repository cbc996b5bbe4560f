"""A result's highlighted sentences as ``winnow search`` prints them (bold on a terminal, ``**`` marks
otherwise) and as the offsets are read: only whole, in-range, non-overlapping ones count."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from winnow.models import Table
from winnow.text.tables import table_pieces
from winnow_local.cli.common import BOLD_MARKS, PLAIN_MARKS, marks_for, passage_text
from winnow_local.highlights import mark, sentences, spans

OPENING = "The office opens at eight. "
ANSWER = "Every employee receives twenty-eight days of paid holiday per year, booked with their manager."
TEXT = OPENING + ANSWER + " Unused days carry over into the first quarter of the next year. " * 3


def at(text: str, sentence: str) -> dict[str, int]:
    start = text.index(sentence)
    return {"start": start, "end": start + len(sentence)}


def test_the_highlighted_sentence_is_marked_in_plain_text_and_the_passage_still_wraps() -> None:
    # Given a result whose second sentence is highlighted
    result = {"kind": "text", "text": TEXT, "highlight": [at(TEXT, ANSWER)]}
    # When it is printed for a pipe
    printed = passage_text(result)
    # Then that sentence, and only it, stands between ** marks, and the lines still fit 100 columns
    assert re.findall(r"\*\*(.*?)\*\*", " ".join(printed.split()), re.S) == [ANSWER]
    assert all(line.startswith("    ") and len(line) <= 100 for line in printed.split("\n"))
    # and without a highlight nothing is marked
    assert "**" not in passage_text({"kind": "text", "text": TEXT})


def test_on_a_terminal_the_sentence_is_bold_on_every_line_it_spans() -> None:
    # Given a highlight long enough to wrap over lines
    long_answer = ANSWER + " " + ANSWER.replace("Every", "Each")
    text = OPENING + long_answer + " The end."
    result = {"kind": "text", "text": text, "highlight": [at(text, long_answer)]}
    # When it is printed with a terminal's marks
    printed = passage_text(result, marks=BOLD_MARKS)
    lines = printed.split("\n")
    assert len(lines) >= 2
    # Then each line opens and closes its own bold, after the indent, and the text reads as in a pipe
    for line in lines:
        assert line.count("\x1b[1m") == line.count("\x1b[22m") <= 1 and line.startswith("    ")
    assert "\x1b[" not in lines[0].split("\x1b[1m")[0]
    plain = re.sub(r"\x1b\[(?:1|22)m", "", printed)
    assert " ".join(plain.split()) == " ".join(text.split())
    bold = " ".join(re.findall(r"\x1b\[1m(.*?)\x1b\[22m", printed))
    assert " ".join(bold.split()) == " ".join(long_answer.split())


def test_offsets_count_code_points_so_an_emoji_before_the_sentence_moves_nothing() -> None:
    text = "🚀 Launch day. The launch window opens at 06:10 UTC."
    highlight = [at(text, "The launch window opens at 06:10 UTC.")]
    assert sentences(text, highlight) == ["The launch window opens at 06:10 UTC."]
    assert mark(text, highlight, "[", "]") == "🚀 Launch day. [The launch window opens at 06:10 UTC.]"


@pytest.mark.parametrize(
    "highlight",
    [
        None,
        "0-5",
        [{"start": 5, "end": 5}],
        [{"start": 6, "end": 3}],
        [{"start": -1, "end": 3}],
        [{"start": 0, "end": 10_000}],
        [{"start": True, "end": 4}],
        [{"start": 0.0, "end": 4}],
        [{"start": "0", "end": 4}],
        [[0, 4]],
    ],
)
def test_unusable_highlights_are_ignored(highlight: Any) -> None:
    assert spans("Short text here.", highlight) == []
    assert passage_text({"kind": "text", "text": "Short text here.", "highlight": highlight}) == (
        "    Short text here."
    )


def test_a_highlight_overlapping_a_better_one_is_left_out_and_marks_follow_the_text_order() -> None:
    text = "One. Two. Three."
    highlight = [{"start": 5, "end": 9}, {"start": 0, "end": 6}, {"start": 10, "end": 16}]
    assert spans(text, highlight) == [(5, 9), (10, 16)]
    assert sentences(text, highlight) == ["Two.", "Three."]
    assert mark(text, highlight, "<", ">") == "One. <Two.> <Three.>"


def test_a_highlighted_table_row_is_marked_in_the_grid_and_in_row_blocks() -> None:
    # Given a table passage whose Utrecht row is highlighted
    table = Table(
        header=("Site", "Manager"),
        rows=(("Depot Amsterdam", "Ingrid Bakker"), ("Depot Utrecht", "Fatima El Amrani")),
        caption="Depot managers",
    )
    (piece,) = table_pieces(table, 1200)
    row = next(line for line in piece.split("\n") if "Utrecht" in line)
    result = {"kind": "table", "text": piece, "highlight": [at(piece, row)]}
    # Then in plain text that row's line starts with ">" and no other does
    lines = passage_text(result).split("\n")
    assert [line for line in lines if line.lstrip().startswith(">")] == [
        line for line in lines if "Utrecht" in line
    ]
    # and on a terminal it is bold
    (bold,) = [line for line in passage_text(result, marks=BOLD_MARKS).split("\n") if "\x1b[1m" in line]
    assert "Fatima El Amrani" in bold and bold.endswith("\x1b[22m")
    # and a table too wide for a grid marks every line of that row's block
    rows = tuple(tuple(f"{name}{i}" for i in range(14)) for name in ("v", "w"))
    wide = Table(header=tuple(f"Column {i}" for i in range(14)), rows=rows)
    (piece,) = table_pieces(wide, 1200)
    second = piece.split("\n")[-1]
    lines = passage_text({"kind": "table", "text": piece, "highlight": [at(piece, second)]}).split("\n")
    marked = [line.split()[-1] for line in lines if line.startswith("  > ")]
    assert marked == [f"w{i}" for i in range(14)]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bold_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert marks_for(Terminal()) is BOLD_MARKS
    assert marks_for(io.StringIO()) is PLAIN_MARKS
    monkeypatch.setenv("NO_COLOR", "1")
    assert marks_for(Terminal()) is PLAIN_MARKS
