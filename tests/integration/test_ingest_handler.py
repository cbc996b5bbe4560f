"""The ingest handler end to end: events in, Qdrant points and ledger records out.

Real parts: the handler, the folder bucket, the SQLite ledger, Qdrant local mode, and the real Voyage
REST adapter talking to the loopback fake Voyage server (whose request log counts embedding calls)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from urllib.parse import unquote_plus

from tests.support.documents import DocxHeading, DocxParagraph, DocxTable, make_docx, make_pdf
from tests.support.office import make_epub
from tests.support.reliability import point_snapshot
from tests.support.samples import INFO_FILE, LAYOUT_TABLE_PAGE, MAN_PAGE
from tests.support.stack import EmbeddedStack
from winnow.ingest.events import s3_event
from winnow.models import DocumentStatus
from winnow.settings import ChunkingSettings
from winnow_fakes.fake_voyage import FakeVoyageServer, Fault

EVENTS = Path(__file__).resolve().parents[2] / "events"

HANDBOOK = b"""# Employee handbook

## Holidays

Every employee receives twenty-eight days of paid holiday per year. Unused holiday days may be carried
over into the first quarter of the following year, up to a maximum of five days, with manager approval.

## Expenses

Travel expenses are reimbursed within fourteen days when submitted with receipts through the finance
portal. Meals during business travel are covered up to a daily allowance set by the finance team.

## Security

Laptops must use full-disk encryption and a screen lock after five minutes of inactivity. Report lost
devices to the security desk within one hour so that access can be revoked remotely.
"""


def points_of(stack: EmbeddedStack, tenant: str, key: str) -> set[str]:
    return stack.container.store.point_ids(tenant, key)


def test_direct_s3_event_indexes_a_markdown_document(stack: EmbeddedStack) -> None:
    # Given a Markdown handbook in tenant acme's folder
    # When its ObjectCreated event reaches the handler directly (as sam local invoke sends it)
    result = stack.upload("acme/handbook.md", HANDBOOK)
    # Then it is indexed with one point per chunk, and the ledger agrees
    assert result["status"] == "indexed", result
    assert result["chunks"] >= 3  # one per section at least
    assert result["embedded"] == result["chunks"] and result["reused"] == 0
    record = stack.container.ledger.get("acme", "acme/handbook.md")
    assert record is not None and record.status == DocumentStatus.INDEXED
    assert record.chunks == result["chunks"] == len(points_of(stack, "acme", "acme/handbook.md"))
    # and a search finds the right section with a citation
    status, body = stack.search("how many days of paid holiday", relevance_threshold=0)
    assert status == 200
    top = body["results"][0]
    assert top["key"] == "acme/handbook.md" and "Holidays" in top["section"]
    assert "twenty-eight days" in top["text"]


def test_sqs_batch_reports_only_the_failed_record(stack: EmbeddedStack) -> None:
    # Given two uploaded documents
    stack.put_object("acme/a.md", HANDBOOK)
    stack.put_object("acme/b.txt", b"Quarterly revenue grew by twelve percent in the northern region.")
    good = s3_event([stack.created_record("acme/a.md")])
    flaky = s3_event([stack.created_record("acme/b.txt")])
    # and an embedding provider that fails every attempt of the second message
    batch = stack.sqs_batch(good, flaky, {"Event": "s3:TestEvent", "Service": "Amazon S3"})
    first_ok = stack.invoke_ingest(stack.sqs_batch(good))  # index a.md first, outage afterwards
    assert first_ok == {"batchItemFailures": []}
    stack.fake.set_outage(Fault.server_error(500))
    # When the whole batch arrives
    response = stack.invoke_ingest(batch)
    # Then only b.txt's message is reported for retry (a.md is unchanged, the test event is acknowledged)
    failed_ids = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    assert failed_ids == [batch["Records"][1]["messageId"]]
    assert stack.container.ledger.get("acme", "acme/b.txt") is None  # nothing recorded for a transient fault
    # When the outage clears and SQS redelivers the message
    stack.fake.set_outage(None)
    retry = stack.invoke_ingest(stack.sqs_batch(flaky))
    # Then it completes
    assert retry == {"batchItemFailures": []}
    record = stack.container.ledger.get("acme", "acme/b.txt")
    assert record is not None and record.status == DocumentStatus.INDEXED


def test_keys_are_url_decoded(stack: EmbeddedStack) -> None:
    # Given an object whose key has a space and a plus sign
    key = "acme/a b+c.md"
    stack.put_object(key, HANDBOOK)
    event = s3_event([stack.created_record(key)])
    assert event["Records"][0]["s3"]["object"]["key"] == "acme/a+b%2Bc.md"  # as S3 encodes it
    # When the handler receives the encoded key
    out = stack.invoke_ingest(event)
    # Then it indexes the decoded key
    assert out["results"][0]["key"] == key and out["results"][0]["status"] == "indexed"


def test_sample_sqs_event_from_events_folder_is_processed(stack: EmbeddedStack) -> None:
    # Given the shared sample SQS batch (a create, a delete and an s3:TestEvent), objects at the created
    # keys, and an indexed document at the deleted key that is gone from the bucket
    event = json.loads((EVENTS / "sqs-s3-batch.json").read_text())
    expected: dict[str, DocumentStatus] = {}
    for record in event["Records"]:
        for r in json.loads(record["body"]).get("Records", []):
            key = unquote_plus(r["s3"]["object"]["key"])
            text = f"Notes stored at {key}. The committee approved the budget for the new library wing."
            data = make_pdf([text]) if key.endswith(".pdf") else text.encode()
            if r["eventName"].startswith("ObjectCreated"):
                stack.put_object(key, data)
                expected[key] = DocumentStatus.INDEXED
            else:
                assert stack.upload(key, data)["status"] == "indexed"
                stack.delete_object(key)
                expected[key] = DocumentStatus.DELETED
    assert set(expected.values()) == {DocumentStatus.INDEXED, DocumentStatus.DELETED}
    # When the handler processes it
    response = stack.invoke_ingest(event)
    # Then nothing fails and the ledger follows every named key
    assert response == {"batchItemFailures": []}
    for key, status in expected.items():
        record = stack.container.ledger.get(key.split("/", 1)[0], key)
        assert record is not None and record.status == status, key


def test_delete_event_without_size_removes_every_point(stack: EmbeddedStack) -> None:
    stack.upload("acme/handbook.md", HANDBOOK)
    assert points_of(stack, "acme", "acme/handbook.md")
    # When the object is deleted (the event carries no size or eTag)
    result = stack.remove("acme/handbook.md")
    # Then its points are gone and the ledger says deleted
    assert result["status"] == "deleted"
    assert points_of(stack, "acme", "acme/handbook.md") == set()
    record = stack.container.ledger.get("acme", "acme/handbook.md")
    assert record is not None and record.status == DocumentStatus.DELETED
    status, body = stack.search("paid holiday", relevance_threshold=0)
    assert status == 200 and body["results"] == []


def test_key_without_tenant_is_recorded_as_failed(stack: EmbeddedStack) -> None:
    stack.put_object("handbook.md", HANDBOOK)
    out = stack.invoke_ingest(s3_event([stack.created_record("handbook.md")]))
    result = out["results"][0]
    assert result["status"] == "failed" and "tenant" in result["error"]
    assert stack.embed_calls() == 0


def test_identical_reupload_makes_no_embedding_call(stack: EmbeddedStack) -> None:
    stack.upload("acme/handbook.md", HANDBOOK)
    calls = stack.embed_calls()
    # When the same bytes are uploaded again (new event, new sequencer)
    result = stack.upload("acme/handbook.md", HANDBOOK)
    # Then nothing is embedded
    assert result["status"] == "unchanged" and result["embedded"] == 0
    assert stack.embed_calls() == calls


def test_editing_one_section_embeds_only_that_section(stack: EmbeddedStack) -> None:
    first = stack.upload("acme/handbook.md", HANDBOOK)
    texts_before = stack.embedded_texts()
    ids_before = points_of(stack, "acme", "acme/handbook.md")
    # When one section changes
    edited = HANDBOOK.replace(b"within fourteen days", b"within ten working days")
    result = stack.upload("acme/handbook.md", edited)
    # Then only the changed chunk is embedded and the rest reuse their stored vectors
    assert result["status"] == "indexed"
    assert result["embedded"] == 1 and result["reused"] == first["chunks"] - 1
    assert stack.embedded_texts() - texts_before == 1
    ids_after = points_of(stack, "acme", "acme/handbook.md")
    assert len(ids_after) == first["chunks"] and len(ids_after - ids_before) == 1
    _, body = stack.search("expenses reimbursed", relevance_threshold=0, top_k=10)
    texts = " ".join(r["text"] for r in body["results"])
    assert "ten working days" in texts and "fourteen days" not in texts


def test_late_create_after_delete_indexes_nothing(stack: EmbeddedStack) -> None:
    # Given a create event whose delivery is delayed past the delete of the same key
    stack.put_object("acme/handbook.md", HANDBOOK)
    create = s3_event([stack.created_record("acme/handbook.md")])
    stack.delete_object("acme/handbook.md")
    delete = s3_event([stack.removed_record("acme/handbook.md")])
    # When the delete is processed first and the create arrives late
    assert stack.invoke_ingest(delete)["results"][0]["status"] == "deleted"
    late = stack.invoke_ingest(create)["results"][0]
    # Then the late create changes nothing
    assert late["status"] == "skipped"
    assert points_of(stack, "acme", "acme/handbook.md") == set()
    assert stack.embed_calls() == 0


def test_out_of_order_updates_keep_the_newest_version(stack: EmbeddedStack) -> None:
    stack.put_object("acme/note.txt", b"Version one of the meeting notes mentions the blue project.")
    old = s3_event([stack.created_record("acme/note.txt")])
    stack.put_object("acme/note.txt", b"Version two of the meeting notes mentions the green project.")
    new = s3_event([stack.created_record("acme/note.txt")])
    # When the newer event is processed before the older one, and the newer one is delivered twice
    assert stack.invoke_ingest(new)["results"][0]["status"] == "indexed"
    assert stack.invoke_ingest(old)["results"][0]["status"] == "skipped"
    assert stack.invoke_ingest(new)["results"][0]["status"] == "skipped"
    # Then the index holds version two only
    _, body = stack.search("meeting notes project", relevance_threshold=0)
    assert [r["text"] for r in body["results"]] == [
        "Version two of the meeting notes mentions the green project."
    ]


def test_metadata_and_sidecar_become_filterable_and_sidecar_change_needs_no_embedding(
    stack: EmbeddedStack,
) -> None:
    # Given a document with S3 user metadata and a sidecar
    stack.put_object(
        "acme/policy.md.metadata.json",
        json.dumps({"metadataAttributes": {"department": "finance", "year": 2024}}).encode(),
    )
    stack.upload("acme/policy.md", HANDBOOK, metadata={"confidentiality": "internal"})
    status, body = stack.search("travel expenses", filters={"department": "finance"}, relevance_threshold=0)
    assert status == 200 and body["results"]
    assert body["results"][0]["metadata"] == {
        "confidentiality": "internal",
        "department": "finance",
        "year": 2024,
    }
    calls = stack.embed_calls()
    # When only the sidecar changes
    stack.put_object(
        "acme/policy.md.metadata.json",
        json.dumps({"metadataAttributes": {"department": "legal", "year": 2025}}).encode(),
    )
    out = stack.invoke_ingest(s3_event([stack.created_record("acme/policy.md.metadata.json")]))
    assert out["results"][0]["status"] == "indexed"
    # Then the points carry the new metadata and no embedding call was made
    assert stack.embed_calls() == calls
    _, by_old = stack.search("travel expenses", filters={"department": "finance"}, relevance_threshold=0)
    _, by_new = stack.search(
        "travel expenses", filters={"department": "legal", "year": {"gte": 2025}}, relevance_threshold=0
    )
    assert by_old["results"] == [] and by_new["results"]


def test_invalid_sidecar_fails_its_document_until_it_is_fixed(stack: EmbeddedStack) -> None:
    # Given an unreadable sidecar (it may have meant to restrict who reads the document)
    stack.put_object("acme/x.md.metadata.json", b"{not json")
    out = stack.invoke_ingest(s3_event([stack.created_record("acme/x.md.metadata.json")]))
    assert out["results"][0]["status"] == "failed" and "JSON" in out["results"][0]["error"]
    # When the document arrives, Then it fails with a one-line reason naming the sidecar: never indexed
    # readable by all because its access list could not be read
    result = stack.upload("acme/x.md", HANDBOOK)
    assert result["status"] == "failed" and "sidecar" in result["error"] and "\n" not in result["error"]
    assert stack.search("paid holiday per year", relevance_threshold=0)[1]["results"] == []
    # When the sidecar is fixed, Then the document is indexed from that event alone
    stack.put_object("acme/x.md.metadata.json", b'{"metadataAttributes": {"department": "hr"}}')
    out = stack.invoke_ingest(s3_event([stack.created_record("acme/x.md.metadata.json")]))
    assert out["results"][0]["status"] == "indexed"
    _, body = stack.search("paid holiday per year", relevance_threshold=0)
    assert {r["key"] for r in body["results"]} == {"acme/x.md"}


def test_corrupt_file_fails_alone_in_a_batch(stack: EmbeddedStack) -> None:
    stack.put_object("acme/broken.pdf", b"%PDF-1.7\n this is not really a pdf")
    stack.put_object("acme/fine.md", HANDBOOK)
    event = s3_event([stack.created_record("acme/broken.pdf"), stack.created_record("acme/fine.md")])
    response = stack.invoke_ingest(stack.sqs_batch(event))
    # A permanent problem is recorded and acknowledged: no retry
    assert response == {"batchItemFailures": []}
    broken = stack.container.ledger.get("acme", "acme/broken.pdf")
    fine = stack.container.ledger.get("acme", "acme/fine.md")
    assert broken is not None and broken.status == DocumentStatus.FAILED and broken.error
    assert "\n" not in broken.error
    assert fine is not None and fine.status == DocumentStatus.INDEXED


def test_oversized_object_is_refused_from_head(stack: EmbeddedStack, tmp_path: Path) -> None:
    from winnow.settings import IngestSettings

    small = EmbeddedStack(tmp_path / "small", stack.fake, ingest=IngestSettings(max_object_bytes=100))
    result = small.upload("acme/handbook.md", HANDBOOK)
    assert result["status"] == "failed" and "limit" in result["error"]
    assert small.embed_calls() == 0


def test_pdf_chunks_cite_their_pages(stack: EmbeddedStack) -> None:
    # Given a three-page PDF whose pages talk about different things
    pages = [
        "Quarterly report. Revenue grew in every region during the first quarter, led by strong demand "
        "for subscriptions in the south and a recovery of hardware sales in the east.",
        "Logistics. The warehouse in Rotterdam doubled its storage capacity for frozen goods this spring, "
        "and the new cold-chain trucks cut delivery times to the northern stores by a day.",
        "Hiring plans. The engineering team will add twelve people before the end of the year, most of "
        "them in data platform and mobile, with two new offices opening for remote staff.",
    ]
    assert stack.upload("acme/report.pdf", make_pdf(pages, title="Quarterly report"))["status"] == "indexed"
    # When searching for what page two says
    _, body = stack.search("Rotterdam warehouse storage capacity", relevance_threshold=0)
    # Then the citation names page 2
    top = body["results"][0]
    assert top["key"] == "acme/report.pdf" and top["page"] == 2
    assert "Rotterdam" in top["text"]


def test_docx_headings_become_sections_and_tables_are_searchable(stack: EmbeddedStack) -> None:
    docx = make_docx(
        [
            DocxHeading("Office guide", 0),
            DocxHeading("Parking", 1),
            DocxParagraph(
                "Visitors park in the north garage and sign in at the front desk; staff use the "
                "underground levels with their badge, and bicycles go in the racks by the east door."
            ),
            DocxHeading("Opening hours", 1),
            DocxTable(
                [
                    ["Day", "Hours"],
                    *[[day, "eight to six"] for day in ("Monday", "Tuesday", "Wednesday", "Thursday")],
                    ["Friday", "eight to four"],
                    ["Saturday", "ten to two"],
                    ["Sunday", "closed"],
                ]
            ),
        ]
    )
    assert stack.upload("acme/guide.docx", docx)["status"] == "indexed"
    _, body = stack.search("visitors park north garage", relevance_threshold=0)
    assert body["results"][0]["section"] == "Parking"
    _, body = stack.search("Saturday hours", relevance_threshold=0)
    hit = next(r for r in body["results"] if "Saturday" in r["text"])
    assert hit["section"] == "Opening hours" and "ten to two" in hit["text"]


# --- documents as this machine ships them ---------------------------------------------------------------
# A gzip'd GNU info manual, a man page saved as text, a page laid out in tables, an EPUB with spaces in
# its chapter names: each passage comes back with its section and without navigation.
def test_shipped_document_shapes_are_indexed_by_section_without_navigation(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    # (fragments are not merged into neighbours here, so every section keeps its own chunk)
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, chunking=ChunkingSettings(min_chars=0))
    try:
        _index_and_check(stack)
    finally:
        stack.close()


def _index_and_check(stack: EmbeddedStack) -> None:
    # Given the four shapes uploaded as people have them
    uploads = {
        "acme/grep.info.gz": gzip.compress(INFO_FILE.encode()),
        "acme/grep.txt": MAN_PAGE.encode(),
        "acme/FAQ.html": LAYOUT_TABLE_PAGE.encode("latin-1"),
        "acme/guide.epub": make_epub(
            "Field guide", [("Herons", "Herons wade in shallow water.")], "Part {number}.xhtml"
        ),
    }
    for key, data in uploads.items():
        assert stack.upload(key, data)["status"] == "indexed", key
    # When their chunks are read back from the index
    chunks = [json.loads(payload) for payload, _, _ in point_snapshot(stack.container.store).values()]
    sections: dict[str, set[str]] = {}
    for chunk in chunks:
        sections.setdefault(chunk["key"], set()).add(chunk["section"])
    # Then each passage carries its section, and no navigation text was indexed
    assert {"1 Introduction", "1 Introduction > 2.1.2 Matching Control", "Usage"} <= sections[
        "acme/grep.info.gz"
    ]
    assert {"NAME", "OPTIONS > Pattern Syntax"} <= sections["acme/grep.txt"]
    assert any(section.endswith("Troubles linking programs") for section in sections["acme/FAQ.html"])
    assert sections["acme/guide.epub"] == {"Herons"}
    every_text = " ".join(chunk["text"] for chunk in chunks)
    for navigation in ("Node:", "* Menu", "Main Menu", "GREP(1)", "INFO-DIR", "libraryFAQ"):
        assert navigation not in every_text


def test_a_broken_gzip_is_failed_with_a_one_line_reason(stack: EmbeddedStack) -> None:
    result = stack.upload("acme/notes.txt.gz", gzip.compress(b"notes that will be cut short")[:-10])
    assert result["status"] == "failed"
    assert str(result["error"]).startswith("corrupt gzip") and "\n" not in str(result["error"])
