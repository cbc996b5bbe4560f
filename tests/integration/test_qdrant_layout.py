"""The collection layout for millions of chunks (HNSW with per-tenant graphs, INT8 scalar quantization with
rescoring, on-disk vectors and payload, shard count) as settings: what Qdrant Cloud receives over real
HTTP when the store creates a collection and searches, and that both embedded engines accept every layout
and still search correctly (they implement none of it: local mode is brute force, Edge is never
optimized)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest import mock

import pytest
from pydantic import ValidationError
from qdrant_client import QdrantClient
from qdrant_client.http import models as qm

from tests.support.qdrant import CORPUS, PROFILE, keys, point, qsettings, query, server_stand_in
from winnow.adapters.qdrant_store import QdrantVectorStore, collection_layout, store_on
from winnow.settings import QdrantSettings
from winnow_local.adapters.qdrant_edge import EdgeFolder


class RecordingQdrant:
    """A loopback Qdrant REST server that knows one collection: it records each request's method, path
    and JSON body, creates the collection from the PUT it receives and answers queries with no points."""

    def __init__(self, version: str = "1.19.0") -> None:
        self.version = version
        self.requests: list[tuple[str, str, Any]] = []
        self.created: dict[str, Any] | None = None
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                path = self.path.split("?", 1)[0]
                recorder.requests.append((self.command, path, body))
                if path == "/":  # the server's version, answered bare as Qdrant does
                    self._send(
                        {"title": "qdrant - vector search engine", "version": recorder.version}, bare=True
                    )
                    return
                self._send(recorder.result(self.command, path, body))

            def _send(self, result: Any, bare: bool = False) -> None:
                answer = result if bare else {"result": result, "status": "ok", "time": 0.0}
                payload = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def result(self, method: str, path: str, body: Any) -> Any:
        if path.endswith("/exists"):
            return {"exists": self.created is not None}
        if method == "PUT" and path.endswith("/index"):
            return {"operation_id": 1, "status": "completed"}
        if method == "PUT":
            self.created = body
            return True
        if path.endswith("/points/query"):
            return {"points": []}
        if path.endswith("/points/query/batch"):
            return [{"points": []} for _ in body["searches"]]
        return self._info()

    def _info(self) -> dict[str, Any]:
        created = self.created or {}
        info = qm.CollectionInfo(
            status=qm.CollectionStatus.GREEN,
            optimizer_status=qm.OptimizersStatusOneOf.OK,
            segments_count=1,
            payload_schema={},
            config=qm.CollectionConfig(
                params=qm.CollectionParams(
                    vectors={n: qm.VectorParams(**v) for n, v in created.get("vectors", {}).items()},
                    sparse_vectors={
                        n: qm.SparseVectorParams(**v) for n, v in created.get("sparse_vectors", {}).items()
                    },
                ),
                hnsw_config=qm.HnswConfig(m=16, ef_construct=100, full_scan_threshold=10000),
                optimizer_config=qm.OptimizersConfig(
                    deleted_threshold=0.2,
                    vacuum_min_vector_number=1000,
                    default_segment_number=0,
                    flush_interval_sec=5,
                ),
                wal_config=qm.WalConfig(wal_capacity_mb=32, wal_segments_ahead=0),
                metadata=created.get("metadata"),
            ),
        )
        return info.model_dump(mode="json", exclude_none=True)

    def named(self, method: str, suffix: str) -> list[Any]:
        return [body for m, p, body in self.requests if m == method and p.endswith(suffix)]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingQdrant:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def cloud() -> Iterator[RecordingQdrant]:
    with RecordingQdrant() as server:
        yield server


def remote_store(cloud: RecordingQdrant, settings: QdrantSettings) -> QdrantVectorStore:
    client = QdrantClient(url=cloud.url, prefer_grpc=False, check_compatibility=False, timeout=5)
    return QdrantVectorStore(client, PROFILE, settings)


# --- what Qdrant Cloud receives ----------------------------------------------------------------------
def test_a_new_collection_gets_the_multitenant_layout_by_default(cloud: RecordingQdrant) -> None:
    # Given the store on a Qdrant server with default settings
    store = remote_store(cloud, qsettings())
    # When it creates its collection
    store.ensure_collection()
    # Then the create request carries per-tenant HNSW graphs and no global one, INT8 quantization kept in
    # RAM, originals, sparse index and payload on disk, and two shards
    (body,) = cloud.named("PUT", f"/collections/{store.collection_name}")
    assert body["hnsw_config"] == {"m": 0, "payload_m": 16, "ef_construct": 100}
    assert body["quantization_config"] == {"scalar": {"type": "int8", "quantile": 0.99, "always_ram": True}}
    assert body["vectors"]["dense"] == {"size": PROFILE.dimension, "distance": "Cosine", "on_disk": True}
    assert body["sparse_vectors"]["bm25"] == {"modifier": "idf", "index": {"on_disk": True}}
    assert body["on_disk_payload"] is True
    assert body["shard_number"] == 2
    # And the tenant index that the per-tenant graphs are built from is created with is_tenant
    indexes = cloud.named("PUT", "/index")
    assert {"field_name": "tenant", "field_schema": {"type": "keyword", "is_tenant": True}} in indexes


def test_layout_settings_come_from_the_environment(cloud: RecordingQdrant) -> None:
    # Given the variables the stack parameters set, with non-default values
    env = {
        "QDRANT_HNSW_M": "16",
        "QDRANT_HNSW_PAYLOAD_M": "0",
        "QDRANT_HNSW_EF_CONSTRUCT": "256",
        "QDRANT_QUANTIZATION": "none",
        "QDRANT_VECTORS_ON_DISK": "false",
        "QDRANT_PAYLOAD_ON_DISK": "false",
        "QDRANT_SHARD_NUMBER": "6",
    }
    with mock.patch.dict(os.environ, env):
        settings = QdrantSettings(collection_prefix="t")
    # When the store creates its collection
    store = remote_store(cloud, settings)
    store.ensure_collection()
    # Then each one reached Qdrant, and no quantization was asked for
    (body,) = cloud.named("PUT", f"/collections/{store.collection_name}")
    assert body["hnsw_config"] == {"m": 16, "payload_m": 0, "ef_construct": 256}
    assert "quantization_config" not in body
    assert body["vectors"]["dense"]["on_disk"] is False
    assert body["sparse_vectors"]["bm25"]["index"] == {"on_disk": False}
    assert body["on_disk_payload"] is False
    assert body["shard_number"] == 6


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_dense_search_rescores_quantized_candidates(cloud: RecordingQdrant, mode: str) -> None:
    # Given a store on Qdrant with quantization (oversampling 3)
    store = remote_store(cloud, qsettings(quantization_oversampling=3.0))
    store.ensure_collection()
    # When it searches
    assert store.search(query("acme", "alpha beta", mode=mode)) == []
    # Then the dense search asks Qdrant to rescore 3x the candidates with the original vectors
    (body,) = cloud.named("POST", "/points/query/batch")
    searches = body["searches"]
    dense = next(s for s in searches if s["using"] == "dense")
    assert dense["params"]["quantization"] == {"rescore": True, "oversampling": 3.0}
    # And the sparse search of a hybrid search is left alone (sparse vectors are not quantized)
    if mode == "hybrid":
        sparse = next(s for s in searches if s["using"] == "bm25")
        assert "quantization" not in (sparse.get("params") or {})


@pytest.mark.parametrize("mode", ["sparse", "hybrid"])
def test_sparse_searches_count_idf_over_the_tenants_points_only(cloud: RecordingQdrant, mode: str) -> None:
    # Given a store on a Qdrant 1.19 server
    store = remote_store(cloud, qsettings())
    store.ensure_collection()
    # When acme searches with a metadata filter
    store.search(query("acme", "alpha beta", mode=mode, filters={"department": "eng"}))
    # Then the sparse request names acme's points, and only them, as the IDF corpus (not the metadata
    # filter: filters narrow results, they do not re-weigh terms)
    (body,) = cloud.named("POST", "/points/query/batch")
    sparse = next(s for s in body["searches"] if s["using"] == "bm25")
    tenant = {"key": "tenant", "match": {"value": "acme"}}
    assert sparse["params"]["idf"] == {"corpus": {"must": [tenant]}}
    assert tenant in sparse["filter"]["must"] and len(sparse["filter"]["must"]) == 2
    # And the server's version was checked once, before the collection was read
    assert [p for m, p, _ in cloud.requests if p == "/"] == ["/"]


def test_without_quantization_searches_ask_for_no_rescoring(cloud: RecordingQdrant) -> None:
    store = remote_store(cloud, qsettings(quantization="none"))
    store.ensure_collection()
    store.search(query("acme", "alpha", mode="dense"))
    (body,) = cloud.named("POST", "/points/query/batch")
    assert all("params" not in search for search in body["searches"])


def test_layout_settings_are_validated() -> None:
    # Given values Qdrant would reject, or that make no sense
    for bad in ({"hnsw_ef_construct": 2}, {"shard_number": 0}, {"quantization": "int4"}, {"hnsw_m": -1}):
        # Then the settings refuse them before anything is created
        with pytest.raises(ValidationError, match=next(iter(bad))):
            qsettings(**bad)


# --- the embedded engines ----------------------------------------------------------------------------
LAYOUTS = [
    {},  # the defaults
    {"quantization": "none", "vectors_on_disk": False, "payload_on_disk": False, "shard_number": 1},
    {"hnsw_m": 32, "hnsw_payload_m": 0, "hnsw_ef_construct": 400, "quantization_oversampling": 4.0},
]


@pytest.mark.parametrize("engine", ["server", "edge"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["defaults", "plain", "global-graph"])
def test_both_engines_accept_every_layout_and_search_the_same(engine: str, layout: dict[str, Any]) -> None:
    # Given a collection created with this layout on Edge, or through qdrant-client on the server stand-in
    client: Any = EdgeFolder(":memory:") if engine == "edge" else server_stand_in()
    try:
        store = store_on(client, PROFILE, qsettings(**layout))
        store.ensure_collection()
        store.upsert([point(t, k, text, metadata=m) for t, k, text, m in CORPUS])
        # When each mode searches
        results = {
            mode: keys(store.search(query("acme", "alpha beta", mode=mode)))
            for mode in ("dense", "sparse", "hybrid")
        }
        # Then the layout changed nothing: the best match leads, only the tenant's documents come back
        for mode, found in results.items():
            assert found[0] == "alpha.txt", mode
            assert set(found) <= {"alpha.txt", "beta.txt", "gamma.txt", "epsilon.txt"}
    finally:
        client.close()


def test_layout_arguments_are_a_valid_create_collection_request() -> None:
    # Given the arguments for every layout
    for layout in LAYOUTS:
        arguments = collection_layout(qsettings(**layout), 384)
        # Then qdrant_client's own request model accepts them under the names the REST API uses
        request = qm.CreateCollection(
            vectors=arguments["vectors_config"],
            sparse_vectors=arguments["sparse_vectors_config"],
            hnsw_config=arguments["hnsw_config"],
            quantization_config=arguments["quantization_config"],
            on_disk_payload=arguments["on_disk_payload"],
            shard_number=arguments["shard_number"],
        )
        assert request.shard_number == arguments["shard_number"]


# --- the stack parameters ------------------------------------------------------------------------------
LAYOUT_VARIABLES = {
    "QDRANT_HNSW_M": "hnsw_m",
    "QDRANT_HNSW_PAYLOAD_M": "hnsw_payload_m",
    "QDRANT_HNSW_EF_CONSTRUCT": "hnsw_ef_construct",
    "QDRANT_QUANTIZATION": "quantization",
    "QDRANT_QUANTIZATION_OVERSAMPLING": "quantization_oversampling",
    "QDRANT_VECTORS_ON_DISK": "vectors_on_disk",
    "QDRANT_PAYLOAD_ON_DISK": "payload_on_disk",
    "QDRANT_SHARD_NUMBER": "shard_number",
}


def test_stack_parameters_set_the_layout_where_collections_are_created_with_the_code_defaults() -> None:
    from tests.support.template import function_env, load_template

    # Given the template
    template = load_template()
    params = template["Parameters"]
    ingest = function_env(template, "IngestFunction")
    search = function_env(template, "SearchFunction")
    defaults = QdrantSettings.model_fields
    for variable, field in LAYOUT_VARIABLES.items():
        # Then ingest (which creates the collection) gets every layout variable from a parameter
        reference = ingest[variable]["Ref"]
        # And each parameter's default is the code's default, so a stack and the embedded default agree
        default = params[reference]["Default"]
        assert str(default).lower() == str(defaults[field].default).lower().removesuffix(".0"), variable
    # And reconcile, whose container creates a missing collection too, creates the same layout
    reconcile = function_env(template, "ReconcileFunction")
    for variable in LAYOUT_VARIABLES:
        assert reconcile.get(variable) == ingest[variable], variable
    # And search rescores exactly as ingest quantized
    for variable in ("QDRANT_QUANTIZATION", "QDRANT_QUANTIZATION_OVERSAMPLING"):
        assert search[variable] == ingest[variable]
