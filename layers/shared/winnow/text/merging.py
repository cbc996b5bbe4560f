"""Rule 5 of ``winnow.text.chunking``: tiny fragments merged into a neighbour, streaming."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from winnow.text.drafts import BLOCK_SEPARATOR, Draft

__all__ = ["merge_small"]


def merge_small(drafts: Iterable[Draft], min_chars: int, limit: int) -> Iterator[Draft]:
    """Rule 5: fold every draft shorter than ``min_chars`` into a neighbour, never past ``limit``.

    Drafts after the one being looked at are still as packed (at most ``target_chars``), so a tiny
    draft always fits into the following one. The preceding one may already hold folded fragments:
    a tiny draft goes there only when the result, plus every tiny draft after it that would have to
    follow (a run of tiny drafts at the end), stays within ``limit``; otherwise it goes forward.
    Without that check a chunk could collect three fragments (541 characters with a bound of 540).

    It streams: a draft is handed on once no later fragment can join it, and it looks ahead only as
    far as that check needs (at most ``limit / 3`` tiny drafts: each adds a character and a separator,
    and once they add up past ``limit`` the answer is "forward" whatever follows them). Every step is
    constant work on strings of at most ``limit`` characters, so merging is linear in the text."""
    ahead = _Lookahead(iter(drafts), min_chars)
    preceding_slot: Draft | None = None  # the last draft handed on, still open to a backward fold
    draft = ahead.pop()
    while draft is not None:
        if len(draft.text) >= min_chars or draft.kind in ("table", "figure"):
            if preceding_slot is not None:
                yield preceding_slot
            preceding_slot, draft = draft, ahead.pop()
            continue
        # Only passages of the same kind meet: a table chunk stays a table, OCR text stays marked.
        following = ahead.peek(0)
        if following is not None and (following.kind, following.ocr) != (draft.kind, draft.ocr):
            following = None
        preceding = preceding_slot
        if preceding is not None and (preceding.kind, preceding.ocr) != (draft.kind, draft.ocr):
            preceding = None
        forward = following is not None and (
            following.section_path == draft.section_path
            or preceding is None
            or preceding.section_path != draft.section_path
        )
        if not forward and following is not None:
            assert preceding is not None
            grown = len(_join(preceding, draft, tiny_first=False).text)
            forward = grown > limit or ahead.tiny_tail_exceeds(limit - grown)
        if forward:
            assert following is not None
            ahead.pop()
            draft = _join(draft, following, tiny_first=True)
        elif preceding is not None:
            assert preceding_slot is not None
            preceding_slot = _join(preceding_slot, draft, tiny_first=False)
            # the grown predecessor is not tiny; the next draft is the next to look at
            draft = ahead.pop()
        else:
            if preceding_slot is not None:
                yield preceding_slot
            preceding_slot, draft = draft, ahead.pop()
    if preceding_slot is not None:
        yield preceding_slot


class _Lookahead:
    """The drafts still to come, with as many read ahead as ``merge_small`` asks for. It remembers the
    run of tiny drafts at the front that it has measured, so each draft is measured once."""

    def __init__(self, source: Iterator[Draft], min_chars: int) -> None:
        self._source = source
        self._min_chars = min_chars
        self._buffer: deque[Draft] = deque()
        self._run = 0  # the first ``_run`` drafts in the buffer are tiny
        self._run_chars = 0  # and need this many characters together, separators included
        self._run_ended = False  # the draft after them is read and is not tiny

    def peek(self, position: int) -> Draft | None:
        while len(self._buffer) <= position:
            following = next(self._source, None)
            if following is None:
                return None
            self._buffer.append(following)
        return self._buffer[position]

    def pop(self) -> Draft | None:
        if self.peek(0) is None:
            return None
        draft = self._buffer.popleft()
        if self._run:
            self._run -= 1
            self._run_chars -= _folded_size(draft)
        else:
            self._run_ended = False  # the draft that ended the run is gone: a new run starts after it
        return draft

    def tiny_tail_exceeds(self, room: int) -> bool:
        """Whether every draft still to come is tiny and together they need more than ``room``
        characters. Reads ahead only until one is not tiny or the sum passes ``room``: either settles
        it (past ``room`` the tiny draft goes forward whatever comes later, which keeps every bound)."""
        while self._run_chars <= room and not self._run_ended:
            later = self.peek(self._run)
            if later is None:
                return False
            if len(later.text) >= self._min_chars:
                self._run_ended = True
                return False
            self._run += 1
            self._run_chars += _folded_size(later)
        return self._run_chars > room


def _folded_size(draft: Draft) -> int:
    """What a tiny draft adds to the chunk it is folded into: its text and a separator."""
    return len(draft.text) + max(len(draft.gap), len(BLOCK_SEPARATOR))


def _join(first: Draft, second: Draft, *, tiny_first: bool) -> Draft:
    tiny, receiver = (first, second) if tiny_first else (second, first)
    # The document's root (no section: a title slide's subtitle, a PDF's cover line) is an ancestor of
    # every path but names none: citing it would drop the heading of the text the passage is mostly.
    if tiny.section_path and _is_ancestor(tiny.section_path, receiver.section_path):
        path = tiny.section_path
    else:
        path = receiver.section_path
    if 0 < second.overlap < len(second.text):
        text = first.text + second.gap + second.text[second.overlap :]
    else:
        text = first.text + BLOCK_SEPARATOR + second.text
    return Draft(
        text=text, section_path=path, page=first.page, overlap=first.overlap, gap=first.gap, ocr=first.ocr
    )


def _is_ancestor(candidate: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return len(candidate) < len(path) and path[: len(candidate)] == candidate
