"""The ``ObjectSource`` on S3. ``get`` pins the bytes to what HEAD saw (``VersionId`` when the bucket is
versioned, ``IfMatch`` on the ETag always), so an object replaced or deleted between event and read
surfaces as ``ObjectGone`` instead of indexing bytes that do not match the recorded identity."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

from winnow.adapters import _aws
from winnow.errors import ObjectGone, ProviderUnavailable
from winnow.models import ObjectInfo
from winnow.ports import ObjectSource, UploadForm, UploadPolicy
from winnow.rules import iso_timestamp

T = TypeVar("T")

_GONE_CODES = frozenset({"NoSuchKey", "NotFound", "404", "NoSuchVersion", "PreconditionFailed", "412"})


class S3ObjectSource(ObjectSource):
    def __init__(self, bucket: str, client: Any = None, *, page_size: int = 1000) -> None:
        self._bucket = bucket
        self._client = client
        self._signer: Any = None
        self._page_size = max(1, min(page_size, 1000))

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _aws.make_client("s3")
        return self._client

    @property
    def signer(self) -> Any:
        """A client that signs with SigV4 (``s3v4``): boto3 may otherwise sign a POST policy with the
        deprecated SigV2, which S3 refuses in Regions opened since 2014 and with KMS-encrypted buckets."""
        if self._signer is None:
            self._signer = _aws.make_client("s3", signature_version="s3v4")
        return self._signer

    def head(self, key: str) -> ObjectInfo:
        response = self._call(f"head {key}", lambda: self.client.head_object(Bucket=self._bucket, Key=key))
        return _info(key, response)

    def read(self, key: str, max_bytes: int) -> tuple[ObjectInfo, bytes | None]:
        """One GetObject: its headers are HEAD's, and its body is that very version, so nothing can
        change between the two. An object over ``max_bytes`` (or empty) is closed unread."""
        response = self._call(f"get {key}", lambda: self.client.get_object(Bucket=self._bucket, Key=key))
        info = _info(key, response)
        if info.size == 0 or info.size > max_bytes:
            response["Body"].close()
            return info, None
        data = _read_body(key, response["Body"], max_bytes + 1)
        if len(data) != info.size:  # read no more than announced; a body that differs is retried
            raise ProviderUnavailable(f"s3 get {key}: body of {len(data)} bytes, not {info.size}")
        return info, data

    def get(self, key: str, info: ObjectInfo | None = None) -> bytes:
        request: dict[str, Any] = {"Bucket": self._bucket, "Key": key}
        if info is not None:
            if info.version_id:
                request["VersionId"] = info.version_id
            if info.etag:
                request["IfMatch"] = info.etag
        response = self._call(f"get {key}", lambda: self.client.get_object(**request))
        return _read_body(key, response["Body"])

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.list_after(prefix, None)

    def list_after(self, prefix: str, start_after: str | None) -> Iterator[ObjectInfo]:
        """S3 starts the listing after ``start_after`` itself (``StartAfter``), so a resumed reconcile
        does not page through the keys it already handled."""
        paginator = self.client.get_paginator("list_objects_v2")
        options: dict[str, Any] = {"Bucket": self._bucket, "Prefix": prefix}
        if start_after is not None:
            options["StartAfter"] = start_after
        pages = paginator.paginate(**options, PaginationConfig={"PageSize": self._page_size})
        iterator = iter(pages)
        while True:
            page = self._call(f"list {prefix!r}", lambda: next(iterator, None))
            if page is None:
                return
            for entry in page.get("Contents", []):
                yield ObjectInfo(
                    key=str(entry["Key"]),
                    size=int(entry.get("Size", 0)),
                    etag=str(entry.get("ETag", "")),
                    last_modified=_iso(entry.get("LastModified")),
                )

    def delete(self, key: str) -> str | None:
        """S3 answers 204 whether or not the key existed; the removal event carries the sequencer."""
        self._call(f"delete {key}", lambda: self.client.delete_object(Bucket=self._bucket, Key=key))
        return None

    def upload_form(self, policy: UploadPolicy) -> UploadForm:
        """A presigned POST whose policy pins the exact key (no ``${filename}``, no ``starts-with``), the
        size range, the content type and every metadata field: S3 refuses a form that changes any of them,
        adds a field the policy does not name, or arrives after the expiry."""
        fields = {"Content-Type": policy.content_type}
        fields.update({f"x-amz-meta-{name}": value for name, value in policy.metadata.items()})
        conditions: list[Any] = [{name: value} for name, value in fields.items()]
        conditions.append(["content-length-range", 1, policy.max_bytes])
        signed = self._call(
            f"sign upload of {policy.key}",
            lambda: self.signer.generate_presigned_post(
                Bucket=self._bucket,
                Key=policy.key,
                Fields=fields,
                Conditions=conditions,
                ExpiresIn=policy.expires_in,
            ),
        )
        fields = {str(k): str(v) for k, v in signed["fields"].items()}
        return UploadForm(url=str(signed["url"]), fields=fields)

    def put_figure(self, key: str, data: bytes, content_type: str) -> None:
        self._call(
            f"put {key}",
            lambda: self.client.put_object(Bucket=self._bucket, Key=key, Body=data, ContentType=content_type),
        )

    def figure_url(self, key: str, expires_in: int) -> str | None:
        """A presigned GET (SigV4) of exactly this key: signing is local, no request is made."""
        return str(
            self._call(
                f"sign read of {key}",
                lambda: self.signer.generate_presigned_url(
                    "get_object", Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=expires_in
                ),
            )
        )

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except Exception as exc:
            code = _aws.error_code(exc)
            gone_status = code != "NoSuchBucket" and _aws.http_status(exc) in (404, 412)
            if code in _GONE_CODES or (code is not None and gone_status):
                raise ObjectGone(f"s3://{self._bucket}: {what}: {code}") from exc
            error = _aws.translate(exc, f"s3 {what}")
            if error is None:
                raise
            raise error from exc


def _info(key: str, response: dict[str, Any]) -> ObjectInfo:
    """What HEAD (and GET, whose headers are the same) says of an object."""
    return ObjectInfo(
        key=key,
        size=int(response.get("ContentLength", 0)),
        etag=str(response.get("ETag", "")),
        version_id=_version(response.get("VersionId")),
        metadata={str(k).lower(): str(v) for k, v in (response.get("Metadata") or {}).items()},
        content_type=response.get("ContentType"),
        last_modified=_iso(response.get("LastModified")),
    )


def _version(value: Any) -> str | None:
    """S3 reports ``null`` as the version of objects in unversioned/suspended buckets: not pinnable."""
    return None if value in (None, "", "null") else str(value)


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return iso_timestamp(value)
    return str(value) if value is not None else None


def _read_body(key: str, body: Any, limit: int | None = None) -> bytes:
    """A GetObject body, read to the end (or ``limit`` bytes) and closed; a connection that drops
    mid-body becomes our error."""
    try:
        return bytes(body.read() if limit is None else body.read(limit))
    except Exception as exc:
        error = _aws.translate(exc, f"get {key}")
        if error is None:
            raise
        raise error from exc
    finally:
        body.close()
