"""A loopback stand-in for a Qdrant server (REST), as strict as Qdrant Cloud.

Why it exists: ``QdrantVectorStore`` talks to Qdrant Cloud through ``QdrantClient(url=...)`` over REST.
qdrant-client's local mode answers the same client calls in process but applies none of the server's
rules, so the adapter could filter on any field and pass every test, then fail on Cloud. This server
speaks the REST routes the adapter uses, parses each body into ``qdrant_client.http.models`` (an unknown
field is a 400, as the server's ``extra="forbid"`` schema makes it), refuses what strict mode refuses,
and executes the rest on an in-memory local-mode client.

What it enforces (the rules are ``winnow_fakes.qdrant_strict``, read from the server's source):
- Every collection is created in strict mode with Qdrant Cloud's defaults (``CLOUD_STRICT_MODE``:
  ``unindexed_filtering_retrieve`` and ``unindexed_filtering_update`` false, at most 100 payload
  indexes); a ``strict_mode_config`` in the create or update body is merged over them and stored.
- A read (query, scroll, count, search, facet; a query's prefetch and IDF corpus filters too) or a
  filtered update or delete whose filter names a field without a fitting payload index is 400 with the
  server's message; so is a payload index past the limit.
- The key is checked when the server has one, from the ``api-key`` header or else
  ``Authorization: Bearer <key>``, as the server reads it (401 otherwise); ``rotate_key`` issues a new
  one and revokes the old (at once, or at ``revoke``), as a Cloud API key is deleted. ``GET /`` reports
  ``version``.
- ``throttle(times, retry_after)``: the next requests answer 429 with ``Retry-After`` (or without it).
Answers are ``{"result", "status": "ok", "time"}``; errors ``{"status": {"error"}, "time"}``."""

from __future__ import annotations

import json
import re
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from winnow_fakes.loopback import LoopbackHandler, LoopbackServer
from winnow_fakes.qdrant_strict import index_limit_message, schema_name, unindexed_key, unindexed_message

DEFAULT_VERSION = "1.19.0"
CLOUD_STRICT_MODE = {
    "enabled": True,
    "unindexed_filtering_retrieve": False,
    "unindexed_filtering_update": False,
    "max_payload_index_count": 100,
}


class Refused(Exception):
    """An answer other than 200: the status and Qdrant's error text."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass
class Throttle:
    times: int
    retry_after: int | None


@dataclass
class Collection:
    """What the server keeps beside local mode's data: strict mode, indexes, replication."""

    strict: dict[str, Any] = field(default_factory=lambda: dict(CLOUD_STRICT_MODE))
    indexes: dict[str, Any] = field(default_factory=dict)  # field -> schema (a type name or params)
    params: dict[str, Any] = field(default_factory=dict)  # replication_factor, write_consistency_factor

    def reported(self, info: Any) -> Any:
        """Local mode's ``CollectionInfo`` with what the server keeps: strict mode, params, indexes."""
        from qdrant_client.http import models as qm

        info.config.strict_mode_config = qm.StrictModeConfigOutput(**self.strict)
        for key, value in self.params.items():
            setattr(info.config.params, key, value)
        info.payload_schema = {
            f: qm.PayloadIndexInfo(
                data_type=qm.PayloadSchemaType(schema_name(s)),
                params=None if isinstance(s, str) else s,
                points=info.points_count or 0,
            )
            for f, s in self.indexes.items()
        }
        return info


class ApiKeys:
    """The server's keys, read from a request as Qdrant reads them: the ``api-key`` header, else an
    ``Authorization: Bearer`` token, must be a valid key when the server has one."""

    def __init__(self, key: str | None) -> None:
        self.current = key
        self.also_valid: set[str] = set()  # older keys not revoked yet (rotate(revoke_old=False))
        self.log: list[tuple[str | None, int]] = []
        self._lock = threading.Lock()

    def rotate(self, new_key: str, *, revoke_old: bool = True) -> str | None:
        with self._lock:
            old, self.current = self.current, new_key
            if old is not None and not revoke_old:
                self.also_valid.add(old)
            return old

    def revoke(self, key: str) -> None:
        with self._lock:
            self.also_valid.discard(key)

    def refuses(self, headers: Any) -> bool:
        sent = headers.get("api-key")
        if sent is None:
            bearer = headers.get("authorization") or ""
            sent = bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None
        with self._lock:
            refused = self.current is not None and sent != self.current and sent not in self.also_valid
            self.log.append((sent, 401 if refused else 0))
        return refused


class FakeQdrantServer(LoopbackServer):
    """See the module docstring. ``requests`` logs ``(method, path)``; ``refusals`` each refusal's text;
    ``keys`` each request's key and 401 (0 when accepted)."""

    name = "fake-qdrant"

    def __init__(self, *, api_key: str | None = None, version: str = DEFAULT_VERSION) -> None:
        super().__init__()
        from qdrant_client import QdrantClient

        self.auth = ApiKeys(api_key)
        self.keys = self.auth.log  # each request's key and 401, or 0 when accepted
        self.version = version
        self.local = QdrantClient(":memory:")
        self.collections: dict[str, Collection] = {}
        self.requests: list[tuple[str, str]] = []
        self.refusals: list[str] = []
        self._throttle: Throttle | None = None
        self._engine = threading.Lock()  # local mode has no locks of its own

    @property
    def url(self) -> str:
        return self.origin

    def throttle(self, times: int = 1, retry_after: int | None = 1) -> None:
        """Answer the next ``times`` requests 429, with ``Retry-After: retry_after`` unless None."""
        with self._lock:
            self._throttle = Throttle(times, retry_after) if times > 0 else None

    def rotate_key(self, new_key: str, *, revoke_old: bool = True) -> str | None:
        """Issue ``new_key``; the current one is refused (401) from now on unless ``revoke_old`` is
        false, when it stays valid until ``revoke``. Returns the old key."""
        return self.auth.rotate(new_key, revoke_old=revoke_old)

    def revoke(self, key: str) -> None:
        self.auth.revoke(key)

    def indexes(self, collection: str) -> dict[str, str]:
        """Each indexed field of ``collection`` (or of the collection an alias names) and its schema."""
        return {k: schema_name(v) for k, v in self._collection(collection).indexes.items()}

    def strict_mode(self, collection: str) -> dict[str, Any]:
        return dict(self._collection(collection).strict)

    def params(self, collection: str) -> dict[str, Any]:
        return dict(self._collection(collection).params)

    # --- dispatch -----------------------------------------------------------------------------------
    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            self.requests.append((method, path))
            throttle = self._throttle
            if throttle is not None:
                throttle.times -= 1
                if throttle.times <= 0:
                    self._throttle = None
        if throttle is not None:
            extra = {} if throttle.retry_after is None else {"Retry-After": str(throttle.retry_after)}
            return 429, _error("Rate limiting exceeded: Read rate limit exceeded, retry later"), extra
        if self.auth.refuses(headers):
            return 401, _error("Must provide an API key or an Authorization bearer token"), {}
        route = path.split("?", 1)[0].rstrip("/") or "/"
        for verb, pattern, handler in _ROUTES:
            matched = re.fullmatch(pattern, route)
            if verb == method and matched:
                try:
                    data = json.loads(body) if body else {}
                    with self._engine, warnings.catch_warnings():
                        # local mode warns that search params do nothing there: a server uses them
                        warnings.simplefilter("ignore", UserWarning)
                        result = handler(self, *matched.groups(), data)
                except Refused as refused:
                    self.refusals.append(refused.message)
                    return refused.status, _error(refused.message), refused.headers
                except ValidationError as error:
                    return 400, _error(f"Format error in JSON body: {str(error)[:300]}"), {}
                except ValueError as error:
                    return 400, _error(f"Bad request: {error}"), {}
                if route == "/":
                    return 200, result, {}
                return 200, {"result": _jsonable(result), "status": "ok", "time": 0.0001}, {}
        return 404, _error(f"Not found: {method} {route}"), {}

    # --- state --------------------------------------------------------------------------------------
    def _real_name(self, name: str) -> str:
        aliases = {a.alias_name: a.collection_name for a in self.local.get_aliases().aliases}
        return aliases.get(name, name)

    def _collection(self, name: str) -> Collection:
        real = self._real_name(name)
        if real not in self.collections or not self.local.collection_exists(real):
            raise Refused(404, f"Not found: Collection `{name}` doesn't exist!")
        return self.collections[real]

    def _check(self, name: str, where: Any, *, update: bool) -> None:
        strict = self._collection(name).strict
        if where is None or not strict.get("enabled"):
            return
        allowed = strict.get("unindexed_filtering_update" if update else "unindexed_filtering_retrieve")
        if allowed is not False:
            return
        missing = unindexed_key(where, self._collection(name).indexes)
        if missing is not None:
            raise Refused(400, unindexed_message(*missing))

    # --- routes -------------------------------------------------------------------------------------
    def _root(self, _data: Any) -> Any:
        return {"title": "qdrant - vector search engine", "version": self.version, "commit": "fake"}

    def _list(self, _data: Any) -> Any:
        return self.local.get_collections()

    def _exists(self, name: str, _data: Any) -> Any:
        return {"exists": self._real_name(name) in self.collections and self.local.collection_exists(name)}

    def _info(self, name: str, _data: Any) -> Any:
        return self._collection(name).reported(self.local.get_collection(name))

    def _create(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.CreateCollection.model_validate(data)
        if self.local.collection_exists(name):
            raise Refused(400, f"Wrong input: Collection `{name}` already exists!")
        self.local.create_collection(
            name,
            vectors_config=body.vectors,
            sparse_vectors_config=body.sparse_vectors,
            metadata=body.metadata,
        )
        kept = Collection()
        if body.strict_mode_config is not None:
            kept.strict.update(body.strict_mode_config.model_dump(exclude_none=True))
        kept.params = {
            "replication_factor": body.replication_factor or 1,
            "write_consistency_factor": body.write_consistency_factor or 1,
        }
        self.collections[name] = kept
        return True

    def _update(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.UpdateCollection.model_validate(data)
        kept = self._collection(name)
        if body.strict_mode_config is not None:
            kept.strict.update(body.strict_mode_config.model_dump(exclude_none=True))
        if body.metadata is not None or body.sparse_vectors is not None:
            self.local.update_collection(
                name, sparse_vectors_config=body.sparse_vectors, metadata=body.metadata
            )
        return True

    def _drop(self, name: str, _data: Any) -> Any:
        self.collections.pop(self._real_name(name), None)
        return self.local.delete_collection(name)

    def _create_index(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.CreateFieldIndex.model_validate(data)
        kept = self._collection(name)
        limit = kept.strict.get("max_payload_index_count") if kept.strict.get("enabled") else None
        if limit is not None and body.field_name not in kept.indexes and len(kept.indexes) >= limit:
            raise Refused(400, index_limit_message(limit))
        if body.field_schema is None:
            raise Refused(400, "Bad request: field_schema is required")
        kept.indexes[body.field_name] = body.field_schema
        return _updated()

    def _drop_index(self, name: str, field_name: str, _data: Any) -> Any:
        self._collection(name).indexes.pop(field_name, None)
        return _updated()

    def _upsert(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body: Any = _parse(qm.PointsList, data) if "points" in data else _parse(qm.PointsBatch, data)
        self._collection(name)
        self._check(name, body.update_filter, update=True)
        points = body.points if isinstance(body, qm.PointsList) else body.batch
        self.local.upsert(name, points=points, update_filter=body.update_filter)
        return _updated()

    def _delete(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        selector: Any = _parse(qm.FilterSelector, data) if "filter" in data else _parse(qm.PointIdsList, data)
        self._collection(name)
        if isinstance(selector, qm.FilterSelector):
            self._check(name, selector.filter, update=True)
        self.local.delete(name, points_selector=selector)
        return _updated()

    def _set_payload(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.SetPayload.model_validate(data)
        self.local.set_payload(name, payload=body.payload, points=self._selected(name, body), key=body.key)
        return _updated()

    def _delete_payload(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.DeletePayload.model_validate(data)
        self.local.delete_payload(name, keys=body.keys, points=self._selected(name, body))
        return _updated()

    def _selected(self, name: str, body: Any) -> Any:
        """The points a payload update selects: by ids, or by a filter strict mode checks as an update."""
        from qdrant_client.http import models as qm

        self._collection(name)
        self._check(name, body.filter, update=True)
        return qm.FilterSelector(filter=body.filter) if body.filter is not None else body.points

    def _count(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.CountRequest.model_validate(data)
        self._collection(name)
        self._check(name, body.filter, update=False)
        return self.local.count(name, count_filter=body.filter, exact=body.exact is not False)

    def _scroll(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.ScrollRequest.model_validate(data)
        self._collection(name)
        self._check(name, body.filter, update=False)
        points, offset = self.local.scroll(
            name,
            scroll_filter=body.filter,
            limit=body.limit or 10,
            offset=body.offset,
            order_by=body.order_by,
            with_payload=body.with_payload if body.with_payload is not None else True,
            with_vectors=body.with_vector if body.with_vector is not None else False,
        )
        return qm.ScrollResult(points=points, next_page_offset=offset)

    def _retrieve(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.PointRequest.model_validate(data)
        self._collection(name)
        return self.local.retrieve(
            name,
            ids=body.ids,
            with_payload=body.with_payload if body.with_payload is not None else True,
            with_vectors=body.with_vector if body.with_vector is not None else False,
        )

    def _query_batch(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.QueryRequestBatch.model_validate(data)
        self._collection(name)
        for request in body.searches:
            self._check_query(name, request)
        return self.local.query_batch_points(name, requests=body.searches)

    def _query(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.QueryRequest.model_validate(data)
        self._collection(name)
        self._check_query(name, body)
        return self.local.query_batch_points(name, requests=[body])[0]

    def _check_query(self, name: str, request: Any) -> None:
        self._check(name, request.filter, update=False)
        idf = getattr(request.params, "idf", None)
        self._check(name, getattr(idf, "corpus", None), update=False)
        prefetch = request.prefetch
        for inner in prefetch if isinstance(prefetch, list) else [prefetch] if prefetch else []:
            self._check_query(name, inner)

    def _facet(self, name: str, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.FacetRequest.model_validate(data)
        self._collection(name)
        self._check(name, body.filter, update=False)
        return self.local.facet(
            name, key=body.key, facet_filter=body.filter, limit=body.limit or 10, exact=bool(body.exact)
        )

    def _aliases(self, _data: Any) -> Any:
        return self.local.get_aliases()

    def _collection_aliases(self, name: str, _data: Any) -> Any:
        return self.local.get_collection_aliases(name)

    def _change_aliases(self, data: Any) -> Any:
        from qdrant_client.http import models as qm

        body = qm.ChangeAliasesOperation.model_validate(data)
        return self.local.update_collection_aliases(change_aliases_operations=body.actions)


_C = r"/collections/([^/]+)"
_ROUTES: list[tuple[str, str, Callable[..., Any]]] = [
    ("GET", r"/", FakeQdrantServer._root),
    ("GET", r"/collections", FakeQdrantServer._list),
    ("GET", r"/aliases", FakeQdrantServer._aliases),
    ("POST", r"/collections/aliases", FakeQdrantServer._change_aliases),
    ("GET", _C + r"/exists", FakeQdrantServer._exists),
    ("GET", _C + r"/aliases", FakeQdrantServer._collection_aliases),
    ("GET", _C, FakeQdrantServer._info),
    ("PUT", _C, FakeQdrantServer._create),
    ("PATCH", _C, FakeQdrantServer._update),
    ("DELETE", _C, FakeQdrantServer._drop),
    ("PUT", _C + r"/index", FakeQdrantServer._create_index),
    ("DELETE", _C + r"/index/([^/]+)", FakeQdrantServer._drop_index),
    ("PUT", _C + r"/points", FakeQdrantServer._upsert),
    ("POST", _C + r"/points", FakeQdrantServer._retrieve),
    ("POST", _C + r"/points/delete", FakeQdrantServer._delete),
    ("POST", _C + r"/points/payload", FakeQdrantServer._set_payload),
    ("POST", _C + r"/points/payload/delete", FakeQdrantServer._delete_payload),
    ("POST", _C + r"/points/count", FakeQdrantServer._count),
    ("POST", _C + r"/points/scroll", FakeQdrantServer._scroll),
    ("POST", _C + r"/points/query", FakeQdrantServer._query),
    ("POST", _C + r"/points/query/batch", FakeQdrantServer._query_batch),
    ("POST", _C + r"/facet", FakeQdrantServer._facet),
]


class _Handler(LoopbackHandler):
    def _serve(self) -> None:
        body = self.read_body()
        status, payload, headers = self.fake.answer(self.command, self.path, self.headers, body)
        self.send_json(status, payload, headers)

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _serve


FakeQdrantServer.handler = _Handler


def _parse(model: type[BaseModel], data: Any) -> Any:
    return model.model_validate(data)


def _updated() -> dict[str, Any]:
    return {"operation_id": 0, "status": "completed"}


def _error(message: str) -> dict[str, Any]:
    return {"status": {"error": message}, "time": 0.0001}


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True, by_alias=True)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value
