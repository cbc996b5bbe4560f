"""Which messages of an SQS batch may run at the same time: messages that touch the same document (its
key, or its sidecar's) form one lane and run one after another, oldest S3 sequencer first; different
lanes run concurrently. Events of one document then never race for its lease inside one batch. Large
objects (by the size S3 announces) share one lane too, so a batch holds at most one of them in memory
beside the small ones."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cmp_to_key

from winnow.ingest import metadata as meta
from winnow.ingest.events import ObjectEvent, parse_sqs_body
from winnow.rules import sequencer_is_newer

# Objects from this size up run one at a time: a document's memory (bytes, text, chunks, vectors as
# Python floats) grows with its size, and ten 25 MB documents at once would not fit a 1,024 MB Lambda.
LARGE_OBJECT_BYTES = 1024 * 1024
_LARGE = "\x00large objects"  # not a valid key: the shared lane of large objects


def document_of(key: str) -> str:
    """The document whose lease an event on ``key`` takes (a sidecar's is its document's)."""
    return meta.document_key_of(key) if meta.is_sidecar(key) else key


def _first_sequencer(body: str, large_bytes: int) -> tuple[list[str], str | None]:
    try:
        events = parse_sqs_body(body)
    except ValueError:  # not JSON: the message fails on its own, in a lane of its own
        return [], None
    return _documents_and_first(events, large_bytes)


def _documents_and_first(events: Sequence[ObjectEvent], large_bytes: int) -> tuple[list[str], str | None]:
    sequencers = [e.sequencer for e in events if e.sequencer is not None]
    first = min(sequencers, key=cmp_to_key(_compare)) if sequencers else None
    documents = [document_of(e.key) for e in events]
    if any(e.size is not None and e.size >= large_bytes for e in events):
        documents.append(_LARGE)
    return documents, first


def _compare(a: str, b: str) -> int:
    return 1 if sequencer_is_newer(a, b) else (-1 if sequencer_is_newer(b, a) else 0)


def lanes(bodies: Sequence[str], large_bytes: int = LARGE_OBJECT_BYTES) -> list[list[int]]:
    """Indexes of ``bodies`` grouped into lanes (messages sharing a document, or both announcing an object
    of ``large_bytes`` or more, transitively), each lane in sequencer order (messages without one keep
    their place relative to each other), lanes in order of their first message."""
    return _lanes([_first_sequencer(body, large_bytes) for body in bodies])


def event_lanes(events: Sequence[ObjectEvent], large_bytes: int = LARGE_OBJECT_BYTES) -> list[list[int]]:
    """``lanes`` for the events of one notification (a direct invoke, ``winnow ingest``), one by one."""
    return _lanes([_documents_and_first([event], large_bytes) for event in events])


def _lanes(items: Sequence[tuple[list[str], str | None]]) -> list[list[int]]:
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    sequencer: list[str | None] = []
    for index, (documents, first) in enumerate(items):
        sequencer.append(first)
        for document in documents:
            if document in owner:
                parent[root(index)] = root(owner[document])
            else:
                owner[document] = index
    groups: dict[int, list[int]] = {}
    for index in range(len(items)):
        groups.setdefault(root(index), []).append(index)

    def _by_sequencer(a: int, b: int) -> int:
        return _compare(str(sequencer[a]), str(sequencer[b]))

    ordered = []
    for members in groups.values():
        # Messages with a sequencer are sorted among the places they hold; the others stay put.
        slots = [i for i in members if sequencer[i] is not None]
        by_age = sorted(slots, key=cmp_to_key(_by_sequencer))
        placed = dict(zip(slots, by_age, strict=True))
        ordered.append([placed.get(i, i) for i in members])
    return sorted(ordered, key=min)
