"""Keys near S3's 1,024-byte limit: a document whose sidecar key would be too long is indexed without
looking for a sidecar (which no bucket could hold), on the folder bucket and on S3 (moto over HTTP; moto
does not enforce the limit that real S3 does with KeyTooLongError, the folder bucket does)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stack import EmbeddedStack
from winnow.adapters.objects_s3 import S3ObjectSource
from winnow.ingest.metadata import SIDECAR_SUFFIX, can_have_sidecar
from winnow.models import DocumentStatus
from winnow_fakes.fake_voyage import FakeVoyageServer

TEXT = b"Quarterly revenue grew by twelve percent in the northern region."


def key_of(total_bytes: int, last_segment: str = "\u00e9t\u00e9.txt") -> str:
    """``acme/dddd.../ddd/<last>`` of exactly ``total_bytes`` UTF-8 bytes, in folders of at most 200
    bytes (a file system's name limit is 255), ending in a multi-byte name."""
    room = total_bytes - len(b"acme/") - len(last_segment.encode())
    segments = []
    while room > 0:
        size = min(200, room) if room - min(200, room) != 1 else 199  # no 0-byte segment left over
        segments.append("d" * (size - 1))
        room -= size
    key = "acme/" + "".join(f"{segment}/" for segment in segments) + last_segment
    assert len(key.encode()) == total_bytes
    return key


@pytest.fixture(params=["folder", "s3"])
def any_bucket_stack(
    request: pytest.FixtureRequest, tmp_path: Path, fake_voyage: FakeVoyageServer
) -> Iterator[EmbeddedStack]:
    objects = None
    if request.param == "s3":
        objects = S3ObjectSource(request.getfixturevalue("s3_bucket"))
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, objects=objects)
    yield stack
    stack.close()


@pytest.mark.parametrize("total_bytes", [1011, 1017, 1024])
def test_a_document_whose_sidecar_key_would_pass_1024_bytes_is_indexed(
    any_bucket_stack: EmbeddedStack, total_bytes: int
) -> None:
    # Given a document key of 1,011 to 1,024 bytes (its sidecar key would be 1,025 to 1,038)
    key = key_of(total_bytes)
    assert not can_have_sidecar(key)
    # When it is uploaded and ingested
    result = any_bucket_stack.upload(key, TEXT)
    # Then it is indexed, searchable under its exact key
    assert result["status"] == "indexed", result
    record = any_bucket_stack.container.ledger.get("acme", key)
    assert record is not None and record.status == DocumentStatus.INDEXED
    status, body = any_bucket_stack.search("northern region revenue", relevance_threshold=0)
    assert status == 200 and body["results"][0]["key"] == key


def test_a_document_whose_sidecar_key_is_exactly_1024_bytes_still_gets_its_sidecar(
    any_bucket_stack: EmbeddedStack,
) -> None:
    # Given a 1,010-byte document key, whose sidecar key is exactly 1,024 bytes, and that sidecar
    key = key_of(1010)
    sidecar = key + SIDECAR_SUFFIX
    assert can_have_sidecar(key) and len(sidecar.encode()) == 1024
    any_bucket_stack.put_object(sidecar, json.dumps({"metadataAttributes": {"department": "sales"}}).encode())
    # When the document is ingested
    assert any_bucket_stack.upload(key, TEXT)["status"] == "indexed"
    # Then the sidecar's metadata is on its points
    status, body = any_bucket_stack.search(
        "northern region", relevance_threshold=0, filters={"department": "sales"}
    )
    assert status == 200 and [hit["key"] for hit in body["results"]] == [key]
