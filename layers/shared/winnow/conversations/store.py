"""The ``ConversationStore`` port and what it keeps: a conversation's turns and a user's memories, both
under one owner (tenant, user). Every read and delete names the owner, so another user's or tenant's
conversation id is simply not found (404): ownership is a key, not a check that could be forgotten."""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Owner:
    tenant: str
    user: str


@dataclass(frozen=True)
class Turn:
    """One request of a conversation: what was asked, what was searched, what was answered and cited."""

    question: str
    query_used: str
    answer: str | None
    cited: tuple[str, ...]  # chunk ids
    keys: tuple[str, ...]  # every document whose text reached the model for it: shown only while readable
    at: str  # ISO 8601, UTC
    at_ns: int  # orders turns; unique within a conversation


@dataclass(frozen=True)
class Memory:
    """An answered exchange, embedded (``vector``, by the ``profile`` slug) so later questions find it."""

    id: str
    conversation_id: str
    question: str
    answer: str
    keys: tuple[str, ...]  # as a turn's: recalled and listed only while all stay readable
    at: str
    at_ns: int
    profile: str
    vector: tuple[float, ...]


def pack_vector(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def unpack_vector(data: bytes) -> tuple[float, ...]:
    values = array("f")
    values.frombytes(data)
    return tuple(values)


NO_DELETES = ":"  # the epoch of an owner who never deleted anything


def epoch_of(any_delete: str, forget: str) -> str:
    """An owner's delete markers as one value: moved by every delete (``any_delete``); by a forget."""
    return f"{any_delete}:{forget}"


def write_holds(begun: str, now: str, conversation_deleted: Callable[[], bool]) -> bool:
    """Whether a write of a request that began at epoch ``begun`` may stay, the markers being ``now``: no
    delete at all since; or no forget, and its conversation not deleted (asked only then)."""
    if now == begun:
        return True
    if now.split(":")[1] != begun.split(":")[1]:
        return False
    return not conversation_deleted()


class ConversationStore(ABC):
    """Turns and memories per owner (SQLite on the embedded default, DynamoDB in AWS). Expired items
    (``expires``, epoch seconds) are never returned, whether or not they are gone yet.

    A delete racing a request that is still answering leaves nothing behind: the request reads the
    owner's ``epoch`` before it begins, and its writes (``add_turn``, ``add_memory``) hold only if no
    forget, and no delete of their conversation, came since; else they are undone and report False.
    A deleted conversation keeps a tombstone (no text: its id) until ``expires``, so it never takes a
    follow-up again."""

    @abstractmethod
    def epoch(self, owner: Owner) -> str:
        """The owner's delete marker now (read strongly consistent): changed by every delete."""

    @abstractmethod
    def turns(self, owner: Owner, conversation_id: str, limit: int, now: float) -> list[Turn] | None:
        """The newest ``limit`` turns, oldest first; None when the owner has no such conversation (or
        deleted it)."""

    @abstractmethod
    def add_turn(
        self,
        owner: Owner,
        conversation_id: str,
        turn: Turn,
        expires: int,
        drop: Sequence[int] = (),
        epoch: str | None = None,
    ) -> bool:
        """Store ``turn`` and drop the turns at ``drop`` (``at_ns``: the oldest, past the turns kept), in
        one write: the caller read the history anyway. With ``epoch``: False, and nothing stored, when a
        delete that concerns the turn came after it."""

    @abstractmethod
    def delete_conversation(self, owner: Owner, conversation_id: str, expires: int | None = None) -> bool:
        """Its turns and the memories made from it, for good, leaving a tombstone until ``expires``;
        False when the owner has no such one."""

    @abstractmethod
    def add_memory(
        self,
        owner: Owner,
        memory: Memory,
        expires: int,
        drop: Sequence[Memory] = (),
        epoch: str | None = None,
    ) -> bool:
        """Store ``memory`` and drop ``drop`` (the oldest, past the memories kept), in one write; with
        ``epoch``, as ``add_turn``."""

    @abstractmethod
    def memories(self, owner: Owner, now: float) -> list[Memory]:
        """The owner's memories, newest first."""

    @abstractmethod
    def forget(self, owner: Owner, expires: int | None = None) -> int:
        """Every memory and every conversation turn of the owner, for good; how many items went. The
        marker it moves is kept until ``expires``."""
