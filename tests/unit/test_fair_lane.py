"""``winnow serve``'s fair lane (``winnow_local.web.lanes.FairLane``): who is served before whom when tasks
wait. Counted in positions served, never in time: the lane is held by a task until everything is queued."""

from __future__ import annotations

import threading

from winnow_local.web.lanes import FairLane


def _served_in_order(queued: list[tuple[str | tuple[str, str], str]]) -> list[str]:
    """Queue ``(turn, name)`` tasks behind a held one, release it, and return the names as served."""
    lane = FairLane("test-lane")
    served: list[str] = []
    gate, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        gate.wait(60)

    lane.submit("gate", hold)
    assert started.wait(60)
    futures = [lane.submit(turn, served.append, name) for turn, name in queued]
    assert lane.pending() == len(queued)
    gate.set()
    for future in futures:
        future.result(timeout=60)
    lane.shutdown()
    return served


def test_a_search_from_another_address_waits_one_task_whatever_the_made_up_tenants() -> None:
    for sybils in (1, 10, 200):
        # Given made-up tenants on one address, each with two tasks queued
        queued: list[tuple[str | tuple[str, str], str]] = [
            (("10.0.0.66", f"sybil-{n}"), f"sybil-{n}-{k}") for k in range(2) for n in range(sybils)
        ]
        # When a tenant of another address queues its search behind them all
        queued.append((("10.0.0.7", "victim"), "victim"))
        served = _served_in_order(queued)
        # Then it is served after at most one of theirs, whatever their number
        assert served.index("victim") <= 1, (sybils, served[:5])
        assert sorted(served) == sorted(name for _, name in queued)


def test_tenants_of_one_address_still_take_turns() -> None:
    # Given tenant a's backlog of five tasks and then tenant b's one, both from the same address
    queued: list[tuple[str | tuple[str, str], str]] = [(("127.0.0.1", "a"), f"a{k}") for k in range(5)]
    queued.append((("127.0.0.1", "b"), "b"))
    served = _served_in_order(queued)
    # Then b is served second, and a's tasks keep their order
    assert served[:2] == ["a0", "b"]
    assert [name for name in served if name.startswith("a")] == [f"a{k}" for k in range(5)]


def test_addresses_take_turns_and_tasks_of_a_tenant_keep_their_order() -> None:
    queued: list[tuple[str | tuple[str, str], str]] = [(("p1", "t"), f"p1-{k}") for k in range(3)]
    queued += [(("p2", "t"), f"p2-{k}") for k in range(3)] + [("t", "own")]
    served = _served_in_order(queued)
    assert served == ["p1-0", "p2-0", "own", "p1-1", "p2-1", "p1-2", "p2-2"]
