"""Uploads in flight go through the ingest handler together: while the server's one lane is busy,
uploads queue here, and the next turn of the lane puts them all and sends one notification, so their
documents' texts are embedded together (``winnow.ingest.gather``). Each caller gets its own results."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from winnow_local.runtime import LocalRuntime, Upload

# Uploads per notification: bounded, as `winnow ingest` bounds a folder's groups.
UPLOADS_PER_TURN = 32


class UploadBatcher:
    def __init__(
        self, lane: ThreadPoolExecutor, runtime: LocalRuntime, limit: int = UPLOADS_PER_TURN
    ) -> None:
        self._lane = lane
        self._runtime = runtime
        self._limit = limit
        self._lock = threading.Lock()
        self._pending: list[tuple[Upload, Future[list[dict[str, Any]]]]] = []

    @property
    def waiting(self) -> int:
        """Uploads queued for the lane's next turn."""
        with self._lock:
            return len(self._pending)

    def ingest(self, upload: Upload) -> list[dict[str, Any]]:
        """Put and ingest ``upload`` (with whatever else is waiting); its results, as ``put_and_ingest``
        gives them. Raises what putting it raised (an unusable key)."""
        future: Future[list[dict[str, Any]]] = Future()
        with self._lock:
            self._pending.append((upload, future))
        self._lane.submit(self._turn)
        return future.result()

    def _turn(self) -> None:
        with self._lock:
            batch, self._pending = self._pending[: self._limit], self._pending[self._limit :]
        if not batch:
            return  # an earlier turn took this upload along
        try:
            results = self._runtime.put_and_ingest([upload for upload, _ in batch])
        except Exception as exc:
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            for upload, future in batch:  # one unusable key must not fail its neighbours: one at a time
                try:
                    future.set_result(self._runtime.put_and_ingest([upload]))
                except Exception as alone:  # handed to that upload's request, answered there
                    future.set_exception(alone)
            return
        for upload, future in batch:
            future.set_result([r for r in results if r.get("key") == upload.key])
