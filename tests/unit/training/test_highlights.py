"""The highlight check of ``training.highlights``: where an answering excerpt lies in a passage (compared
as the passage benchmark compares), and how much of it a highlight covers."""

from __future__ import annotations

from training.highlights import covered, excerpt_span

TEXT = "Exit status:\n  0   if OK,\n  1   if minor problems (e.g., cannot access subdirectory),"


def test_the_excerpt_is_found_across_whitespace_case_and_quote_forms() -> None:
    span = excerpt_span(TEXT, "1 IF minor problems")
    assert span is not None
    assert TEXT[span[0] : span[1]] == "1   if minor problems"
    assert excerpt_span("it \u2018quotes\u2019 here", "'quotes'") == (3, 11)
    assert excerpt_span(TEXT, "exit code") is None


def test_a_highlight_holds_the_share_of_the_excerpt_it_covers() -> None:
    assert covered((10, 20), [(0, 30)]) == 1.0
    assert covered((10, 20), [(0, 15)]) == 0.5
    assert covered((10, 20), [(0, 12), (18, 40)]) == 0.4
    assert covered((10, 20), []) == 0.0
