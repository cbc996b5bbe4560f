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
(``separate_search_handler``).

Who gets a turn is decided in two levels: first the peer (the client's address), then the tenant within
that peer. Locally any ``x-winnow-tenant`` is accepted, so a tenant name costs nothing to make up: turned
by tenant alone, N made-up tenants each sending a search put N tasks ahead of another tenant's search
(issue 44). A peer address cannot be made up over TCP, so a client on another address waits for at most
one task per other address with work, however many tenants those addresses claim. Clients of one
address (every client on loopback, for example) share that address's turns, tenant by tenant as before."""

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


Turn = str | tuple[str, str]  # a tenant (the server's own peer), or (peer address, tenant)
Task = tuple[Future[Any], Callable[[], Any]]


class FairLane:
    """A single-thread executor with a FIFO queue per (peer, tenant), served round-robin: peers in turn,
    and within a peer its tenants in turn."""

    def __init__(self, name: str = "winnow-handlers") -> None:
        self._peers: OrderedDict[str, OrderedDict[str, deque[Task]]] = OrderedDict()
        self._ready = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name=name, daemon=True)
        self._worker.start()

    def submit(self, turn: Turn, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(*args, **kwargs)`` behind the earlier tasks of ``turn`` (a tenant of the server's
        own peer, or ``(peer, tenant)``); its future."""
        peer, tenant = _split(turn)
        future: Future[T] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            tenants = self._peers.setdefault(peer, OrderedDict())
            tenants.setdefault(tenant, deque()).append((future, lambda: fn(*args, **kwargs)))
            self._ready.notify()
        return future

    def pending(self, turn: Turn | None = None) -> int:
        """Tasks queued and not started (for one tenant, or all)."""
        with self._ready:
            if turn is not None:
                peer, tenant = _split(turn)
                tenants = self._peers.get(peer)
                return len(tenants.get(tenant, ())) if tenants is not None else 0
            return sum(len(queue) for tenants in self._peers.values() for queue in tenants.values())

    def _next(self) -> Task | None:
        """The head of the first peer's first tenant's queue; that tenant goes to the back of its peer's
        turn, and the peer to the back of the lane's."""
        with self._ready:
            while not self._peers and not self._closed:
                self._ready.wait()
            if not self._peers:
                return None
            peer, tenants = next(iter(self._peers.items()))
            tenant, queue = next(iter(tenants.items()))
            task = queue.popleft()
            if queue:
                tenants.move_to_end(tenant)
            else:
                del tenants[tenant]
            if tenants:
                self._peers.move_to_end(peer)
            else:
                del self._peers[peer]
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
                for tenants in self._peers.values():
                    for queue in tenants.values():
                        for future, _ in queue:
                            future.cancel()
                self._peers.clear()
            self._ready.notify_all()
        if wait and self._worker is not threading.current_thread():
            self._worker.join()


def _split(turn: Turn) -> tuple[str, str]:
    return ("", turn) if isinstance(turn, str) else turn


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
