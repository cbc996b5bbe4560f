"""Rule 7 of ``winnow.text.chunking``: consecutive small sections packed into one passage."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from winnow.text.drafts import BLOCK_SEPARATOR, Draft

__all__ = ["pack_sections"]


def pack_sections(drafts: Iterable[Draft], target: int) -> Iterator[Draft]:
    """Rule 7: consecutive small sections are packed into one passage while it stays within ``target``
    (a man page's options, an API's entries, an info manual's short subsections: each alone is a chunk
    too small to answer a question, and the answer often sits in its sibling). The passage's section is
    the parts' deepest common ancestor, so its citation is true of all of it, and each part whose
    section is deeper starts with a line naming that section (relative to the ancestor), so the reader
    and the embedder still see which part is which. Tables, OCR text and pieces of a split section
    (which begin with overlap) are never packed; neither are parts on different pages."""
    group: list[Draft] = []
    common: tuple[str, ...] = ()
    length = 0
    for draft in drafts:
        if group and _packable(group[-1], draft):
            shared = _common_prefix(common, draft.section_path)
            grown = (
                length + len(BLOCK_SEPARATOR) + _part_length(draft, shared)
                if shared == common
                else sum(_part_length(part, shared) for part in (*group, draft))
                + len(BLOCK_SEPARATOR) * len(group)
            )
            if grown <= target:
                group.append(draft)
                common, length = shared, grown
                continue
        if group:
            yield _packed(group, common)
        group, common, length = [draft], draft.section_path, len(draft.text)
    if group:
        yield _packed(group, common)


def _packable(last: Draft, draft: Draft) -> bool:
    return (
        last.kind == draft.kind == "text"
        and last.ocr == draft.ocr
        and draft.overlap == 0
        and draft.section_path != last.section_path
        and (last.page is None or draft.page is None or last.page == draft.page)
    )


def _common_prefix(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    return first[:shared]


def _part_heading(draft: Draft, common: tuple[str, ...]) -> str:
    return " > ".join(draft.section_path[len(common) :])


def _part_length(draft: Draft, common: tuple[str, ...]) -> int:
    heading = _part_heading(draft, common)
    return len(draft.text) + (len(heading) + 1 if heading else 0)


def _packed(group: list[Draft], common: tuple[str, ...]) -> Draft:
    if len(group) == 1:
        return group[0]
    parts = []
    for draft in group:
        heading = _part_heading(draft, common)
        parts.append(f"{heading}\n{draft.text}" if heading else draft.text)
    first = group[0]
    page = next((draft.page for draft in group if draft.page is not None), None)
    return Draft(
        text=BLOCK_SEPARATOR.join(parts),
        section_path=common,
        page=page,
        # the first part's overlap stays known only when no heading line was put in front of it
        overlap=0 if _part_heading(first, common) else first.overlap,
        gap=first.gap,
        ocr=first.ocr,
    )
