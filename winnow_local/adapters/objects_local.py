"""A folder that behaves like an S3 bucket for Winnow's purposes: the embedded default's ``ObjectSource``.

Objects live at ``<root>/<key>``. What S3 would keep beside the bytes (user metadata, an ETag that is the
quoted MD5 hex of the bytes, last-modified, content type) lives in a sidecar JSON file per key under
``<root>/.winnow-meta/objects/`` (named by a hash of the key), never listed as an object. A file dropped
into the folder by hand is an object too: its ETag is computed from its bytes. ``put`` and ``delete`` also
return a per-bucket sequencer (hex, strictly increasing, persisted under a file lock) so that the CLI can
build S3 events that order like real ones. Keys are checked against path traversal."""

from __future__ import annotations

import contextlib
import hashlib
import json
import mimetypes
import os
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from winnow.errors import InvalidKey, InvalidMetadata, ObjectGone
from winnow.models import ObjectInfo
from winnow.ports import ObjectSource, UploadForm, UploadPolicy
from winnow.rules import iso_timestamp

META_DIR = ".winnow-meta"
_TMP_MARK = ".winnow-tmp-"
MAX_KEY_BYTES = 1024  # as S3
MAX_SEGMENT_BYTES = 250  # a file name, leaving room for the sidecar's ".json"
MAX_METADATA_BYTES = 2048  # S3's limit on user metadata
_THREAD_LOCK = threading.Lock()  # only used where fcntl is missing


class LocalObjectSource(ObjectSource):
    def __init__(self, root: Path | str) -> None:
        self._root = Path(root).resolve()
        self._root.mkdir(parents=True, exist_ok=True)
        self._meta = self._root / META_DIR
        (self._meta / "objects").mkdir(parents=True, exist_ok=True)
        self._upload_url: str | None = None
        self._upload_secret: bytes | None = None

    def accept_signed_uploads(self, url: str, secret: bytes) -> None:
        """Sign upload forms for ``url`` (``winnow serve``'s upload endpoint, which verifies them with
        the same ``secret``). Without this, ``upload_form`` is refused: nothing receives the form."""
        self._upload_url, self._upload_secret = url, secret

    def upload_form(self, policy: UploadPolicy) -> UploadForm:
        """The shape of S3's presigned POST, signed with HMAC-SHA256 (``winnow.postpolicy``)."""
        from winnow.errors import FeatureDisabled
        from winnow.postpolicy import SIGNATURE_FIELD, encode_policy, sign

        if self._upload_url is None or self._upload_secret is None:
            raise FeatureDisabled("uploads through /uploads need `winnow serve`, which receives the form")
        check_key(policy.key)
        fields = {"key": policy.key, "Content-Type": policy.content_type}
        fields.update({f"x-amz-meta-{name}": value for name, value in policy.metadata.items()})
        conditions: list[Any] = [{name: value} for name, value in fields.items()]
        conditions.append(["content-length-range", 1, policy.max_bytes])
        encoded = encode_policy(conditions, policy.expires_in)
        fields["policy"] = encoded
        fields[SIGNATURE_FIELD] = sign(self._upload_secret, encoded)
        return UploadForm(url=self._upload_url, fields=fields)

    def put_figure(self, key: str, data: bytes, content_type: str) -> None:
        self.put(key, data, content_type=content_type)

    def figure_url(self, key: str, expires_in: int) -> str | None:
        """A loopback URL of ``winnow serve`` (``/local/figures``) signed with its upload secret over
        the key and the expiry (``figure_signature``); None without a server to read it."""
        import time
        from urllib.parse import urlencode

        if self._upload_url is None or self._upload_secret is None:
            return None
        expires = int(time.time()) + expires_in
        base = self._upload_url.rsplit("/local/", 1)[0]
        signature = figure_signature(self._upload_secret, key, expires)
        return f"{base}/local/figures?" + urlencode({"key": key, "expires": expires, "signature": signature})

    @property
    def root(self) -> Path:
        return self._root

    # --- reads -------------------------------------------------------------------------------------
    def head(self, key: str) -> ObjectInfo:
        path = self._path(key)
        try:
            stat = path.stat()
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise ObjectGone(f"no object {key!r}") from exc
        if not path.is_file():
            raise ObjectGone(f"no object {key!r}")
        return self._info(key, path, stat)

    def get(self, key: str, info: ObjectInfo | None = None) -> bytes:
        path = self._path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise ObjectGone(f"no object {key!r}") from exc
        if info is not None and info.etag and _etag(data) != info.etag:
            raise ObjectGone(f"object {key!r} changed since it was announced (ETag differs)")
        return data

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Objects in S3's order (UTF-8 byte order of keys), walking one directory at a time."""
        yield from self._walk(self._root, "", prefix)

    def _walk(self, directory: Path, rel: str, prefix: str) -> Iterator[ObjectInfo]:
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return
        named: list[tuple[bytes, os.DirEntry[str], bool]] = []
        for entry in entries:
            if (not rel and entry.name == META_DIR) or _TMP_MARK in entry.name:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and not entry.is_file(follow_symlinks=False):
                continue
            # a directory sorts as "name/": every key under it starts with that
            sort_name = entry.name + "/" if is_dir else entry.name
            named.append((sort_name.encode("utf-8", "surrogateescape"), entry, is_dir))
        named.sort(key=lambda item: item[0])
        for _, entry, is_dir in named:
            key = rel + entry.name
            if is_dir:
                sub = key + "/"
                if sub.startswith(prefix) or prefix.startswith(sub):
                    yield from self._walk(Path(entry.path), sub, prefix)
            elif key.startswith(prefix):
                try:
                    yield self._info(key, Path(entry.path), entry.stat(follow_symlinks=False))
                except FileNotFoundError:
                    continue  # deleted while listing, as S3 may also show

    # --- writes ------------------------------------------------------------------------------------
    def put(
        self,
        key: str,
        data: bytes,
        metadata: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> tuple[ObjectInfo, str]:
        """Store the object and its S3-like attributes; returns what HEAD will say and the sequencer of
        the ``ObjectCreated`` event this write corresponds to."""
        path = self._path(key)
        meta = _normalise_metadata(metadata or {})
        with self._locked():
            if path.is_dir():
                raise InvalidKey(f"key {key!r} names a prefix that holds other objects")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError) as exc:
                raise InvalidKey(f"key {key!r} runs through an existing object") from exc
            _atomic_write(path, data)
            stat = path.stat()
            sidecar = {
                "key": key,
                "etag": _etag(data),
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "metadata": meta,
                "content_type": content_type or _guess_type(key),
                "last_modified": _iso(stat.st_mtime),
            }
            sidecar_path = self._sidecar(key)
            sidecar_path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(sidecar_path, json.dumps(sidecar, sort_keys=True).encode("utf-8"))
            sequencer = self._next_sequencer()
        return self._info(key, path, stat), sequencer

    def delete(self, key: str) -> str | None:
        """Remove the object; the sequencer of its ``ObjectRemoved`` event, or None if there was none."""
        path = self._path(key)
        with self._locked():
            try:
                path.unlink()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return None
            with contextlib.suppress(FileNotFoundError):
                self._sidecar(key).unlink()
            _prune_empty(path.parent, self._root)
            return self._next_sequencer()

    # --- plumbing ----------------------------------------------------------------------------------
    def _path(self, key: str) -> Path:
        check_key(key)
        path = self._root.joinpath(*key.split("/"))
        if self._root not in path.parents:
            raise InvalidKey(f"key {key!r} leaves the bucket folder")
        return path

    def _sidecar(self, key: str) -> Path:
        """Named by a hash of the key: flat, and no key's sidecar can collide with another's folder."""
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return self._meta / "objects" / digest[:2] / f"{digest}.json"

    def _info(self, key: str, path: Path, stat: os.stat_result) -> ObjectInfo:
        sidecar = self._read_sidecar(key)
        fresh = sidecar.get("size") == stat.st_size and sidecar.get("mtime_ns") == stat.st_mtime_ns
        etag = str(sidecar["etag"]) if fresh and sidecar.get("etag") else _file_etag(path)
        return ObjectInfo(
            key=key,
            size=stat.st_size,
            etag=etag,
            metadata=dict(sidecar.get("metadata") or {}),
            content_type=sidecar.get("content_type") or _guess_type(key),
            last_modified=_iso(stat.st_mtime),
        )

    def _read_sidecar(self, key: str) -> dict[str, Any]:
        try:
            data = json.loads(self._sidecar(key).read_bytes())
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time across threads and processes, so sequencers follow write order."""
        try:
            import fcntl
        except ImportError:  # not POSIX: one process only
            with _THREAD_LOCK:
                yield
            return
        with open(self._meta / "lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _next_sequencer(self) -> str:
        """Called with the lock held."""
        path = self._meta / "sequencer"
        try:
            current = int(path.read_text().strip() or "0")
        except (FileNotFoundError, ValueError):
            current = 0
        current += 1
        _atomic_write(path, str(current).encode("ascii"))
        return f"{current:016X}"


def figure_signature(secret: bytes, key: str, expires: int) -> str:
    """HMAC-SHA256 over a figure's key and expiry: ``winnow serve`` serves exactly that key until then."""
    import hmac

    message = f"figure\n{key}\n{expires}".encode("utf-8", "surrogatepass")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def check_key(key: str) -> None:
    """Reject keys that could escape the folder or collide with our own bookkeeping."""
    if not isinstance(key, str) or not key:
        raise InvalidKey("empty object key")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise InvalidKey("object key longer than 1024 bytes")
    if "\x00" in key or "\\" in key:
        raise InvalidKey("object key contains a NUL or a backslash")
    if key.startswith("/"):
        raise InvalidKey("object key is an absolute path")
    segments = key.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise InvalidKey(f"object key {key!r} has an empty, '.' or '..' segment")
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            raise InvalidKey("object key has a segment longer than 250 bytes")
        if _TMP_MARK in segment:
            raise InvalidKey("object key uses a reserved name")
    if segments[0] == META_DIR:
        raise InvalidKey("object key uses a reserved name")


def _normalise_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """As S3 stores user metadata: lowercased names, string values, 2 KB in all."""
    normalised = {str(k).strip().lower(): str(v) for k, v in metadata.items()}
    if any(not k for k in normalised):
        raise InvalidMetadata("user metadata has an empty name")
    size = sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in normalised.items())
    if size > MAX_METADATA_BYTES:
        raise InvalidMetadata(f"user metadata is {size} bytes, over S3's 2 KB limit")
    return normalised


def _etag(data: bytes) -> str:
    return f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'


def _file_etag(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f'"{digest.hexdigest()}"'


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name[:50]}{_TMP_MARK}{uuid.uuid4().hex}")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _prune_empty(directory: Path, stop: Path) -> None:
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


_TYPES = {  # Winnow's formats first: the system's mime.types varies between machines
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".json": "application/json",
}


def _guess_type(key: str) -> str:
    suffix = Path(key).suffix.lower()
    return _TYPES.get(suffix) or mimetypes.guess_type(key)[0] or "application/octet-stream"


def _iso(timestamp: float) -> str:
    return iso_timestamp(datetime.fromtimestamp(timestamp, UTC))
