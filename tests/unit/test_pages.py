"""Releasing the pages of an engine's shared file mappings: the resident memory goes, the data stays, and
private mappings (which may hold copy-on-write changes) and files elsewhere are left alone."""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import pytest

from winnow_local.adapters._pages import release_mapped_pages

SIZE = 4 * 1024 * 1024

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")


def resident_kb(path: Path) -> int:
    """This process's resident kilobytes in its mappings of ``path``."""
    total, current = 0, ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields[0] == "Rss:":
            total += int(fields[1]) if current == str(path) else 0
        elif not fields[0].endswith(":"):
            current = fields[5] if len(fields) > 5 else ""
    return total


def mapped(path: Path, flags: int) -> mmap.mmap:
    path.write_bytes(bytes(range(256)) * (SIZE // 256))
    with path.open("r+b") as file:
        view = mmap.mmap(file.fileno(), SIZE, flags=flags)
    for offset in range(0, SIZE, mmap.PAGESIZE):  # read every page in, as an engine's open does
        view[offset]
    return view


def test_a_shared_mapping_under_the_folder_is_released_and_keeps_its_data(tmp_path: Path) -> None:
    # Given a file under the folder, mapped shared, read through and then written to
    path = tmp_path / "shard" / "wal"
    path.parent.mkdir()
    view = mapped(path, mmap.MAP_SHARED)
    view[0:5] = b"hello"
    assert resident_kb(path) >= SIZE // 1024 * 0.9
    # When its pages are released
    released = release_mapped_pages(tmp_path / "shard")
    # Then none stays resident, and what was written is still there, in the mapping and in the file
    assert released >= SIZE
    assert resident_kb(path) < 64
    assert view[0:5] == b"hello" and view[SIZE - 1] == 255
    view.flush()
    assert path.read_bytes()[:5] == b"hello"
    view.close()


def test_private_mappings_and_files_elsewhere_are_left_alone(tmp_path: Path) -> None:
    # Given a private mapping under the folder holding a change of its own, and a shared one elsewhere
    (tmp_path / "shard").mkdir()
    private = mapped(tmp_path / "shard" / "segment", mmap.MAP_PRIVATE)
    private[0:7] = b"private"
    elsewhere = mapped(tmp_path / "other", mmap.MAP_SHARED)
    before = resident_kb(tmp_path / "shard" / "segment"), resident_kb(tmp_path / "other")
    assert min(before) > 1024
    # When the folder's pages are released
    assert release_mapped_pages(tmp_path / "shard") == 0
    # Then both stay resident as they were, and the private change is not lost
    assert (resident_kb(tmp_path / "shard" / "segment"), resident_kb(tmp_path / "other")) == before
    assert private[0:7] == b"private"
    private.close()
    elsewhere.close()


def test_elsewhere_than_linux_nothing_is_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    view = mapped(tmp_path / "wal", mmap.MAP_SHARED)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert release_mapped_pages(tmp_path) == 0
    assert resident_kb(tmp_path / "wal") >= SIZE // 1024 * 0.9
    view.close()
