"""How the local processes keep their resident memory down (issue 28: `winnow ingest` within 400 MB,
a search process within 200 MB; figures in training/NOTEBOOK.md).

``release_mapped_pages`` gives back the pages an engine read while opening its files and will not read
again. Why: opening a Qdrant Edge shard reads its write-ahead log through (to replay what was not flushed) and
maps its appendable segment's keyword indexes whole (a 4 MB page and 1 MB trackers each, however few
points they hold). Those pages stay resident for the life of the process although a search never
touches them again: about 45 MB of a search process at 5,000 chunks (training/NOTEBOOK.md, issue 28).

Only *shared* file mappings are released (``MADV_DONTNEED``): their contents live in the page cache
and the file, so nothing is lost; the next access maps the page back. Private mappings (whose pages may
hold copy-on-write changes) are left alone. Linux only: elsewhere, or when ``/proc`` is not there, it
does nothing. ``shared_mappings`` and ``release_ranges`` do the same in two steps, for a caller that
releases the same ranges again and again (a search process, ``EdgeFolder.searched``).

``room`` runs a memory-heavy step (sealing an Edge segment) with what registered holders can rebuild on
demand (the document model's session) given back first; ``Gate`` lets such a step wait for the work in
flight that it must not overlap, and hold new work back."""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Protocol

_MADV_DONTNEED = 4  # Linux, on every architecture Winnow runs on (x86-64, arm64)
_M_ARENA_MAX = -8  # glibc's mallopt parameter


def release_mapped_pages(folder: Path, maps: str = "/proc/self/maps") -> int:
    """Release the resident pages of this process's shared mappings of files under ``folder``; the
    bytes of address space released (0 when the platform cannot)."""
    return release_ranges(shared_mappings(folder, maps))


def shared_mappings(
    folder: Path, maps: str = "/proc/self/maps", min_bytes: int = 0, part: str = ""
) -> list[tuple[int, int]]:
    """The address ranges of this process's shared mappings of files under ``folder`` whose path holds
    ``part`` (of at least ``min_bytes``; none where ``/proc`` is not there). They stay valid only while
    nothing maps or unmaps those files."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        lines = Path(maps).read_text().splitlines()
    except OSError:
        return []
    prefix = str(folder.resolve()).rstrip("/") + "/"
    ranges = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[5].startswith(prefix) or fields[1][3] != "s":
            continue
        if part not in fields[5][len(prefix) - 1 :]:
            continue
        start, end = (int(bound, 16) for bound in fields[0].split("-"))
        if end - start >= min_bytes:
            ranges.append((start, end))
    return ranges


def release_ranges(ranges: list[tuple[int, int]]) -> int:
    """``MADV_DONTNEED`` on ranges ``shared_mappings`` found; the bytes of address space released."""
    if not ranges or not sys.platform.startswith("linux"):
        return 0
    import ctypes

    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return sum(end - start for start, end in ranges if madvise(start, end - start, _MADV_DONTNEED) == 0)


def mapped_file_kb(statm: str = "/proc/self/statm") -> int:
    """Resident pages of this process that files back (``statm``'s shared field; about 15 us), in KB; 0
    where ``/proc`` is not there."""
    try:
        pages = int(Path(statm).read_text().split()[2])
    except (OSError, IndexError, ValueError):
        return 0
    import resource

    return pages * resource.getpagesize() // 1024


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Let glibc's malloc keep at most ``arenas`` arenas; whether it took. Call before threads start.

    Why: glibc gives each thread that allocates an arena of its own (up to eight per core), and memory
    freed in one is not reused by the others. An ingest parses and writes documents on a thread each
    while the model runs, so freed blocks pile up in a dozen arenas: 30 long files peaked at 402 MB with
    the default and 365 MB with two arenas, in the same time. Does nothing where malloc is not glibc's."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # musl and others: no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_ARENA_MAX, arenas))


class Releasable(Protocol):
    def released(self) -> AbstractContextManager[object]:
        """While open, what the holder can rebuild on demand is given back (and not used)."""
        ...


_holders: weakref.WeakKeyDictionary[Releasable, None] = weakref.WeakKeyDictionary()  # in order


def releasable(holder: Releasable) -> None:
    """Let ``room`` release what ``holder`` keeps (held weakly: registering keeps nothing alive)."""
    _holders[holder] = None


@contextmanager
def room() -> Iterator[None]:
    """Run a memory-heavy step with every registered holder's memory given back and malloc trimmed.

    Why: sealing an Edge segment of 8,192 points maps and writes about 120 MB on top of the process,
    and an ingest holds the document model's session (about 166 MB once it has run) beside it: the two
    together took an ingest past its 400 MB cap, either alone does not (training/NOTEBOOK.md, issue 28).
    Holders are released one after the other and restored in reverse order when the step is done."""
    with ExitStack() as stack:
        for holder in list(_holders):
            stack.enter_context(holder.released())
        trim_malloc()
        yield


def trim_malloc() -> bool:
    """Return the free memory at the top of glibc's heaps to the system; whether it could."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        malloc_trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return False
    malloc_trim.argtypes = [ctypes.c_size_t]
    return bool(malloc_trim(0))


class Gate:
    """Work shares it; a step takes it alone: the step waits for the work in flight and, while it waits
    and runs, holds new work back, so a steady stream of work cannot keep it waiting. The document
    model's runs against giving its session back, and an Edge shard's reads against sealing a segment."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._sharing = 0
        self._alone = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            while self._alone:
                self._changed.wait()
            self._sharing += 1
        try:
            yield
        finally:
            with self._changed:
                self._sharing -= 1
                self._changed.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        """Not from inside ``shared`` on the same thread: it would wait for itself."""
        with self._changed:
            while self._alone:  # another step: one at a time
                self._changed.wait()
            self._alone = True
            try:
                while self._sharing:
                    self._changed.wait()
            except BaseException:  # interrupted while waiting: work must not stay held back
                self._alone = False
                self._changed.notify_all()
                raise
        try:
            yield
        finally:
            with self._changed:
                self._alone = False
                self._changed.notify_all()
