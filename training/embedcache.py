"""A disk cache of embeddings for benchmarks: the local model reads ~5,700 tokens/s on two shared cores,
so re-embedding SciFact for every experiment costs minutes. Vectors are keyed by the embedding profile,
the input type and the SHA-256 of the text, in a SQLite file (default ``.cache/embeddings.sqlite3``
under the repository, git-ignored). Only benchmarks use it; the product never caches documents."""

from __future__ import annotations

import hashlib
import sqlite3
import struct
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from training.data import REPO_ROOT
from winnow.models import EmbeddingProfile
from winnow.ports import Embedder, InputType

DEFAULT_CACHE = REPO_ROOT / ".cache" / "embeddings.sqlite3"


class CachingEmbedder(Embedder):
    """Wraps an ``Embedder``: texts seen before (same profile and input type) come from disk."""

    def __init__(self, inner: Embedder, path: Path = DEFAULT_CACHE) -> None:
        self.inner = inner
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def profile(self) -> EmbeddingProfile:
        return self.inner.profile

    @property
    def max_input_tokens(self) -> int | None:
        return self.inner.max_input_tokens  # so ingest sizes chunks exactly as with the bare model

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def _key(self, text: str, input_type: InputType) -> str:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return f"{self.profile.slug}:{input_type}:{digest}"

    def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        keys = [self._key(t, input_type) for t in texts]
        found: dict[str, list[float]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                for key, blob in self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part
                ):
                    found[key] = list(struct.unpack(f"<{len(blob) // 4}f", blob))
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = self.inner.embed([texts[i] for i in missing], input_type)
            rows = []
            for i, vector in zip(missing, vectors, strict=True):
                found[keys[i]] = [float(x) for x in vector]
                rows.append((keys[i], struct.pack(f"<{len(vector)}f", *vector)))
            with self._lock, self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
        return [found[k] for k in keys]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def caching(path: Path | None) -> Callable[[Embedder], Embedder] | None:
    """``EmbeddedStack``'s ``wrap_embedder`` for a cache at ``path`` (None: no cache)."""
    if path is None:
        return None
    return lambda embedder: CachingEmbedder(embedder, path)
