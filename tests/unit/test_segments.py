"""A passage's segments: offsets that cover its sentences, pair short lines, and stay bounded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from winnow.text.segments import MAX_CHARS, MAX_SEGMENTS, segments


def _texts(text: str) -> list[str]:
    return [text[s.start : s.end] for s in segments(text)]


def test_sentences_are_segments() -> None:
    text = "The cache holds recent queries for a while. It is cleared when a document changes! Why?"
    assert _texts(text) == [
        "The cache holds recent queries for a while.",
        "It is cleared when a document changes! Why?",
    ]


def test_short_lines_join_the_line_after_them() -> None:
    text = (
        "-t, --tries=NUMBER\n    Set number of tries to NUMBER.\n"
        "    Specify 0 or inf for infinite retrying of the download.\n"
    )
    assert _texts(text) == [
        "-t, --tries=NUMBER\n    Set number of tries to NUMBER.",
        "Specify 0 or inf for infinite retrying of the download.",
    ]


def test_a_short_last_piece_joins_the_one_before() -> None:
    text = "The exit status is zero on success. Else 1."
    assert _texts(text) == [text]


def test_a_long_sentence_is_cut_at_words() -> None:
    text = " ".join(["word"] * 300) + "."
    parts = _texts(text)
    assert len(parts) > 1
    assert all(len(part) <= MAX_CHARS for part in parts)
    assert " ".join(parts) == text


def test_segments_are_bounded_in_number_and_reach_the_end() -> None:
    text = " ".join(f"Sentence number {i} says something long enough to stand alone." for i in range(200))
    found = segments(text)
    assert len(found) == MAX_SEGMENTS
    assert found[-1].end == len(text)


@given(st.text(alphabet=st.sampled_from("ab .!?\n\t,x"), max_size=2000))
def test_segments_are_ordered_stripped_and_inside_the_text(text: str) -> None:
    found = segments(text)
    previous_end = 0
    for segment in found:
        assert previous_end <= segment.start < segment.end <= len(text)
        piece = text[segment.start : segment.end]
        assert piece == piece.strip()
        previous_end = segment.end
    assert (not found) == (not text.strip())
