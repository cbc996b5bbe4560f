"""What a search process on the embedded default holds in memory (issue 28): opening an Edge folder
does not import qdrant-client, and a new Edge collection's dense vectors are read in as searched instead
of loaded whole when the shard opens. Each check runs in a fresh interpreter, so what it sees is that
work's alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.test_qdrant_store import CORPUS

ROOT = Path(__file__).resolve().parents[2]


def run(code: str, *args: str) -> dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'layers' / 'shared'}{os.pathsep}{ROOT}"
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


_FILL = """
import json, sys
from tests.integration.test_qdrant_store import CORPUS, PROFILE, point, qsettings
from winnow.adapters.qdrant_store import open_store
from pathlib import Path
settings = qsettings(path=sys.argv[1], local_engine="edge")
store = open_store(settings, None, Path(sys.argv[1]), PROFILE)
store.ensure_collection()
store.upsert([point(t, k, text, metadata=m) for t, k, text, m in CORPUS])
print(json.dumps({"points": len(CORPUS)}))
"""

_SEARCH = """
import json, math, sys
from pathlib import Path
from winnow.adapters.qdrant_store import open_store
from winnow.models import EmbeddingProfile, ReadScope, SparseVector
from winnow.ports import SearchQuery
from winnow.settings import QdrantSettings
folder = sys.argv[1]
settings = QdrantSettings(collection_prefix="t", metadata_indexes=["department", "year"], path=folder,
                          local_engine="edge")
profile = EmbeddingProfile(provider="test", model="toy-axes", dimension=8)
store = open_store(settings, None, Path(folder), profile)
alpha_beta = SearchQuery(tenant="acme", dense=[1 / math.sqrt(2)] * 2 + [0.0] * 6,
                         sparse=SparseVector(indices=[1, 2], values=[1.0, 1.0]), mode="hybrid", limit=10,
                         filters={}, reader=ReadScope(everything=True), score_threshold=None)
hits = store.search(alpha_beta)
vectors_kb = 0
mapping = ""
for line in open("/proc/self/smaps"):
    fields = line.split()
    if "-" in fields[0] and len(fields) >= 5 and fields[0][0] in "0123456789abcdef" and ":" in fields[3]:
        mapping = fields[5] if len(fields) > 5 else ""
    elif fields[0] == "Rss:" and mapping.startswith(folder) and "/vector_storage" in mapping:
        vectors_kb += int(fields[1])
print(json.dumps({"hits": len(hits), "vectors_kb": vectors_kb,
                  "qdrant_client": "qdrant_client" in sys.modules}))
"""


def test_a_search_on_edge_imports_no_qdrant_client_and_maps_only_the_vectors_it_reads(tmp_path: Path) -> None:
    # Given an Edge folder holding a handful of chunks (the test store's corpus and settings), written by
    # another process
    folder = str(tmp_path / "qdrant")
    assert run(_FILL, folder) == {"points": len(CORPUS)}
    # When a fresh process opens it and searches
    searched = run(_SEARCH, folder)
    # Then the search finds the tenant's chunks
    assert isinstance(searched["hits"], int) and searched["hits"] > 0
    # And qdrant-client (grpc, its pydantic models: about 55 MB) was never imported
    assert searched["qdrant_client"] is False
    # And the dense vectors' file holds only the pages read, not its whole first 32 MB chunk
    assert isinstance(searched["vectors_kb"], int) and searched["vectors_kb"] < 4 * 1024
