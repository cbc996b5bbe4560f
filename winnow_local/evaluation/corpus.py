"""A BEIR ``corpus.jsonl`` into the tenant before its questions are asked: each document one Markdown
file (its title a heading), under ``beir/<corpus-id>.md``. Re-running is cheap: unchanged files keep
their passages (ingest re-embeds only what changed)."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from winnow.rules import object_key
from winnow_local.errors import CliError
from winnow_local.evaluation.questions import CorpusDocument, corpus_documents

FOLDER = "beir"
BATCH = 64
MARKDOWN = "text/markdown"
POLL_SECONDS = 1.0
POLL_ATTEMPTS = 300
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")


def file_name(doc_id: str) -> str:
    """A file name for a corpus id: the id itself where it is safe as one, else a digest of it."""
    stem = doc_id if _SAFE.fullmatch(doc_id) else "id-" + hashlib.sha256(doc_id.encode()).hexdigest()[:24]
    return f"{stem}.md"


def content(document: CorpusDocument) -> bytes:
    heading = f"# {document.title}\n\n" if document.title else ""
    return f"{heading}{document.text}\n".encode()


def _batches(items: Iterable[CorpusDocument], size: int) -> Iterator[list[CorpusDocument]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def ingest_local(path: Path, tenant: str, say: Callable[[str], None]) -> dict[str, str]:
    """Into the embedded default; the map of each document's key to its corpus id."""
    from winnow_local.runtime import LocalRuntime, Upload

    runtime = LocalRuntime()
    ids: dict[str, str] = {}
    failed = 0
    for batch in _batches(corpus_documents(path), BATCH):
        uploads = [
            Upload(
                object_key(tenant, f"{FOLDER}/{file_name(d.id)}"), content(d), content_type="text/markdown"
            )
            for d in batch
        ]
        for upload, document, result in zip(uploads, batch, runtime.put_and_ingest(uploads), strict=True):
            ids[upload.key] = document.id
            failed += result.get("status") == "failed"
        say(f"corpus: {len(ids)} documents ingested")
    if failed:
        say(f"corpus: {failed} document(s) failed to ingest (see `winnow documents --tenant {tenant}`)")
    return ids


def ingest_remote(
    path: Path,
    runtime: Any,
    tenant: str,
    say: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, str]:
    """Through the API as a web app uploads (``POST /uploads``, the signed form, then polling
    ``GET /documents/{key}`` until indexed); the map of each document's key to its corpus id."""
    import httpx

    ids: dict[str, str] = {}
    waiting: list[str] = []
    for document in corpus_documents(path):
        body = {"path": f"{FOLDER}/{file_name(document.id)}", "content_type": "text/markdown"}
        response = runtime.call_api("POST", "/uploads", body=body, tenant=tenant)
        if response.status != 201:
            raise CliError(f"the API refused the corpus upload: {response.error_message}")
        form = response.json()
        try:
            sent = httpx.post(
                form["url"],
                data=form["fields"],
                files={"file": ("document.md", content(document))},
                timeout=60.0,
            )
        except httpx.HTTPError as exc:
            raise CliError(f"cannot reach the upload address: {type(exc).__name__}") from exc
        if sent.status_code >= 300:
            raise CliError(f"the bucket refused the corpus upload (HTTP {sent.status_code})")
        ids[form["key"]] = document.id
        waiting.append(form["key"])
        if len(ids) % BATCH == 0:
            say(f"corpus: {len(ids)} documents uploaded")
    for attempt in range(POLL_ATTEMPTS):
        waiting = [key for key in waiting if _status(runtime, tenant, key) not in {"indexed", "failed"}]
        if not waiting:
            say(f"corpus: {len(ids)} documents indexed")
            return ids
        if attempt == 0:
            say(f"corpus: waiting for {len(waiting)} document(s) to be indexed")
        sleep(POLL_SECONDS)
    raise CliError(f"{len(waiting)} corpus document(s) still not indexed after {POLL_ATTEMPTS} polls")


def _status(runtime: Any, tenant: str, key: str) -> str:
    response = runtime.call_api("GET", f"/documents/{key}", tenant=tenant)
    return str(response.json().get("status")) if response.status == 200 else "pending"
