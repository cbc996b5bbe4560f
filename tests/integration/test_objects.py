"""Contract tests of the ObjectSource port against S3 (moto over HTTP) and the local folder bucket: HEAD,
pinned GET, streamed listing in S3's order, and ``ObjectGone`` when an object changes or vanishes between
the event and the read."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.aws import FaultyAws
from winnow.adapters.objects_s3 import S3ObjectSource
from winnow.errors import (
    ConfigurationError,
    InvalidKey,
    InvalidMetadata,
    ObjectGone,
    ProviderRateLimited,
    ProviderUnavailable,
)
from winnow.ports import ObjectSource
from winnow_local.adapters.objects_local import LocalObjectSource


@dataclass
class Bucket:
    """A source under test plus the way a test writes to its bucket (S3 API, or the folder's put)."""

    source: ObjectSource
    put: Callable[..., None]
    delete: Callable[[str], object]


def _s3_bucket(name: str, aws_client: Callable[[str], Any]) -> Bucket:
    s3 = aws_client("s3")

    def put(key: str, data: bytes, metadata: dict[str, str] | None = None) -> None:
        s3.put_object(Bucket=name, Key=key, Body=data, Metadata=metadata or {}, ContentType="application/pdf")

    return Bucket(S3ObjectSource(name), put, lambda key: s3.delete_object(Bucket=name, Key=key))


def _local_bucket(root: Path) -> Bucket:
    source = LocalObjectSource(root)

    def put(key: str, data: bytes, metadata: dict[str, str] | None = None) -> None:
        source.put(key, data, metadata, content_type="application/pdf")

    return Bucket(source, put, source.delete)


@pytest.fixture(params=["s3", "local"])
def bucket(request: pytest.FixtureRequest, tmp_path: Path) -> Bucket:
    if request.param == "s3":
        return _s3_bucket(request.getfixturevalue("s3_bucket"), request.getfixturevalue("aws_client"))
    return _local_bucket(tmp_path / "bucket")


def md5_etag(data: bytes) -> str:
    return f'"{hashlib.md5(data).hexdigest()}"'


# --- head and get ------------------------------------------------------------------------------------
def test_head_reports_size_etag_metadata_and_type(bucket: Bucket) -> None:
    # Given an object with user metadata in mixed case
    data = b"%PDF-1.4 handbook"
    bucket.put("acme/handbook.pdf", data, {"Department": "HR", "year": "2024"})
    # When HEAD is asked
    info = bucket.source.head("acme/handbook.pdf")
    # Then it tells what S3 would: size, quoted MD5 ETag, lowercased metadata, type, time
    assert info.key == "acme/handbook.pdf"
    assert info.size == len(data)
    assert info.etag == md5_etag(data)
    assert info.metadata == {"department": "HR", "year": "2024"}
    assert info.content_type == "application/pdf"
    assert info.last_modified


def test_object_times_are_written_as_every_other_timestamp(bucket: Bucket) -> None:
    # Given an object, When HEAD and the listing report its time
    bucket.put("acme/handbook.pdf", b"%PDF-1.4 handbook", {})
    times = [bucket.source.head("acme/handbook.pdf").last_modified]
    times += [info.last_modified for info in bucket.source.list("acme/")]
    # Then both follow winnow.rules' timestamp format, as the ledger's own times do
    for stamp in times:
        assert stamp is not None and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp


def test_missing_objects_are_gone(bucket: Bucket) -> None:
    with pytest.raises(ObjectGone):
        bucket.source.head("acme/missing.pdf")
    with pytest.raises(ObjectGone):
        bucket.source.get("acme/missing.pdf")


def test_read_gives_what_head_and_get_give_and_leaves_oversized_objects_unread(bucket: Bucket) -> None:
    # Given an object with user metadata
    data = b"%PDF-1.4 handbook"
    bucket.put("acme/handbook.pdf", data, {"Department": "HR"})
    # When it is read in one step with room for it
    info, body = bucket.source.read("acme/handbook.pdf", max_bytes=len(data))
    # Then the info is HEAD's and the bytes are the object's
    assert info == bucket.source.head("acme/handbook.pdf")
    assert body == data
    # And with a limit below its size, the info comes without the bytes
    info, body = bucket.source.read("acme/handbook.pdf", max_bytes=len(data) - 1)
    assert (info.size, body) == (len(data), None)
    # And a missing object is gone
    with pytest.raises(ObjectGone):
        bucket.source.read("acme/missing.pdf", max_bytes=100)


def test_get_pinned_to_head_returns_those_bytes(bucket: Bucket) -> None:
    bucket.put("acme/a b+c é.txt", "héllo".encode())
    info = bucket.source.head("acme/a b+c é.txt")
    assert bucket.source.get("acme/a b+c é.txt", info) == "héllo".encode()
    assert bucket.source.get("acme/a b+c é.txt") == "héllo".encode()


def test_an_object_replaced_between_head_and_get_is_gone(bucket: Bucket) -> None:
    # Given HEAD saw version one
    bucket.put("acme/doc.txt", b"version one")
    info = bucket.source.head("acme/doc.txt")
    # When the object is overwritten before the GET
    bucket.put("acme/doc.txt", b"version two, longer")
    # Then the pinned GET refuses to return other bytes; an unpinned GET returns the new ones
    with pytest.raises(ObjectGone):
        bucket.source.get("acme/doc.txt", info)
    assert bucket.source.get("acme/doc.txt") == b"version two, longer"


def test_an_object_deleted_between_head_and_get_is_gone(bucket: Bucket) -> None:
    bucket.put("acme/doc.txt", b"soon gone")
    info = bucket.source.head("acme/doc.txt")
    bucket.delete("acme/doc.txt")
    with pytest.raises(ObjectGone):
        bucket.source.get("acme/doc.txt", info)
    with pytest.raises(ObjectGone):
        bucket.source.head("acme/doc.txt")


# --- listing -----------------------------------------------------------------------------------------
LIST_KEYS = [
    "acme/a-c.txt",
    "acme/a/b.pdf",
    "acme/a/c/d.md",
    "acme/Z.pdf",
    "acme/a b.pdf",
    "acme/é.md",
    "acme/a.pdf",
    "acme2/x.txt",
    "globex/secret.pdf",
]


def test_list_streams_a_prefix_in_s3_key_order(bucket: Bucket) -> None:
    # Given objects of two tenants whose keys sort differently by folder and by bytes ("a-c" < "a." < "a/")
    for key in LIST_KEYS:
        bucket.put(key, key.encode())
    # When the acme/ prefix is listed
    listed = list(bucket.source.list("acme/"))
    # Then exactly its objects come back, in UTF-8 byte order, with sizes and ETags
    expected = sorted((k for k in LIST_KEYS if k.startswith("acme/")), key=lambda k: k.encode())
    assert [i.key for i in listed] == expected
    assert all(i.size == len(i.key.encode()) and i.etag == md5_etag(i.key.encode()) for i in listed)
    # And an unslashed prefix matches like S3 (acme and acme2), the empty prefix lists everything
    assert {i.key for i in bucket.source.list("acme")} == {k for k in LIST_KEYS if k.startswith("acme")}
    assert [i.key for i in bucket.source.list()] == sorted(LIST_KEYS, key=lambda k: k.encode())
    assert list(bucket.source.list("nobody/")) == []


def test_s3_listing_over_1000_objects_is_paginated_and_streamed(
    s3_bucket: str, aws_client: Callable[[str], Any]
) -> None:
    # Given 1,050 objects (more than one ListObjectsV2 page)
    s3 = aws_client("s3")
    keys = [f"acme/doc-{n:05d}.txt" for n in range(1050)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda key: s3.put_object(Bucket=s3_bucket, Key=key, Body=b"x"), keys))
    source = S3ObjectSource(s3_bucket)
    calls: list[dict[str, Any]] = []
    source.client.meta.events.register(
        "before-call.s3.ListObjectsV2", lambda params, **_: calls.append(params)
    )
    # When the listing is consumed lazily
    stream = source.list("acme/")
    first = next(stream)
    # Then only the first page was fetched before the first object came out
    assert first.key == keys[0]
    assert len(calls) == 1
    # And the rest arrives from a second page, each object once
    rest = [i.key for i in stream]
    assert [first.key, *rest] == keys
    assert len(calls) == 2


def test_s3_listing_honours_a_small_page_size(s3_bucket: str, aws_client: Callable[[str], Any]) -> None:
    s3 = aws_client("s3")
    for n in range(7):
        s3.put_object(Bucket=s3_bucket, Key=f"acme/{n}.txt", Body=b"x")
    source = S3ObjectSource(s3_bucket, page_size=3)
    calls: list[Any] = []
    source.client.meta.events.register("before-call.s3.ListObjectsV2", lambda **_: calls.append(1))
    assert [i.key for i in source.list("acme/")] == [f"acme/{n}.txt" for n in range(7)]
    assert len(calls) == 3


def test_s3_list_after_starts_at_the_key_without_paging_through_the_ones_before(
    s3_bucket: str, aws_client: Callable[[str], Any], tmp_path: Path
) -> None:
    # Given seven objects listed three per page, and the same keys in a local folder bucket
    s3 = aws_client("s3")
    local = _local_bucket(tmp_path / "bucket")
    for n in range(7):
        s3.put_object(Bucket=s3_bucket, Key=f"acme/{n}.txt", Body=b"x")
        local.put(f"acme/{n}.txt", b"x")
    source = S3ObjectSource(s3_bucket, page_size=3)
    calls: list[Any] = []
    source.client.meta.events.register("before-call.s3.ListObjectsV2", lambda **_: calls.append(1))
    # When a resumed run lists after the fifth key
    keys = [i.key for i in source.list_after("acme/", "acme/4.txt")]
    # Then S3 starts there (one page for the two keys left) and the answer matches the port's default
    assert (
        keys
        == ["acme/5.txt", "acme/6.txt"]
        == [i.key for i in local.source.list_after("acme/", "acme/4.txt")]
    )
    assert len(calls) == 1


def test_local_and_s3_list_the_same_keys_in_the_same_order(
    s3_bucket: str, aws_client: Callable[[str], Any], tmp_path: Path
) -> None:
    s3, local = _s3_bucket(s3_bucket, aws_client), _local_bucket(tmp_path / "bucket")
    for key in LIST_KEYS:
        s3.put(key, key.encode())
        local.put(key, key.encode())
    for prefix in ("", "acme/", "acme/a", "acme/a/", "g"):
        assert [(i.key, i.etag) for i in s3.source.list(prefix)] == [
            (i.key, i.etag) for i in local.source.list(prefix)
        ]


# --- S3 specifics ------------------------------------------------------------------------------------
def test_s3_versioned_get_returns_the_version_head_saw(
    s3_bucket: str, aws_client: Callable[[str], Any]
) -> None:
    # Given a versioned bucket whose object was overwritten after HEAD
    s3 = aws_client("s3")
    s3.put_bucket_versioning(Bucket=s3_bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=s3_bucket, Key="acme/doc.txt", Body=b"first")
    source = S3ObjectSource(s3_bucket)
    info = source.head("acme/doc.txt")
    assert info.version_id
    s3.put_object(Bucket=s3_bucket, Key="acme/doc.txt", Body=b"second")
    # Then the pinned GET returns exactly the version HEAD described
    assert source.get("acme/doc.txt", info) == b"first"
    assert source.head("acme/doc.txt").version_id != info.version_id


def test_s3_unversioned_objects_have_no_version(s3_bucket: str, aws_client: Callable[[str], Any]) -> None:
    aws_client("s3").put_object(Bucket=s3_bucket, Key="acme/doc.txt", Body=b"x")
    assert S3ObjectSource(s3_bucket).head("acme/doc.txt").version_id is None


def test_s3_missing_bucket_is_a_configuration_error(aws_endpoint: str) -> None:
    source = S3ObjectSource("no-such-bucket-winnow")
    with pytest.raises(ConfigurationError):
        list(source.list())
    with pytest.raises(ConfigurationError):
        source.get("acme/doc.txt")


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (503, "SlowDown", ProviderRateLimited),
        (500, "InternalError", ProviderUnavailable),
        (503, "ServiceUnavailable", ProviderUnavailable),
        (403, "AccessDenied", ConfigurationError),
    ],
)
def test_s3_outages_and_denials_are_translated(
    faulty_aws: FaultyAws, status: int, code: str, expected: type[Exception]
) -> None:
    body = f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>m</Message></Error>"
    faulty_aws.respond(status, body, {"Content-Type": "application/xml"})
    source = S3ObjectSource("bucket", client=faulty_aws.client("s3"))
    with pytest.raises(expected):
        source.get("acme/doc.txt")
    with pytest.raises(expected):
        list(source.list("acme/"))
    # HEAD answers carry no body, so only the status is known: a 503 is an outage, not a throttle
    with pytest.raises(ProviderUnavailable if status >= 500 else expected):
        source.head("acme/doc.txt")


# --- local folder specifics --------------------------------------------------------------------------
@pytest.fixture
def local(tmp_path: Path) -> LocalObjectSource:
    return LocalObjectSource(tmp_path / "bucket")


@pytest.mark.parametrize(
    "key",
    [
        "",
        "../escape.txt",
        "acme/../../escape.txt",
        "/etc/passwd",
        "acme//doc.txt",
        "acme/./doc.txt",
        "acme/",
        ".winnow-meta/objects/x.json",
        "acme/a\x00b",
        "a" * 1100,
    ],
)
def test_local_rejects_keys_that_could_escape_or_collide(local: LocalObjectSource, key: str) -> None:
    with pytest.raises(InvalidKey):
        local.put(key, b"x")
    with pytest.raises(InvalidKey):
        local.head(key)
    assert not (local.root.parent / "escape.txt").exists()


def test_local_sequencers_increase_across_puts_deletes_and_instances(tmp_path: Path) -> None:
    # Given two sources on one folder (the CLI and the local server)
    first, second = LocalObjectSource(tmp_path / "b"), LocalObjectSource(tmp_path / "b")
    # When objects are put and deleted through both
    _, s1 = first.put("acme/a.txt", b"a")
    _, s2 = second.put("acme/a.txt", b"a2")
    s3 = first.delete("acme/a.txt")
    _, s4 = second.put("acme/b.txt", b"b")
    # Then every sequencer is greater than the previous one, as hex strings compared by S3's rule
    assert s3 is not None
    sequence = [s1, s2, s3, s4]
    assert sequence == sorted(sequence) and len(set(sequence)) == 4
    assert all(int(s, 16) > 0 for s in sequence)
    # And deleting what is not there reports nothing and spends no sequencer
    assert first.delete("acme/a.txt") is None
    _, s5 = first.put("acme/c.txt", b"c")
    assert int(s5, 16) == int(s4, 16) + 1


def test_local_concurrent_puts_get_unique_ordered_sequencers(local: LocalObjectSource) -> None:
    results: list[str] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(10):
            _, seq = local.put(f"acme/t{n}/{i}.txt", b"x")
            with lock:
                results.append(seq)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 60
    assert sorted(int(s, 16) for s in results) == list(range(1, 61))


def test_local_put_returns_what_head_says_and_bookkeeping_stays_hidden(local: LocalObjectSource) -> None:
    info, _ = local.put("acme/doc.md", b"# Title", {"Owner": "Ana"})
    assert info == local.head("acme/doc.md")
    assert info.metadata == {"owner": "Ana"} and info.content_type == "text/markdown"
    assert [i.key for i in local.list()] == ["acme/doc.md"]
    assert (local.root / ".winnow-meta").is_dir()


def test_local_files_dropped_by_hand_are_objects_with_computed_etags(local: LocalObjectSource) -> None:
    # Given a file copied into the folder without put, and a put object later edited by hand
    (local.root / "acme").mkdir(parents=True)
    (local.root / "acme" / "dropped.txt").write_bytes(b"by hand")
    local.put("acme/edited.txt", b"original")
    (local.root / "acme" / "edited.txt").write_bytes(b"edited by hand, longer")
    # Then both are listed and HEAD computes their ETags from the bytes on disk
    assert {i.key: i.etag for i in local.list()} == {
        "acme/dropped.txt": md5_etag(b"by hand"),
        "acme/edited.txt": md5_etag(b"edited by hand, longer"),
    }
    assert local.head("acme/edited.txt").etag == md5_etag(b"edited by hand, longer")


def test_local_metadata_follows_s3_limits(local: LocalObjectSource) -> None:
    with pytest.raises(InvalidMetadata):
        local.put("acme/doc.txt", b"x", {"big": "v" * 3000})
    with pytest.raises(ObjectGone):
        local.head("acme/doc.txt")


def test_local_keys_that_clash_with_folders_are_refused(local: LocalObjectSource) -> None:
    local.put("acme/a/b.txt", b"x")
    with pytest.raises(InvalidKey):
        local.put("acme/a", b"a folder already")
    local.put("acme/file", b"x")
    with pytest.raises(InvalidKey):
        local.put("acme/file/inside.txt", b"x")


def test_local_delete_prunes_empty_folders(local: LocalObjectSource) -> None:
    local.put("acme/deep/er/doc.txt", b"x")
    assert local.delete("acme/deep/er/doc.txt") is not None
    assert not (local.root / "acme").exists()
    assert list(local.list()) == []


def test_list_is_lazy_for_local_folders(local: LocalObjectSource, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two tenants' folders
    local.put("acme/a.txt", b"a")
    local.put("globex/b.txt", b"b")
    visited: list[str] = []
    real_scandir = __import__("os").scandir

    def spy(path: Any) -> Iterator[Any]:
        visited.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr("winnow_local.adapters.objects_local.os.scandir", spy)
    # When one prefix is listed, Then folders outside it are never read
    assert [i.key for i in local.list("acme/")] == ["acme/a.txt"]
    assert not any(p.endswith("globex") for p in visited)
