"""The tenant and field-name rules (winnow.rules) end to end: ingest refuses what search could never
reach, so a document is never indexed under a name no one can query or filter on."""

from __future__ import annotations

import json

from tests.support.stack import EmbeddedStack
from winnow.ingest.events import s3_event
from winnow.models import DocumentStatus
from winnow.rules import UNASSIGNED_TENANT

NOTE = b"# Roster\n\nThe night shift of the turbine hall starts at ten.\n"


def test_a_key_whose_tenant_ends_in_a_newline_is_refused(stack: EmbeddedStack) -> None:
    # Given an object whose first key segment is "acme\n"
    key = "acme\n/roster.md"
    # When it is ingested
    result = stack.upload(key, NOTE)
    # Then it is failed as a key that names no tenant, recorded only among the unassigned rows
    assert result["status"] == "failed" and "tenant" in result["error"]
    assert stack.container.ledger.get("acme\n", key) is None
    unassigned = stack.container.ledger.get(UNASSIGNED_TENANT, key)
    assert unassigned is not None and unassigned.status == DocumentStatus.FAILED
    # And acme finds nothing of it
    _, body = stack.search("night shift turbine hall", relevance_threshold=0)
    assert body["results"] == []


def test_a_sidecar_field_the_store_cannot_filter_on_is_refused_with_the_rule(stack: EmbeddedStack) -> None:
    # Given a sidecar naming a field with a dot (the store reads it as a nested path)
    sidecar = json.dumps({"metadataAttributes": {"dept.team": "ops", "shift": "night"}}).encode()
    stack.put_object("acme/roster.md.metadata.json", sidecar)
    # When the sidecar is ingested
    out = stack.invoke_ingest(s3_event([stack.created_record("acme/roster.md.metadata.json")]))
    # Then it fails with a one-line reason that names the field and the rule
    (result,) = out["results"]
    assert result["status"] == "failed"
    assert "'dept.team'" in result["error"] and "letters, digits, '_' or '-'" in result["error"]
    # And the document fails too, saying why: a sidecar that cannot be read might carry an access list,
    # so its document is never indexed without it (readable by all)
    refused = stack.upload("acme/roster.md", NOTE)
    assert refused["status"] == "failed" and "'dept.team'" in refused["error"], refused
    _, body = stack.search("night shift turbine hall", relevance_threshold=0)
    assert body["results"] == []
    # Until the sidecar is fixed: then the document indexes, with the metadata the rule allows
    fixed = json.dumps({"metadataAttributes": {"shift": "night"}}).encode()
    stack.put_object("acme/roster.md.metadata.json", fixed)
    assert stack.upload("acme/roster.md", NOTE)["status"] == "indexed"
    _, body = stack.search("night shift turbine hall", relevance_threshold=0)
    assert [r["key"] for r in body["results"]] == ["acme/roster.md"]
    assert "dept.team" not in body["results"][0]["metadata"]
    # And a search filtering on that name is told the same rule
    status, _, answer = stack.api(
        "POST", "/search", {"query": "night shift", "filters": {"dept.team": "ops"}}
    )
    assert status == 422 and "letters, digits, '_' or '-'" in answer["error"]["message"]


def test_every_field_ingest_accepts_can_be_filtered_on(stack: EmbeddedStack) -> None:
    # Given a sidecar with names at the rule's edges
    fields = {"dept_team": "ops", "Shift-2": "night", "9lives": "yes", "x" * 64: "long"}
    stack.put_object("acme/roster.md.metadata.json", json.dumps({"metadataAttributes": fields}).encode())
    assert stack.upload("acme/roster.md", NOTE)["status"] == "indexed"
    # Then a filter on each of them finds the document
    for name, value in fields.items():
        status, body = stack.search("night shift turbine hall", filters={name: value}, relevance_threshold=0)
        assert status == 200, body
        assert [r["key"] for r in body["results"]] == ["acme/roster.md"], name


def test_s3_user_metadata_outside_the_rule_is_dropped(stack: EmbeddedStack) -> None:
    # Given user metadata the uploader may not control (x-amz-meta-*), one name outside the rule
    assert stack.upload("acme/roster.md", NOTE, {"dept.team": "ops", "shift": "night"})["status"] == "indexed"
    # Then the document indexes with the valid field only
    _, body = stack.search("night shift turbine hall", filters={"shift": "night"}, relevance_threshold=0)
    assert [r["key"] for r in body["results"]] == ["acme/roster.md"]
    assert body["results"][0]["metadata"] == {"shift": "night"}
