"""Conversations woven into search and answer, per verified (tenant, user).

A turn: read the owner's delete markers and the conversation's turns (none for a new conversation; a
delete after the markers were read undoes what this turn writes, ``ConversationStore``), make the follow-up
standalone (``followup``: the generator's rewrite when one is configured, else the rule), search with the
caller's access as it is now, answer (``/answer``), then store the turn (one write) and, for an answered
turn, a memory. Earlier answers and memories reach the model only while every document whose text reached
the model for them is still readable by the caller (``followup.within_documents`` bounds how many), and
never as citable passages."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TypeVar

from winnow.access import Caller
from winnow.answer.question import Question
from winnow.answer.results import AnswerResponse
from winnow.answer.service import AnswerService, Recall
from winnow.conversations import new_conversation_id
from winnow.conversations.followup import (
    fit_recall,
    parse_rewrite,
    recent,
    rewrite_prompt,
    rule_query,
    within_documents,
)
from winnow.conversations.store import ConversationStore, Memory, Owner, Turn
from winnow.errors import BadRequest, NotFound, WinnowError
from winnow.observability import logger
from winnow.ports import Generator
from winnow.rules import iso_timestamp
from winnow.search.query import Query
from winnow.search.results import SearchResponse, Usage
from winnow.search.service import SearchService
from winnow.settings import ConversationSettings

T = TypeVar("T", Turn, Memory)
DAY_SECONDS = 86_400
_ANONYMOUS = "this caller has no user id (the token's user claim; locally x-winnow-user or --user)"
NO_USER = f"conversations belong to a user: {_ANONYMOUS}, so send the request without conversation_id"
NO_USER_MEMORY = (
    f"memory and conversations belong to a user: {_ANONYMOUS}, so there is none to list or delete"
)
NOT_YOURS = "no such conversation for this user (it may have expired)"


class _Turn:
    """One request under way: who, which conversation, its history and what is searched."""

    def __init__(self, owner: Owner, conversation_id: str, history: list[Turn] | None) -> None:
        self.owner = owner
        self.conversation_id = conversation_id
        self.history = history or []
        self.query_used = ""
        self.question = ""  # what the answer model is asked
        self.usage = Usage(input_tokens=0, output_tokens=0)
        self.rewritten = False
        self.memories: list[Memory] | None = None  # read once per turn
        self.readable: list[Turn] | None = None  # the recent turns whose documents stay readable
        # Documents behind the earlier answers shown to the model (rewrite, then answer prompt): what this
        # turn writes depends on them, so it is shown again only while they stay readable.
        self.shown: set[str] = set()
        self.epoch = ""  # the owner's delete markers when this request began (``ConversationStore``)
        self.stored = False  # its turn was stored: no delete came meanwhile


class ConversationService:
    def __init__(
        self,
        search: SearchService,
        store: ConversationStore,
        settings: ConversationSettings,
        generator: Generator | Callable[[], Generator | None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.searches = search
        self.store = store
        self.settings = settings
        # A callable is asked only when a follow-up needs a rewrite: a first turn builds no model client.
        self._generator = generator if settings.rewrite else None
        self.clock = clock

    @property
    def generator(self) -> Generator | None:
        if self._generator is None or isinstance(self._generator, Generator):
            return self._generator
        return self._generator()

    # --- the routes -----------------------------------------------------------------------------------
    def search(self, caller: Caller, query: Query, conversation_id: str | None = None) -> SearchResponse:
        """``query`` as a turn of ``conversation_id`` (None: a new conversation)."""
        turn = self._begin(caller, query.query, conversation_id, None)
        # query_used is at most the query limit by construction (followup).
        found = self.searches.search(caller, replace(query, query=turn.query_used))
        self._store_turn(turn, query.query, None, (), tuple(sorted(turn.shown)))
        return found.model_copy(
            update={
                "query": query.query,
                "query_used": turn.query_used,
                "conversation_id": turn.conversation_id,
                "usage": turn.usage if turn.rewritten else None,
            }
        )

    def answer(
        self,
        caller: Caller,
        question: Question,
        conversation_id: str | None,
        answers: AnswerService,
        deadline: float | None = None,
    ) -> AnswerResponse:
        """``question`` answered as a turn of ``conversation_id`` (None: a new conversation)."""
        asked = question.search.query
        turn = self._begin(caller, asked, conversation_id, deadline)
        history, memories = fit_recall(
            self._readable_history(caller, turn),
            self._recall(caller, turn) if question.memory else [],
            self.settings.max_recall_tokens,
        )
        # Within the bound on documents an answer depends on: newest answers first, then memories.
        fitting = set(within_documents([t for t in reversed(history) if t.answer], turn.shown))
        history = [t for t in history if not t.answer or t in fitting]
        memories = within_documents(memories, turn.shown)
        earlier = [(t.question, t.answer) for t in history]
        recalled = [(m.question, m.answer) for m in memories]
        recall = Recall(question=turn.question, earlier=earlier, memories=recalled)
        result = answers.answer(caller, question.searching(turn.query_used), deadline=deadline, recall=recall)
        cited = tuple(c.chunk_id for c in result.citations)
        # The answer may repeat any passage the model was sent, cited or not, and what it was shown of
        # earlier answers and memories: it is shown again (turn, memory) only while all stay readable.
        keys = tuple(dict.fromkeys([*(r.key for r in result.results), *sorted(turn.shown)]))
        answered = result.answer if cited else None
        self._store_turn(turn, asked, answered, cited, keys)
        if answered is not None and question.memory and turn.stored:
            self._remember(caller, turn, asked, answered, keys)
        usage = Usage(
            input_tokens=result.usage.input_tokens + turn.usage.input_tokens,
            output_tokens=result.usage.output_tokens + turn.usage.output_tokens,
        )
        return result.model_copy(
            update={
                "query": asked,
                "query_used": turn.query_used,
                "conversation_id": turn.conversation_id,
                "usage": usage,
            }
        )

    def memories(self, caller: Caller) -> list[Memory]:
        """The caller's memories, newest first: only those whose documents stay readable, as recall (the
        others are still removed by ``forget``)."""
        return self._readable(caller, self.store.memories(self._owner(caller, NO_USER_MEMORY), self.clock()))

    def forget(self, caller: Caller) -> int:
        return self.store.forget(self._owner(caller, NO_USER_MEMORY), self._marker_expiry())

    def delete(self, caller: Caller, conversation_id: str) -> None:
        owner = self._owner(caller, NO_USER_MEMORY)
        if not self.store.delete_conversation(owner, conversation_id, self._marker_expiry()):
            raise NotFound(NOT_YOURS)

    def _marker_expiry(self) -> int:
        """A delete's markers outlive any request that began before it (minutes) by far."""
        return int(self.clock()) + DAY_SECONDS

    # --- steps ----------------------------------------------------------------------------------------
    @property
    def _budget(self) -> int:
        return self.settings.max_history_tokens

    def _owner(self, caller: Caller, anonymous: str = NO_USER) -> Owner:
        if caller.user is None:
            raise BadRequest(anonymous)
        return Owner(caller.tenant, caller.user)

    def _begin(
        self, caller: Caller, query: str, conversation_id: str | None, deadline: float | None
    ) -> _Turn:
        owner = self._owner(caller)
        epoch = self.store.epoch(owner)  # before the history: a delete after this undoes what we write
        if conversation_id is None:  # a new conversation: nothing to read
            turn = _Turn(owner, new_conversation_id(), None)
        else:
            history = self.store.turns(owner, conversation_id, self.settings.turns_kept, self.clock())
            if history is None:
                raise NotFound(NOT_YOURS)
            turn = _Turn(owner, conversation_id, history)
        turn.epoch = epoch
        turn.query_used = turn.question = query
        if turn.history:
            self._follow_up(caller, turn, query, deadline)
        return turn

    def _readable_history(self, caller: Caller, turn: _Turn) -> list[Turn]:
        """The recent turns (within the budget) whose cited documents the caller may all still read."""
        if turn.readable is None:
            turn.readable = self._readable(caller, recent(turn.history, self._budget))
        return turn.readable

    def _follow_up(self, caller: Caller, turn: _Turn, query: str, deadline: float | None) -> None:
        """The generator's standalone rewrite; on a fault or an unusable reply, the rule. An earlier
        answer citing a document the caller can no longer read never reaches the rewrite prompt (its
        question, the caller's own words, does)."""
        generator = self.generator
        if generator is not None:
            answers = [t for t in reversed(self._readable_history(caller, turn)) if t.answer]
            readable = set(within_documents(answers, turn.shown))
            shown = [
                t if t in readable or not t.answer else replace(t, answer=None)
                for t in recent(turn.history, self._budget)
            ]
            prompt = rewrite_prompt(query, shown, self._budget, self.settings.rewrite_max_tokens)
            try:
                generation = generator.generate(prompt, deadline=deadline)
            except WinnowError as exc:  # transient or permanent alike: the rule still searches
                logger.warning(
                    "follow-up rewrite failed; the rule is used", extra={"error_type": type(exc).__name__}
                )
            else:
                turn.usage = Usage(
                    input_tokens=generation.input_tokens, output_tokens=generation.output_tokens
                )
                turn.rewritten = True
                rewritten = parse_rewrite(generation.text)
                if rewritten is not None:
                    turn.query_used = turn.question = rewritten
                    return
                logger.info("follow-up rewrite unusable; the rule is used")
        turn.query_used = rule_query(query, turn.history, self._budget)

    def _now(self) -> tuple[float, int, str]:
        now = self.clock()
        stamp = iso_timestamp(datetime.fromtimestamp(now, UTC))
        return now, int(now * 1e9), stamp

    def _expires(self, now: float) -> int:
        return int(now) + self.settings.ttl_days * DAY_SECONDS

    def _store_turn(
        self,
        turn: _Turn,
        question: str,
        answer: str | None,
        cited: Sequence[str],
        keys: Sequence[str],
    ) -> None:
        now, at_ns, stamp = self._now()
        if turn.history and at_ns <= turn.history[-1].at_ns:
            at_ns = turn.history[-1].at_ns + 1  # a clock step back never reorders a conversation
        stored = Turn(question, turn.query_used, answer, tuple(cited), tuple(keys), stamp, at_ns)
        overflow = len(turn.history) + 1 - self.settings.turns_kept
        drop = [t.at_ns for t in turn.history[: max(0, overflow)]]
        turn.stored = self.store.add_turn(
            turn.owner, turn.conversation_id, stored, self._expires(now), drop, epoch=turn.epoch
        )

    def _query_vector(self, caller: Caller, turn: _Turn) -> list[float]:
        return self.searches._embed_query(caller, turn.query_used)  # cached: the search embedded it

    def _recall(self, caller: Caller, turn: _Turn) -> list[Memory]:
        """Up to ``memory_limit`` of the user's memories most similar to what is searched, above the
        floor, of the active embedding profile, and only while their documents stay readable."""
        if self.settings.memory_limit == 0:
            return []
        profile = self.searches.embedder.profile.slug
        turn.memories = self.store.memories(turn.owner, self.clock())
        stored = [m for m in turn.memories if m.profile == profile]
        if not stored:
            return []
        vector = self._query_vector(caller, turn)
        scored = sorted(
            ((similarity(vector, m.vector), m) for m in stored), key=lambda sm: (-sm[0], -sm[1].at_ns)
        )
        wanted = [m for score, m in scored if score >= self.settings.memory_floor]
        return self._readable(caller, wanted)[: self.settings.memory_limit]

    def _readable(self, caller: Caller, items: Sequence[T]) -> list[T]:
        """The items whose documents the caller may all still read (one store call for all)."""
        keys = sorted({k for item in items for k in item.keys})
        if not keys:
            return list(items)
        readable = self.searches.store.readable_keys(caller.tenant, self.searches.read_scope(caller), keys)
        return [item for item in items if set(item.keys) <= readable]

    def _remember(self, caller: Caller, turn: _Turn, question: str, answer: str, keys: Sequence[str]) -> None:
        now, at_ns, stamp = self._now()
        # The model's rewrite draws on the earlier answers it was shown: ``keys`` holds their documents.
        remembered = question if turn.query_used == question else turn.question
        memory = Memory(
            id=uuid.uuid4().hex,
            conversation_id=turn.conversation_id,
            question=remembered,
            answer=answer,
            keys=tuple(dict.fromkeys(keys)),
            at=stamp,
            at_ns=at_ns,
            profile=self.searches.embedder.profile.slug,
            vector=tuple(self._query_vector(caller, turn)),
        )
        existing = turn.memories if turn.memories is not None else self.store.memories(turn.owner, now)
        overflow = len(existing) + 1 - self.settings.memories_kept
        drop = existing[len(existing) - overflow :] if overflow > 0 else []
        self.store.add_memory(turn.owner, memory, self._expires(now), drop, epoch=turn.epoch)


def similarity(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return -1.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else -1.0
