"""``benchmarks.search_scale``: where a search process's resident memory is, by part."""

from __future__ import annotations

from benchmarks.search_scale import resident_parts

HOME = "/tmp/winnow-search-scale-x/this-5000"
SHARD = f"{HOME}/qdrant/edge/winnow_local-all-minilm-l6-v2-int8-384/shard"


def test_the_shards_files_are_summed_by_kind_and_the_rest_by_heap_or_other() -> None:
    resident_kb = {
        f"{SHARD}/wal/open-1": 20 * 1024,
        f"{SHARD}/wal/closed-166": 1024,
        f"{SHARD}/segments/d6f8/vector_storage-dense/vectors/chunk_0.mmap": 7 * 1024,
        f"{SHARD}/segments/d6f8/vector_index-dense/links_compressed.bin": 512,
        f"{SHARD}/segments/d6f8/vector_storage-bm25/store/page_0.dat": 3 * 1024,
        f"{SHARD}/segments/d6f8/payload_index/t7d8-tenant-map/page_0.dat": 4 * 1024,
        f"{SHARD}/segments/d6f8/payload_index/5hoe-key-map/tracker.dat": 1024,
        f"{SHARD}/segments/d6f8/payload_storage/page_0.dat": 2 * 1024,
        f"{SHARD}/segments/d6f8/id_tracker.mappings": 256,
        "[heap]": 40 * 1024,
        "": 50 * 1024,
        "[anon:glibc]": 1024,
        "/venv/lib/onnxruntime_pybind11_state.so": 21 * 1024,
        "[stack]": 128,
        f"{HOME}-other/qdrant/edge/x/shard/wal/open-1": 9 * 1024,  # another home: not this store's
    }
    assert resident_parts(resident_kb, HOME) == {
        "write-ahead log": 21.0,
        "dense vectors": 7.0,
        "dense index": 0.5,
        "sparse vectors": 3.0,
        "payload indexes": 5.0,
        "payloads": 2.0,
        "other store files": 0.2,
        "heap and anonymous": 91.0,
        "other": 30.1,
    }
