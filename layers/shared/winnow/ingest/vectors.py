"""A document's dense vectors: the stored ones reused, the rest embedded a batch at a time (shared with
the batch's other documents through ``gather``, or checkpointed when one document needs several
requests), held as float32 arrays."""

from __future__ import annotations

from array import array

from winnow.ingest import gather
from winnow.ingest.checkpoint import embed_checkpointed, needs_checkpoints
from winnow.models import Chunk
from winnow.ports import Embedder, VectorCheckpoint, VectorStore

# What one document holds at once past chunking (issue 44: a 1 MB CSV's 7,429 chunks took the ingest
# process to 451 MB): texts per embedding call. A document of fewer unique chunks embeds in one call,
# as before; the vectors wait as float32 arrays.
EMBED_BATCH = 1024


class DocumentVectors:
    def __init__(
        self, store: VectorStore, embedder: Embedder, checkpoint: VectorCheckpoint | None = None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.checkpoint = checkpoint  # a large document's finished embedding groups survive a retry

    def of(
        self, tenant: str, key: str, chunks: list[Chunk], known: bool
    ) -> tuple[dict[str, array[float]], int, int]:
        """A dense vector per content hash: the stored ones reused, the rest embedded, ``EMBED_BATCH``
        texts a call. Kept as float32 arrays (1.5 KB each for 384 dimensions, against 12 KB as a list of
        Python floats: issue 44, a 1 MB CSV's 7,429 chunks took the ingest process to 451 MB).
        Returns (vectors, how many were embedded, how many chunks reuse a vector: a stored one, or the
        one just embedded for an identical passage of the same document), so the two add up to the
        chunks."""
        wanted = {chunk.content_hash for chunk in chunks}
        # Only the vectors this version reuses, read page by page as float32 (a document at the chunk
        # cap held its 20,000 stored vectors as Python lists at once: 240 MB, issue 44).
        vectors = self.store.reusable_vectors(tenant, key, wanted) if known else {}
        del wanted
        missing: dict[str, str] = {}
        for chunk in chunks:
            if chunk.content_hash not in vectors:
                missing.setdefault(chunk.content_hash, chunk.embed_text)
        hashes = list(missing)
        for start in range(0, len(hashes), EMBED_BATCH):
            batch = hashes[start : start + EMBED_BATCH]
            fresh = self.embed([missing[h] for h in batch])
            vectors.update((h, array("f", v)) for h, v in zip(batch, fresh, strict=True))
        return vectors, len(missing), len(chunks) - len(missing)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Through the batch's gather when this document is one of several (``gather.run_lanes``): its
        texts then share provider requests and model runs with its neighbours'. A document that needs
        several requests embeds alone, each finished request checkpointed (``winnow.ingest.checkpoint``)."""
        if self.checkpoint is not None and needs_checkpoints(self.embedder, texts):
            return embed_checkpointed(self.embedder, self.checkpoint, texts)
        together = gather.current(self.embedder)
        return together.embed(texts) if together is not None else self.embedder.embed(texts, "document")
