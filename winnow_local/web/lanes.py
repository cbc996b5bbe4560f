"""The one lane ``winnow serve`` runs its handler calls on, shared fairly between tenants.

One worker thread, because the embedded stores (Qdrant Edge, the SQLite ledger) are single-writer.
Each tenant has its own queue and the worker takes one task from each tenant with work in turn, so a
tenant's backlog delays another tenant's request by at most one task per tenant, never by the whole
backlog (measured in training/NOTEBOOK.md, "Search cost on winnow serve"). Within a tenant,
tasks run in the order they came."""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

SERVER = "_server"  # work no tenant asked for (warm-up): its own queue, like a tenant's


class FairLane:
    """A single-thread executor with a FIFO queue per tenant, served round-robin."""

    def __init__(self, name: str = "winnow-handlers") -> None:
        self._queues: OrderedDict[str, deque[tuple[Future[Any], Callable[[], Any]]]] = OrderedDict()
        self._ready = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name=name, daemon=True)
        self._worker.start()

    def submit(self, tenant: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(*args, **kwargs)`` behind ``tenant``'s earlier tasks; its future."""
        future: Future[T] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            self._queues.setdefault(tenant, deque()).append((future, lambda: fn(*args, **kwargs)))
            self._ready.notify()
        return future

    def pending(self, tenant: str | None = None) -> int:
        """Tasks queued and not started (for one tenant, or all)."""
        with self._ready:
            if tenant is not None:
                return len(self._queues.get(tenant, ()))
            return sum(len(queue) for queue in self._queues.values())

    def _next(self) -> tuple[Future[Any], Callable[[], Any]] | None:
        """The head of the first tenant's queue; that tenant goes to the back of the turn."""
        with self._ready:
            while not self._queues and not self._closed:
                self._ready.wait()
            if not self._queues:
                return None
            tenant, queue = next(iter(self._queues.items()))
            task = queue.popleft()
            if queue:
                self._queues.move_to_end(tenant)
            else:
                del self._queues[tenant]
            return task

    def _run(self) -> None:
        while (task := self._next()) is not None:
            future, call = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = call()
            except BaseException as exc:  # the caller's future carries it, as an executor's does
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Stop taking work; with ``cancel_futures`` drop what has not started; with ``wait`` join."""
        with self._ready:
            self._closed = True
            if cancel_futures:
                for queue in self._queues.values():
                    for future, _ in queue:
                        future.cancel()
                self._queues.clear()
            self._ready.notify_all()
        if wait and self._worker is not threading.current_thread():
            self._worker.join()
