"""One composition root (winnow.factory.Container) builds every service: search, answer, ingest, reconcile
and the active index; services follow the components they were built on; the embedded default's adapters
are found through the local package's entry points; the search function imports nothing of reconcile; and
a sparse search scores its candidates with one vector-store call."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import EmbeddedStack
from winnow import embedded as winnow_embedded
from winnow.embedded import GROUP, embedded
from winnow.errors import ConfigurationError, FeatureDisabled
from winnow.models import StoredChunk
from winnow.ports import SearchQuery

ROOT = Path(__file__).resolve().parents[2]
DOC = (
    b"# Holidays\n\n## Allowance\n\nEvery employee receives twenty-eight days of paid holiday per year.\n\n"
    b"## Carry over\n\nFive unused holiday days may be carried over into the next year.\n"
)


def test_the_container_builds_each_service_once_and_rebuilds_it_on_a_new_store(stack: EmbeddedStack) -> None:
    container = stack.container
    # When the services are asked for twice
    search, ingest = container.search_service(), container.ingest_service()
    # Then the warm ones come back (one client of each kind, one query cache)
    assert container.search_service() is search and container.ingest_service() is ingest
    assert search.store is container.store and ingest.store is container.store
    # When a test (or a profile switch) puts another store in place (whichever engine the stack runs)
    other = container.store.for_profile(container.embedder.profile)
    assert other is not container.store
    other.ensure_collection()
    container.store = other  # type: ignore[misc]
    # Then the services are rebuilt on it
    assert container.search_service().store is other and container.ingest_service().store is other
    assert container.search_service() is not search


def test_closing_the_container_releases_its_embedded_folder(tmp_path: Path) -> None:
    # Given a stack whose store was opened on a throw-away embedded folder
    stack = EmbeddedStack(tmp_path / "home", None)
    folder = stack.container.store.folder.root.parent  # type: ignore[attr-defined]
    assert folder.is_dir()
    # When the stack is done with its container
    stack.close()
    # Then the folder is released now, not when the collector meets it: files gone, lock let go
    assert not folder.exists()
    assert stack.container.store.folder.closed  # type: ignore[attr-defined]


def test_closing_a_container_that_opened_no_store_opens_none(tmp_path: Path) -> None:
    stack = EmbeddedStack(tmp_path / "home", None)
    stack.close()
    assert "store" not in stack.container.__dict__


def test_the_reconciler_is_wired_from_the_same_components(stack: EmbeddedStack) -> None:
    container = stack.container
    reconciler = container.reconciler()
    assert reconciler.store is container.store and reconciler.ledger is container.ledger
    assert reconciler.objects is container.objects and reconciler.queue is container.event_queue
    assert reconciler.active_index is container.active_index is not None
    assert reconciler.profile == container.embedder.profile
    # and, without a queue URL, its events reach the ingest service in this process
    stack.put_object("acme/holidays.md", DOC)
    stats = reconciler.run("acme")
    assert stats.totals.new == 1
    assert container.ledger.get("acme", "acme/holidays.md") is not None


def test_answers_without_a_generator_are_refused_before_anything_is_built(stack: EmbeddedStack) -> None:
    with pytest.raises(FeatureDisabled):
        stack.container.answer_service()


def test_the_embedded_default_is_found_through_the_installed_entry_points() -> None:
    # Given the entry points pyproject.toml declares for the embedded default's adapters
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    # Then the installed package declares the same (else `make install` was not rerun), and each loads
    installed = {entry.name: entry.value for entry in entry_points(group=GROUP)}
    assert installed == declared, "run `make install`: the installed entry points are stale"
    for name in declared:
        assert callable(embedded(name, instead="-"))


def test_the_installed_adapters_are_read_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a process that has not yet looked for the embedded default's adapters
    import importlib.metadata

    scans: list[str] = []
    scan = importlib.metadata.entry_points

    def counting(**selection: str) -> Any:
        scans.append(selection.get("group", ""))
        return scan(**selection)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    winnow_embedded.installed.cache_clear()
    # When containers ask for each adapter, several times over
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    for _ in range(3):
        for name in declared:
            assert callable(embedded(name, instead="-"))
    # Then the installed distributions were read once (each read opens every one's metadata)
    assert scans == [GROUP]


def test_a_local_adapter_that_is_not_installed_is_a_clear_configuration_error() -> None:
    # Given a name no installed package provides (as in the Lambda layer, which has no local tools)
    with pytest.raises(ConfigurationError) as refused:
        embedded("ledger-of-nowhere", instead="WINNOW_LEDGER_TABLE")
    # Then the error says what is missing and which setting uses the service instead
    assert "ledger-of-nowhere is not installed" in str(refused.value)
    assert "set WINNOW_LEDGER_TABLE" in str(refused.value)


def test_the_search_function_imports_nothing_of_reconcile() -> None:
    # When the search handler is imported in a fresh interpreter
    code = "import sys, functions.search.app; print(sorted(m for m in sys.modules if 'reconcile' in m))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    # Then no reconcile module came with it
    assert json.loads(loaded.stdout.strip().replace("'", '"')) == []


def test_a_sparse_search_scores_its_candidates_with_one_store_call(
    stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an indexed document, and the store's calls counted
    assert stack.upload("acme/holidays.md", DOC)["status"] == "indexed"
    store = stack.container.store
    calls: list[str] = []
    search, dense_vectors = store.search, store.dense_vectors

    def counted_search(query: SearchQuery) -> list[StoredChunk]:
        calls.append("search")
        return search(query)

    def counted_dense_vectors(ids: Any) -> dict[str, list[float]]:
        calls.append("dense_vectors")
        return dense_vectors(ids)

    monkeypatch.setattr(store, "search", counted_search)
    monkeypatch.setattr(store, "dense_vectors", counted_dense_vectors)
    # When a sparse search runs without a re-ranker (its scores need each candidate's cosine)
    request = {"mode": "sparse", "relevance_threshold": 0, "top_k": 5}
    status, one_call = stack.search("holiday days carried over", **request)
    # Then the candidates came with their dense vectors: one store call
    assert status == 200 and one_call["results"]
    assert calls == ["search"]

    # And the scores are those the former second call gave: strip the vectors, and the fallback agrees
    def without_vectors(query: SearchQuery) -> list[StoredChunk]:
        calls.append("search")
        return [StoredChunk(**{**hit.__dict__, "dense": None}) for hit in search(query)]

    monkeypatch.setattr(store, "search", without_vectors)
    calls.clear()
    status, two_calls = stack.search("holiday days carried over", **request)
    assert calls == ["search", "dense_vectors"]
    scores = [(r["chunk_id"], r["score"]) for r in one_call["results"]]
    assert scores == [(r["chunk_id"], r["score"]) for r in two_calls["results"]]
