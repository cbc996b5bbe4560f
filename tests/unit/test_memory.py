"""How local processes keep memory down: releasing the pages of an engine's shared file mappings (the
resident memory goes, the data stays; private mappings and files elsewhere are left alone), a cap on
malloc's arenas, and memory-heavy steps run with what holders can rebuild given back (``room``)."""

from __future__ import annotations

import ctypes
import gc
import mmap
import re
import subprocess
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.memory import resident_kb
from winnow_local.memory import (
    Gate,
    limit_malloc_arenas,
    releasable,
    release_mapped_pages,
    room,
    shared_mappings,
)

SIZE = 4 * 1024 * 1024

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")


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


def test_the_mappings_of_one_kind_of_file_are_found_by_a_part_of_their_path_below_the_folder(
    tmp_path: Path,
) -> None:
    # Given a folder whose own path holds the part, with two kinds of file mapped shared under it
    folder = tmp_path / "vector_storage-dense" / "shard"
    (folder / "segment" / "vector_storage-dense").mkdir(parents=True)
    (folder / "segment" / "payload_storage").mkdir(parents=True)
    vectors = mapped(folder / "segment" / "vector_storage-dense" / "chunk_0.mmap", mmap.MAP_SHARED)
    payloads = mapped(folder / "segment" / "payload_storage" / "page_0.dat", mmap.MAP_SHARED)
    # When the mappings whose path below the folder holds the part are looked up
    found = shared_mappings(folder, part="/vector_storage-dense/")
    # Then only the vectors' is found, and without a part both are
    start = ctypes.addressof(ctypes.c_char.from_buffer(vectors))
    assert found == [(start, start + SIZE)]
    assert len(shared_mappings(folder)) == 2
    del start
    vectors.close()
    payloads.close()


def test_elsewhere_than_linux_nothing_is_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    view = mapped(tmp_path / "wal", mmap.MAP_SHARED)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert release_mapped_pages(tmp_path) == 0
    assert resident_kb(tmp_path / "wal") >= SIZE // 1024 * 0.9
    view.close()


ARENAS = """
import ctypes, sys, threading
from winnow_local.memory import limit_malloc_arenas
if sys.argv[1] == "limit":
    assert limit_malloc_arenas(2)
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
start = threading.Barrier(6)
def allocate():
    start.wait()  # all six alive at once, so none inherits another's arena
    libc.malloc(4096)
    start.wait()
threads = [threading.Thread(target=allocate) for _ in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc.malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


def arenas_used(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, check=True)
    return len(re.findall(r"^Arena \d+:", done.stderr, flags=re.MULTILINE))


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "malloc_stats"), reason="glibc's malloc only")
def test_malloc_keeps_at_most_two_arenas_however_many_threads_allocate() -> None:
    # Given six threads that allocate at once: by default glibc gives each its own arena
    assert arenas_used("default") > 2
    # When the process limits its arenas first, as the winnow command does
    # Then they share two
    assert arenas_used("limit") <= 2


def test_elsewhere_than_linux_malloc_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert limit_malloc_arenas() is False


class Holder:
    """What ``room`` releases: records when its memory was given back and restored."""

    def __init__(self, name: str, events: list[str]) -> None:
        self.name, self.events = name, events

    @contextmanager
    def released(self) -> Iterator[None]:
        self.events.append(f"release {self.name}")
        try:
            yield
        finally:
            self.events.append(f"restore {self.name}")


def test_a_step_in_room_runs_with_every_holder_released_and_restored_after() -> None:
    # Given two holders registered
    events: list[str] = []
    first, second = Holder("first", events), Holder("second", events)
    releasable(first)
    releasable(second)
    # When a step runs in room()
    with room():
        events.append("step")
    # Then both were released before it and restored after it, the last released restored first
    assert events == ["release first", "release second", "step", "restore second", "restore first"]


def test_a_holder_nobody_keeps_is_not_kept_by_registering_it() -> None:
    # Given a holder registered and then dropped by its owner
    events: list[str] = []
    holder = Holder("gone", events)
    releasable(holder)
    alive = weakref.ref(holder)
    del holder
    gc.collect()
    # Then registering kept nothing alive, and room() does not reach it
    assert alive() is None
    with room():
        pass
    assert events == []


def test_a_holder_that_cannot_release_stops_the_step_and_the_others_are_restored() -> None:
    # Given a holder whose release fails after another holder was released
    events: list[str] = []

    class Broken(Holder):
        @contextmanager
        def released(self) -> Iterator[None]:
            raise RuntimeError("cannot release")
            yield

    kept, broken = Holder("kept", events), Broken("broken", events)
    releasable(kept)
    releasable(broken)
    # When a step runs in room(): the error reaches the caller, the step does not run on a full process,
    # and the holder released before is restored
    with pytest.raises(RuntimeError), room():
        events.append("step")
    assert "release kept" in events and "restore kept" in events and "step" not in events


def test_a_step_alone_waits_for_the_work_in_flight_and_holds_new_work_back() -> None:
    # Given work in flight (an Edge read, a document run)
    import threading

    gate = Gate()
    events: list[str] = []
    reading = gate.shared()
    reading.__enter__()
    # When a step asks to run alone (a seal, the model giving its memory back), and more work comes
    step_in, step_go = threading.Event(), threading.Event()

    def step() -> None:
        with gate.alone():
            events.append("step")
            step_in.set()
            step_go.wait(10)

    def later_read() -> None:
        with gate.shared():
            events.append("later read")

    stepping = threading.Thread(target=step)
    stepping.start()
    assert not step_in.wait(0.3)  # the step waits for the read in flight
    late = threading.Thread(target=later_read)
    late.start()
    late.join(0.3)
    assert late.is_alive()  # and the later read waits for the step
    events.append("first read done")
    reading.__exit__(None, None, None)
    assert step_in.wait(10)
    step_go.set()
    stepping.join(10)
    late.join(10)
    # Then the step ran after the work in flight and before the later work
    assert events == ["first read done", "step", "later read"]
