"""The ``ActiveIndex`` as a Qdrant collection alias: ``<prefix>_active`` names the collection searches read.

Why an alias: the pointer lives with the collections it names, Qdrant swaps it atomically (delete and
create in one ``update_collection_aliases`` request), and the embedded engine has the same (Qdrant Edge
keeps its aliases in its folder: ``EdgeActiveIndex``). The profile of the named collection is read from
the collection's own metadata (written by the store), so a search container can build the matching query
embedder from it."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from winnow.adapters.qdrant_collection import alias_name, collection_name_for, profile_from_metadata
from winnow.adapters.qdrant_errors import QdrantCaller
from winnow.errors import ConfigurationError
from winnow.models import EmbeddingProfile
from winnow.ports import ActiveIndex

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from winnow.settings import QdrantSettings

T = TypeVar("T")


class QdrantActiveIndex(ActiveIndex):
    def __init__(
        self, client: QdrantClient, settings: QdrantSettings, guard: AbstractContextManager[Any] | None
    ) -> None:
        """On the store's own client (a ``:memory:`` Qdrant exists only inside it) and under its guard."""
        self._client = client
        self._settings = settings
        self._caller = QdrantCaller(settings.max_attempts, time.sleep, guard, settings.retry_budget_seconds)
        self.alias = alias_name(settings)

    def collection_for(self, profile: EmbeddingProfile) -> str:
        return collection_name_for(self._settings, profile)

    def active_collection(self) -> str | None:
        response = self._call("read aliases", self._client.get_aliases)
        for alias in response.aliases:
            if alias.alias_name == self.alias:
                return str(alias.collection_name)
        return None

    def active(self) -> EmbeddingProfile | None:
        name = self.active_collection()
        if name is None:
            return None
        if not self._call("check collection", lambda: self._client.collection_exists(name)):
            return None  # the collection was dropped by hand: no pointer to honour
        info = self._call("read collection", lambda: self._client.get_collection(name))
        return profile_from_metadata(info.config.metadata)

    def activate(self, profile: EmbeddingProfile) -> None:
        from qdrant_client.http import models as qm

        name = self.collection_for(profile)
        if not self._call("check collection", lambda: self._client.collection_exists(name)):
            raise ConfigurationError(f"cannot point searches at {name}: the collection does not exist")
        operations: list[Any] = []
        if self.active_collection() is not None:
            operations.append(qm.DeleteAliasOperation(delete_alias=qm.DeleteAlias(alias_name=self.alias)))
        operations.append(
            qm.CreateAliasOperation(create_alias=qm.CreateAlias(collection_name=name, alias_name=self.alias))
        )
        self._call(
            "switch alias",
            lambda: self._client.update_collection_aliases(change_aliases_operations=operations),
        )

    def available(self) -> list[EmbeddingProfile]:
        prefix = f"{self._settings.collection_prefix}_"
        response = self._call("list collections", self._client.get_collections)
        profiles: list[EmbeddingProfile] = []
        for collection in response.collections:
            if not collection.name.startswith(prefix):
                continue
            info = self._call("read collection", lambda n=collection.name: self._client.get_collection(n))  # type: ignore[misc]
            profile = profile_from_metadata(info.config.metadata)
            if profile is not None:
                profiles.append(profile)
        return profiles

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Every error the store would translate, translated the same way; a rejection here is a
        configuration problem (the pointer's requests carry no user input)."""
        return self._caller(what, fn, rejected=ConfigurationError)
