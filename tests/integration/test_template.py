"""The AWS deployment: template.yaml, the makefile builds, samconfig.toml and events/.

What a team relies on when it runs ``sam build && sam deploy --guided``: the template lints, the build works
on this machine without Docker, the bundles stay well inside Lambda's 250 MB, the built layer imports on its
own, every environment variable the template sets means something to the settings models, and the sample
events are the ones the handlers and SAM understand.

SAM CLI lives in its own virtualenv (its pins clash with ours): ``$SAM_CLI`` or ``.tools/sam/bin/sam``,
installed by ``make test``.
"""

from __future__ import annotations

import concurrent.futures
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import unquote_plus

import pytest
from packaging.requirements import Requirement
from pydantic import SecretStr
from pydantic_settings import BaseSettings

from tests.support.template import (
    EVENTS,
    NO_VALUE,
    ROOT,
    evaluate,
    function_env,
    load_event,
    load_template,
    substitute,
)
from winnow import settings as settings_module
from winnow_fakes.fake_voyage import Endpoint, FakeVoyageServer

BUNDLES_MAKEFILE = ROOT / "bundles" / "Makefile"
MB = 1024 * 1024
LAMBDA_UNZIPPED_LIMIT = 250 * MB
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer")
PARSERS = ("pypdf", "python-docx", "lxml")
AARCH64_ELF_MACHINE = 183


# --- helpers ----------------------------------------------------------------------------------------
def sam_cli() -> Path:
    sam = Path(os.environ.get("SAM_CLI", ROOT / ".tools" / "sam" / "bin" / "sam"))
    if not sam.exists():
        pytest.fail(f"SAM CLI not found at {sam}: run `make test` (it installs .tools/sam) or set SAM_CLI")
    return sam


def sam_env(sam: Path) -> dict[str, str]:
    """SAM's own bin first on PATH, so the makefiles' ``python3 -m pip`` has a pip, and no telemetry."""
    env = dict(os.environ)
    env["PATH"] = f"{sam.parent}{os.pathsep}{env.get('PATH', '')}"
    env["SAM_CLI_TELEMETRY"] = "0"
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return env


def run(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: int = 900) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{output[-6000:]}"
    return output


def tree_bytes(path: Path) -> int:
    """Unzipped size as Lambda counts it: the bytes of every file."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def distributions(site: Path) -> set[str]:
    """Normalised names of the distributions installed in a pip --target directory."""
    names = set()
    for info in site.glob("*.dist-info"):
        name = info.name.removesuffix(".dist-info").rsplit("-", 1)[0]
        names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names


def normalised(requirement: str) -> str:
    req = Requirement(requirement)
    return f"{re.sub(r'[-_.]+', '-', req.name).lower()}{req.specifier}"


def requirement_lines(path: Path) -> set[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {normalised(line) for line in lines if line}


def functions_of(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


def settings_env_fields() -> dict[str, tuple[type[BaseSettings], str, bool]]:
    """Every environment variable the settings models read → (model, field, required)."""
    fields: dict[str, tuple[type[BaseSettings], str, bool]] = {}
    for model in vars(settings_module).values():
        if not (isinstance(model, type) and issubclass(model, BaseSettings) and model is not BaseSettings):
            continue
        prefix = str(model.model_config.get("env_prefix", ""))
        for field_name, info in model.model_fields.items():
            names = {f"{prefix}{field_name}".upper()}
            if isinstance(info.validation_alias, str):
                names.add(info.validation_alias.upper())
            for env_name in names:
                fields[env_name] = (model, field_name, info.is_required())
    return fields


def is_powertools_variable(name: str) -> bool:
    return name.startswith("POWERTOOLS_")


# --- template: lint, structure -------------------------------------------------------------------------
def test_sam_validate_lint_passes() -> None:
    """Given the template, when SAM validates it with cfn-lint, then it is a valid SAM template."""
    sam = sam_cli()
    output = run(
        [str(sam), "validate", "--lint", "--template-file", "template.yaml", "--region", "us-east-1"],
        env=sam_env(sam),
        timeout=300,
    )
    assert "is a valid SAM Template" in output


def test_queue_visibility_is_six_times_ingest_timeout_for_every_allowed_timeout() -> None:
    """Given every ingest timeout a team may choose, then the queue's visibility timeout is at least six
    times it (the Lambda guidance for SQS sources), so a slow batch is never delivered twice while running."""
    t = load_template()
    timeout_param = t["Parameters"]["IngestTimeoutSeconds"]
    assert t["Resources"]["IngestFunction"]["Properties"]["Timeout"] == {"Ref": "IngestTimeoutSeconds"}
    visibility = t["Resources"]["IngestQueue"]["Properties"]["VisibilityTimeout"]
    assert visibility == {
        "Fn::FindInMap": ["IngestTimeouts", {"Ref": "IngestTimeoutSeconds"}, "QueueVisibility"]
    }
    for allowed in timeout_param["AllowedValues"]:
        seconds = int(allowed)
        assert seconds <= 900
        assert int(t["Mappings"]["IngestTimeouts"][str(allowed)]["QueueVisibility"]) >= 6 * seconds


def test_ingest_reads_the_queue_with_partial_batch_failures_and_bounded_concurrency() -> None:
    t = load_template()
    events = t["Resources"]["IngestFunction"]["Properties"]["Events"]
    (sqs,) = [e["Properties"] for e in events.values() if e["Type"] == "SQS"]
    assert sqs["Queue"] == {"Fn::GetAtt": ["IngestQueue", "Arn"]}
    assert sqs["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert sqs["BatchSize"] == {"Ref": "IngestBatchSize"}
    assert sqs["MaximumBatchingWindowInSeconds"] == {"Ref": "IngestBatchWindowSeconds"}
    assert sqs["ScalingConfig"]["MaximumConcurrency"] == {"Ref": "IngestMaxConcurrency"}
    assert t["Parameters"]["IngestMaxConcurrency"]["MinValue"] >= 2  # SQS's lower bound
    # the batch's documents indexed at once: a stack parameter within the setting's bounds
    env = t["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"]
    assert env["WINNOW_INGEST_BATCH_CONCURRENCY"] == {"Ref": "IngestBatchConcurrency"}
    parameter = t["Parameters"]["IngestBatchConcurrency"]
    bounds = settings_module.IngestSettings.model_fields["batch_concurrency"].metadata
    assert (parameter["MinValue"], parameter["MaxValue"]) == (
        next(m.ge for m in bounds if hasattr(m, "ge")),
        next(m.le for m in bounds if hasattr(m, "le")),
    )
    assert parameter["Default"] == settings_module.IngestSettings().batch_concurrency

    queue = t["Resources"]["IngestQueue"]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["IngestDeadLetterQueue", "Arn"]}
    assert queue["RedrivePolicy"]["maxReceiveCount"] == {"Ref": "IngestMaxReceiveCount"}
    assert t["Parameters"]["IngestMaxReceiveCount"]["Default"] == 5
    assert t["Resources"]["IngestDeadLetterQueue"]["Properties"]["SqsManagedSseEnabled"] is True


def test_bucket_is_private_encrypted_tls_only_and_notifies_the_queue_of_creates_and_deletes() -> None:
    t = load_template()
    bucket = t["Resources"]["DocumentsBucket"]
    props = bucket["Properties"]
    assert set(props["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(props["PublicAccessBlockConfiguration"]) == 4
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    sse_kms, sse_s3 = rule["ServerSideEncryptionByDefault"]["Fn::If"][1:]
    assert sse_kms["SSEAlgorithm"] == "aws:kms"
    assert sse_s3 == {"SSEAlgorithm": "AES256"}
    notifications = props["NotificationConfiguration"]["QueueConfigurations"]
    assert {n["Event"] for n in notifications} == {"s3:ObjectCreated:*", "s3:ObjectRemoved:*"}
    assert all(n["Queue"] == {"Fn::GetAtt": ["IngestQueue", "Arn"]} for n in notifications)

    # The queue policy must exist before S3 accepts the notification configuration, and it names the
    # bucket by the same expression as the bucket itself (no circular dependency, no name drift).
    assert bucket["DependsOn"] == "IngestQueuePolicy"
    statements = t["Resources"]["IngestQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    allow = next(s for s in statements if s["Effect"] == "Allow")
    assert allow["Principal"] == {"Service": "s3.amazonaws.com"}
    assert allow["Action"] == "sqs:SendMessage"
    source_arn = allow["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::Sub"]
    assert source_arn[0] == "arn:${AWS::Partition}:s3:::${Name}"
    assert source_arn[1]["Name"] == props["BucketName"]
    assert allow["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}

    policy = t["Resources"]["DocumentsBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    deny_plain = next(s for s in policy if s.get("Condition", {}).get("Bool"))
    assert deny_plain["Effect"] == "Deny"
    assert deny_plain["Condition"]["Bool"] == {"aws:SecureTransport": "false"}


def test_ledger_table_matches_the_dynamodb_adapter_keys() -> None:
    props = load_template()["Resources"]["LedgerTable"]["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]} == {
        "pk": "S",
        "sk": "S",
    }
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}


SECRET_ARNS = [
    {"Fn::If": ["CreateQdrantSecret", {"Ref": "QdrantApiKeySecret"}, {"Ref": "QdrantApiKeySecretArn"}]},
    {"Fn::If": ["CreateVoyageSecret", {"Ref": "VoyageApiKeySecret"}, {"Ref": "VoyageApiKeySecretArn"}]},
]


def policy_templates(function: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The function's policies as (SAM policy template, arguments); conditional ones unwrapped, inline
    statements (see ``inline_statements``) left out."""
    found = []
    for policy in function["Properties"]["Policies"]:
        if "Fn::If" in policy:
            policy = policy["Fn::If"][1]
            assert policy is not None
        assert isinstance(policy, dict) and len(policy) == 1, f"only SAM policy templates, got {policy}"
        ((name, args),) = policy.items()
        if name == "Statement":
            continue
        found.append((name, dict(args)))
    return found


def inline_statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    """IAM statements written out in the function's policies (no SAM policy template is tight enough)."""
    return [
        statement
        for policy in function["Properties"]["Policies"]
        if isinstance(policy, dict) and "Statement" in policy
        for statement in policy["Statement"]
    ]


def secret_arns(policies: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    return [args["SecretArn"] for name, args in policies if name == "AWSSecretsManagerGetSecretValuePolicy"]


def test_functions_get_least_privilege_policies_on_this_stack_resources_only() -> None:
    """Given the three functions, then each has only SAM policy templates scoped to this stack's bucket,
    table, queue and secrets: ingest reads the bucket and writes the ledger, search only reads the ledger,
    reconcile reads the bucket, writes the ledger (leases) and sends to the ingest queue only."""
    t = load_template()
    fns = functions_of(t)
    assert set(fns) == {"IngestFunction", "SearchFunction", "ReconcileFunction"}
    ingest = policy_templates(fns["IngestFunction"])
    search = policy_templates(fns["SearchFunction"])
    reconcile = policy_templates(fns["ReconcileFunction"])

    bucket_read = ("S3ReadPolicy", {"BucketName": {"Ref": "DocumentsBucket"}})
    ledger_crud = ("DynamoDBCrudPolicy", {"TableName": {"Ref": "LedgerTable"}})
    assert bucket_read in reconcile and ledger_crud in reconcile
    # Ingest gets its exact actions as statements instead (test_ingest_is_granted_exactly_the_calls_it_makes).
    assert bucket_read not in ingest and ledger_crud not in ingest
    # Search reads ledger records and pages through a statement of its own: never Scan (issue 43).
    assert not [name for name, _ in search if name.startswith("DynamoDB")]
    assert (
        "SQSSendMessagePolicy",
        {"QueueName": {"Fn::GetAtt": ["IngestQueue", "QueueName"]}},
    ) in reconcile
    for policies in (ingest, reconcile):
        assert secret_arns(policies) == SECRET_ARNS
    # Search alone may also read the self-hosted re-ranker's key, when one is named (HasRerankerSecret).
    assert secret_arns(search) == [*SECRET_ARNS, {"Ref": "RerankerApiKeySecretArn"}]
    allowed = {
        "S3ReadPolicy",
        "DynamoDBCrudPolicy",
        "DynamoDBReadPolicy",
        "AWSSecretsManagerGetSecretValuePolicy",
        "KMSDecryptPolicy",
    }
    assert {name for name, _ in ingest} <= {"AWSSecretsManagerGetSecretValuePolicy", "KMSDecryptPolicy"}
    assert {name for name, _ in search} == {"AWSSecretsManagerGetSecretValuePolicy"}
    assert {name for name, _ in reconcile} <= allowed | {"SQSSendMessagePolicy"}
    # Ingest's, search's and reconcile's statements are checked below (the conversation store's in
    # tests/integration/test_conversation_stores.py).
    assert {st["Sid"] for st in inline_statements(fns["SearchFunction"])} == {
        *SEARCH_GRANTS,
        "ConversationsAndMemory",
        "ReadLedgerRecords",
    }
    (statement,) = inline_statements(fns["ReconcileFunction"])
    assert statement["Effect"] == "Allow"
    assert statement["Action"] == "lambda:InvokeFunction"


def test_reconcile_may_invoke_itself_and_nothing_else() -> None:
    """Given reconcile's self-invoke statement, when IAM matches it against function ARNs, then the
    function's own ARN (plain or qualified, as ``invoked_function_arn`` may be) is allowed, and no other
    function of this or any stack is, not even one whose name starts with the same prefix."""
    fn = load_template()["Resources"]["ReconcileFunction"]
    name = substitute(fn["Properties"]["FunctionName"])
    (statement,) = inline_statements(fn)
    patterns = [substitute(resource) for resource in statement["Resource"]]

    def allowed(arn: str) -> bool:  # IAM's wildcards: * any run, ? one character
        return any(fnmatch.fnmatchcase(arn, pattern) for pattern in patterns)

    own = f"arn:aws:lambda:eu-central-1:123456789012:function:{name}"
    assert allowed(own)
    assert allowed(f"{own}:7") and allowed(f"{own}:$LATEST")
    for other in (
        f"{own}-copy",
        f"{own}x",
        "arn:aws:lambda:eu-central-1:123456789012:function:winnow-dev-search",
        f"arn:aws:lambda:eu-central-1:123456789012:function:other-{name}",
        f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        f"arn:aws:lambda:eu-central-1:210987654321:function:{name}",
    ):
        assert not allowed(other), other
    assert len(name) <= 64  # Lambda's limit, for a stack name like the samconfig ones


# --- hardening (issue 13, item 20) ---------------------------------------------------------------------
def ingest_statements() -> dict[str, dict[str, Any]]:
    statements = inline_statements(load_template()["Resources"]["IngestFunction"])
    return {statement["Sid"]: statement for statement in statements}


def granted_ingest_actions() -> dict[str, set[str]]:
    """IAM action → the resources (as template expressions) the ingest function's statements grant it on."""
    granted: dict[str, set[str]] = {}
    for statement in ingest_statements().values():
        assert statement["Effect"] == "Allow"
        # only ListBucket is narrowed by a condition (its prefix: test_template_operations.py)
        assert "Condition" not in statement or statement["Action"] == "s3:ListBucket"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            granted.setdefault(action, set()).add(json.dumps(statement["Resource"], sort_keys=True))
    return granted


OBJECTS = json.dumps({"Fn::Sub": "${DocumentsBucket.Arn}/*"}, sort_keys=True)
BUCKET = json.dumps({"Fn::GetAtt": ["DocumentsBucket", "Arn"]}, sort_keys=True)
FIGURES = json.dumps({"Fn::Sub": "${DocumentsBucket.Arn}/_figures/*"}, sort_keys=True)
TABLE = json.dumps({"Fn::GetAtt": ["LedgerTable", "Arn"]}, sort_keys=True)


class AwsCallRecorder:
    """The IAM actions a boto3 client's calls need, from botocore's own events: the operation, its
    parameters (a ``VersionId`` needs ``s3:GetObjectVersion``) and the answer (a 404 to HEAD is what
    ``s3:ListBucket`` buys: without it S3 says 403)."""

    def __init__(self) -> None:
        self.actions: dict[str, set[str]] = {}
        self.active = False  # only the handler's calls count, not the test's own uploads

    @contextmanager
    def recording(self) -> Iterator[None]:
        self.active = True
        try:
            yield
        finally:
            self.active = False

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.endpoint_prefix
        client.meta.events.register("provide-client-params", self._params(service))
        client.meta.events.register("after-call", self._answer(service))

    def _need(self, action: str, resource: str) -> None:
        self.actions.setdefault(action, set()).add(resource)

    def _params(self, service: str) -> Callable[..., None]:
        def record(params: dict[str, Any], model: Any, **_: Any) -> None:
            if not self.active:
                return
            if service == "s3" and model.name in ("PutObject", "DeleteObject"):
                # a document's figure images, under the reserved prefix only
                assert str(params.get("Key", "")).startswith("_figures/"), params.get("Key")
                self._need(f"s3:{model.name}", FIGURES)
            elif service == "s3" and model.name == "ListObjectsV2":
                assert str(params.get("Prefix", "")).startswith("_figures/"), params.get("Prefix")
                self._need("s3:ListBucket", BUCKET)
            elif service == "s3":
                assert model.name in ("HeadObject", "GetObject"), f"ingest called s3 {model.name}"
                self._need("s3:GetObjectVersion" if params.get("VersionId") else "s3:GetObject", OBJECTS)
            else:
                self._need(f"{service}:{model.name}", TABLE)

        return record

    def _answer(self, service: str) -> Callable[..., None]:
        def record(parsed: dict[str, Any], model: Any, **_: Any) -> None:
            status = parsed.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if self.active and service == "s3" and model.name == "HeadObject" and status == 404:
                self._need("s3:ListBucket", BUCKET)

        return record


def test_ingest_is_granted_exactly_the_calls_it_makes(
    tmp_path: Path, s3_bucket: str, ledger_table: str, aws_client: Callable[[str], Any], fake_voyage: Any
) -> None:
    """Given the ingest handler on S3 (versioned) and DynamoDB over moto, when it runs every path (create
    with a sidecar, unchanged re-upload, edit, sidecar change, a corrupt file, deletes), then the IAM
    actions its calls need are exactly the ones its statements grant, on exactly those resources: no
    Scan, Query, PutItem or batch write on the ledger, no listing beyond the 404 of a missing key."""
    from tests.support.figure_docs import CHART, INTRO, SAMPLE_FIGURES, figure_docx
    from tests.support.stack import EmbeddedStack
    from winnow.adapters.ledger_dynamodb import DynamoDbLedger
    from winnow.adapters.objects_s3 import S3ObjectSource

    aws_client("s3").put_bucket_versioning(Bucket=s3_bucket, VersioningConfiguration={"Status": "Enabled"})
    objects, ledger = S3ObjectSource(s3_bucket), DynamoDbLedger(ledger_table)
    recorder = AwsCallRecorder()
    recorder.attach(objects.client)
    recorder.attach(ledger.client)
    stack = EmbeddedStack(tmp_path, fake_voyage, objects=objects, ledger=ledger)
    stack.bucket = s3_bucket
    invoke = stack.invoke_ingest

    def invoke_recorded(event: dict[str, Any]) -> dict[str, Any]:
        with recorder.recording():
            return invoke(event)

    stack.invoke_ingest = invoke_recorded  # type: ignore[method-assign]
    try:
        text = b"# Leave\n\nEvery employee receives twenty-eight days of paid holiday per year.\n"
        sidecar = b'{"metadataAttributes": {"department": "people"}}'
        stack.put_object("acme/leave.md.metadata.json", sidecar)
        assert stack.upload("acme/leave.md", text, {"year": "2025"})["status"] == "indexed"
        assert stack.upload("acme/leave.md", text, {"year": "2025"})["status"] == "unchanged"
        assert stack.upload("acme/leave.md", text + b"\nAnd five more.\n")["status"] == "indexed"
        assert stack.upload("acme/other.md", text)["status"] == "indexed"  # no sidecar: a HEAD 404
        # figures are stored, pruned when the document is replaced, and removed with it
        assert (
            stack.upload("acme/report.docx", figure_docx(SAMPLE_FIGURES, intro=INTRO))["status"] == "indexed"
        )
        assert stack.upload("acme/report.docx", figure_docx([CHART], intro=INTRO))["status"] == "indexed"
        assert stack.remove("acme/report.docx")["status"] == "deleted"
        assert stack.upload("acme/broken.pdf", b"%PDF-1.7 not really")["status"] == "failed"
        # a sidecar whose document has no record: the lease item it leaves is deleted on release
        assert stack.upload("acme/none.md.metadata.json", sidecar)["status"] == "skipped"
        assert stack.remove("acme/leave.md.metadata.json")["status"] in ("deleted", "skipped")
        assert stack.remove("acme/leave.md")["status"] == "deleted"
    finally:
        stack.close()

    needed = recorder.actions
    assert {"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "dynamodb:GetItem"} <= set(needed)
    # OCR's one call (textract:DetectDocumentText) is made only for scans; tests/integration/test_ocr.py
    # drives it through the real adapter against the loopback fake Textract.
    granted = {a: r for a, r in granted_ingest_actions().items() if not a.startswith("textract:")}
    assert needed == granted


def test_ingest_statements_name_only_this_stacks_bucket_objects_and_ledger_table() -> None:
    """Given the ingest function's statements, then each names one resource of this stack, with no
    wildcard action and no SAM template that grants more (S3ReadPolicy lists and reads lifecycle rules,
    DynamoDBCrudPolicy scans, queries and batch-writes)."""
    statements = ingest_statements()
    assert set(statements) == {
        "ReadDocuments",
        "MissingKeysAnswer404",
        "LedgerRecordsAndLeases",
        "ReadScannedPages",
        "StoreFigureImages",
    }
    for statement in statements.values():
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert not [a for a in actions if "*" in a]
    assert granted_ingest_actions() == {
        "s3:GetObject": {OBJECTS},
        "s3:GetObjectVersion": {OBJECTS},
        "s3:ListBucket": {BUCKET},
        "s3:PutObject": {FIGURES},
        "s3:DeleteObject": {FIGURES},
        "dynamodb:GetItem": {TABLE},
        "dynamodb:UpdateItem": {TABLE},
        "dynamodb:DeleteItem": {TABLE},
        # DetectDocumentText has no resource-level permissions: "*" is the only resource it accepts.
        "textract:DetectDocumentText": {json.dumps("*")},
    }


def test_every_queue_refuses_requests_without_tls() -> None:
    """Given every SQS queue of the stack (the ingest queue, its dead-letter queue, reconcile's failure
    queue), then a queue policy denies any request made without TLS, and the queue is encrypted."""
    t = load_template()
    queues = {name for name, r in t["Resources"].items() if r["Type"] == "AWS::SQS::Queue"}
    assert {"IngestQueue", "IngestDeadLetterQueue", "ReconcileFailureQueue"} <= queues
    denied: set[str] = set()
    for resource in t["Resources"].values():
        if resource["Type"] != "AWS::SQS::QueuePolicy":
            continue
        props = resource["Properties"]
        ((queue,),) = [[q["Ref"] for q in props["Queues"]]]
        for statement in props["PolicyDocument"]["Statement"]:
            if (
                statement["Effect"] == "Deny"
                and statement["Principal"] == "*"
                and statement["Action"] == "sqs:*"
                and statement["Resource"] == {"Fn::GetAtt": [queue, "Arn"]}
                and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            ):
                denied.add(queue)
    assert denied == queues
    for queue in queues:
        assert t["Resources"][queue]["Properties"]["SqsManagedSseEnabled"] is True, queue


def test_a_reconcile_invocation_that_fails_every_retry_lands_in_a_watched_queue() -> None:
    """Given reconcile's async invocations (the schedule, its own continuations), when one fails every
    retry, then Lambda sends the request and the error to a queue kept 14 days, an alarm watches that
    queue, and an output names it; nothing of a run is silently dropped."""
    t = load_template()
    config = t["Resources"]["ReconcileFunction"]["Properties"]["EventInvokeConfig"]
    on_failure = config["DestinationConfig"]["OnFailure"]
    assert on_failure == {"Type": "SQS", "Destination": {"Fn::GetAtt": ["ReconcileFailureQueue", "Arn"]}}
    assert t["Resources"]["ReconcileFailureQueue"]["Properties"]["MessageRetentionPeriod"] == 1209600
    watched = [
        r["Properties"]
        for r in t["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and r["Properties"]["Dimensions"]
        == [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["ReconcileFailureQueue", "QueueName"]}}]
    ]
    assert [a["MetricName"] for a in watched] == ["ApproximateNumberOfMessagesVisible"]
    assert t["Outputs"]["ReconcileFailureQueueUrl"]["Value"] == {"Ref": "ReconcileFailureQueue"}


def test_cors_allows_no_browser_origin_by_default_and_never_a_wildcard() -> None:
    """Given the stack's defaults, then the API names no allowed origin (browsers are refused); given a
    list of origins, then exactly those are allowed; a wildcard, a path or a space is refused at deploy
    time by the parameter's pattern, and neither samconfig environment uses one."""
    t = load_template()
    param = t["Parameters"]["CorsAllowedOrigins"]
    origins = t["Resources"]["SearchApi"]["Properties"]["CorsConfiguration"]["AllowOrigins"]
    assert param["Default"] == ""
    assert evaluate(t, origins) is NO_VALUE
    two = "https://app.example.com,http://localhost:3000"
    assert evaluate(t, origins, {"CorsAllowedOrigins": two}) == [
        "https://app.example.com",
        "http://localhost:3000",
    ]

    pattern = re.compile(param["AllowedPattern"])
    accepted = ["", "https://app.example.com", two, "http://127.0.0.1:5173"]
    refused = [
        "*",
        "https://*.example.com",
        "https://app.example.com,*",
        "https://app.example.com, http://localhost:3000",
        "https://app.example.com/path",
        "app.example.com",
        "null",
    ]
    assert all(pattern.fullmatch(value) for value in accepted)  # CloudFormation matches the whole value
    assert not [value for value in refused if pattern.fullmatch(value)]

    samconfig = tomllib.loads((ROOT / "samconfig.toml").read_text())
    for environment in ("default", "prod"):
        overrides = dict(
            item.split("=", 1)
            for item in samconfig[environment]["deploy"]["parameters"]["parameter_overrides"]
        )
        assert pattern.fullmatch(overrides["CorsAllowedOrigins"]), environment


def test_search_api_uses_a_jwt_authorizer_cors_and_routes_the_app_serves() -> None:
    """Given the HTTP API, then every route but the public ones needs a JWT, CORS comes from a parameter,
    and the routes are exactly those the search app's resolver serves."""
    from functions.search.app import app

    t = load_template()
    api = t["Resources"]["SearchApi"]["Properties"]
    assert api["Auth"]["DefaultAuthorizer"] == "WinnowJwt"
    jwt = api["Auth"]["Authorizers"]["WinnowJwt"]["JwtConfiguration"]
    assert jwt == {"issuer": {"Ref": "JwtIssuer"}, "audience": {"Ref": "JwtAudience"}}
    assert api["CorsConfiguration"]["AllowOrigins"] == {
        "Fn::If": [
            "HasCorsOrigins",
            {"Fn::Split": [",", {"Ref": "CorsAllowedOrigins"}]},
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert "authorization" in api["CorsConfiguration"]["AllowHeaders"]

    search = t["Resources"]["SearchFunction"]["Properties"]
    routes: dict[tuple[str, str], bool] = {}
    for event in search["Events"].values():
        assert event["Type"] == "HttpApi"
        props = event["Properties"]
        assert props["ApiId"] == {"Ref": "SearchApi"}
        public = props.get("Auth", {}).get("Authorizer") == "NONE"
        routes[(props["Method"].upper(), props["Path"].replace("+}", "}"))] = public

    schema = app.get_openapi_schema()
    served = {
        (method.upper(), path)
        for path, item in (schema.paths or {}).items()
        for method in ("get", "post", "put", "delete", "patch")
        if getattr(item, method, None) is not None
    }
    served.add(("GET", "/openapi.json"))  # served, but left out of its own schema
    assert set(routes) == served
    assert {route for route, public in routes.items() if public} == {
        ("GET", "/health"),
        ("GET", "/openapi.json"),
    }
    assert search["Environment"]["Variables"]["WINNOW_SEARCH_TENANT_CLAIM"] == {"Ref": "TenantClaim"}


def test_the_stack_leaves_the_relevance_threshold_to_the_model_unless_a_deployment_sets_one() -> None:
    # Given the template's RelevanceThreshold parameter and the search function's environment
    t = load_template()
    parameter = t["Parameters"]["RelevanceThreshold"]
    variables = t["Resources"]["SearchFunction"]["Properties"]["Environment"]["Variables"]
    # Then by default it is empty, and the variable is only set when a deployment fills it in: the
    # default threshold is the relevance model's own (its artifact), stated nowhere else
    assert parameter["Default"] == ""
    assert re.fullmatch(parameter["AllowedPattern"], "") and re.fullmatch(parameter["AllowedPattern"], "0.4")
    assert not re.fullmatch(parameter["AllowedPattern"], "1.5")
    assert t["Conditions"]["HasRelevanceThreshold"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "RelevanceThreshold"}, ""]}]
    }
    assert variables["WINNOW_SEARCH_RELEVANCE_THRESHOLD"] == {
        "Fn::If": ["HasRelevanceThreshold", {"Ref": "RelevanceThreshold"}, {"Ref": "AWS::NoValue"}]
    }
    assert settings_module.SearchSettings.model_fields["relevance_threshold"].default is None


def test_snapstart_and_provisioned_concurrency_are_optional_and_exclusive() -> None:
    t = load_template()
    search = t["Resources"]["SearchFunction"]["Properties"]
    assert t["Parameters"]["SearchColdStartMode"]["AllowedValues"] == ["none", "snapstart", "provisioned"]
    assert t["Parameters"]["SearchColdStartMode"]["Default"] == "none"
    assert search["AutoPublishAlias"]
    assert search["SnapStart"]["ApplyOn"] == {"Fn::If": ["UseSnapStart", "PublishedVersions", "None"]}
    assert search["ProvisionedConcurrencyConfig"]["Fn::If"][0] == "UseProvisionedConcurrency"
    assert search["ProvisionedConcurrencyConfig"]["Fn::If"][2] == {"Ref": "AWS::NoValue"}
    # SnapStart for Python needs 3.12 or later.
    assert t["Globals"]["Function"]["Runtime"] == "python3.13"


def test_reconcile_schedule_is_disabled_by_default_and_runs_the_whole_bucket_when_set() -> None:
    """Given the ReconcileSchedule parameter left empty, then the EventBridge rule exists but is disabled
    (reconcile runs on demand only); given a schedule, then the rule is enabled with that expression, and
    its input is one the handler accepts as a real (not dry) run of the whole bucket."""
    from functions.reconcile.app import parse_request

    t = load_template()
    assert t["Parameters"]["ReconcileSchedule"]["Default"] == ""
    events = t["Resources"]["ReconcileFunction"]["Properties"]["Events"]
    (schedule,) = [e["Properties"] for e in events.values() if e["Type"] == "Schedule"]

    assert evaluate(t, schedule["State"]) == "DISABLED"
    assert evaluate(t, schedule["Schedule"]).startswith(("rate(", "cron("))  # valid even when unused
    nightly = {"ReconcileSchedule": "cron(0 3 * * ? *)"}
    assert evaluate(t, schedule["State"], nightly) == "ENABLED"
    assert evaluate(t, schedule["Schedule"], nightly) == "cron(0 3 * * ? *)"

    tenant, dry_run, continuation, chain, reread = parse_request(json.loads(schedule["Input"]))
    assert (tenant, dry_run, continuation, chain, reread) == (None, False, None, True, False)


def test_reconcile_pages_inside_its_timeout_and_runs_one_chain_at_a_time() -> None:
    """Given every timeout the parameter allows, then the paging margin leaves at least a minute of work
    per invocation; by default a reserved concurrency of 1 keeps two chains from overlapping (with an
    opt-out for accounts whose quota forbids any reservation), and failed async invocations are retried."""
    from winnow.settings import ReconcileSettings

    t = load_template()
    props = t["Resources"]["ReconcileFunction"]["Properties"]
    timeout = t["Parameters"]["ReconcileTimeoutSeconds"]
    assert props["Timeout"] == {"Ref": "ReconcileTimeoutSeconds"}
    margin_ms = ReconcileSettings().margin_ms
    env = function_env(t, "ReconcileFunction")
    assert "WINNOW_RECONCILE_MARGIN_MS" not in env  # the settings' default is the margin in force
    assert timeout["MinValue"] * 1000 - margin_ms >= 60_000
    assert timeout["MaxValue"] <= 900  # Lambda's maximum

    assert evaluate(t, props["ReservedConcurrentExecutions"]) == 1
    assert evaluate(t, props["ReservedConcurrentExecutions"], {"ReconcileExclusive": "false"}) is NO_VALUE
    assert props["EventInvokeConfig"]["MaximumRetryAttempts"] >= 1


def test_one_makefile_builds_every_bundle() -> None:
    """``bundles/Makefile`` has a target per built resource, and no second makefile sits beside the code
    (SAM runs the ContextPath's makefile in a scratch copy of each resource's folder)."""
    t = load_template()
    built = [
        name for name, r in t["Resources"].items() if r.get("Metadata", {}).get("BuildMethod") == "makefile"
    ]
    targets = set(re.findall(r"^(build-[A-Za-z]+(?: build-[A-Za-z]+)*):", BUNDLES_MAKEFILE.read_text(), re.M))
    declared = {target for line in targets for target in line.split()}
    assert {f"build-{name}" for name in built} == declared
    assert sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "functions").rglob("Makefile")) == []
    assert sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "layers").rglob("Makefile")) == []


def test_runtime_layer_logs_and_alarms() -> None:
    """Python 3.13 on arm64 with X-Ray, a makefile-built layer, a log group with retention per function,
    and alarms for the DLQ and every function's errors and throttles, sent to the SNS topic parameter."""
    t = load_template()
    glob = t["Globals"]["Function"]
    assert glob["Architectures"] == ["arm64"]
    assert glob["Tracing"] == "Active"
    assert glob["Layers"] == [{"Ref": "SharedLayer"}]
    layer = t["Resources"]["SharedLayer"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    assert layer["Metadata"]["ContextPath"] == "bundles"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]

    resources = t["Resources"]
    for name, fn in functions_of(t).items():
        assert fn["Metadata"]["BuildMethod"] == "makefile", name
        assert fn["Metadata"]["ContextPath"] == "bundles", name
        group = fn["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        assert resources[group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}

    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    watched = set()
    for alarm in alarms:
        assert alarm["AlarmActions"] == {
            "Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]
        }
        dims = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
        target = dims.get("FunctionName", dims.get("QueueName"))
        watched.add((alarm["MetricName"], json.dumps(target, sort_keys=True)))
    for function_name in functions_of(t):
        assert ("Errors", json.dumps({"Ref": function_name})) in watched, function_name
    # Reconcile's continuations are throttled by design (reserved concurrency 1), so no throttles alarm.
    for function_name in ("IngestFunction", "SearchFunction"):
        assert ("Throttles", json.dumps({"Ref": function_name})) in watched
    assert ("Throttles", json.dumps({"Ref": "ReconcileFunction"})) not in watched
    reconcile_failed = next(a for a in alarms if a["MetricName"] == "ReconcileFailed")
    assert (
        reconcile_failed["Namespace"]
        == t["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    )
    reconcile_service = function_env(t, "ReconcileFunction")["POWERTOOLS_SERVICE_NAME"]
    assert reconcile_failed["Dimensions"] == [{"Name": "service", "Value": reconcile_service}]
    for queue in ("IngestDeadLetterQueue", "ReconcileFailureQueue"):
        dlq = json.dumps({"Fn::GetAtt": [queue, "QueueName"]}, sort_keys=True)
        assert ("ApproximateNumberOfMessagesVisible", dlq) in watched, queue


def test_outputs_name_everything_a_team_needs_after_deploy() -> None:
    outputs = load_template()["Outputs"]
    for name in (
        "ApiUrl",
        "BucketName",
        "QueueUrl",
        "DlqUrl",
        "ReconcileFailureQueueUrl",
        "LedgerTableName",
        "SharedLayerArn",
        "IngestFunctionName",
        "SearchFunctionName",
        "ReconcileFunctionName",
        "QdrantSecretArn",
        "VoyageSecretArn",
    ):
        assert name in outputs


# --- template environment ↔ settings models ----------------------------------------------------------
SAMPLE_VALUES = {  # parameters without a default, as a team would answer `sam deploy --guided`
    "QdrantUrl": "https://xyz-example.eu-central-1-0.aws.cloud.qdrant.io",
    "JwtIssuer": "https://cognito-idp.eu-central-1.amazonaws.com/eu-central-1_EXAMPLE",
    "RelevanceThreshold": "0.4",  # empty by default, and then unset (an !If on AWS::NoValue)
}
DEPLOY_TIME = "arn:aws:resolved-at-deploy-time"


def env_candidates(template: dict[str, Any], value: Any) -> list[str | None]:
    """The values an environment variable can take: literals as they are, parameters over their allowed
    values (or default), ``!If`` over both branches (None: ``AWS::NoValue``, the variable unset),
    anything resolved at deploy time as a placeholder."""
    if isinstance(value, str | int | float | bool):
        return [str(value)]
    no_value = {"Ref": "AWS::NoValue"}
    if isinstance(value, dict) and set(value) == {"Fn::If"} and no_value in value["Fn::If"]:
        _, *branches = value["Fn::If"]
        return [
            candidate
            for branch in branches
            for candidate in ([None] if branch == no_value else _filled(template, branch))
        ]
    params = template["Parameters"]
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in params:
        param = params[value["Ref"]]
        if "AllowedValues" in param:
            return [str(v) for v in param["AllowedValues"]]
        if "Default" in param:
            return [str(param["Default"])]
        assert value["Ref"] in SAMPLE_VALUES, f"parameter {value['Ref']} has no default: add a sample value"
        return [SAMPLE_VALUES[value["Ref"]]]
    return [DEPLOY_TIME]


def _filled(template: dict[str, Any], value: Any) -> list[str | None]:
    """The branch of an ``!If`` that sets a variable: a parameter empty by default is set to its sample
    (the condition beside ``AWS::NoValue`` is that it is not empty)."""
    candidates: list[str | None] = [c for c in env_candidates(template, value) if c]
    return candidates or [SAMPLE_VALUES[value["Ref"]]]


def environments(template: dict[str, Any], name: str) -> Iterator[dict[str, str]]:
    """The function's environment with every parameter at its default, then each one varied alone."""
    params = template["Parameters"]
    env = function_env(template, name)
    options = {var: env_candidates(template, value) for var, value in env.items()}
    base = {var: values[0] for var, values in options.items()}
    for var, value in env.items():
        param = params.get(value.get("Ref", "")) if isinstance(value, dict) else None
        if param is not None and "Default" in param:
            base[var] = str(param["Default"])
    yield _set(base)
    for var, values in options.items():
        for value in values:
            yield _set({**base, var: value})


def _set(env: dict[str, str | None]) -> dict[str, str]:
    return {var: value for var, value in env.items() if value is not None}


def test_every_template_environment_variable_is_a_settings_field() -> None:
    """Given the variables the template sets (Globals and each function), then each one is read by a
    settings model (or by Powertools): a typo or a renamed field cannot slip into a deploy unnoticed."""
    t = load_template()
    fields = settings_env_fields()
    assert fields, "no settings models found"
    for name in functions_of(t):
        unknown = [
            var
            for var in function_env(t, name)
            if var.upper() not in fields and not is_powertools_variable(var)
        ]
        assert not unknown, f"{name} sets variables no settings model reads: {unknown}"


def test_every_required_setting_and_every_aws_essential_is_set_by_the_template() -> None:
    """Given the settings models, then every field without a default is set for every function, and so is
    everything that keeps a function off the embedded default (local Qdrant, SQLite, local model)."""
    t = load_template()
    required = {env for env, (_, _, is_required) in settings_env_fields().items() if is_required}
    essentials = {
        "IngestFunction": {
            "WINNOW_BUCKET",
            "WINNOW_LEDGER_TABLE",
            "QDRANT_URL",
            "QDRANT_API_KEY_SECRET_ARN",
            "VOYAGE_API_KEY_SECRET_ARN",
            "WINNOW_EMBEDDER",
            "WINNOW_HOME",
        },
        "SearchFunction": {
            "WINNOW_LEDGER_TABLE",
            "QDRANT_URL",
            "QDRANT_API_KEY_SECRET_ARN",
            "VOYAGE_API_KEY_SECRET_ARN",
            "WINNOW_EMBEDDER",
            "WINNOW_RERANKER",
            "WINNOW_SEARCH_TENANT_CLAIM",
            "WINNOW_HOME",
        },
        "ReconcileFunction": {
            "WINNOW_BUCKET",
            "WINNOW_QUEUE_URL",
            "WINNOW_LEDGER_TABLE",
            "QDRANT_URL",
            "QDRANT_API_KEY_SECRET_ARN",
            "VOYAGE_API_KEY_SECRET_ARN",
            "WINNOW_EMBEDDER",
            "WINNOW_HOME",
        },
    }
    for name in functions_of(t):
        env = set(function_env(t, name))
        assert required <= env, f"{name} misses required settings {required - env}"
        assert essentials[name] <= env, f"{name} misses {essentials[name] - env}"


@pytest.mark.usefixtures("clean_settings_env")
def test_template_environment_validates_against_the_settings_models_for_every_allowed_parameter() -> None:
    """Given each function's environment with every parameter's default and each allowed value, when the
    settings models read it, then it validates and lands where AWS needs it (Voyage, /tmp, no header
    tenant)."""
    from winnow.factory import Settings

    t = load_template()
    checked = 0
    for name in functions_of(t):
        for env in environments(t, name):
            with mock.patch.dict(os.environ, env):
                s = Settings()
            checked += 1
            assert s.providers.embedder == "voyage"
            assert str(s.storage.home).startswith("/tmp/")
            assert s.qdrant.url and s.qdrant.url.startswith("https://")
            assert s.voyage.configured
            assert s.qdrant.api_key_secret_arn and s.voyage.api_key_secret_arn
            assert s.storage.ledger_table
            if name in ("IngestFunction", "ReconcileFunction"):
                assert s.storage.bucket
            if name == "ReconcileFunction":
                assert s.storage.queue_url  # else reconcile would ingest in-process, inside its own timeout
            if name == "SearchFunction":
                assert s.search.allow_tenant_header is False
    assert checked > 10


SHARED_BY_EVERY_FUNCTION = (
    "WINNOW_EMBEDDER",
    "VOYAGE_EMBED_MODEL",
    "VOYAGE_OUTPUT_DIMENSION",
    "QDRANT_URL",
    "QDRANT_COLLECTION_PREFIX",
    "QDRANT_API_KEY_SECRET_ARN",
    "VOYAGE_API_KEY_SECRET_ARN",
    "WINNOW_LEDGER_TABLE",
)


def test_every_function_sees_the_same_embedding_profile_collections_and_ledger() -> None:
    """Given the three functions, then they agree on the embedding profile, the Qdrant collections and the
    ledger (a reconcile that saw another model would re-queue every document), reconcile lists the bucket
    ingest reads, and it queues onto the very queue ingest consumes."""
    t = load_template()
    envs = {name: function_env(t, name) for name in functions_of(t)}
    for var in SHARED_BY_EVERY_FUNCTION:
        values = {json.dumps(env.get(var), sort_keys=True) for env in envs.values()}
        assert len(values) == 1 and envs["IngestFunction"].get(var) is not None, (var, values)
    assert envs["ReconcileFunction"]["WINNOW_BUCKET"] == envs["IngestFunction"]["WINNOW_BUCKET"]
    assert envs["ReconcileFunction"]["WINNOW_QUEUE_URL"] == {"Ref": "IngestQueue"}
    ingest_events = t["Resources"]["IngestFunction"]["Properties"]["Events"].values()
    (queue,) = [e["Properties"]["Queue"] for e in ingest_events if e["Type"] == "SQS"]
    assert queue == {"Fn::GetAtt": ["IngestQueue", "Arn"]}


# --- search: bounded provider retries ------------------------------------------------------------------
SEARCH_RETRY_BOUNDS = (
    "VOYAGE_MAX_ATTEMPTS",
    "VOYAGE_TIMEOUT_SECONDS",
    "VOYAGE_BACKOFF_MAX_SECONDS",
    "VOYAGE_RATE_LIMIT_WINDOW_SECONDS",
    "QDRANT_MAX_ATTEMPTS",
    "QDRANT_TIMEOUT_SECONDS",
)
API_GATEWAY_LIMIT_SECONDS = 29  # HTTP API integrations time out at 30 s; keep a second for API Gateway
HANDLER_MARGIN_SECONDS = 1.0  # validation, BM25, threshold and JSON around the provider calls


def literal_env(template: dict[str, Any], name: str, prefixes: tuple[str, ...]) -> dict[str, str]:
    """The function's literal variables with these prefixes (references resolve only at deploy time)."""
    return {
        var: str(value)
        for var, value in function_env(template, name).items()
        if var.startswith(prefixes) and isinstance(value, str | int | float)
    }


class QdrantOutage:
    """A loopback HTTP server that answers every request 503, counting them: Qdrant down."""

    def __init__(self) -> None:
        outage = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _unavailable(self) -> None:
                outage.requests += 1
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                body = b'{"status": {"error": "service unavailable"}}'
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _unavailable

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> QdrantOutage:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_search_bounds_are_set_on_the_search_function_only() -> None:
    """Given the retry bounds, then they are the search function's own variables: ingest and reconcile,
    which run for minutes, keep the settings' patient defaults."""
    t = load_template()
    assert not set(SEARCH_RETRY_BOUNDS) & set(t["Globals"]["Function"]["Environment"]["Variables"])
    assert set(SEARCH_RETRY_BOUNDS) <= set(function_env(t, "SearchFunction"))
    for name in ("IngestFunction", "ReconcileFunction"):
        assert not set(SEARCH_RETRY_BOUNDS) & set(function_env(t, name)), name


@pytest.mark.usefixtures("clean_settings_env")
def test_search_worst_case_provider_time_fits_its_timeout_and_api_gateway(
    fake_voyage: FakeVoyageServer, tmp_path: Path
) -> None:
    """Given the search function's environment from the template and providers that are down (Voyage
    answers 503 with ``Retry-After: 3600``, Qdrant answers 503), when the real adapters make a request's
    calls one after another (embed the query, hybrid search, re-rank), then each gives up after the
    template's attempts, sleeping no longer than its cap; the worst case (attempts x timeout + the sleeps)
    of the three calls fits inside every timeout the function may have, so an outage is the function's own
    503, and that timeout is inside API Gateway's."""
    from winnow.access import ReadScope
    from winnow.adapters import qdrant_errors
    from winnow.adapters.qdrant_store import QdrantVectorStore, make_qdrant_client
    from winnow.adapters.voyage import VoyageEmbedder, VoyageReranker
    from winnow.errors import TransientError
    from winnow.models import EmbeddingProfile
    from winnow.ports import SearchQuery
    from winnow.settings import QdrantSettings, VoyageSettings
    from winnow_fakes.fake_voyage import Fault

    t = load_template()
    env = literal_env(t, "SearchFunction", ("VOYAGE_", "QDRANT_"))
    assert set(SEARCH_RETRY_BOUNDS) <= set(env)
    with mock.patch.dict(os.environ, env):
        voyage = VoyageSettings(api_key=SecretStr(fake_voyage.api_key), base_url=fake_voyage.base_url)
        qdrant = QdrantSettings()

    # Voyage: the query embedding, then the re-ranking, each against a provider that is down.
    fake_voyage.set_outage(Fault.unavailable(retry_after=3600))

    def embed(sleep: Callable[[float], None]) -> object:
        return VoyageEmbedder(voyage, fake_voyage.api_key, sleep=sleep).embed(["q"], "query")

    def rerank(sleep: Callable[[float], None]) -> object:
        return VoyageReranker(voyage, fake_voyage.api_key, sleep=sleep).rerank("q", ["a", "b"])

    voyage_calls = []
    endpoints: tuple[Endpoint, Endpoint] = ("embeddings", "rerank")
    for endpoint, call in zip(endpoints, (embed, rerank), strict=True):
        slept: list[float] = []
        with pytest.raises(TransientError):
            call(slept.append)
        assert len(fake_voyage.requests_to(endpoint)) == voyage.max_attempts
        assert len(slept) == voyage.max_attempts - 1
        assert all(s <= voyage.backoff_max_seconds for s in slept)  # Retry-After is capped
        voyage_calls.append(voyage.max_attempts * voyage.timeout_seconds + sum(slept))

    # Qdrant: the hybrid search, with the adapter's jitter at its ceiling.
    with QdrantOutage() as outage, mock.patch.object(qdrant_errors.random, "random", return_value=1.0):
        settings = qdrant.model_copy(update={"url": outage.url})
        client = make_qdrant_client(settings, None, tmp_path)
        profile = EmbeddingProfile("voyage", voyage.embed_model, voyage.output_dimension or 1024)
        slept = []
        store = QdrantVectorStore(client, profile, settings, sleep=slept.append)
        query = SearchQuery(
            "acme", [0.1] * profile.dimension, None, "dense", 15, {}, ReadScope(everything=True)
        )
        with pytest.raises(TransientError):
            store.search(query)
        client.close()
    assert outage.requests == qdrant.max_attempts
    assert len(slept) == qdrant.max_attempts - 1
    qdrant_call = qdrant.max_attempts * qdrant.timeout_seconds + sum(slept)

    worst = sum(voyage_calls) + qdrant_call
    timeout = t["Parameters"]["SearchTimeoutSeconds"]
    print(
        f"\nsearch worst case: embed {voyage_calls[0]:.1f} s + search {qdrant_call:.1f} s + "
        f"rerank {voyage_calls[1]:.1f} s = {worst:.1f} s; "
        f"timeout {timeout['MinValue']}-{timeout['MaxValue']} s (default {timeout['Default']})"
    )
    assert t["Resources"]["SearchFunction"]["Properties"]["Timeout"] == {"Ref": "SearchTimeoutSeconds"}
    assert worst + HANDLER_MARGIN_SECONDS <= timeout["MinValue"] <= timeout["Default"]
    assert timeout["Default"] <= timeout["MaxValue"] <= API_GATEWAY_LIMIT_SECONDS


# --- samconfig and requirements -----------------------------------------------------------------------
def test_samconfig_has_default_and_prod_with_overrides_the_template_accepts() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    params = load_template()["Parameters"]
    for env_name in ("default", "prod"):
        env = config[env_name]
        assert env["global"]["parameters"]["stack_name"]
        assert env["global"]["parameters"]["region"]
        assert env["build"]["parameters"]["cached"] is True
        assert env["build"]["parameters"]["parallel"] is True
        deploy = env["deploy"]["parameters"]
        assert "CAPABILITY_IAM" in deploy["capabilities"]
        for override in deploy["parameter_overrides"]:
            key, value = override.split("=", 1)
            assert key in params, f"{env_name}: unknown parameter {key}"
            if "AllowedValues" in params[key]:
                assert value in [str(v) for v in params[key]["AllowedValues"]], override
            if "AllowedPattern" in params[key]:
                assert re.fullmatch(params[key]["AllowedPattern"], value), override
    assert config["prod"]["deploy"]["parameters"]["confirm_changeset"] is True
    assert (
        config["default"]["global"]["parameters"]["stack_name"]
        != config["prod"]["global"]["parameters"]["stack_name"]
    )


def test_bundle_requirements_mirror_pyproject() -> None:
    """The layer installs exactly the runtime dependencies, the ingest function exactly the parsers."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert requirement_lines(ROOT / "layers/shared/requirements.txt") == {
        normalised(r) for r in project["dependencies"]
    }
    ingest = {normalised(r) for r in project["optional-dependencies"]["ingest"]}
    assert requirement_lines(ROOT / "functions/ingest/requirements.txt") == ingest
    assert not any(
        name in r
        for r in requirement_lines(ROOT / "layers/shared/requirements.txt")
        for name in RUNTIME_PROVIDED
    )


# --- events -------------------------------------------------------------------------------------------
def test_every_event_file_is_json_and_covered_here() -> None:
    names = {p.name for p in EVENTS.glob("*.json")}
    assert names >= {
        "s3-put.json",
        "s3-delete.json",
        "sqs-s3-batch.json",
        "api-search.json",
        "api-documents-list.json",
        "api-document-status.json",
        "api-health.json",
    }
    for name in names:
        load_event(name)


def test_s3_events_parse_with_powertools() -> None:
    from aws_lambda_powertools.utilities.data_classes import S3Event

    put = S3Event(load_event("s3-put.json"))
    (record,) = list(put.records)
    assert record.event_name.startswith("ObjectCreated:")
    assert record.s3.get_object.key.split("/", 1)[0] == "acme"
    assert record.s3.get_object.size > 0
    assert record.s3.get_object.sequencer

    delete = S3Event(load_event("s3-delete.json"))
    (record,) = list(delete.records)
    assert record.event_name.startswith("ObjectRemoved:")
    assert "size" not in record.s3.get_object.raw_event  # S3 sends none for deletes
    assert "eTag" not in record.s3.get_object.raw_event
    assert record.s3.get_object.sequencer


def test_sqs_batch_holds_s3_notifications_with_an_encoded_key_and_a_test_event() -> None:
    from aws_lambda_powertools.utilities.data_classes import S3Event, SQSEvent

    batch = SQSEvent(load_event("sqs-s3-batch.json"))
    records = list(batch.records)
    assert len(records) == 3
    assert len({r.message_id for r in records}) == 3
    bodies = [r.json_body for r in records]
    keys, test_events = [], []
    for body in bodies:
        if body.get("Event") == "s3:TestEvent":
            test_events.append(body)
            continue
        for s3_record in S3Event(body).records:
            keys.append((s3_record.event_name, unquote_plus(s3_record.s3.get_object.key)))
    assert len(test_events) == 1
    assert ("ObjectCreated:Put", "acme/reports/Q1 report+2024.pdf") in keys
    assert any(name.startswith("ObjectRemoved:") for name, _ in keys)


@pytest.mark.parametrize(
    ("name", "route_key"),
    [
        ("api-search.json", "POST /search"),
        ("api-answer-follow-up.json", "POST /answer"),
        ("api-memory-list.json", "GET /memory"),
        ("api-documents-list.json", "GET /documents"),
        ("api-document-status.json", "GET /documents/{key+}"),
        ("api-document-delete.json", "DELETE /documents/{key+}"),
        ("api-uploads.json", "POST /uploads"),
        ("api-health.json", "GET /health"),
        ("api-openapi.json", "GET /openapi.json"),
    ],
)
def test_api_events_parse_and_match_a_template_route(name: str, route_key: str) -> None:
    from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

    event = APIGatewayProxyEventV2(load_event(name))
    assert event.version == "2.0"
    assert event.route_key == route_key
    method = route_key.split(" ", 1)[0]
    assert event.request_context.http.method == method
    template_routes = {
        f"{e['Properties']['Method'].upper()} {e['Properties']['Path']}"
        for e in load_template()["Resources"]["SearchFunction"]["Properties"]["Events"].values()
    }
    assert route_key in template_routes
    if name in ("api-health.json", "api-openapi.json"):
        assert "authorizer" not in event.raw_event["requestContext"]  # a public route
    else:
        claim = load_template()["Parameters"]["TenantClaim"]["Default"]
        assert event.request_context.authorizer.jwt_claim[claim] == "acme"


@pytest.mark.usefixtures("clean_settings_env")
def test_search_event_body_is_a_valid_search_request_and_health_event_answers() -> None:
    """The sample search body follows the API contract, and the public health event gets a 200 through the
    real handler (no provider involved)."""
    from functions.search import app as search_app
    from winnow.api.schemas.search import SearchRequest

    request = SearchRequest.model_validate_json(load_event("api-search.json")["body"])
    assert request.query
    follow_up = SearchRequest.model_validate_json(load_event("api-answer-follow-up.json")["body"])
    assert follow_up.conversation_id

    class Context:
        function_name = "winnow-search"
        memory_limit_in_mb = 1024
        invoked_function_arn = "arn:aws:lambda:eu-central-1:123456789012:function:winnow-search"
        aws_request_id = "test-request"

    response = search_app.handler(load_event("api-health.json"), Context())
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["status"] == "ok"


# --- the build --------------------------------------------------------------------------------------
SAM_BUILD_COMMAND = ["build", "--no-cached", "--parallel", "--template-file", "template.yaml"]
HOST_TARGETS = {
    "SharedLayer": ROOT / "layers/shared",
    "IngestFunction": ROOT / "functions/ingest",
    "SearchFunction": ROOT / "functions/search",
    "ReconcileFunction": ROOT / "functions/reconcile",
}


# The host bundles compiled with this interpreter: the two handler-only ones show that the makefile
# compiles with the interpreter it is given; compiling the layer and the ingest bundle's wheels as well
# (about 8 s of CPU) would show nothing more, and the sam build compiles all four for Lambda's Python.
HOST_BYTECODE_TARGETS = ("SearchFunction", "ReconcileFunction")


def host_build_target(target: str, out: Path) -> None:
    """One bundle of the host build: the same makefile with wheels for this machine's Python
    (PIP_PLATFORM empty), because the real build's cp313/aarch64 extensions cannot load here."""
    bytecode = sys.executable if target in HOST_BYTECODE_TARGETS else ""
    run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(HOST_TARGETS[target]),
            "-f",
            str(BUNDLES_MAKEFILE),
            f"build-{target}",
            f"ARTIFACTS_DIR={out / target}",
            "PIP_PLATFORM=",
            f"PYTHON={sys.executable}",
            f"PYTHON_BYTECODE={bytecode}",
        ]
    )


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Path]]]:
    """``sam build`` into a fresh directory, as a team runs it (no cache, no Docker), and the host build,
    both at once: neither reads the other's output, so they need not queue one behind the other. The
    comparison tests tie the two builds together. Both are removed after the module."""
    sam = sam_cli()
    build_dir = tmp_path_factory.mktemp("sam") / "build"
    out = tmp_path_factory.mktemp("host")
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        sam_done = pool.submit(
            run, [str(sam), *SAM_BUILD_COMMAND, "--build-dir", str(build_dir)], env=sam_env(sam)
        )
        # The layer and the ingest bundle install their wheels at once; search and reconcile copy one file.
        host_done = [pool.submit(host_build_target, target, out) for target in HOST_TARGETS]
        for future in host_done:
            future.result()
        sam_done.result()
    yield build_dir, {target: out / target for target in HOST_TARGETS}
    # Hundreds of megabytes, in memory when the temporary folder is (tests/conftest.py): not kept for later.
    shutil.rmtree(build_dir.parent, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def sam_build(builds: tuple[Path, dict[str, Path]]) -> Path:
    return builds[0]


@pytest.fixture(scope="module")
def host_build(builds: tuple[Path, dict[str, Path]]) -> dict[str, Path]:
    return builds[1]


def bytecode_python(env: dict[str, str] | None = None) -> str:
    """The interpreter the makefiles compile Lambda's byte code with (empty: no 3.13 on this machine)."""
    return run(
        ["make", "-s", "--no-print-directory", "-f", str(BUNDLES_MAKEFILE), "print-bytecode-python"],
        env=env,
    ).strip()


def assert_byte_code(tree: Path, tag: str | None) -> None:
    """With ``tag`` (``cpython-313``): every module has byte code for that interpreter only, hash-based and
    never checked against its source (flags 1), so a read-only bundle loads it as is. Without: none."""
    sources = [p for p in tree.rglob("*.py") if p.is_file()]
    compiled = list(tree.rglob("*.pyc"))
    if tag is None:
        assert not compiled
        return
    assert sources
    missing = [s for s in sources if not (s.parent / "__pycache__" / f"{s.stem}.{tag}.pyc").is_file()]
    assert not missing, f"no {tag} byte code for {[str(m.relative_to(tree)) for m in missing[:5]]}"
    assert not [p for p in compiled if not p.name.endswith(f".{tag}.pyc")]
    assert {int.from_bytes(p.read_bytes()[4:8], "little") for p in compiled} == {1}


def elf_machine(path: Path) -> int | None:
    head = path.read_bytes()[:20]
    if head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little")


@pytest.mark.slow
def test_sam_build_bundles_stay_well_inside_lambda_limits(sam_build: Path) -> None:
    """Given ``sam build``, then search + layer ≤ 120 MB, ingest + layer and reconcile + layer ≤ 200 MB
    unzipped (Lambda's hard limit is 250 MB), and search and reconcile ship nothing but their handler."""
    layer = tree_bytes(sam_build / "SharedLayer")
    ingest = tree_bytes(sam_build / "IngestFunction")
    search = tree_bytes(sam_build / "SearchFunction")
    reconcile = tree_bytes(sam_build / "ReconcileFunction")
    print(
        f"\nunzipped: layer {layer / MB:.1f} MB, ingest {ingest / MB:.1f} MB, search {search / MB:.3f} MB, "
        f"reconcile {reconcile / MB:.3f} MB; ingest+layer {(ingest + layer) / MB:.1f} MB, "
        f"search+layer {(search + layer) / MB:.1f} MB, reconcile+layer {(reconcile + layer) / MB:.1f} MB "
        f"(limit {LAMBDA_UNZIPPED_LIMIT / MB:.0f} MB)"
    )
    assert search + layer <= 120 * MB
    assert ingest + layer <= 200 * MB
    assert reconcile + layer <= 200 * MB
    for handler_only in ("SearchFunction", "ReconcileFunction"):
        shipped = sorted(p.name for p in (sam_build / handler_only).iterdir())
        assert shipped in (["app.py"], ["__pycache__", "app.py"]), (handler_only, shipped)


@pytest.mark.slow
def test_sam_build_ships_byte_code_for_lambdas_python(sam_build: Path) -> None:
    """Lambda's /opt and /var/task are read-only: without byte code every cold start compiles every module.
    Given a Python 3.13 on the build machine, every shipped module has 3.13 byte code and no other; given
    none, the bundles hold no byte code at all (never byte code for the wrong Python)."""
    interpreter = bytecode_python(sam_env(sam_cli()))
    tag = "cpython-313" if interpreter else None
    for bundle in ("SharedLayer", "IngestFunction", "SearchFunction", "ReconcileFunction"):
        assert_byte_code(sam_build / bundle, tag)


@pytest.mark.slow
def test_host_build_compiles_byte_code_with_the_interpreter_it_is_given(host_build: dict[str, Path]) -> None:
    # Given this interpreter as PYTHON_BYTECODE, its tag, and only its tag, is compiled; given none
    # (PYTHON_BYTECODE empty), no byte code at all.
    for target, bundle in host_build.items():
        assert_byte_code(bundle, sys.implementation.cache_tag if target in HOST_BYTECODE_TARGETS else None)


def modules(package: Path) -> set[str]:
    """The Python modules under ``package``, as paths relative to it (byte code caches left out)."""
    return {p.relative_to(package).as_posix() for p in package.rglob("*.py") if "__pycache__" not in p.parts}


@pytest.mark.slow
def test_built_layer_is_lean_and_built_for_arm64(sam_build: Path) -> None:
    """No boto3/botocore (the runtime has them), no tests or local-only code (byte code has its own test),
    and every native extension is an aarch64 ELF: the cross-platform pip really targeted Lambda's machine."""
    site = sam_build / "SharedLayer" / "python"
    # The shipped package is exactly the source's modules: nothing dropped, nothing local-only added.
    source = ROOT / "layers" / "shared" / "winnow"
    assert modules(site / "winnow") == modules(source)
    assert not [p for p in site.iterdir() if p.name.startswith(("winnow_local", "winnow_fakes"))]
    dists = distributions(site)
    for name in RUNTIME_PROVIDED:
        assert not (site / name).exists(), name
        assert name not in dists
    assert not [p for p in site.rglob("tests") if p.is_dir()]
    natives = [p for p in site.rglob("*.so*") if p.is_file()]
    assert natives, "expected compiled extensions (pydantic-core, PyStemmer)"
    wrong = [str(p.relative_to(site)) for p in natives if elf_machine(p) not in (AARCH64_ELF_MACHINE, None)]
    assert not wrong, f"not aarch64: {wrong[:5]}"
    assert any(p.name.endswith("cpython-313-aarch64-linux-gnu.so") for p in natives)


@pytest.mark.slow
def test_parsers_ship_only_in_the_ingest_function_and_nothing_twice(sam_build: Path) -> None:
    """The ingest bundle holds exactly its requirements (the parsers and what they need, mirrored from the
    ``ingest`` extra), none of which is also in the layer."""
    layer = distributions(sam_build / "SharedLayer" / "python")
    ingest = distributions(sam_build / "IngestFunction")
    required = {Requirement(r).name for r in requirement_lines(ROOT / "functions/ingest/requirements.txt")}
    assert ingest == required
    assert {re.sub(r"[-_.]+", "-", p).lower() for p in PARSERS} <= ingest
    assert not ingest & layer
    assert (sam_build / "IngestFunction" / "app.py").is_file()


@pytest.mark.slow
def test_host_build_has_the_same_distributions_as_the_lambda_build(
    sam_build: Path, host_build: dict[str, Path]
) -> None:
    """The import checks below run on a build for this machine; it must hold the same packages as the
    arm64 build, so what imports here is what ships."""
    assert distributions(host_build["SharedLayer"] / "python") == distributions(
        sam_build / "SharedLayer" / "python"
    )
    for target in ("IngestFunction", "ReconcileFunction"):
        assert distributions(host_build[target]) == distributions(sam_build / target), target


def runtime_standin(tmp: Path) -> Path:
    """What the Lambda runtime adds to sys.path for us: boto3 and botocore (and s3transfer), nothing more."""
    import boto3
    import botocore
    import s3transfer

    standin = tmp / "lambda-runtime"
    standin.mkdir(exist_ok=True)
    for module in (boto3, botocore, s3transfer):
        link = standin / module.__name__
        if not link.exists():
            link.symlink_to(Path(str(module.__file__)).parent)
    return standin


def run_isolated(path: list[Path], code: str) -> str:
    """``python -I -S``: no site-packages, no PYTHONPATH, no user site; only ``path`` and the stdlib. With
    ``-B``: the bundles stay as built (no byte code written into them)."""
    env = {"PATH": os.environ.get("PATH", ""), "AWS_DEFAULT_REGION": "eu-central-1", "LANG": "C.UTF-8"}
    prelude = f"import sys; sys.path[0:0] = {[str(p) for p in path]!r}\n"
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", prelude + code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


IMPORT_EVERY_MODULE = """
import importlib, pkgutil, json, winnow
names = sorted(m.name for m in pkgutil.walk_packages(winnow.__path__, "winnow."))
for name in names:
    importlib.import_module(name)
print(json.dumps(names))
"""


@pytest.mark.slow
def test_built_layer_imports_cleanly_on_its_own(host_build: dict[str, Path], tmp_path: Path) -> None:
    """Given only the built layer (and boto3 as the runtime provides it), every shipped winnow module
    imports: nothing the layer needs was left out of requirements.txt."""
    layer = host_build["SharedLayer"] / "python"
    names = json.loads(run_isolated([layer, runtime_standin(tmp_path)], IMPORT_EVERY_MODULE))
    source = ROOT / "layers/shared/winnow"
    shipped = {
        ".".join(("winnow", *p.relative_to(source).with_suffix("").parts)).removesuffix(".__init__")
        for p in source.rglob("*.py")
    } - {"winnow"}
    assert set(names) == shipped


@pytest.mark.slow
def test_built_handlers_import_with_only_their_bundle_and_the_layer(
    host_build: dict[str, Path], tmp_path: Path
) -> None:
    """Each handler imports from its bundle + the layer alone; the search handler loads no parser, no
    local model and no boto3 at cold start, the ingest bundle's parsers load without extra deps, and the
    reconcile handler loads no parser and no local model."""
    layer = host_build["SharedLayer"] / "python"
    standin = runtime_standin(tmp_path)
    heavy = ("pypdf", "docx", "lxml", "onnxruntime", "tokenizers", "boto3")
    loaded = json.loads(
        run_isolated(
            [host_build["SearchFunction"], layer, standin],
            "import app, json, sys\nassert callable(app.handler)\n"
            f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))",
        )
    )
    assert loaded == []
    run_isolated(
        [host_build["IngestFunction"], layer, standin],
        "import app; assert callable(app.handler)\nimport pypdf, docx, lxml.etree, lxml.html\n"
        # pypdf decrypts AES with the bundled cryptography (native, with cffi), not its slow fallback.
        "from pypdf._crypt_providers import crypt_provider\nassert crypt_provider[0] == 'cryptography'",
    )
    # Reconcile lists and queues; it never parses or embeds locally, so nothing of the sort may load.
    loaded = json.loads(
        run_isolated(
            [host_build["ReconcileFunction"], layer, standin],
            "import app, json, sys\nassert callable(app.handler)\n"
            f"print(json.dumps([m for m in {heavy[:-1]!r} if m in sys.modules]))",
        )
    )
    assert loaded == []


@pytest.mark.slow
def test_built_layer_has_no_embedded_default_and_says_so(host_build: dict[str, Path], tmp_path: Path) -> None:
    """Given only the built layer, a container left on the embedded default (no bucket, no ledger table)
    refuses with the setting to use instead: the local adapters ship with the local tools, not the layer."""
    layer = host_build["SharedLayer"] / "python"
    said = run_isolated(
        [layer, runtime_standin(tmp_path)],
        "from winnow.errors import ConfigurationError\nfrom winnow.factory import Container\n"
        "for part in ('ledger', 'objects', 'embedder'):\n"
        "    try:\n        getattr(Container(), part)\n"
        "    except ConfigurationError as e:\n        print(e)\n",
    ).splitlines()
    assert len(said) == 3
    for line, setting in zip(said, ("WINNOW_LEDGER_TABLE", "WINNOW_BUCKET", "VOYAGE_API_KEY"), strict=True):
        assert f"set {setting}" in line and "not installed" in line


def test_isolated_runner_really_hides_the_dev_environment(tmp_path: Path) -> None:
    """Guard for the checks above: with an empty path, a package from the dev venv cannot be imported."""
    env = {"PATH": os.environ.get("PATH", "")}
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "import pydantic"], capture_output=True, env=env, check=False
    )
    assert proc.returncode != 0


# What the search function's statements grant: the document routes' S3 calls and nothing wider.
SEARCH_GRANTS = {
    "SignUploads": ("s3:PutObject", OBJECTS),
    "DeleteDocuments": ("s3:DeleteObject", OBJECTS),
    "PendingStatus": ("s3:GetObject", OBJECTS),
    "MissingKeysAnswer404": ("s3:ListBucket", BUCKET),
    "ReadFigureImages": ("s3:GetObject", FIGURES),
}


def test_search_statements_grant_one_action_each_on_this_stacks_bucket() -> None:
    """Given the search function's statements, then each grants one S3 action on this stack's bucket (its
    objects, or the bucket for ListBucket), with no wildcard; with SSE-KMS, a data key (uploads) and
    Decrypt (a sidecar's read, and a figure's presigned GET, signed with this role) on the bucket's key."""
    search = load_template()["Resources"]["SearchFunction"]
    statements = {st["Sid"]: st for st in inline_statements(search)}
    for sid, (action, resource) in SEARCH_GRANTS.items():
        statement = statements[sid]
        # only ListBucket is narrowed by a condition (no prefix at all: test_template_operations.py)
        assert statement["Effect"] == "Allow" and ("Condition" not in statement or action == "s3:ListBucket")
        assert statement["Action"] == action
        assert json.dumps(statement["Resource"], sort_keys=True) == resource
    conditional = [
        p["Fn::If"] for p in search["Properties"]["Policies"] if isinstance(p, dict) and "Fn::If" in p
    ]
    (kms,) = [branch for branch in conditional if branch[0] == "UseBucketKms" and "Statement" in branch[1]]
    assert kms[0] == "UseBucketKms"
    assert [st["Action"] for st in kms[1]["Statement"]] == ["kms:GenerateDataKey", "kms:Decrypt"]
    key = kms[1]["Statement"][0]["Resource"]
    assert all(st["Resource"] == key and st["Effect"] == "Allow" for st in kms[1]["Statement"])


def test_search_document_routes_call_only_what_is_granted(
    tmp_path: Path, s3_bucket: str, aws_client: Callable[[str], Any], fake_voyage: Any
) -> None:
    """Given the search handler on S3 over moto, when it signs an upload, reports pending, deletes and
    answers 404 for a missing key, then the S3 calls it makes need exactly the granted actions (signing
    makes no call: the browser's POST then needs s3:PutObject, which is the one action not recorded)."""
    from tests.support.s3post import post_form
    from tests.support.stack import EmbeddedStack
    from winnow.adapters.objects_s3 import S3ObjectSource

    objects = S3ObjectSource(s3_bucket)
    needed: dict[str, set[str]] = {}

    def on_params(params: dict[str, Any], model: Any, **_: Any) -> None:
        action = {"HeadObject": "s3:GetObject", "DeleteObject": "s3:DeleteObject"}[model.name]
        needed.setdefault(action, set()).add(OBJECTS)

    def on_answer(parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "HeadObject" and parsed.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
            needed.setdefault("s3:ListBucket", set()).add(BUCKET)

    for client in (objects.client,):  # the signer makes no call (it only emits params to sign)
        client.meta.events.register("provide-client-params.s3", on_params)
        client.meta.events.register("after-call.s3", on_answer)
    stack = EmbeddedStack(tmp_path, fake_voyage, objects=objects)
    stack.bucket = s3_bucket
    try:
        status, _, form = stack.api("POST", "/uploads", {"path": "leave.md"})
        assert status == 201
        assert post_form(form["url"], form["fields"], b"# Leave\n\nTwenty-eight days.\n").status_code == 204
        assert stack.api("GET", "/documents/leave.md")[2]["status"] == "pending"
        assert stack.api("DELETE", "/documents/leave.md")[0] == 202
        assert stack.api("DELETE", "/documents/leave.md")[0] == 404  # gone, never indexed
    finally:
        stack.close()
    needed["s3:PutObject"] = {OBJECTS}
    needed["s3:GetObject"].add(FIGURES)  # a figure's presigned image_url: the browser's GET, not ours
    granted: dict[str, set[str]] = {}
    for action, resource in SEARCH_GRANTS.values():
        granted.setdefault(action, set()).add(resource)
    assert needed == granted


def test_the_figure_vision_model_is_off_by_default_and_ingest_may_invoke_it_only() -> None:
    """Given the template, then FigureVisionModelId is empty by default (vision off), reaches the ingest
    function as WINNOW_FIGURES_BEDROCK_MODEL_ID, and only when set grants InvokeModel on that model in this
    Region; the search function gets no figure model permission."""
    template = load_template()
    assert template["Parameters"]["FigureVisionModelId"]["Default"] == ""
    assert template["Conditions"]["FiguresOnBedrock"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "FigureVisionModelId"}, ""]}]
    }
    ingest = template["Resources"]["IngestFunction"]["Properties"]
    assert ingest["Environment"]["Variables"]["WINNOW_FIGURES_BEDROCK_MODEL_ID"] == {
        "Ref": "FigureVisionModelId"
    }
    conditional = [
        policy["Fn::If"] for policy in ingest["Policies"] if isinstance(policy, dict) and "Fn::If" in policy
    ]
    (when_set,) = [branch for branch in conditional if branch[0] == "FiguresOnBedrock"]
    (statement,) = when_set[1]["Statement"]
    assert statement["Action"] == "bedrock:InvokeModel"
    assert statement["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${FigureVisionModelId}"
    }
    assert when_set[2] == {"Ref": "AWS::NoValue"}
    search = json.dumps(template["Resources"]["SearchFunction"]["Properties"]["Policies"])
    assert "FigureVisionModelId" not in search
