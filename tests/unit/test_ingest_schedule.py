"""The lanes of an SQS batch: messages on one document run one after another, oldest sequencer first."""

from __future__ import annotations

import json

from winnow.ingest.events import s3_event
from winnow.ingest.schedule import lanes


def created(key: str, sequencer: str | None) -> str:
    return json.dumps(s3_event([("ObjectCreated:Put", key, 10, "etag", sequencer)]))


def removed(key: str, sequencer: str | None) -> str:
    return json.dumps(s3_event([("ObjectRemoved:Delete", key, None, None, sequencer)]))


def test_different_documents_get_lanes_of_their_own() -> None:
    # Given three messages on three documents
    bodies = [created("acme/a.md", "01"), created("acme/b.md", "02"), created("acme/c.md", "03")]
    # Then each runs in its own lane, in batch order
    assert lanes(bodies) == [[0], [1], [2]]


def test_messages_on_one_document_share_a_lane_oldest_sequencer_first() -> None:
    # Given a document's delete (newer) delivered before its create (older), with another key between
    bodies = [
        removed("acme/a.md", "0B"),
        created("acme/b.md", "0A"),
        created("acme/a.md", "0A"),
    ]
    # Then the two events of a.md run in one lane, the create (older sequencer) first
    assert lanes(bodies) == [[2, 0], [1]]


def test_sequencers_of_different_lengths_compare_as_s3_prescribes() -> None:
    # Given sequencers "0B" and "0A00": padded on the right, 0A00 < 0B00
    bodies = [created("acme/a.md", "0B"), created("acme/a.md", "0A00")]
    assert lanes(bodies) == [[1, 0]]


def test_a_sidecar_runs_in_its_documents_lane() -> None:
    # Given a document and its metadata sidecar in one batch (the sidecar takes the document's lease)
    bodies = [created("acme/a.pdf.metadata.json", "02"), created("acme/a.pdf", "01")]
    # Then they share a lane, document first
    assert lanes(bodies) == [[1, 0]]


def test_messages_without_a_sequencer_keep_their_place() -> None:
    # Given a synthetic event (reconcile: no sequencer) between two S3 events on the same key
    bodies = [created("acme/a.md", "0C"), created("acme/a.md", None), created("acme/a.md", "0A")]
    # Then the S3 events are ordered among their own places and the synthetic one stays in the middle
    assert lanes(bodies) == [[2, 1, 0]]


def test_a_message_touching_two_documents_joins_their_lanes() -> None:
    # Given a notification with two records (a and b), and later messages on a and on b
    both = json.dumps(
        s3_event(
            [
                ("ObjectCreated:Put", "acme/a.md", 1, "e", "01"),
                ("ObjectCreated:Put", "acme/b.md", 1, "e", "02"),
            ]
        )
    )
    bodies = [created("acme/b.md", "05"), both, created("acme/a.md", "04"), created("acme/c.md", "03")]
    # Then the three messages on a or b form one lane, and c runs beside it
    assert lanes(bodies) == [[1, 2, 0], [3]]


def test_an_unreadable_body_gets_a_lane_of_its_own() -> None:
    # Given a body that is not JSON between two messages on one key
    bodies = [created("acme/a.md", "02"), "not json", created("acme/a.md", "01")]
    # Then it runs alone (it fails on its own), and the key's lane stays ordered
    assert lanes(bodies) == [[2, 0], [1]]


def test_large_objects_run_one_at_a_time_beside_the_small_ones() -> None:
    # Given two objects of 2 MB and 5 MB (announced sizes) among small ones
    def sized(key: str, size: int, sequencer: str) -> str:
        return json.dumps(s3_event([("ObjectCreated:Put", key, size, "etag", sequencer)]))

    bodies = [
        sized("acme/big.pdf", 2 * 1024 * 1024, "01"),
        sized("acme/a.md", 900, "02"),
        sized("acme/huge.pdf", 5 * 1024 * 1024, "03"),
        sized("acme/b.md", 1200, "04"),
    ]
    # Then the two large ones share one lane (never in memory together), the small ones run beside it
    assert lanes(bodies) == [[0, 2], [1], [3]]
    # And with a higher threshold each runs on its own
    assert lanes(bodies, large_bytes=10 * 1024 * 1024) == [[0], [1], [2], [3]]
