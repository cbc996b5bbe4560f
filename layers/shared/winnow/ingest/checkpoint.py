"""Embedding a large document group by group, each finished group checkpointed.

A document that needs several Voyage requests (over ~300 KB on voyage-3.5, ~120 KB on voyage-3-large)
can be stopped half way: a 429 outlasting the back-off, a timeout, a crash. Its message comes back, and
without a checkpoint every group is embedded and billed again. Here each request group's vectors are
saved as soon as they return, under a key made of the embedding profile and the group's texts, and
loaded instead of embedded on the next delivery. The groups are the embedder's own
(``request_groups``), which depend only on the texts and the settings, so a redelivery asks for the
same keys. Small documents (one request) skip all this: they have nothing to lose half way."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from winnow.ports import Embedder, VectorCheckpoint


def group_key(profile_slug: str, texts: Sequence[str]) -> str:
    digest = hashlib.sha256(profile_slug.encode())
    for text in texts:
        digest.update(b"\x00" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    return digest.hexdigest()


def needs_checkpoints(embedder: Embedder, texts: Sequence[str]) -> bool:
    return len(embedder.request_groups(texts)) > 1


def embed_checkpointed(
    embedder: Embedder, checkpoint: VectorCheckpoint, texts: Sequence[str]
) -> list[list[float]]:
    """One vector per text, in order; groups finished by an earlier delivery are loaded, not embedded."""
    slug = embedder.profile.slug
    vectors: list[list[float]] = [[] for _ in texts]
    for group in embedder.request_groups(texts):
        group_texts = [texts[i] for i in group]
        key = group_key(slug, group_texts)
        done = checkpoint.load(key)
        if done is None or len(done) != len(group):
            done = embedder.embed(group_texts, "document")
            checkpoint.save(key, done)
        for index, vector in zip(group, done, strict=True):
            vectors[index] = vector
    return vectors
