"""Run the real Lambda handlers in this process, the way AWS would invoke them.

The CLI, the local server and the demo all come through here: objects go into the local bucket, the
resulting S3 notification goes to ``functions.ingest.app.handler``, and API requests become API Gateway
events for ``functions.search.app.handler``. Handlers are imported on first use so ``winnow --help``
stays instant."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from winnow_local.apigw import QueryValue, http_api_event, to_http_response
from winnow_local.context import LocalLambdaContext

if TYPE_CHECKING:
    from winnow_local.adapters.objects_local import LocalObjectSource

DEFAULT_TENANT = "default"


def close_local_qdrant(path: Path | str | None = None) -> None:
    """Close the embedded Qdrant engine of ``path`` (every one when None). It holds a folder lock until
    closed; the adapter reopens a closed engine on next use."""
    store_module = sys.modules.get("winnow_local.adapters.qdrant_edge")
    clients = getattr(store_module, "_LOCAL_CLIENTS", None)
    if not clients:
        return
    keys = list(clients) if path is None else [str(Path(path).expanduser().resolve())]
    for key in keys:
        client = clients.get(key)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()


def local_qdrant_path() -> Path | None:
    """Where the current settings put Qdrant Edge's folder, or None for a server or ``:memory:``."""
    from winnow.factory import get_container

    settings = get_container().settings
    if settings.qdrant.url or settings.qdrant.path == ":memory:":
        return None
    return Path(settings.qdrant.path) if settings.qdrant.path else settings.storage.qdrant_local_path


def state_folder() -> str:
    """Where this process keeps its state, as an absolute path (WINNOW_HOME is relative to the current
    folder, so the same command run elsewhere looks in another place)."""
    from winnow.factory import get_container

    return str(get_container().settings.storage.home.expanduser().resolve())


def no_documents(tenant: str) -> str:
    """Why a search of a tenant without documents finds nothing, and what to do: the one wording of the
    CLI and ``winnow mcp``."""
    return (
        f"no documents for tenant {tenant} in {state_folder()} (WINNOW_HOME); "
        f"ingest some with `winnow ingest PATH --tenant {tenant}`, or run from the folder you ingested in"
    )


@dataclass(frozen=True)
class ApiResponse:
    """An HTTP response as a client of the deployed API would receive it."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    @property
    def error_message(self) -> str:
        """The ``error.message`` of an error body, or the raw body when it is not one."""
        try:
            payload = self.json()
        except ValueError:
            return self.body.decode("utf-8", "replace").strip() or f"HTTP {self.status}"
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            return str(
                payload["error"].get("message") or payload["error"].get("code") or f"HTTP {self.status}"
            )
        if isinstance(payload, dict) and payload.get("message"):  # API Gateway's own 401/403/429 bodies
            return f"HTTP {self.status}: {payload['message']}"
        return f"HTTP {self.status}"


@dataclass(frozen=True)
class Upload:
    """One object to put into the local bucket under ``key`` (``<tenant>/<path>``)."""

    key: str
    data: bytes
    metadata: Mapping[str, str] | None = None
    content_type: str | None = None


class LocalRuntime:
    """The handlers and the local bucket, behind one lock for writes.

    Qdrant Edge and the SQLite ledger are single-writer, so ingests (and deletes) run one at a
    time; searches share the same container and can run alongside."""

    def __init__(self, user: str | None = None, groups: Sequence[str] = ()) -> None:
        self._write_lock = threading.Lock()
        # Who the CLI's requests come from (``--user``/``--groups``): claims of the event, as a token's.
        self.user = user
        self.groups = tuple(groups)

    # --- search API ------------------------------------------------------------------------------------
    def has_documents(self, tenant: str) -> bool:
        """Whether the tenant has any document here: when it has none, "nothing relevant" is the wrong
        explanation of an empty search (see ``no_documents``). Asked as the tenant's admin: the question is
        whether this folder holds the tenant's documents at all; a caller who may read none of them is
        told "nothing relevant", as the API tells them."""
        from winnow.factory import get_container

        admins = [get_container().settings.search.admin_group]
        response = self.call_api("GET", "/documents", query={"limit": 1}, tenant=tenant, groups=admins)
        if response.status != 200:
            return True  # cannot tell; let the search answer stand
        return bool(response.json().get("documents"))

    def call_api(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, QueryValue] | str | None = None,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        user: str | None = None,
        groups: Sequence[str] = (),
        via: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None,
    ) -> ApiResponse:
        """One request through the search handler (``via``: another instance of it, for a thread that
        runs beside the first). With ``tenant``, the event carries the JWT claims the settings name
        (tenant, and ``user`` and ``groups`` when given: the CLI's ``--user``/``--groups``); without,
        the handler sees no authorizer (the local server's header mode)."""
        from functions.search.app import handler as default_handler
        from winnow.factory import get_container

        handler = via or default_handler

        search = get_container().settings.search
        if not search.show_configuration_errors:  # here the caller is the operator: say what to fix
            get_container().settings.search = search = search.model_copy(
                update={"show_configuration_errors": True}
            )
        claim = search.tenant_claim
        claims: dict[str, Any] = {}
        if user or self.user:
            claims[search.user_claim] = user or self.user
        if groups or self.groups:
            claims[search.groups_claim] = list(groups or self.groups)
        event = http_api_event(
            method, path, body=body, query=query, headers=headers, tenant=tenant, claim=claim, claims=claims
        )
        status, response_headers, payload = to_http_response(handler(event, LocalLambdaContext()))
        return ApiResponse(status, response_headers, payload)

    # --- ingest ----------------------------------------------------------------------------------------
    def _bucket(self) -> str:
        from winnow.factory import get_container

        return get_container().settings.storage.bucket or "local"

    def _run_ingest(
        self, records: list[tuple[str, str, int | None, str | None, str | None]]
    ) -> list[dict[str, Any]]:
        from functions.ingest.app import handler
        from winnow.ingest.events import s3_event

        response = handler(s3_event(records, bucket=self._bucket()), LocalLambdaContext())
        results: list[dict[str, Any]] = list(response.get("results") or [])
        return results

    def _local_bucket(self) -> LocalObjectSource:
        """The folder bucket: only it can be written here (with S3 configured, upload with the AWS CLI
        and let the bucket notification do the rest)."""
        from winnow.errors import ConfigurationError
        from winnow.factory import get_container
        from winnow_local.adapters.objects_local import LocalObjectSource

        objects = get_container().objects
        if not isinstance(objects, LocalObjectSource):
            raise ConfigurationError(
                "this command writes to the local bucket, but WINNOW_BUCKET names an S3 bucket: unset it, "
                "or upload with `aws s3 cp` and let the bucket notification ingest"
            )
        return objects

    def put_and_ingest(self, uploads: Sequence[Upload]) -> list[dict[str, Any]]:
        """Put the objects, then run one S3 notification carrying all of them through the ingest handler.
        Results come back in upload order, one per object."""
        with self._write_lock:
            bucket = self._local_bucket()
            records: list[tuple[str, str, int | None, str | None, str | None]] = []
            for upload in uploads:
                info, sequencer = bucket.put(
                    upload.key, upload.data, dict(upload.metadata or {}), content_type=upload.content_type
                )
                records.append(("ObjectCreated:Put", upload.key, info.size, info.etag, sequencer))
            return self._run_ingest(records)

    def delete_and_ingest(self, keys: Sequence[str]) -> list[dict[str, Any]]:
        """Delete the objects from the local bucket and run their delete events through the handler."""
        with self._write_lock:
            bucket = self._local_bucket()
            records: list[tuple[str, str, int | None, str | None, str | None]] = []
            for key in keys:
                sequencer = bucket.delete(key)  # None when it was already gone: the event still cleans up
                records.append(("ObjectRemoved:Delete", key, None, None, sequencer))
            return self._run_ingest(records)

    def ingest_removals(self, keys: Sequence[str]) -> list[dict[str, Any]]:
        """Run the delete events of objects already removed from the local bucket (by the search API's
        ``DELETE /documents``), as the bucket notification does in AWS. Nothing is deleted here: a
        second delete would remove a write that came after the first."""
        with self._write_lock:
            self._local_bucket()
            return self._run_ingest([("ObjectRemoved:Delete", key, None, None, None) for key in keys])

    def object_exists(self, key: str) -> bool:
        from winnow.errors import ObjectGone

        try:
            self._local_bucket().head(key)
        except ObjectGone:
            return False
        return True
