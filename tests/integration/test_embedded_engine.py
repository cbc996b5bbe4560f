"""The embedded engine is Qdrant Edge, the only one (qdrant-client's local mode, the engine before it, was
removed); a folder that holds only an index made by local mode is moved to Edge once, points copied as
stored, so an upgrade never shows an empty index and never re-embeds. An old config that still asks for
local mode is refused in one line that says so."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from qdrant_client import QdrantClient

from tests.support.memory import resident_kb
from tests.support.qdrant import PROFILE, keys, point, qsettings, query, sparse
from winnow.access import ACCESS_KEY, USERS_FIELD, ReadScope
from winnow.adapters.qdrant_store import QdrantVectorStore, make_qdrant_client
from winnow.settings import QdrantSettings
from winnow_local.adapters.qdrant_edge import EdgeFolder, migrate_if_needed

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def no_engine_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QDRANT_LOCAL_ENGINE", raising=False)


def local_mode_index(folder: Path) -> dict[str, list[float]]:
    """A folder as the embedded default left it before Edge became the default: one document indexed and
    the pointer searches read. Returns the document's stored vectors."""
    client = QdrantClient(path=str(folder))
    store = QdrantVectorStore(client, PROFILE, qsettings())
    store.upsert([point("acme", "old.txt", "alpha beta")])
    store.active_index().activate(PROFILE)
    vectors = store.existing_vectors("acme", "old.txt")
    client.close()
    return vectors


def same_vectors(got: dict[str, list[float]], stored: dict[str, list[float]]) -> bool:
    """The same chunks with the same vectors, up to float32 rounding (each engine normalises for cosine)."""
    return got.keys() == stored.keys() and all(got[h] == pytest.approx(stored[h], abs=1e-6) for h in got)


def open_folder(folder: Path, settings: QdrantSettings) -> Any:
    return make_qdrant_client(settings, None, folder)


def test_the_default_engine_is_edge_for_a_new_folder(tmp_path: Path) -> None:
    # Given no engine configured and an empty folder
    settings = QdrantSettings()
    # When the embedded default opens it
    client = open_folder(tmp_path / "qdrant", settings)
    # Then it runs on Qdrant Edge
    try:
        assert isinstance(client, EdgeFolder)
        assert (tmp_path / "qdrant" / "edge").is_dir()
    finally:
        client.close()


def test_a_folder_indexed_by_local_mode_is_moved_to_edge_once(tmp_path: Path) -> None:
    # Given a folder indexed by local mode, and no engine configured
    folder = tmp_path / "qdrant"
    stored = local_mode_index(folder)
    # When the embedded default opens it
    engine = open_folder(folder, qsettings())
    try:
        # Then it runs on Edge with the same points (vectors as stored, nothing re-embedded) and pointer
        assert isinstance(engine, EdgeFolder)
        store = engine.store(PROFILE, qsettings())
        assert keys(store.search(query("acme", "alpha"))) == ["old.txt"]
        assert same_vectors(store.existing_vectors("acme", "old.txt"), stored)
        assert store.active_index().active() == PROFILE
    finally:
        engine.close()
    # And the local-mode files are kept aside as a local-mode folder of their own, so the next open moves
    # nothing again
    assert not (folder / "collection").exists() and (folder / "local-mode" / "collection").is_dir()
    sentinel = folder / "edge" / "kept.txt"  # a second move would start by clearing Edge's folder
    sentinel.write_text("x")
    engine = open_folder(folder, qsettings())
    try:
        assert keys(engine.store(PROFILE, qsettings()).search(query("acme", "alpha"))) == ["old.txt"]
        assert sentinel.exists()
    finally:
        engine.close()
    backup = QdrantClient(path=str(folder / "local-mode"))
    try:
        assert keys(QdrantVectorStore(backup, PROFILE, qsettings()).search(query("acme", "alpha"))) == [
            "old.txt"
        ]
    finally:
        backup.close()


def test_a_move_cut_short_is_redone_from_the_start(tmp_path: Path) -> None:
    # Given a local-mode folder whose move to Edge stopped halfway (Edge's folder marked unfinished)
    folder = tmp_path / "qdrant"
    stored = local_mode_index(folder)
    (folder / "edge").mkdir()
    (folder / "edge" / ".migrating").touch()
    # When the embedded default opens it
    engine = open_folder(folder, qsettings())
    try:
        # Then the move is made again and finished
        assert isinstance(engine, EdgeFolder)
        assert same_vectors(engine.store(PROFILE, qsettings()).existing_vectors("acme", "old.txt"), stored)
        assert not (folder / "edge" / ".migrating").exists()
    finally:
        engine.close()


def test_an_old_config_asking_for_local_mode_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an old config that still chooses qdrant-client's local mode
    monkeypatch.setenv("QDRANT_LOCAL_ENGINE", "local")
    # When the settings are validated
    with pytest.raises(ValidationError) as raised:
        QdrantSettings()
    # Then one line says local mode is gone and the folder moves to Edge by itself
    (error,) = raised.value.errors()
    message = str(error["msg"])
    assert "\n" not in message
    assert "QDRANT_LOCAL_ENGINE=local is no longer supported" in message
    assert "moved to Edge automatically on first open" in message


def test_edge_asked_for_explicitly_still_moves_an_old_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a folder indexed by local mode, and an old config that names Edge (the only engine now)
    folder = tmp_path / "qdrant"
    stored = local_mode_index(folder)
    monkeypatch.setenv("QDRANT_LOCAL_ENGINE", "edge")
    # When the embedded default opens it
    engine = open_folder(folder, QdrantSettings())
    try:
        # Then the index is moved to Edge as if nothing were set
        assert isinstance(engine, EdgeFolder)
        assert same_vectors(engine.store(PROFILE, qsettings()).existing_vectors("acme", "old.txt"), stored)
    finally:
        engine.close()


def test_once_edge_holds_the_folder_the_old_local_index_no_longer_decides(tmp_path: Path) -> None:
    # Given a folder with a local-mode index beside an Edge folder already in use
    folder = tmp_path / "qdrant"
    local_mode_index(folder)
    (folder / "edge").mkdir()
    # When it is opened again, Then nothing is moved
    assert migrate_if_needed(folder, QdrantSettings()) is False


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads /proc/self/smaps")
def test_opening_a_shard_keeps_no_page_it_read_to_open_and_loses_nothing(tmp_path: Path) -> None:
    # Given a folder whose shard holds points in its write-ahead log and payload indexes
    folder = tmp_path / "qdrant"
    engine = open_folder(folder, qsettings())
    store = engine.store(PROFILE, qsettings())
    store.upsert([point("acme", f"doc{i}.txt", "alpha beta " * 40, metadata={"n": i}) for i in range(200)])
    engine.close()
    # When another process-like open loads it and searches
    engine = open_folder(folder, qsettings())
    try:
        store = engine.store(PROFILE, qsettings())
        assert len(keys(store.search(query("acme", "alpha", limit=5)))) == 5
        # Then what loading read (the log's replay, the indexes' pages mapped whole) is not resident
        # (it was 25 MB and more: five keyword indexes of 5 MB each, training/NOTEBOOK.md)
        assert resident_kb(folder) < 4 * 1024
        # And writes after it land and outlive the process
        store.upsert([point("acme", "late.txt", "gamma delta")])
        assert keys(store.search(query("acme", "gamma")))[0] == "late.txt"
    finally:
        engine.close()
    engine = open_folder(folder, qsettings())
    try:
        store = engine.store(PROFILE, qsettings())
        assert keys(store.search(query("acme", "gamma")))[0] == "late.txt"
        found = keys(store.search(query("acme", "alpha", limit=300)))
        assert set(found) == {f"doc{i}.txt" for i in range(200)} | {"late.txt"}
    finally:
        engine.close()


def write_docs(store: Any, count: int, text: str) -> None:
    """Write ``doc0.txt`` .. ``doc{count-1}.txt`` of tenant acme, all with ``text``, 20 to a write."""
    for start in range(0, count, 20):
        store.upsert([point("acme", f"doc{i}.txt", text) for i in range(start, min(start + 20, count))])


def shard_info(engine: Any) -> Any:
    (name,) = engine.names()
    return engine.shard(name).info()


def test_a_collection_is_sealed_in_steps_and_keeps_its_answers(tmp_path: Path) -> None:
    # Given a collection sealed every 64 points
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        words = ["alpha", "beta", "gamma", "delta"]
        # When 300 points are written, 20 at a time
        for start in range(0, 300, 20):
            store.upsert(
                [
                    point("acme", f"doc{i}.txt", f"{words[i % 4]} eta", metadata={"n": i})
                    for i in range(start, start + 20)
                ]
            )
        # Then they sit in several segments, none rebuilt whole: about one per 64 points
        info = shard_info(engine)
        assert info.points_count == 300
        assert 4 <= info.segments_count <= 8
        # And the pages each sealing read and wrote are not kept resident (1.7 MB here without the release,
        # growing with every segment sealed)
        assert resident_kb(tmp_path / "qdrant") < 1024
        # And each search finds exactly the right points, in sealed segments and the appendable one
        gamma = {f"doc{i}.txt" for i in range(2, 300, 4)}
        for mode in ("dense", "sparse", "hybrid"):
            assert set(keys(store.search(query("acme", "gamma", mode=mode, limit=75)))) == gamma
        # And dense scores are the original vectors' cosines, not their int8 copies'
        scores = [hit.score for hit in store.search(query("acme", "gamma", mode="dense", limit=75))]
        assert scores == pytest.approx([math.sqrt(0.5)] * 75, abs=1e-6)
        # And a point deleted from a sealed segment is gone, and comes back when written again
        store.delete_document("acme", "doc2.txt")
        assert "doc2.txt" not in keys(store.search(query("acme", "gamma", limit=300)))
        store.upsert([point("acme", "doc2.txt", "gamma eta theta")])
        assert keys(store.search(query("acme", "gamma theta", mode="sparse", limit=3)))[0] == "doc2.txt"
    finally:
        engine.close()
    # And another open finds the same points
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        assert shard_info(engine).points_count == 300
        found = keys(store.search(query("acme", "alpha", mode="sparse", limit=300)))
        assert set(found) == {f"doc{i}.txt" for i in range(0, 300, 4)}
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("centre", "spread", "threshold"),
    [(0.0, 1.0, 0.9), (1.0, 0.05, 0.9995)],
    ids=["spread vectors", "vectors int8 misorders"],
)
def test_a_sealed_collection_answers_dense_searches_as_an_unsealed_one(
    tmp_path: Path, centre: float, spread: float, threshold: float
) -> None:
    # Given the same 400 points in two tenants, in a collection sealed every 64 points (int8 copies of its
    # vectors, each segment its own scale) and in one never sealed; in the second case the vectors are so
    # close that int8 copies misorder them past any shortlist
    rng = random.Random(7)
    vectors = [[rng.gauss(centre, spread) for _ in range(PROFILE.dimension)] for _ in range(400)]
    points = [
        dataclasses.replace(point(tenant, f"doc{i}.txt", "alpha", metadata={"n": i}), dense=vector)
        for tenant in ("globex", "acme")
        for i, vector in enumerate(vectors)
    ]
    questions = [[rng.gauss(centre, spread) for _ in range(PROFILE.dimension)] for _ in range(20)]
    engines = []
    try:
        answers = []
        for segment_points in (64, 0):
            settings = qsettings(edge_segment_points=segment_points)
            engine = open_folder(tmp_path / f"qdrant-{segment_points}", settings)
            engines.append(engine)
            store = engine.store(PROFILE, settings)
            for start in range(0, 800, 50):
                store.upsert(points[start : start + 50])
            answers.append(
                [
                    [
                        (hit.key, hit.score)
                        for hit in store.search(
                            dataclasses.replace(
                                query("acme", "alpha", mode="dense", limit=10, score_threshold=bar),
                                dense=question,
                            )
                        )
                    ]
                    for question in questions
                    for bar in (None, threshold)
                ]
            )
        assert shard_info(engines[0]).segments_count > 2
        sealed, unsealed = answers
        # When each answers the same dense questions, with and without a threshold
        # Then the sealed one finds the same points in the same order, with the original vectors' cosines
        assert any(0 < len(found) < 10 for found in unsealed)  # the threshold cuts some answers short
        for got, expected in zip(sealed, unsealed, strict=True):
            assert [key for key, _ in got] == [key for key, _ in expected]
            assert [score for _, score in got] == pytest.approx([score for _, score in expected], abs=1e-6)
    finally:
        for engine in engines:
            engine.close()


def test_a_dense_search_of_a_sealed_collection_gives_equal_scores_the_same_answer_every_time(
    tmp_path: Path,
) -> None:
    # Given a sealed collection where 12 points share the best vector for "gamma", well clear of the rest
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        for start in range(0, 300, 50):
            store.upsert(
                [
                    point("acme", f"doc{i}.txt", "gamma" if i % 25 == 0 else "eta")
                    for i in range(start, start + 50)
                ]
            )
        assert shard_info(engine).segments_count > 1
        # When the same question asks for 5 of them 20 times
        answers = {
            tuple(keys(store.search(query("acme", "gamma", mode="dense", limit=5)))) for _ in range(20)
        }
        # Then it gets one answer, of 5 of the 12
        assert len(answers) == 1
        (answer,) = answers
        assert len(answer) == 5 and all(int(key[3:-4]) % 25 == 0 for key in answer)
    finally:
        engine.close()


class WriteBetweenSteps:
    """A shard whose ``query`` (the second step of a narrowed dense search) first applies ``operation``
    to the real shard, as a write landing between the two steps would (writes do not wait for reads):
    marked as a change of the collection's points, as ``EdgeFolder.write`` marks each."""

    def __init__(self, shard: Any, operation: Any, folder: Any, name: str) -> None:
        self._shard, self._operation, self.steps = shard, operation, 0
        self._folder, self._name = folder, name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._shard, attribute)

    def query(self, request: Any) -> Any:
        self.steps += 1
        with self._folder.changing(self._name):
            self._shard.update(self._operation)
        return self._shard.query(request)


def test_a_dense_search_leaves_out_what_a_write_between_its_steps_took_from_the_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import qdrant_edge as E

    # Given a sealed collection of documents only u1 may read, ten of them the best answers to "gamma"
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        only_u1 = {ACCESS_KEY: {"users": ["u1"]}}
        for start in range(0, 200, 50):
            store.upsert(
                [
                    point("acme", f"doc{i}.txt", "gamma" if i < 10 else "gamma eta", metadata=only_u1)
                    for i in range(start, start + 50)
                ]
            )
        assert shard_info(engine).segments_count > 1
        # When a write gives those ten to u2 alone between the shortlist and the re-scoring
        best = [f"doc{i}.txt" for i in range(10)]
        (name,) = engine.names()
        revoke = E.UpdateOperation.set_payload_by_filter(
            E.Filter(must=[E.FieldCondition(key="key", match=E.MatchAny(best))]), {USERS_FIELD: ["u2"]}
        )
        shard = WriteBetweenSteps(engine.shard(name), revoke, engine, name)
        monkeypatch.setattr(engine, "shard", lambda _name: shard)
        found = keys(
            store.search(query("acme", "gamma", mode="dense", limit=30, reader=ReadScope(users=("u1",))))
        )
        # Then u1 gets none of them, from a search that did take two steps
        assert shard.steps >= 1
        assert len(found) == 30
        assert not set(found) & set(best)
    finally:
        engine.close()


class SearchSpy:
    """The real shard, counting its searches (``query_batch``); ``before``, if given, runs ahead of the
    first one, as a write landing while a search runs would."""

    def __init__(self, shard: Any, before: Callable[[], None] | None = None) -> None:
        self._shard, self._before, self.searches = shard, before, 0

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._shard, attribute)

    def query_batch(self, batch: Any) -> Any:
        self.searches += 1
        if self._before is not None:
            before, self._before = self._before, None
            before()
        return self._shard.query_batch(batch)


def answers(found: list[Any]) -> list[tuple[str, float]]:
    return [(hit.key, round(hit.score, 6)) for hit in found]


@pytest.mark.parametrize("segment_points", [0, 64])
def test_a_search_of_points_all_readable_skips_the_filter_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segment_points: int
) -> None:
    # Given a collection holding one tenant's documents, none restricted
    settings = qsettings(edge_segment_points=segment_points)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        write_docs(store, 200, "alpha beta")
        store.upsert([point("acme", "gamma.txt", "gamma delta alpha")])
        asked = [query("acme", "alpha gamma", mode=mode, limit=20) for mode in ("hybrid", "dense", "sparse")]
        sent: list[list[Any]] = []
        answered = type(store)._answers
        monkeypatch.setattr(
            type(store), "_answers", lambda s, plans: sent.append(plans) or answered(s, plans)
        )
        # When its tenant searches, in each mode
        found = [answers(store.search(q)) for q in asked]
        # Then the engine is asked without the filter (every point would pass it), for the same answers
        assert sent and all(p.where is None and p.idf_corpus is None for plans in sent for p in plans)
        monkeypatch.setattr(engine, "holds_none", lambda *_: False)
        assert found == [answers(store.search(q)) for q in asked]
        assert all(found)
    finally:
        engine.close()


def test_a_search_after_another_tenants_point_is_written_filters_again(tmp_path: Path) -> None:
    # Given one tenant's documents, searched once (the filter found to admit every point)
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        write_docs(store, 100, "beta")
        assert "intruder.txt" not in keys(store.search(query("acme", "alpha", limit=5)))
        # When another tenant's document, the best answer to the question, is written
        store.upsert([point("globex", "intruder.txt", "alpha alpha alpha")])
        # Then the first tenant's next searches never see it; the other tenant's do
        for mode in ("hybrid", "dense", "sparse"):
            assert "intruder.txt" not in keys(store.search(query("acme", "alpha", mode=mode, limit=5)))
        assert keys(store.search(query("globex", "alpha", limit=5))) == ["intruder.txt"]
    finally:
        engine.close()


def test_a_restricted_document_keeps_the_filter_for_those_it_does_not_list(tmp_path: Path) -> None:
    # Given one tenant's open documents and one, the best answer, that only u2 may read
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        write_docs(store, 100, "beta")
        store.upsert(
            [point("acme", "private.txt", "alpha alpha alpha", metadata={ACCESS_KEY: {"users": ["u2"]}})]
        )
        u1, u2 = ReadScope(open_documents=True, users=("u1",)), ReadScope(open_documents=True, users=("u2",))
        for mode in ("hybrid", "dense", "sparse"):
            # When u1 searches, then u2
            # Then u1 never sees it, and u2 does
            assert "private.txt" not in keys(
                store.search(query("acme", "alpha", mode=mode, limit=5, reader=u1))
            )
            assert (
                keys(store.search(query("acme", "alpha", mode=mode, limit=5, reader=u2)))[0] == "private.txt"
            )
    finally:
        engine.close()


def test_a_write_landing_during_a_search_without_the_filter_makes_it_ask_again_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one tenant's documents (every point readable by its callers)
    settings = qsettings(edge_segment_points=0)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        write_docs(store, 50, "beta")
        (name,) = engine.names()
        # When another tenant's document, the best answer, is written while the search runs
        spy = SearchSpy(
            engine.shard(name), lambda: store.upsert([point("globex", "intruder.txt", "alpha alpha alpha")])
        )
        monkeypatch.setattr(engine, "shard", lambda _name: spy)
        found = keys(store.search(query("acme", "alpha", limit=5)))
        # Then the search was asked again, with the filter, and does not show it
        assert spy.searches == 2
        assert "intruder.txt" not in found
        assert len(found) == 5
    finally:
        engine.close()


def test_a_collection_made_without_sealing_keeps_one_segment(tmp_path: Path) -> None:
    # Given sealing turned off
    settings = qsettings(edge_segment_points=0)
    engine = open_folder(tmp_path / "qdrant", settings)
    try:
        store = engine.store(PROFILE, settings)
        # When 300 points are written in steps
        write_docs(store, 300, "alpha beta")
        # Then every point stays in the one appendable segment
        assert shard_info(engine).segments_count == 1
    finally:
        engine.close()


def test_pages_are_released_after_sealing_only_while_no_write_can_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a collection sealed every 64 points, written by four threads at once
    import threading

    import winnow_local.adapters.edge_pages as edge

    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    releases: list[bool] = []

    def release(folder: Path) -> int:
        # a write running now could unmap a file of the shard and let its addresses be reused
        releases.append(engine._writes.locked())
        return 0

    monkeypatch.setattr(edge, "release_mapped_pages", release)
    try:
        store = engine.store(PROFILE, settings)

        def writer(first: int) -> None:
            for start in range(first, first + 100, 10):
                store.upsert([point("acme", f"doc{i}.txt", "alpha beta") for i in range(start, start + 10)])

        threads = [threading.Thread(target=writer, args=(n * 100,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Then every sealing step released its pages holding the folder's writes back, and nothing was lost
        assert releases and all(releases)
        assert shard_info(engine).points_count == 400
    finally:
        engine.close()


class SealSteps:
    """A holder of memory (as the document model is) registered for one engine: records, for each step
    run with its memory given back, the engine's segment count before and after."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.steps: list[tuple[int, int]] = []

    @contextmanager
    def released(self) -> Iterator[None]:
        before = shard_info(self.engine).segments_count
        try:
            yield
        finally:
            self.steps.append((before, shard_info(self.engine).segments_count))


@pytest.fixture
def watch() -> Iterator[Callable[[Any], list[tuple[int, int]]]]:
    """Register a ``SealSteps`` holder for an engine and return its steps; the holders registered before
    the test are all there is again after it, whatever happens."""
    import winnow_local.memory as memory

    saved = dict(memory._holders)
    watchers: list[SealSteps] = []

    def watch_engine(engine: Any) -> list[tuple[int, int]]:
        watchers.append(SealSteps(engine))
        memory.releasable(watchers[-1])
        return watchers[-1].steps

    yield watch_engine
    memory._holders.clear()
    memory._holders.update(saved)


def test_a_sealing_step_runs_with_the_holders_memory_given_back_and_only_a_sealing_step(
    tmp_path: Path, watch: Callable[[Any], list[tuple[int, int]]]
) -> None:
    # Given a collection sealed every 64 points, and a holder of memory (as the document model is)
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    steps = watch(engine)
    try:
        store = engine.store(PROFILE, settings)
        # When 300 points are written, 20 at a time (15 writes)
        write_docs(store, 300, "alpha beta")
        # Then each segment was sealed while the holder's memory was given back, and no other write asked
        # for it: every step it was asked for sealed a segment
        assert 3 <= len(steps) == shard_info(engine).segments_count - 1 < 15
        assert all(after > before for before, after in steps)
    finally:
        engine.close()


def wide_points(count: int, seed: int, first: int = 0) -> list[Any]:
    """Points of a 384-dimension profile, as the local model writes them, with a passage of 800 characters:
    sealed segments whose vector and payload files are large enough for a search to map pages of them."""
    import random
    import uuid

    from winnow.models import Chunk, ChunkPoint

    rng = random.Random(seed)
    points = []
    for i in range(first, first + count):
        vector = [rng.gauss(0.0, 1.0) for _ in range(384)]
        norm = math.sqrt(sum(x * x for x in vector))
        points.append(
            ChunkPoint(
                point_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"acme/wide{i}")),
                tenant="acme",
                key=f"wide{i}.txt",
                chunk=Chunk(
                    index=0, text=f"passage {i} " + "alpha beta " * 72, title="Doc", section_path=(), page=1
                ),
                dense=[x / norm for x in vector],
                sparse=sparse("alpha beta"),
                metadata={},
                source_type="text",
                doc_version='"etag-1"',
            )
        )
    return points


def reopened_wide_store(folder: Path, seed: int) -> tuple[Any, Any, list[Any]]:
    """3,200 ``wide_points`` written to a collection sealed every 800, then the folder opened afresh (as a
    search process opens it): its engine, its store and the points."""
    from winnow.models import EmbeddingProfile

    wide = EmbeddingProfile("test", "wide", 384)
    settings = qsettings(edge_segment_points=800)
    engine = open_folder(folder, settings)
    store = engine.store(wide, settings)
    points = wide_points(3200, seed=seed)
    for start in range(0, 3200, 400):
        store.upsert(points[start : start + 400])
    engine.close()
    engine = open_folder(folder, settings)
    assert shard_info(engine).segments_count >= 4
    return engine, engine.store(wide, settings), points


def dense_questions(points: list[Any]) -> list[Any]:
    """Dense searches of 30 for each of ``points``' vectors."""
    return [
        dataclasses.replace(query("acme", "alpha"), dense=p.dense, mode="dense", limit=30) for p in points
    ]


def test_a_search_gives_back_the_shard_pages_it_mapped_and_never_waits_for_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 3,200 points of the local model's width, sealed every 800, in a folder opened afresh (as a
    # search process opens it)
    import threading

    import winnow_local.adapters.edge_pages as edge

    engine, store, points = reopened_wide_store(tmp_path / "qdrant", seed=1)
    asked = dense_questions(points[::160])
    # When searches run with the release held off, they leave pages of the shard's files mapped
    monkeypatch.setattr(edge, "_MAPPED_SLACK_KB", 1 << 30)
    first = [keys(store.search(q)) for q in asked]
    kept = resident_kb(tmp_path / "qdrant")
    assert kept > 1024
    assert all(found[0] == p.key for found, p in zip(first, points[::160], strict=True))
    # Then a search past the slack gives them back, and finds the same
    monkeypatch.setattr(edge, "_MAPPED_SLACK_KB", 0)
    assert keys(store.search(asked[0])) == first[0]
    assert resident_kb(tmp_path / "qdrant") < kept / 4
    # And while a write holds the folder, a search neither waits for it nor releases anything
    for q in asked:
        store.search(q)
    before = resident_kb(tmp_path / "qdrant")
    done = threading.Event()

    def search() -> None:
        store.search(asked[1])
        done.set()

    with engine._writes:
        threading.Thread(target=search).start()
        assert done.wait(10)
    assert resident_kb(tmp_path / "qdrant") > before
    # And writes after a release land and are found, the next release finding the shard's files anew
    more = wide_points(900, seed=2, first=3200)
    store.upsert(more)
    assert keys(store.search(dataclasses.replace(asked[0], dense=more[5].dense)))[0] == more[5].key
    assert shard_info(engine).points_count == 4100
    engine.close()


def dense_resident_kb(folder: Path) -> int:
    """Resident kilobytes of this process's mappings of Edge's dense vector files under ``folder``."""
    return sum(
        resident_kb(path)
        for path in {p for p in folder.rglob("*") if p.is_file() and "vector_storage-dense" in p.parts}
    )


def test_a_dense_search_of_a_sealed_collection_keeps_none_of_the_vectors_it_read_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 3,200 points of the local model's width, sealed every 800, in a folder opened afresh, with
    # the release after a search (past 16 MB of pages) held off
    import winnow_local.adapters.edge_pages as edge

    engine, store, points = reopened_wide_store(tmp_path / "qdrant", seed=3)
    monkeypatch.setattr(edge, "_MAPPED_SLACK_KB", 1 << 30)
    asked = dense_questions(points[::100])
    # When 32 dense searches run, each re-scoring a shortlist of original vectors
    found = [keys(store.search(q)) for q in asked]
    # Then each finds its point, and none of the original vectors read stays mapped (a read maps up to
    # 16 neighbouring pages: 32 searches held 4.5 MB of them before), while the payloads read do
    assert all(hits[0] == p.key for hits, p in zip(found, points[::100], strict=True))
    assert dense_resident_kb(tmp_path / "qdrant") < 64
    assert resident_kb(tmp_path / "qdrant") > 256
    # And while a write holds the folder, a search leaves the vectors it read mapped rather than wait
    with engine._writes:
        store.search(asked[0])
    assert dense_resident_kb(tmp_path / "qdrant") > 64
    engine.close()


def test_points_written_again_or_changed_are_sealed_too_and_counted_for_the_model(
    tmp_path: Path, watch: Callable[[Any], list[tuple[int, int]]]
) -> None:
    # Given a collection sealed every 64 points, 320 of them written and sealed
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    holders = watch(engine)
    try:
        store = engine.store(PROFILE, settings)
        write_docs(store, 320, "alpha beta")
        sealed = shard_info(engine).segments_count
        steps = len(holders)
        # When 200 of them are written again (a re-upload moves each to the appendable segment; the sealed
        # segments still count the old versions, so the shard's counts no longer tell how many moved)
        write_docs(store, 200, "alpha gamma")
        # Then they are sealed in steps as new points are, each with the model's memory given back
        assert shard_info(engine).segments_count >= sealed + 2
        assert len(holders) >= steps + 2 and all(after > before for before, after in holders)
        # And so are points whose payload changes (an access or metadata change moves them too)
        sealed, steps = shard_info(engine).segments_count, len(holders)
        for i in range(200, 320):
            assert store.set_metadata("acme", f"doc{i}.txt", {"department": "x"}) == 1
        assert shard_info(engine).segments_count > sealed
        assert len(holders) > steps
        # And nothing was lost
        assert shard_info(engine).points_count == 320
        found = keys(store.search(query("acme", "gamma", mode="sparse", limit=300)))
        assert set(found) == {f"doc{i}.txt" for i in range(200)}
    finally:
        engine.close()


def test_a_process_counts_the_points_an_earlier_one_left_unsealed(
    tmp_path: Path, watch: Callable[[Any], list[tuple[int, int]]]
) -> None:
    # Given a collection sealed every 64 points whose appendable segment an earlier process left holding
    # 50 points written again (which the shard's counts do not show: they still count the old versions)
    settings = qsettings(edge_segment_points=64)
    engine = open_folder(tmp_path / "qdrant", settings)
    store = engine.store(PROFILE, settings)
    write_docs(store, 320, "alpha beta")
    store.upsert([point("acme", f"doc{i}.txt", "alpha gamma") for i in range(50)])
    engine.close()
    # When another process writes 20 points more, with a holder of memory registered
    engine = open_folder(tmp_path / "qdrant", settings)
    holders = watch(engine)
    try:
        store = engine.store(PROFILE, settings)
        sealed = shard_info(engine).segments_count
        store.upsert([point("acme", f"new{i}.txt", "alpha delta") for i in range(20)])
        # Then the segment sealed (70 points) and the step ran with the holder's memory given back
        assert shard_info(engine).segments_count > sealed
        assert holders and all(after > before for before, after in holders)
    finally:
        engine.close()
