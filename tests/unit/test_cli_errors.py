"""The `winnow` command's errors: one line on stderr naming what to change, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from winnow_local.cli.main import main


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("QDRANT_TIMEOUT_SECONDS", "0", "QDRANT_TIMEOUT_SECONDS: Input should be greater than or equal to 1"),
        (
            "QDRANT_LOCAL_ENGINE",
            "local",
            "QDRANT_LOCAL_ENGINE: QDRANT_LOCAL_ENGINE=local is no longer supported",
        ),
    ],
)
def test_an_invalid_setting_is_one_line_naming_the_variable(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    expected: str,
) -> None:
    # Given a setting the command cannot run with
    monkeypatch.setenv("WINNOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(variable, value)
    # When a command builds its settings
    code = main(["search", "holiday"])
    # Then it exits 2 with one line that names the variable and the rule, and no traceback
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"winnow: invalid setting: {expected}")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
