"""Which embedded engine a local folder gets: Qdrant Edge by default (benchmarks.scale: hybrid p50 in
single-digit ms at 50k chunks, against seconds in qdrant-client's local mode), except a folder that holds
only an index made by local mode, which keeps local mode until the engine is chosen explicitly, so an
upgrade never shows an empty index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from tests.integration.test_qdrant_store import PROFILE, keys, point, qsettings, query
from winnow.adapters.qdrant_store import QdrantVectorStore, make_qdrant_client
from winnow.settings import QdrantSettings
from winnow_local.adapters.qdrant_edge import EdgeFolder, local_engine_for


@pytest.fixture(autouse=True)
def no_engine_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QDRANT_LOCAL_ENGINE", raising=False)


def local_mode_index(folder: Path) -> None:
    """A folder as the embedded default left it before Edge became the default: one document indexed."""
    client = QdrantClient(path=str(folder))
    QdrantVectorStore(client, PROFILE, qsettings()).upsert([point("acme", "old.txt", "alpha beta")])
    client.close()


def open_folder(folder: Path, settings: QdrantSettings) -> Any:
    return make_qdrant_client(settings, None, folder)


def test_the_default_engine_is_edge_for_a_new_folder(tmp_path: Path) -> None:
    # Given no engine configured and an empty folder
    settings = QdrantSettings()
    assert settings.local_engine == "edge"
    # When the embedded default opens it
    client = open_folder(tmp_path / "qdrant", settings)
    # Then it runs on Qdrant Edge
    try:
        assert isinstance(client, EdgeFolder)
        assert (tmp_path / "qdrant" / "edge").is_dir()
    finally:
        client.close()


def test_a_folder_indexed_by_local_mode_keeps_it_and_says_how_to_move(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a folder indexed by local mode, and no engine configured
    folder = tmp_path / "qdrant"
    local_mode_index(folder)
    # When the embedded default opens it
    client = open_folder(folder, QdrantSettings())
    try:
        # Then the existing index stays in use, its documents still found
        assert not isinstance(client, EdgeFolder)
        store = QdrantVectorStore(client, PROFILE, qsettings())
        assert keys(store.search(query("acme", "alpha"))) == ["old.txt"]
        # And a warning names the setting and the command that move it to Edge
        logged = caplog.text
        assert "QDRANT_LOCAL_ENGINE=edge" in logged and "winnow reconcile" in logged
    finally:
        client.close()


def test_an_explicit_engine_always_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a folder indexed by local mode
    folder = tmp_path / "qdrant"
    local_mode_index(folder)
    # When Edge is asked for explicitly (as the environment variable sets it)
    monkeypatch.setenv("QDRANT_LOCAL_ENGINE", "edge")
    assert local_engine_for(QdrantSettings(), folder) == "edge"
    # And local mode when asked for on a fresh folder
    monkeypatch.setenv("QDRANT_LOCAL_ENGINE", "local")
    assert local_engine_for(QdrantSettings(), tmp_path / "fresh") == "local"


def test_once_edge_holds_the_folder_the_old_local_index_no_longer_decides(tmp_path: Path) -> None:
    # Given a folder with a local-mode index that was then rebuilt on Edge (QDRANT_LOCAL_ENGINE=edge once)
    folder = tmp_path / "qdrant"
    local_mode_index(folder)
    (folder / "edge").mkdir()
    # When no engine is configured any more, Then Edge stays in use
    assert local_engine_for(QdrantSettings(), folder) == "edge"
