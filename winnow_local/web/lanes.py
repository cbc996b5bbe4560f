"""The lanes ``winnow serve`` runs its handler calls on, each shared fairly between tenants.

Each lane is one worker thread with a queue per tenant; the worker takes one task from each tenant with
work in turn, so a tenant's backlog delays another tenant's request by at most one task per tenant,
never by the whole backlog (measured in training/NOTEBOOK.md, "Search cost on winnow serve"). Within a
tenant, tasks run in the order they came.

Three lanes, so that work that can take long never holds a search (issue 44: one 1.1 MB upload held
every tenant's search and ``/health`` for 58 s, a follow-up ``/answer`` with an 8-second model 16 s):
the API lane (searches, listings, checks: short, bounded requests), the ingest lane (uploads and
removals: parsing and embedding) and the model lane (requests that wait for a language model). The
stores behind them take their own locks (Qdrant Edge's shards, the SQLite ledger's), and ingest's
writes are serialised by ``LocalRuntime``; what cannot be shared is a Powertools resolver, which keeps
the request it is answering on itself, so the model lane calls its own copy of the search function
(``separate_search_handler``)."""

from __future__ import annotations

import importlib.util
import sys
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


def separate_search_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The search function's handler from a second instance of its module: its own resolver (the
    request's event and context live on it), the same container, stores and settings."""
    import functions.search.app as original

    name = f"{original.__name__}__model_lane"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, original.__file__)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # pydantic resolves the module's annotations through sys.modules
        spec.loader.exec_module(module)
    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = module.handler
    return handler
