"""Uploads in flight go through the ingest handler together: while the server's ingest lane is busy, a
tenant's uploads queue here, and that tenant's next turn on the ingest lane puts them all and sends one
notification, so their documents' texts are embedded together (``winnow.ingest.gather``). Each caller
gets its own results. A turn holds one tenant's uploads only, so batching never lets one tenant's backlog
past another's turn (``lanes.FairLane``). Whether the caller may write is asked of the search handler
on the API lane (its resolver is not shared between threads), in the upload's turn, just before the
write."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from winnow_local.runtime import ApiResponse, LocalRuntime, Upload
from winnow_local.web.lanes import FairLane

# Uploads per notification: bounded, as `winnow ingest` bounds a folder's groups.
UPLOADS_PER_TURN = 32

# The API's refusal, or the metadata the upload is written with (the access list the API pins).
Terms = Callable[[], ApiResponse | dict[str, str]]
_Waiting = tuple[Upload, Terms | None, "Future[list[dict[str, Any]] | ApiResponse]"]


class UploadBatcher:
    def __init__(
        self, lane: FairLane, runtime: LocalRuntime, checks: FairLane, limit: int = UPLOADS_PER_TURN
    ) -> None:
        self._lane = lane
        self._checks = checks
        self._runtime = runtime
        self._limit = limit
        self._lock = threading.Lock()
        self._pending: dict[str, list[_Waiting]] = {}

    @property
    def waiting(self) -> int:
        """Uploads queued for a turn of the lane."""
        with self._lock:
            return sum(len(queue) for queue in self._pending.values())

    def ingest(
        self, tenant: str, upload: Upload, terms: Terms | None = None
    ) -> list[dict[str, Any]] | ApiResponse:
        """Put and ingest ``upload`` (with whatever else of ``tenant`` is waiting); its results, as
        ``put_and_ingest`` gives them, or the API's refusal when ``terms`` (asked on the lane, just
        before the write) says the caller may not write it; else ``terms``' metadata is written with
        it. Raises what putting it raised."""
        future: Future[list[dict[str, Any]] | ApiResponse] = Future()
        with self._lock:
            self._pending.setdefault(tenant, []).append((upload, terms, future))
        self._lane.submit(tenant, self._turn, tenant)
        return future.result()

    def _check(self, tenant: str, terms: Terms) -> ApiResponse | dict[str, str]:
        """The write check on the checks lane (here, when that is this lane: waiting would deadlock)."""
        if self._checks is self._lane:
            return terms()
        return self._checks.submit(tenant, terms).result()

    def _turn(self, tenant: str) -> None:
        with self._lock:
            queue = self._pending.pop(tenant, [])
            batch, rest = queue[: self._limit], queue[self._limit :]
            if rest:
                self._pending[tenant] = rest
        allowed: list[_Waiting] = []
        for upload, terms, future in batch:
            try:
                given = {} if terms is None else self._check(tenant, terms)
            except Exception as exc:  # handed to that upload's request, answered there
                future.set_exception(exc)
                continue
            if isinstance(given, ApiResponse):
                future.set_result(given)
            else:
                metadata = {**(upload.metadata or {}), **given}
                allowed.append((replace(upload, metadata=metadata or None), terms, future))
        if not allowed:
            return  # an earlier turn took these uploads along, or none may be written
        try:
            results = self._runtime.put_and_ingest([upload for upload, _, _ in allowed])
        except Exception as exc:
            if len(allowed) == 1:
                allowed[0][2].set_exception(exc)
                return
            for upload, _, future in allowed:  # one unusable key must not fail its neighbours
                try:
                    future.set_result(self._runtime.put_and_ingest([upload]))
                except Exception as alone:  # handed to that upload's request, answered there
                    future.set_exception(alone)
            return
        for upload, _, future in allowed:
            future.set_result([r for r in results if r.get("key") == upload.key])
