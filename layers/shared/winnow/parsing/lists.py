"""Lists in fixed-width text kept with what introduces them.

A manual page's EXIT STATUS list ("Wget may return one of several error codes" / "0 No problems
occurred." / "1 Generic error code." ...) comes out of the parser as one block per item. Packed as
paragraphs, a chunk boundary can fall inside the list and leave its second half without the sentence
that says what the numbers are. ``group_lists`` makes the introduction and the items one block marked
``entry`` (a passage of its own) whose ``head`` is the introduction, so every piece of a long list
starts with it (``text.section_runs``). An HTML list says where its items are (``<ol>``, ``<ul>``), so
its parser joins them here too (``join_list``), with the paragraph that introduces them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from winnow.models import Block

__all__ = ["group_lists", "introduces", "join_list"]

# "3 File I/O error.", "2) ...", "10. ...": a number of up to three digits, then the item's words.
_NUMBERED = re.compile(r"(\d{1,3})[.)]? +\S")
# "• item", "* item", "- item", "o item" (groff's ASCII bullet).
_BULLETED = re.compile(r"([*\u2022\u00b7\u2023\u25e6\u2013o-]) +\S")
_MAX_INTRO_CHARS = 400
_INTRO_ENDS = (":", ".", "!", "?", ";", ")", "\u2026")


def group_lists(blocks: Sequence[Block]) -> list[Block]:
    """``blocks`` with each run of two or more list items (numbered one after another, or led by the
    same bullet), in one section and page, made one block with the paragraph just before the run
    (its introduction) when that is a short paragraph of the same place."""
    out: list[Block] = []
    index = 0
    while index < len(blocks):
        end = _run_end(blocks, index)
        if end - index < 2:
            out.append(blocks[index])
            index += 1
            continue
        intro = out[-1] if out and introduces(out[-1], blocks[index]) else None
        if intro is not None:
            out.pop()
        out.append(join_list(intro, blocks[index:end]))
        index = end
    return out


def join_list(intro: Block | None, items: Sequence[Block]) -> Block:
    """One list as one block: its introduction (when it has one) and its items, a line each, marked
    ``entry`` (a passage of its own) and led by the introduction (``head``), which every piece of a
    split list repeats."""
    lines = [block.text for block in items]
    if intro is not None:
        lines.insert(0, intro.text)
    first = intro or items[0]
    return Block(
        text="\n".join(lines),
        section_path=first.section_path,
        page=first.page,
        ocr=first.ocr,
        entry=True,
        head=intro.text if intro is not None else "",
    )


def _run_end(blocks: Sequence[Block], start: int) -> int:
    """The index after the run of list items that starts at ``start`` (``start`` itself when the block
    there is no item). Each block is looked at once per run, so the whole pass is linear."""
    previous = _mark(blocks[start])
    if previous is None:
        return start
    end = start + 1
    while end < len(blocks):
        mark = _mark(blocks[end])
        if mark is None or not _same_place(blocks[end], blocks[start]) or not _follows(previous, mark):
            break
        previous = mark
        end += 1
    return end


def _mark(block: Block) -> str | None:
    if block.kind != "text":
        return None
    found = _NUMBERED.match(block.text) or _BULLETED.match(block.text)
    return found.group(1) if found else None


def _follows(previous: str, mark: str) -> bool:
    if previous.isdigit():
        return mark.isdigit() and int(mark) == int(previous) + 1
    return mark == previous


def _same_place(block: Block, other: Block) -> bool:
    return (block.section_path, block.page, block.ocr) == (other.section_path, other.page, other.ocr)


def introduces(block: Block, first_item: Block) -> bool:
    """Whether ``block`` reads as the introduction of the list that ``first_item`` starts: a short
    paragraph of the same place that is no entry and no item itself, and ends as a sentence or an
    introduction does (a title line, a PDF's running head, leads no list)."""
    return (
        block.kind == "text"
        and not block.entry
        and len(block.text) <= _MAX_INTRO_CHARS
        and block.text.rstrip().endswith(_INTRO_ENDS)
        and _same_place(block, first_item)
        and _mark(block) is None
    )
