"""Operations in template.yaml (issue 43): what outlives the stack, least privilege on the bucket, the ledger
and the secrets' key, figure images that never invoke ingest, locked bundle dependencies, and a deploy
guide that names every parameter. Read as CloudFormation would, for the default and the other values."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any, cast

import pytest
from packaging.requirements import Requirement

from tests.support.template import NO_VALUE, PSEUDO, ROOT, evaluate, load_template
from winnow.reconcile.notifications import s3_notification as reconcile_notification
from winnow.rules import FIGURE_PREFIX, figure_key, s3_notification, s3_record

TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
STATEFUL = [
    "DocumentsBucket",
    "LedgerTable",
    "ConversationsTable",
    "QdrantApiKeySecret",
    "VoyageApiKeySecret",
]
SECRET_READERS = ["IngestFunction", "SearchFunction", "ReconcileFunction"]
KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"
KEY_ARN = f"arn:aws:kms:eu-central-1:123456789012:key/{KEY_ID}"
SECRETS_KEY = "arn:aws:kms:eu-central-1:123456789012:key/0f0f0f0f-1111-2222-3333-444455556666"


def sub(value: Any, overrides: dict[str, str]) -> Any:
    """A string ``!Sub`` of pseudo parameters and parameters, as CloudFormation resolves it."""
    if isinstance(value, dict) and set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        text: str = value["Fn::Sub"]
        for name, resolved in PSEUDO.items():
            text = text.replace("${" + name + "}", resolved)
        for name, parameter in TEMPLATE["Parameters"].items():
            text = text.replace("${" + name + "}", str(overrides.get(name, parameter.get("Default"))))
        return text
    return value


def statements(function: str, overrides: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The function's own policy statements (SAM policy templates left out) for these parameters."""
    overrides = overrides or {}
    found = []
    for policy in RESOURCES[function]["Properties"]["Policies"]:
        policy = evaluate(TEMPLATE, policy, overrides)
        if policy is NO_VALUE or "Statement" not in policy:
            continue
        for statement in policy["Statement"]:
            resolved = evaluate(TEMPLATE, statement, overrides)
            resolved["Resource"] = sub(evaluate(TEMPLATE, resolved.get("Resource"), overrides), overrides)
            found.append(resolved)
    return found


def actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


# --- what outlives the stack ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", STATEFUL)
def test_stateful_resources_are_retained_unless_the_stack_opts_out(name: str) -> None:
    resource = RESOURCES[name]
    for attribute in ("DeletionPolicy", "UpdateReplacePolicy"):
        assert evaluate(TEMPLATE, resource[attribute]) == "Retain", (name, attribute)
        assert evaluate(TEMPLATE, resource[attribute], {"RetainData": "false"}) == "Delete", (name, attribute)


def test_the_language_extensions_transform_resolves_the_policies_before_sam() -> None:
    # CloudFormation refuses Fn::If in DeletionPolicy without AWS::LanguageExtensions, which must run first
    assert TEMPLATE["Transform"] == ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"]


# --- least privilege --------------------------------------------------------------------------------------
def test_ingest_lists_only_the_figure_folders() -> None:
    listing = [s for s in statements("IngestFunction") if "s3:ListBucket" in actions(s)]
    assert len(listing) == 1
    # a listing that names a prefix must name a figure folder; HEAD (no prefix) keeps its 404
    assert listing[0]["Condition"] == {"StringLikeIfExists": {"s3:prefix": f"{FIGURE_PREFIX}*"}}


def test_search_may_list_nothing() -> None:
    listing = [s for s in statements("SearchFunction") if "s3:ListBucket" in actions(s)]
    assert len(listing) == 1
    assert listing[0]["Condition"] == {"Null": {"s3:prefix": "true"}}


def test_search_never_scans_the_ledger() -> None:
    policies = RESOURCES["SearchFunction"]["Properties"]["Policies"]
    assert not [p for p in policies if isinstance(p, dict) and "DynamoDBReadPolicy" in p]
    ledger = [
        s for s in statements("SearchFunction") if s["Resource"] == {"Fn::GetAtt": ["LedgerTable", "Arn"]}
    ]
    assert [actions(s) for s in ledger] == [{"dynamodb:GetItem", "dynamodb:Query"}]
    assert not [s for s in statements("SearchFunction") if any("Scan" in a for a in actions(s))]


@pytest.mark.parametrize("key", [KEY_ID, KEY_ARN])
def test_the_bucket_key_may_be_an_id_or_an_arn_and_every_grant_names_its_arn(key: str) -> None:
    overrides = {"BucketKmsKeyId": key}
    granted = [
        s["Resource"]
        for function in SECRET_READERS
        for s in statements(function, overrides)
        if any(a.startswith("kms:") for a in actions(s)) and s.get("Sid") != "DecryptApiKeys"
    ]
    assert len(granted) >= 5  # ingest: decrypt, encrypt figures; search: encrypt, decrypt; reconcile
    assert set(granted) == {KEY_ARN}
    # and without a key, no KMS grant for the bucket at all
    assert not [
        s for f in SECRET_READERS for s in statements(f) if any(a.startswith("kms:") for a in actions(s))
    ]


def test_the_key_pattern_accepts_an_id_or_an_arn_and_nothing_else() -> None:
    pattern = re.compile(TEMPLATE["Parameters"]["BucketKmsKeyId"]["AllowedPattern"])
    for good in ("", KEY_ID, KEY_ARN, "mrk-1234abcd12ab34cd56ef1234567890ab"):
        assert pattern.fullmatch(good), good
    for bad in ("alias/docs", "arn:aws:kms:eu-central-1:123456789012:alias/docs", "key/x"):
        assert not pattern.fullmatch(bad), bad


def test_secrets_under_a_customer_key_are_encrypted_with_it_and_readable_through_secrets_manager_only() -> (
    None
):
    overrides = {"SecretsKmsKeyArn": SECRETS_KEY}
    for secret in ("QdrantApiKeySecret", "VoyageApiKeySecret"):
        properties = RESOURCES[secret]["Properties"]
        assert evaluate(TEMPLATE, properties["KmsKeyId"], overrides) == SECRETS_KEY
        assert evaluate(TEMPLATE, properties["KmsKeyId"]) is NO_VALUE
    for function in SECRET_READERS:
        decrypt = [s for s in statements(function, overrides) if s.get("Sid") == "DecryptApiKeys"]
        assert len(decrypt) == 1, function
        assert actions(decrypt[0]) == {"kms:Decrypt"} and decrypt[0]["Resource"] == SECRETS_KEY
        via = sub(decrypt[0]["Condition"]["StringEquals"]["kms:ViaService"], overrides)
        assert via == f"secretsmanager.{PSEUDO['AWS::Region']}.amazonaws.com"
        assert not [s for s in statements(function) if s.get("Sid") == "DecryptApiKeys"], function


# --- figure images never invoke ingest ---------------------------------------------------------------------
def delivered(body: dict[str, Any]) -> bool:
    """Whether Lambda's SQS filter lets a message with this body through. Lambda parses the body as JSON and
    matches the pattern like EventBridge (moto's implementation of it), an array matching when any element
    does: S3 puts one record in each message, so each record is matched on its own."""
    from moto.events.models import EventPattern

    (source,) = RESOURCES["IngestFunction"]["Properties"]["Events"]["DocumentChanges"]["Properties"][
        "FilterCriteria"
    ]["Filters"]
    pattern = EventPattern.load(source["Pattern"])
    # Lambda's record is no EventBridge event; moto's matcher reads it as the plain dict it is
    return any(pattern.matches_event(cast(Any, {"body": {"Records": r}})) for r in body.get("Records", []))


def notification(key: str, event: str = "ObjectCreated:Put") -> dict[str, Any]:
    # S3 sends keys URL-encoded, as s3_record does
    return json.loads(json.dumps(s3_notification([s3_record(event, "docs", key, size=1, sequencer="0A")])))


def test_stored_figure_images_never_reach_the_ingest_function() -> None:
    document = "acme/reports/q1.pdf"
    image = figure_key(document, "0123456789abcdef0123456789abcdef.png")
    assert image is not None and image.startswith(FIGURE_PREFIX)
    assert not delivered(notification(image))
    assert not delivered(notification(image, "ObjectRemoved:Delete"))


@pytest.mark.parametrize("first", list(string.ascii_letters + string.digits))
def test_every_document_of_every_tenant_reaches_it(first: str) -> None:
    assert delivered(notification(f"{first}tenant/a folder/report (final).pdf"))
    assert delivered(notification(f"{first}/x.txt", "ObjectRemoved:Delete"))


def test_reconciles_own_events_reach_it() -> None:
    from winnow.models import ObjectEvent

    event = ObjectEvent(
        action="created",
        bucket="docs",
        key="acme/a b.pdf",
        sequencer=None,
        etag="e",
        version_id=None,
        size=1,
        event_name="ObjectCreated:Put",
    )
    assert delivered(json.loads(json.dumps(reconcile_notification(event))))


# --- locked dependencies --------------------------------------------------------------------------------
def pins(lock: Path) -> dict[str, list[tuple[str, str, int]]]:
    """name → (version, marker, hash count) of each pin in a ``uv pip compile --generate-hashes`` file."""
    found: dict[str, list[tuple[str, str, int]]] = {}
    for entry in re.split(r"\n(?=\S)", lock.read_text().strip()):
        head, *rest = entry.split("\\\n")
        requirement = Requirement(head.strip())
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", head
        hashes = sum(1 for line in rest if line.strip().startswith("--hash=sha256:"))
        found.setdefault(requirement.name.lower(), []).append(
            (specifier.version, str(requirement.marker or ""), hashes)
        )
    return found


@pytest.mark.parametrize("folder", ["layers/shared", "functions/ingest"])
def test_each_bundle_installs_exact_hashed_versions_of_what_it_requires(folder: str) -> None:
    locked = pins(ROOT / folder / "requirements.lock")
    assert all(hashes >= 1 for versions in locked.values() for _, _, hashes in versions)
    for line in (ROOT / folder / "requirements.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        wanted = Requirement(line)
        versions = locked.get(wanted.name.lower())
        assert versions, f"{wanted.name} is not in {folder}/requirements.lock: run make lock"
        assert all(wanted.specifier.contains(v) for v, _, _ in versions), (wanted, versions)
    makefile = (ROOT / "bundles/Makefile").read_text()
    assert "-r requirements.txt" not in makefile
    assert makefile.count("--require-hashes") == 2 and makefile.count("-r requirements.lock") == 2


# --- the deploy guide --------------------------------------------------------------------------------------
def test_the_deploy_guide_names_every_stack_parameter() -> None:
    guide = (ROOT / "docs/deploy.md").read_text()
    missing = [name for name in TEMPLATE["Parameters"] if f"`{name}`" not in guide]
    assert not missing, f"docs/deploy.md does not name {missing}"
