"""Qdrant Edge (``qdrant-edge-py``), an in-process Rust engine: the embedded default's one engine, written
against Edge's own API. This module opens a folder (``open_embedded``, one engine per folder and process)
as ``EdgeFolder``, the engine that gives out stores; the folder's collections and aliases are
``edge_folder``'s, its sealing and pages ``edge_pages``', the store and active index ``edge_store``'s,
and the move from local mode ``edge_migration``'s.

Why: qdrant-client's local mode (the embedded engine before Edge, read now only to move an old folder
to Edge once: ``edge_migration``) evaluates filters and sparse dot products per point in Python; Edge runs
the same queries in Rust (training/NOTEBOOK.md). Never used with a Qdrant URL and never imported by the
search Lambda (``qdrant_edge`` is imported lazily and is not in the Lambda layer). Edge raises a bare
``Exception`` for every failure; the store checks its input first, so what reaches ``qdrant_errors`` is
the engine's."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from winnow.errors import ConfigurationError
from winnow_local.adapters.edge_folder import EDGE_SUBDIR, EdgeShards
from winnow_local.adapters.edge_migration import migrate_if_needed, migrate_local_mode
from winnow_local.adapters.edge_store import EdgeActiveIndex, EdgeConditions, EdgeVectorStore

if TYPE_CHECKING:
    from winnow.models import EmbeddingProfile
    from winnow.settings import QdrantSettings

__all__ = [
    "EDGE_SUBDIR",
    "EdgeActiveIndex",
    "EdgeConditions",
    "EdgeFolder",
    "EdgeVectorStore",
    "migrate_if_needed",
    "migrate_local_mode",
    "open_embedded",
]


class EdgeFolder(EdgeShards):
    """An Edge folder (``EdgeShards``) as the engine ``qdrant_store.store_on`` asks for stores."""

    def store(
        self,
        profile: EmbeddingProfile,
        settings: QdrantSettings,
        *,
        rrf_k: int = 60,
        collection_name: str | None = None,
    ) -> EdgeVectorStore:
        """The store of ``profile``'s collection in this folder (``qdrant_store.store_on``)."""
        return EdgeVectorStore(self, profile, settings, rrf_k=rrf_k, collection_name=collection_name)


# --- the engine of a local folder ----------------------------------------------------------------------
# One Edge engine per local folder and process (it locks its folder).
_LOCAL_CLIENTS: dict[str, EdgeFolder] = {}
_LOCAL_CLIENTS_LOCK = threading.Lock()


def open_embedded(settings: QdrantSettings, local_path: Path) -> EdgeFolder:
    """Qdrant Edge at ``settings.path`` or ``local_path`` (``:memory:`` allowed): what
    ``make_qdrant_client`` opens without a URL (the ``qdrant`` entry point of ``winnow.embedded``). A local
    folder admits one engine per process, so they are shared by path."""
    location = settings.path or str(local_path)
    if location == ":memory:":
        return EdgeFolder(location)
    resolved = str(Path(location).expanduser().resolve())
    with _LOCAL_CLIENTS_LOCK:
        cached = _LOCAL_CLIENTS.get(resolved)
        if cached is not None and not cached.closed:
            return cached
        Path(resolved).mkdir(parents=True, exist_ok=True)
        try:
            migrate_if_needed(Path(resolved), settings)
            client = EdgeFolder(resolved)
        except RuntimeError as exc:  # portalocker: another process holds the folder
            raise ConfigurationError(
                f"Qdrant local storage {resolved} is in use by another process (a running `winnow serve`?): "
                "ask the server instead with --api-url http://127.0.0.1:3000 (its address), stop it, or give "
                "this command another state folder with WINNOW_HOME"
            ) from exc
        _LOCAL_CLIENTS[resolved] = client
        return client
