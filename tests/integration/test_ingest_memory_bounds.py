"""What one document holds at once in the ingest process past chunking (issue 44, item 13: a 1 MB CSV's
7,429 chunks took it to 451 MB): texts per embedding call and points per upsert are bounded, whatever
the document's size; every chunk is still written once, and a re-index still reuses stored vectors.
Asserted on the calls' sizes (the peak RSS is printed by ``benchmarks/table_ingest.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.stack import EmbeddedStack
from winnow.ingest import points, vectors

EMBED_BATCH, WRITE_BATCH = 8, 5


def _long_document(words: str = "boiler") -> bytes:
    return "\n\n".join(
        f"# Part {n}\n\n" + " ".join(f"{words}{n}x{k}" for k in range(150)) for n in range(30)
    ).encode()


def test_a_long_document_is_embedded_and_written_in_bounded_pieces(
    stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "EMBED_BATCH", EMBED_BATCH)
    monkeypatch.setattr(points, "WRITE_BATCH", WRITE_BATCH)
    upserts: list[int] = []
    store = stack.container.store
    real = store.upsert

    def counting(points: Any) -> None:
        upserts.append(len(points))
        real(points)

    monkeypatch.setattr(store, "upsert", counting)
    # When a document of more chunks than either bound is ingested
    result = stack.upload("acme/manual.md", _long_document())
    # Then it is indexed whole: every chunk written once, in upserts of at most WRITE_BATCH points
    assert result["status"] == "indexed"
    assert result["chunks"] > 2 * EMBED_BATCH and sum(upserts) == result["chunks"]
    assert max(upserts) <= WRITE_BATCH
    # and its texts went to the embedder at most EMBED_BATCH a call
    sizes = [len(r.body["input"]) for r in stack.fake.requests_to("embeddings")] if stack.fake else []
    assert sizes and max(sizes) <= EMBED_BATCH and sum(sizes) == result["embedded"]
    # and a re-index after a small edit reuses the stored vectors, writing the same number of points
    upserts.clear()
    edited = _long_document().replace(b"boiler0x0 ", b"kettle ", 1)
    again = stack.upload("acme/manual.md", edited)
    assert again["status"] == "indexed" and again["reused"] >= result["chunks"] - 2
    assert sum(upserts) == again["chunks"] and max(upserts) <= WRITE_BATCH
    status, body = stack.search("boiler12x3", top_k=1, mode="sparse", relevance_threshold=0)
    assert status == 200 and "boiler12x3" in body["results"][0]["text"]


def test_a_re_index_reads_the_stored_vectors_a_page_at_a_time(
    stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: a re-upload of a document at the chunk cap held its 20,000 stored vectors as lists of
    Python floats at once (240 MB) before reusing them. Measured with tracemalloc, not a clock."""
    import tracemalloc

    document = "\n\n".join(f"# Part {n}\n\n" + " ".join(f"w{n}x{k}" for k in range(40)) for n in range(1200))
    first = stack.upload("acme/long.md", document.encode())
    assert first["status"] == "indexed" and first["chunks"] >= 1200
    peaks: list[int] = []
    real = vectors.DocumentVectors.of

    def measured(self: vectors.DocumentVectors, *args: Any, **kwargs: Any) -> Any:
        tracemalloc.start()
        try:
            return real(self, *args, **kwargs)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()

    monkeypatch.setattr(vectors.DocumentVectors, "of", measured)
    # When it is uploaded again with one section changed
    again = stack.upload("acme/long.md", document.replace("w0x0 ", "kettle ", 1).encode())
    # Then every other chunk reuses its stored vector
    assert again["status"] == "indexed" and again["reused"] >= first["chunks"] - 1
    # and the stored vectors were never held as lists all at once (12 KB a vector): a page of them at most
    as_lists = first["chunks"] * 384 * (8 + 24)
    assert peaks and peaks[0] < as_lists / 2, (peaks, as_lists)
