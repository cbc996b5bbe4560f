"""Counting keys in key order in bounded memory (reconcile's point counts): the external merge sort gives
exactly what counting everything in memory gives, whether it spills or not."""

from __future__ import annotations

import tempfile
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from winnow.reconcile import spill
from winnow.reconcile.spill import sorted_counts

KEYS = st.lists(
    st.text(alphabet=st.sampled_from(["a", "b", "é", "\t", "\n", "z", "/", "😀"]), min_size=1, max_size=4),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(keys=KEYS, run_size=st.integers(min_value=1, max_value=8))
def test_sorted_counts_equal_counting_in_memory_and_sorting(keys: list[str], run_size: int) -> None:
    # Given any keys (tabs, newlines and non-ASCII included) and a run size that forces spills
    # When they are counted by the external sort
    counted = list(sorted_counts(iter(keys), run_size=run_size))
    # Then the answer is the in-memory count in code-point order
    assert counted == sorted(Counter(keys).items())


def test_runs_are_spilled_to_files_and_the_files_are_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given 1,000 distinct keys, each three times in a row, counted in runs of 100 distinct keys
    opened: list[Any] = []
    real = tempfile.TemporaryFile

    def tracking(*args: Any, **kwargs: Any) -> Any:
        f = real(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr(spill.tempfile, "TemporaryFile", tracking)
    keys = [f"acme/doc-{n // 3:04d}.md" for n in range(3000)]
    # When it is read to the end
    counted = list(sorted_counts(reversed(keys), run_size=100))
    # Then every run went to a file (a key whose repeats straddle two runs is summed across them), the
    # counts are right, and every file is closed (deleted) afterwards
    assert len(opened) >= 10
    assert counted == [(f"acme/doc-{n:04d}.md", 3) for n in range(1000)]
    assert all(f.closed for f in opened)


def test_no_file_is_written_when_everything_fits_in_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("spilled although the keys fit in memory")

    monkeypatch.setattr(spill.tempfile, "TemporaryFile", refuse)
    assert list(sorted_counts(["b", "a", "b"], run_size=10)) == [("a", 1), ("b", 2)]


def test_run_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="run_size"):
        list(sorted_counts(["a"], run_size=0))
