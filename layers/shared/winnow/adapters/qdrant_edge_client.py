"""Qdrant Edge (``qdrant-edge-py``, an in-process Rust engine) behind the part of the ``QdrantClient`` API
that ``QdrantVectorStore`` and ``QdrantActiveIndex`` call, so they run unchanged on it.

Why: qdrant-client's local mode evaluates filters and sparse dot products per point in Python (hundreds
of ms per hybrid query at a few thousand chunks); Edge runs the same queries in Rust. Opt-in for the
embedded default (``QDRANT_LOCAL_ENGINE=edge``); never used with a Qdrant URL and never imported by the
search Lambda (``qdrant_edge`` is imported lazily and is not in the Lambda layer).

Layout under the root folder: ``<root>/edge/<collection>/shard`` (one ``EdgeShard`` per collection),
``<root>/edge/<collection>/collection.json`` (vector layout and metadata, which a shard does not keep),
``<root>/edge/aliases.json``, and ``<root>/edge/.lock`` held by the one process that owns the folder.
Arguments are ``qdrant_client`` models and answers are ``qdrant_client`` models; Edge failures surface as
``UnexpectedResponse`` with the HTTP status a Qdrant server would give (404 missing collection, 409 exists,
400 bad input, 500 anything else), so callers translate them exactly as they do for Qdrant Cloud.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

_SUBDIR = "edge"
_COLLECTION_FILE = "collection.json"
_ALIASES_FILE = "aliases.json"
_SHARD_DIR = "shard"
_FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
_DEFAULT_RRF_K = 2  # Qdrant's default ranking constant when a query asks for plain RRF
_BAD_INPUT = ("wrong input", "bad input", "bad request", "vector dimension error", "not existing vector")


def _error(status: int, message: str) -> Exception:
    """A ``UnexpectedResponse`` shaped like a Qdrant server's answer."""
    import httpx
    from qdrant_client.http.exceptions import UnexpectedResponse

    reasons = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 500: "Internal Server Error"}
    body = json.dumps({"status": {"error": message[:500]}}).encode()
    return UnexpectedResponse(status, reasons.get(status, ""), body, httpx.Headers())


def _engine_error(exc: Exception, what: str) -> Exception:
    """Edge raises bare ``Exception`` with a message: bad input is a 400, a missing point set a 404,
    anything else (storage, WAL) a 500."""
    message = str(exc)
    lowered = message.lower()
    if any(marker in lowered for marker in _BAD_INPUT):
        return _error(400, f"Bad request: {message}")
    if "not found" in lowered:
        return _error(404, f"Not found: {message}")
    return _error(500, f"Service internal error during {what}: {message}")


class EdgeQdrantClient:
    """See the module docstring. ``location`` is a folder, or ``:memory:`` for a throw-away temp folder.
    Thread-safe: Edge shards take their own locks; this object guards only its registry of open shards."""

    def __init__(self, location: str) -> None:
        import portalocker

        self._temporary = location == ":memory:"
        base = Path(tempfile.mkdtemp(prefix="winnow-edge-")) if self._temporary else Path(location)
        self._root = base / _SUBDIR
        if self._temporary:  # a ":memory:" client nobody closes still leaves no folder behind
            weakref.finalize(self, shutil.rmtree, str(base), True)
        self._root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._shards: dict[str, E.EdgeShard] = {}
        self._configs: dict[str, dict[str, Any]] = {}
        self.closed = False
        self._flock = (self._root / ".lock").open("w")
        try:
            portalocker.lock(
                self._flock, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException as exc:
            self._flock.close()
            # The same exception qdrant-client's local mode raises, so callers handle both engines alike.
            raise RuntimeError(
                f"Qdrant Edge storage {self._root} is already accessed by another process"
            ) from exc

    @property
    def _client(self) -> EdgeQdrantClient:
        """Where ``QdrantClient`` keeps its backend (callers check ``_client.closed``)."""
        return self

    # --- lifecycle ---------------------------------------------------------------------------------
    def close(self, **_: Any) -> None:
        import portalocker

        with self._lock:
            if self.closed:
                return
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()
            self.closed = True
            portalocker.unlock(self._flock)
            self._flock.close()
            if self._temporary:
                shutil.rmtree(self._root.parent, ignore_errors=True)

    # --- collections -------------------------------------------------------------------------------
    def collection_exists(self, collection_name: str, **_: Any) -> bool:
        return self._config_of(collection_name) is not None

    def get_collections(self, **_: Any) -> qm.CollectionsResponse:
        from qdrant_client.http import models as qm

        self._check_open()
        names = sorted(p.parent.name for p in self._root.glob(f"*/{_COLLECTION_FILE}"))
        return qm.CollectionsResponse(collections=[qm.CollectionDescription(name=n) for n in names])

    def get_collection(self, collection_name: str, **_: Any) -> qm.CollectionInfo:
        from qdrant_client.http import models as qm

        name = self._resolve(collection_name)
        config = self._require_config(name)
        info = self._shard(name).info()
        schema = {
            field: qm.PayloadIndexInfo(
                data_type=qm.PayloadSchemaType(str(index.data_type).rsplit(".", 1)[-1].lower()),
                points=index.points,
            )
            for field, index in info.payload_schema.items()
        }
        return qm.CollectionInfo(
            status=qm.CollectionStatus.GREEN,
            optimizer_status=qm.OptimizersStatusOneOf.OK,
            indexed_vectors_count=info.indexed_vectors_count,
            points_count=info.points_count,
            segments_count=info.segments_count,
            payload_schema=schema,
            config=qm.CollectionConfig(
                params=qm.CollectionParams(
                    vectors={
                        n: qm.VectorParams(size=v["size"], distance=qm.Distance(v["distance"]))
                        for n, v in config["vectors"].items()
                    },
                    sparse_vectors={
                        n: qm.SparseVectorParams(
                            modifier=qm.Modifier(v["modifier"]) if v["modifier"] else None
                        )
                        for n, v in config["sparse_vectors"].items()
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
                metadata=config.get("metadata"),
            ),
        )

    def create_collection(
        self,
        collection_name: str,
        vectors_config: qm.VectorParams | dict[str, qm.VectorParams] | None = None,
        sparse_vectors_config: dict[str, qm.SparseVectorParams] | None = None,
        metadata: dict[str, Any] | None = None,
        **_: Any,
    ) -> bool:
        import qdrant_edge as E

        if not _NAME.match(collection_name):
            raise _error(400, f"Bad request: collection name {collection_name!r} is not allowed here")
        dense = vectors_config if isinstance(vectors_config, dict) else {"": vectors_config}
        dense = {n: v for n, v in dense.items() if v is not None}
        sparse = dict(sparse_vectors_config or {})
        config = {
            "format": _FORMAT,
            "vectors": {n: {"size": v.size, "distance": _raw(v.distance)} for n, v in dense.items()},
            "sparse_vectors": {
                n: {"modifier": _raw(v.modifier) if v.modifier is not None else None}
                for n, v in sparse.items()
            },
            "metadata": metadata,
        }
        edge_config = E.EdgeConfig(
            vectors={
                n: E.EdgeVectorParams(
                    size=v.size, distance=getattr(E.Distance, _enum_value(v.distance).title())
                )
                for n, v in dense.items()
            },
            sparse_vectors={
                n: E.EdgeSparseVectorParams(
                    modifier=E.Modifier.Idf
                    if v.modifier is not None and _enum_value(v.modifier) == "idf"
                    else None
                )
                for n, v in sparse.items()
            },
        )
        with self._lock:
            self._check_open()
            folder = self._root / collection_name
            if (folder / _COLLECTION_FILE).exists():
                raise _error(409, f"Wrong input: Collection `{collection_name}` already exists!")
            shutil.rmtree(folder, ignore_errors=True)  # a half-made collection from a crash
            folder.mkdir(parents=True)
            try:
                shard = E.EdgeShard.create(str(folder / _SHARD_DIR), edge_config)
            except Exception as exc:
                shutil.rmtree(folder, ignore_errors=True)
                raise _engine_error(exc, "create collection") from exc
            self._shards[collection_name] = shard
            # Written last: the collection exists for readers only once its layout is on disk.
            _write_json(folder / _COLLECTION_FILE, config)
            self._configs[collection_name] = config
        return True

    def delete_collection(self, collection_name: str, **_: Any) -> bool:
        with self._lock:
            self._check_open()
            if self._config_of(collection_name) is None:
                return False
            shard = self._shards.pop(collection_name, None)
            if shard is not None:
                shard.close()
            self._configs.pop(collection_name, None)
            folder = self._root / collection_name
            (folder / _COLLECTION_FILE).unlink()
            shutil.rmtree(folder, ignore_errors=True)
            aliases = {a: c for a, c in self._aliases().items() if c != collection_name}
            _write_json(self._root / _ALIASES_FILE, aliases)
        return True

    def create_payload_index(
        self,
        collection_name: str,
        field_name: str,
        field_schema: Any = None,
        wait: bool = True,
        **_: Any,
    ) -> qm.UpdateResult:
        import qdrant_edge as E

        schema = _index_schema(field_schema)
        self._update(
            collection_name, E.UpdateOperation.create_field_index(field_name, schema), "create index"
        )
        return _done()

    # --- aliases -----------------------------------------------------------------------------------
    def get_aliases(self, **_: Any) -> qm.CollectionsAliasesResponse:
        from qdrant_client.http import models as qm

        with self._lock:
            self._check_open()
            aliases = self._aliases()
        return qm.CollectionsAliasesResponse(
            aliases=[qm.AliasDescription(alias_name=a, collection_name=c) for a, c in sorted(aliases.items())]
        )

    def update_collection_aliases(self, change_aliases_operations: Sequence[Any], **_: Any) -> bool:
        """All operations apply or none: the file is replaced in one rename."""
        from qdrant_client.http import models as qm

        with self._lock:
            self._check_open()
            aliases = self._aliases()
            for op in change_aliases_operations:
                if isinstance(op, qm.CreateAliasOperation):
                    target = op.create_alias.collection_name
                    if self._config_of(target) is None:
                        raise _error(404, f"Not found: Collection `{target}` doesn't exist!")
                    aliases[op.create_alias.alias_name] = target
                elif isinstance(op, qm.DeleteAliasOperation):
                    if aliases.pop(op.delete_alias.alias_name, None) is None:
                        raise _error(404, f"Not found: Alias {op.delete_alias.alias_name} does not exists!")
                elif isinstance(op, qm.RenameAliasOperation):
                    old, new = op.rename_alias.old_alias_name, op.rename_alias.new_alias_name
                    if old not in aliases:
                        raise _error(404, f"Not found: Alias {old} does not exists!")
                    aliases[new] = aliases.pop(old)
                else:
                    raise _error(400, f"Bad request: unsupported alias operation {type(op).__name__}")
            _write_json(self._root / _ALIASES_FILE, aliases)
        return True

    # --- writes ------------------------------------------------------------------------------------
    def upsert(
        self, collection_name: str, points: Sequence[qm.PointStruct], wait: bool = True, **_: Any
    ) -> Any:
        import qdrant_edge as E

        if not isinstance(points, list | tuple):
            raise TypeError("the edge engine takes a list of PointStruct")
        converted = [E.Point(_point_id(p.id), _vectors(p.vector), p.payload) for p in points]
        self._update(collection_name, E.UpdateOperation.upsert_points(converted), "upsert")
        return _done()

    def delete(self, collection_name: str, points_selector: Any, wait: bool = True, **_: Any) -> Any:
        import qdrant_edge as E

        ids, where = _selector(points_selector)
        if where is not None:
            operation = E.UpdateOperation.delete_points_by_filter(where)
        else:
            operation = E.UpdateOperation.delete_points(ids)
        self._update(collection_name, operation, "delete")
        return _done()

    def set_payload(
        self,
        collection_name: str,
        payload: dict[str, Any],
        points: Any,
        key: str | None = None,
        wait: bool = True,
        **_: Any,
    ) -> Any:
        import qdrant_edge as E

        ids, where = _selector(points)
        if where is not None:
            operation = E.UpdateOperation.set_payload_by_filter(where, payload, key)
        else:
            operation = E.UpdateOperation.set_payload(ids, payload, key)
        self._update(collection_name, operation, "set payload")
        return _done()

    # --- reads -------------------------------------------------------------------------------------
    def count(
        self, collection_name: str, count_filter: qm.Filter | None = None, exact: bool = True, **_: Any
    ) -> qm.CountResult:
        import qdrant_edge as E
        from qdrant_client.http import models as qm

        request = E.CountRequest(exact=exact, filter=_filter(count_filter))
        shard = self._shard(self._resolve(collection_name))
        try:
            return qm.CountResult(count=shard.count(request))
        except Exception as exc:
            raise _engine_error(exc, "count") from exc

    def retrieve(
        self,
        collection_name: str,
        ids: Sequence[Any],
        with_payload: Any = True,
        with_vectors: Any = False,
        **_: Any,
    ) -> list[qm.Record]:
        shard = self._shard(self._resolve(collection_name))
        try:
            records = shard.retrieve(
                [_point_id(i) for i in ids], _with_payload(with_payload), _with_vectors(with_vectors)
            )
        except Exception as exc:
            raise _engine_error(exc, "retrieve") from exc
        return [_record(r) for r in records]

    def scroll(
        self,
        collection_name: str,
        scroll_filter: qm.Filter | None = None,
        limit: int = 10,
        offset: Any = None,
        with_payload: Any = True,
        with_vectors: Any = False,
        **_: Any,
    ) -> tuple[list[qm.Record], Any]:
        import qdrant_edge as E

        request = E.ScrollRequest(
            offset=_point_id(offset) if offset is not None else None,
            limit=limit,
            filter=_filter(scroll_filter),
            with_payload=_with_payload(with_payload),
            with_vector=_with_vectors(with_vectors),
        )
        shard = self._shard(self._resolve(collection_name))
        try:
            records, next_offset = shard.scroll(request)
        except Exception as exc:
            raise _engine_error(exc, "scroll") from exc
        return [_record(r) for r in records], _id_out(next_offset) if next_offset is not None else None

    def query_points(
        self,
        collection_name: str,
        query: Any = None,
        using: str | None = None,
        prefetch: Any = None,
        query_filter: qm.Filter | None = None,
        search_params: qm.SearchParams | None = None,
        limit: int = 10,
        offset: int | None = None,
        with_payload: Any = True,
        with_vectors: Any = False,
        score_threshold: float | None = None,
        **_: Any,
    ) -> qm.QueryResponse:
        import qdrant_edge as E
        from qdrant_client.http import models as qm

        prefetches = prefetch if isinstance(prefetch, list) else [prefetch] if prefetch is not None else []
        request = E.QueryRequest(
            limit=limit,
            offset=offset,
            query=_query(query, using),
            prefetches=[_prefetch(p) for p in prefetches],
            with_vector=_with_vectors(with_vectors),
            with_payload=_with_payload(with_payload),
            filter=_filter(query_filter),
            score_threshold=score_threshold,
            params=_search_params(search_params),
        )
        shard = self._shard(self._resolve(collection_name))
        try:
            found = shard.query(request)
        except Exception as exc:
            raise _engine_error(exc, "query") from exc
        return qm.QueryResponse(points=[_scored(p) for p in found])

    # --- plumbing ----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("the Qdrant Edge client is closed")

    def _aliases(self) -> dict[str, str]:
        path = self._root / _ALIASES_FILE
        if not path.exists():
            return {}
        return {str(a): str(c) for a, c in json.loads(path.read_text()).items()}

    def _resolve(self, name: str) -> str:
        """A collection name, or the collection an alias points at (as a Qdrant server does)."""
        if self._config_of(name) is not None:
            return name
        with self._lock:
            return self._aliases().get(name, name)

    def _config_of(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            self._check_open()
            cached = self._configs.get(name)
            if cached is not None:
                return cached
            if not _NAME.match(name):
                return None
            path = self._root / name / _COLLECTION_FILE
            if not path.exists():
                return None
            config: dict[str, Any] = json.loads(path.read_text())
            self._configs[name] = config
            return config

    def _require_config(self, name: str) -> dict[str, Any]:
        config = self._config_of(name)
        if config is None:
            raise _error(404, f"Not found: Collection `{name}` doesn't exist!")
        return config

    def _shard(self, name: str) -> E.EdgeShard:
        shard = self._shards.get(name)
        if shard is not None and not self.closed:
            return shard
        import qdrant_edge as E

        with self._lock:
            self._require_config(name)
            shard = self._shards.get(name)
            if shard is None:
                try:
                    shard = E.EdgeShard.load(str(self._root / name / _SHARD_DIR))
                except Exception as exc:
                    raise _engine_error(exc, "open collection") from exc
                self._shards[name] = shard
            return shard

    def _update(self, collection_name: str, operation: E.UpdateOperation, what: str) -> None:
        shard = self._shard(self._resolve(collection_name))
        try:
            shard.update(operation)
        except Exception as exc:
            raise _engine_error(exc, what) from exc


# --- translation: qdrant_client models -> qdrant_edge ---------------------------------------------------
def _enum_value(value: Any) -> str:
    return str(getattr(value, "value", value)).lower()


def _raw(value: Any) -> str:
    """An enum of ``qdrant_client.models`` as the string Qdrant uses on the wire (``Cosine``, ``idf``)."""
    return str(getattr(value, "value", value))


def _done() -> qm.UpdateResult:
    from qdrant_client.http import models as qm

    return qm.UpdateResult(operation_id=0, status=qm.UpdateStatus.COMPLETED)


def _point_id(value: Any) -> Any:
    """Edge takes ints and UUIDs; Qdrant accepts any UUID spelling and so do we."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise _error(
            400, f"Bad request: point id {value!r} is neither an unsigned integer nor a UUID"
        ) from None


def _id_out(value: Any) -> Any:
    return value if isinstance(value, int) else str(value)


def _sparse(vector: Any) -> E.SparseVector:
    import qdrant_edge as E

    return E.SparseVector(list(vector.indices), [float(v) for v in vector.values])


def _vectors(vector: Any) -> Any:
    from qdrant_client.http import models as qm

    if isinstance(vector, dict):
        return {
            name: _sparse(v) if isinstance(v, qm.SparseVector) else [float(x) for x in v]
            for name, v in vector.items()
        }
    if isinstance(vector, list):
        return {"": [float(x) for x in vector]}
    raise _error(400, f"Bad request: unsupported vector {type(vector).__name__}")


def _selector(selector: Any) -> tuple[list[Any], E.Filter | None]:
    from qdrant_client.http import models as qm

    if isinstance(selector, qm.FilterSelector):
        return [], _filter(selector.filter)
    if isinstance(selector, qm.Filter):
        return [], _filter(selector)
    if isinstance(selector, qm.PointIdsList):
        return [_point_id(i) for i in selector.points], None
    if isinstance(selector, list | tuple):
        return [_point_id(i) for i in selector], None
    raise _error(400, f"Bad request: unsupported points selector {type(selector).__name__}")


def _index_schema(schema: Any) -> Any:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if isinstance(schema, qm.KeywordIndexParams):
        return E.KeywordIndexParams(is_tenant=schema.is_tenant, on_disk=schema.on_disk)
    kind = getattr(schema, "type", schema)  # other *IndexParams: index by their type
    try:
        return getattr(E.PayloadSchemaType, _enum_value(kind).title())
    except AttributeError:
        raise _error(400, f"Bad request: unsupported payload index {schema!r}") from None


def _filter(where: Any) -> E.Filter | None:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if where is None:
        return None
    if not isinstance(where, qm.Filter):
        raise _error(400, f"Bad request: unsupported filter {type(where).__name__}")

    def many(conditions: Any) -> list[Any] | None:
        if conditions is None:
            return None
        items = conditions if isinstance(conditions, list) else [conditions]
        return [_condition(c) for c in items]

    min_should = None
    if where.min_should is not None:
        min_should = E.MinShould(
            conditions=many(where.min_should.conditions) or [], min_count=where.min_should.min_count
        )
    return E.Filter(
        must=many(where.must), should=many(where.should), must_not=many(where.must_not), min_should=min_should
    )


def _condition(condition: Any) -> Any:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if isinstance(condition, qm.Filter):
        return _filter(condition)
    if isinstance(condition, qm.FieldCondition):
        range_ = None
        if condition.range is not None:
            r = condition.range
            kind = E.RangeDateTime if isinstance(r, qm.DatetimeRange) else E.RangeFloat
            range_ = kind(
                gte=_range_bound(r.gte), gt=_range_bound(r.gt), lte=_range_bound(r.lte), lt=_range_bound(r.lt)
            )
        values_count = None
        if condition.values_count is not None:
            vc = condition.values_count
            values_count = E.ValuesCount(lt=vc.lt, gt=vc.gt, lte=vc.lte, gte=vc.gte)
        return E.FieldCondition(
            key=condition.key,
            match=_match(condition.match) if condition.match is not None else None,
            range=range_,
            values_count=values_count,
            is_empty=condition.is_empty,
            is_null=condition.is_null,
        )
    if isinstance(condition, qm.IsEmptyCondition):
        return E.IsEmptyCondition(key=condition.is_empty.key)
    if isinstance(condition, qm.IsNullCondition):
        return E.IsNullCondition(key=condition.is_null.key)
    if isinstance(condition, qm.HasIdCondition):
        return E.HasIdCondition(point_ids={_point_id(i) for i in condition.has_id})
    if isinstance(condition, qm.HasVectorCondition):
        return E.HasVectorCondition(vector=condition.has_vector)
    if isinstance(condition, qm.NestedCondition):
        nested = _filter(condition.nested.filter)
        return E.NestedCondition(key=condition.nested.key, filter=nested)  # type: ignore[arg-type]
    raise _error(400, f"Bad request: unsupported filter condition {type(condition).__name__}")


def _range_bound(value: Any) -> Any:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else float(value)


def _match(match: Any) -> Any:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if isinstance(match, qm.MatchValue):
        value = match.value
        if isinstance(value, bool):
            # qdrant-edge-py 0.9.0 turns a Python bool into the integer 1/0, which never matches a stored
            # boolean; numpy's bool is not an int subclass and arrives as a boolean.
            import numpy as np

            return E.MatchValue(value=np.bool_(value))  # type: ignore[arg-type]
        return E.MatchValue(value=value)
    if isinstance(match, qm.MatchAny):
        return E.MatchAny(any=cast("list[str] | list[int]", list(match.any)))
    if isinstance(match, qm.MatchExcept):
        return E.MatchExcept(except_=cast("list[str] | list[int]", list(match.except_)))
    if isinstance(match, qm.MatchText):
        return E.MatchText(text=match.text)
    if isinstance(match, qm.MatchPhrase):
        return E.MatchPhrase(phrase=match.phrase)
    raise _error(400, f"Bad request: unsupported match {type(match).__name__}")


def _with_payload(value: Any) -> Any:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, qm.PayloadSelectorInclude):
        return E.PayloadSelector.Include(list(value.include))
    if isinstance(value, qm.PayloadSelectorExclude):
        return E.PayloadSelector.Exclude(list(value.exclude))
    raise _error(400, f"Bad request: unsupported with_payload {value!r}")


def _with_vectors(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return [str(v) for v in value]
    raise _error(400, f"Bad request: unsupported with_vectors {value!r}")


def _nearest(vector: Any, using: str | None) -> E.Query:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if isinstance(vector, qm.NearestQuery):
        vector = vector.nearest
    if isinstance(vector, qm.SparseVector):
        return E.Query.Nearest(_sparse(vector), using=using)
    if isinstance(vector, list) and all(isinstance(x, int | float) for x in vector):
        return E.Query.Nearest([float(x) for x in vector], using=using)
    raise _error(400, f"Bad request: unsupported query {type(vector).__name__}")


def _query(query: Any, using: str | None) -> Any:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if query is None:
        return None
    if isinstance(query, qm.RrfQuery):
        rrf = query.rrf
        k = rrf.k if rrf.k is not None else _DEFAULT_RRF_K
        return E.Fusion.Rrf(k=k, weights=list(rrf.weights) if rrf.weights is not None else None)
    if isinstance(query, qm.FusionQuery):
        if query.fusion == qm.Fusion.DBSF:
            return E.Fusion.Dbsf()
        return E.Fusion.Rrf(k=_DEFAULT_RRF_K)
    return _nearest(query, using)


def _prefetch(prefetch: Any) -> E.Prefetch:
    import qdrant_edge as E

    nested = prefetch.prefetch
    nested_list = nested if isinstance(nested, list) else [nested] if nested is not None else []
    return E.Prefetch(
        limit=prefetch.limit if prefetch.limit is not None else 10,
        query=_query(prefetch.query, prefetch.using),
        prefetches=[_prefetch(p) for p in nested_list],
        params=_search_params(prefetch.params),
        filter=_filter(prefetch.filter),
        score_threshold=prefetch.score_threshold,
    )


def _search_params(params: Any) -> E.SearchParams | None:
    import qdrant_edge as E
    from qdrant_client.http import models as qm

    if params is None:
        return None
    idf = None
    if isinstance(params.idf, qm.IdfCorpusParams):
        idf = E.IdfParams(corpus=_filter(params.idf.corpus))
    return E.SearchParams(
        hnsw_ef=params.hnsw_ef,
        exact=bool(params.exact),
        indexed_only=bool(params.indexed_only),
        idf=idf,
    )


# --- translation: qdrant_edge -> qdrant_client models ---------------------------------------------------
def _vector_out(vector: Any) -> Any:
    from qdrant_client.http import models as qm

    if vector is None:
        return None
    if isinstance(vector, dict):
        return {
            name: qm.SparseVector(indices=list(v.indices), values=list(v.values))
            if hasattr(v, "indices")
            else v
            for name, v in vector.items()
        }
    return vector


def _record(record: Any) -> qm.Record:
    from qdrant_client.http import models as qm

    return qm.Record.model_construct(
        id=_id_out(record.id), payload=record.payload, vector=_vector_out(record.vector), shard_key=None
    )


def _scored(point: Any) -> qm.ScoredPoint:
    from qdrant_client.http import models as qm

    # model_construct: the engine's answer is already well formed; validating it costs a query's worth.
    return qm.ScoredPoint.model_construct(
        id=_id_out(point.id),
        version=point.version,
        score=point.score,
        payload=point.payload,
        vector=_vector_out(point.vector),
        shard_key=None,
        order_value=None,
    )


def _write_json(path: Path, value: Any) -> None:
    """Write to a temp file and rename it over the target, so a crash never leaves half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        json.dump(value, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
