"""Embedding across the documents of one batch.

Each document of a batch runs the ordinary per-document path (its own lease, diff, ledger record and
failure) on a thread of its own; only its embedding call is gathered. When every document still running
waits for vectors, the texts they asked for are embedded together, in the groups the embedder names
(one Voyage request within its text and token limits; one call of the local model, which pads run by
run), in the order the documents asked. A document whose texts are all embedded goes on to write while
the next group is embedded, so a failure in a later group loses nothing already written, and a retry
finds those documents unchanged.

Failures stay with the documents that own them: a transient error fails the documents of that group and
every later one (the provider is down: retrying now would only wait); any other error of a shared group
is retried document by document, so a text the provider refuses fails its own document alone.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from winnow.errors import TransientError
from winnow.ports import Embedder, InputType

_Item = TypeVar("_Item")
_bound = threading.local()  # the gather this thread's documents embed through, while ``run_lanes`` runs


def current(embedder: Embedder) -> EmbeddingGather | None:
    """The gather this thread takes part in, when it gathers for ``embedder``."""
    gather: EmbeddingGather | None = getattr(_bound, "gather", None)
    return gather if gather is not None and gather.embedder is embedder else None


def run_lanes(
    embedder: Embedder, lanes: Sequence[Sequence[_Item]], work: Callable[[_Item], None], width: int
) -> None:
    """Run ``work`` on every item, each lane's items in order on one thread, ``width`` threads at most,
    their embedding calls gathered. Lanes keep one document's events in order (``schedule``)."""
    if not lanes:
        return
    queue = deque(lanes)
    taking = threading.Lock()
    threads = max(1, min(width, len(lanes)))
    gather = EmbeddingGather(embedder, members=threads)

    def worker() -> None:
        with gather.member():
            _bound.gather = gather
            try:
                while True:
                    with taking:
                        if not queue:
                            return
                        lane = queue.popleft()
                    for item in lane:
                        work(item)
            finally:
                _bound.gather = None

    if threads == 1:
        worker()
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ingest") as pool:
        for future in [pool.submit(worker) for _ in range(threads)]:
            future.result()


@dataclass
class _Ask:
    """One document's texts and, once embedded, their vectors or the error that stands for them."""

    texts: list[str]
    vectors: list[list[float]] | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class EmbeddingGather:
    """A rendezvous for the documents of one batch (see the module docstring). ``members``: the threads
    that take part, each working through its documents one after another inside ``member()``."""

    def __init__(self, embedder: Embedder, members: int, input_type: InputType = "document") -> None:
        self.embedder = embedder
        self._input_type: InputType = input_type
        self._cond = threading.Condition()
        # Every member counts from the start: a flush must not run before a member's thread has begun.
        self._running = members
        self._waiting: list[_Ask] = []

    @contextmanager
    def member(self) -> Iterator[None]:
        """Around one member's work (a lane of documents): once it ends, a flush no longer waits for it."""
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                batch = self._take_if_ready()
            if batch:
                self._flush(batch)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts``, embedded together with the other running documents' texts."""
        ask = _Ask(list(texts))
        with self._cond:
            self._waiting.append(ask)
            batch = self._take_if_ready()
        if batch:
            self._flush(batch)
        ask.done.wait()
        if ask.error is not None:
            raise ask.error
        assert ask.vectors is not None
        return ask.vectors

    def _take_if_ready(self) -> list[_Ask]:
        """Called under the condition: every running document is waiting, so nothing else will ask."""
        if self._waiting and len(self._waiting) >= self._running:
            batch, self._waiting = self._waiting, []
            return batch
        return []

    def _flush(self, asks: list[_Ask]) -> None:
        """Embed every text of ``asks`` in the embedder's groups, releasing each document when its last
        text is embedded. Identical texts (a boilerplate paragraph in many files) are embedded once."""
        unique: dict[str, int] = {}
        for ask in asks:
            for text in ask.texts:
                unique.setdefault(text, len(unique))
        texts = list(unique)
        vectors: list[list[float] | None] = [None] * len(texts)
        pending = list(asks)
        failure: BaseException | None = None
        try:
            for group in self.embedder.request_groups(texts):
                if failure is None:
                    failure = self._embed_group([texts[i] for i in group], group, vectors, pending, unique)
                pending = self._release(pending, vectors, unique, failure)
        except BaseException as exc:  # never leave a waiting document without an answer
            failure = exc
        self._release(pending, vectors, unique, failure or RuntimeError("texts left unembedded"))

    def _embed_group(
        self,
        group_texts: list[str],
        group: list[int],
        vectors: list[list[float] | None],
        pending: list[_Ask],
        unique: dict[str, int],
    ) -> BaseException | None:
        """Embed one group; returns the transient error that stops the batch, if any."""
        try:
            fresh = self.embedder.embed(group_texts, self._input_type)
        except TransientError as exc:
            return exc
        except Exception as exc:  # handed to the documents' own threads, raised there
            members = set(group)
            owners = [a for a in pending if any(unique[t] in members for t in a.texts)]
            if len(owners) == 1:
                owners[0].error = exc
                owners[0].done.set()
                return None
            for ask in owners:  # one document at a time: the text at fault fails its document alone
                self._embed_alone(ask, vectors, unique)
            return None
        for index, vector in zip(group, fresh, strict=True):
            vectors[index] = vector
        return None

    def _embed_alone(self, ask: _Ask, vectors: list[list[float] | None], unique: dict[str, int]) -> None:
        missing = [t for t in ask.texts if vectors[unique[t]] is None]
        try:
            fresh = self.embedder.embed(missing, self._input_type)
        except Exception as exc:  # handed to the document's own thread, raised there
            ask.error = exc
            ask.done.set()
            return
        for text, vector in zip(missing, fresh, strict=True):
            vectors[unique[text]] = vector

    def _release(
        self,
        pending: list[_Ask],
        vectors: list[list[float] | None],
        unique: dict[str, int],
        failure: BaseException | None,
    ) -> list[_Ask]:
        """Hand every complete document its vectors (or, after ``failure``, its error); keep the rest."""
        still: list[_Ask] = []
        for ask in pending:
            if ask.done.is_set():
                continue
            found = [vectors[unique[t]] for t in ask.texts]
            if all(v is not None for v in found):
                ask.vectors = [v for v in found if v is not None]
                ask.done.set()
            elif failure is not None:
                ask.error = failure
                ask.done.set()
            else:
                still.append(ask)
        return still
