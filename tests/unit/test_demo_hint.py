"""``make demo``'s closing hint names a ``winnow`` the user can type: the bare name only when it is on
PATH, else the virtual environment's script and how to activate it."""

from __future__ import annotations

from pathlib import Path

from winnow_local.cli.demo import winnow_command


def venv(root: Path) -> Path:
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "winnow"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_outside_the_activated_venv_the_hint_names_its_script(tmp_path: Path) -> None:
    bin_dir = venv(tmp_path)
    command, activate = winnow_command(str(bin_dir / "python"), path="/usr/bin:/bin", cwd=str(tmp_path))
    assert command == ".venv/bin/winnow"
    assert activate == " (or `source .venv/bin/activate` first, then type just `winnow`)"


def test_with_the_venv_on_path_the_hint_says_winnow(tmp_path: Path) -> None:
    bin_dir = venv(tmp_path)
    command, activate = winnow_command(str(bin_dir / "python"), path=f"{bin_dir}:/usr/bin", cwd=str(tmp_path))
    assert (command, activate) == ("winnow", "")


def test_from_another_folder_the_hint_gives_the_full_path(tmp_path: Path) -> None:
    bin_dir = venv(tmp_path / "clone")
    (tmp_path / "elsewhere").mkdir()
    command, _ = winnow_command(str(bin_dir / "python"), path="/usr/bin", cwd=str(tmp_path / "elsewhere"))
    assert command == str(bin_dir / "winnow")
