"""The cold-start collector policy: paused while long-lived objects are built, then those objects frozen,
and the collector always back on afterwards."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator, Sequence

import pytest

from winnow import coldstart
from winnow.coldstart import building_long_lived_objects, freeze_long_lived


@pytest.fixture
def collector_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The collector on, in a process that has not built its long-lived objects yet."""
    monkeypatch.setattr(coldstart, "_built", False, raising=False)
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


class Client:
    """A stand-in for a long-lived client: an object the collector tracks."""

    def __init__(self) -> None:
        self.self_ref = self


def frozen(objects: Sequence[object]) -> list[bool]:
    """Whether each object sits in the permanent generation: tracked, but in none of the collected ones.
    Asked per object, because the freeze count also drops whenever any thread frees a frozen object."""
    collected = {id(o) for o in gc.get_objects()}
    return [gc.is_tracked(o) and id(o) not in collected for o in objects]


def test_collector_is_paused_while_building_and_what_was_built_is_frozen(collector_on: None) -> None:
    # Given the collector on and a number of already frozen objects
    frozen_before = gc.get_freeze_count()
    # When clients are built inside the block
    with building_long_lived_objects():
        paused = not gc.isenabled()
        clients = [Client() for _ in range(1000)]
    # Then the collector was off inside, is on again, and the new objects are frozen
    assert paused
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before + len(clients)


def test_a_later_build_in_the_process_pauses_nothing_and_leaves_dropped_garbage_collectable(
    collector_on: None,
) -> None:
    # Given a process that built its long-lived objects once (its cold start)
    with building_long_lived_objects():
        pass
    # and then dropped a cycle (a test's stack, a server's old container) that no collection met yet
    dropped = Client()
    gone = weakref.ref(dropped)
    del dropped
    frozen_before = gc.get_freeze_count()
    # When it builds again
    with building_long_lived_objects():
        paused = not gc.isenabled()
    # Then nothing was paused or frozen, and the next collection reclaims the dropped cycle
    assert not paused
    assert gc.get_freeze_count() <= frozen_before
    gc.collect()
    assert gone() is None


def test_collector_is_back_on_after_an_exception(collector_on: None) -> None:
    # When building fails half-way
    with pytest.raises(RuntimeError), building_long_lived_objects():
        raise RuntimeError("no Voyage key")
    # Then the collector runs again
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_host_stays_off_and_nothing_is_frozen(collector_on: None) -> None:
    # Given a host that turned the collector off itself
    gc.disable()
    # When clients are built inside the block
    with building_long_lived_objects():
        clients = [Client() for _ in range(10)]
    # Then that choice is left alone: the collector stays off and nothing was frozen
    assert not gc.isenabled()
    assert frozen(clients) == [False] * len(clients)


def test_freeze_long_lived_freezes_the_objects_alive_now(collector_on: None) -> None:
    frozen_before = gc.get_freeze_count()
    clients = [Client() for _ in range(100)]
    freeze_long_lived()
    assert gc.get_freeze_count() >= frozen_before + len(clients)
    assert gc.isenabled()


def test_build_at_init_builds_only_in_lambdas_init_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    from winnow.factory import Container, build_at_init, set_container

    built: list[Container] = []
    container = Container()
    set_container(container)
    try:
        # Outside Lambda nothing is built
        monkeypatch.delenv("AWS_LAMBDA_INITIALIZATION_TYPE", raising=False)
        build_at_init(built.append)
        assert built == []
        # In an init phase the process's container is built
        monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
        build_at_init(built.append)
        assert built == [container]
    finally:
        set_container(None)


def test_a_failure_at_init_is_left_to_the_first_request(monkeypatch: pytest.MonkeyPatch) -> None:
    from winnow.errors import ConfigurationError
    from winnow.factory import Container, build_at_init, set_container
    from winnow.observability import logger

    warnings: list[str] = []
    monkeypatch.setattr(logger, "warning", lambda message, **kw: warnings.append(f"{message} {kw}"))

    def fail(_: Container) -> None:
        raise ConfigurationError("cannot read secret voyage-key: ResourceNotFoundException")

    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
    set_container(Container())
    try:
        build_at_init(fail)  # does not raise: the init completes, the first request builds again
    finally:
        set_container(None)
    # and the log says what failed, never the message (it may name a secret)
    assert len(warnings) == 1
    assert "building at init failed" in warnings[0] and "ConfigurationError" in warnings[0]
    assert "voyage-key" not in warnings[0]
