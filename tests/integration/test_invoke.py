"""``winnow invoke FUNCTION -e events/FILE.json``: every sample event through its function, as
``sam local invoke`` would run it, without Docker.

Each event runs through the command's ``main`` on a fresh embedded default in a temporary ``WINNOW_HOME``,
in this process (``InProcessWinnow``: the environment, streams and container are the command's own while it
runs); the tests of what only a process shows (state kept in ``WINNOW_HOME`` from one invocation to the next,
exit statuses, stdin) start ``winnow`` as a process of its own, as each ``sam local invoke`` runs in its own
container; the objects an ingest event announces are put in
the folder bucket first, so the event really indexes them. The event list is the ``events/`` folder itself:
a new file is covered (and must be listed in docs/local.md) without touching this test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import InProcessWinnow, Run
from tests.support.documents import DocxHeading, DocxParagraph, make_docx, make_pdf
from winnow_local.invoke import (
    EVENTS,
    ROOT,
    FunctionSpec,
    InvokeContext,
    apply_environment,
    function_for_event,
    function_spec,
    read_template,
)

pytestmark = pytest.mark.slow

EVENT_FILES = sorted(EVENTS.glob("*.json"))
SETTINGS_PREFIXES = ("WINNOW_", "QDRANT_", "VOYAGE_", "POWERTOOLS_", "AWS_")
TEXT = "Every employee receives twenty-eight days of paid holiday per year, agreed with their manager."


def local_env(home: Path) -> dict[str, str]:
    """This machine's environment without any Winnow, provider or AWS setting: the embedded default."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}
    env["WINNOW_HOME"] = str(home)
    return env


def in_process(args: list[str], home: Path) -> Run:
    """``winnow ARGS`` through the command's ``main`` in this process, with ``local_env``'s environment."""
    runner = InProcessWinnow(home)
    runner.env = local_env(home)
    return runner(*args)


def winnow(args: list[str], home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "winnow_local", *args],
        cwd=ROOT,
        env=local_env(home),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def document_bytes(key: str) -> bytes:
    if key.endswith(".pdf"):
        return make_pdf([TEXT])
    if key.endswith(".docx"):
        return make_docx([DocxHeading("Holidays", 1), DocxParagraph(TEXT)])
    return TEXT.encode()


def announced(event: dict[str, Any]) -> list[tuple[str, str]]:
    """(action, key) of every object event inside an S3 notification or an SQS batch of them."""
    from winnow.ingest.events import is_sqs_batch, parse_s3_notification, parse_sqs_body

    if is_sqs_batch(event):
        found = [e for record in event["Records"] for e in parse_sqs_body(record["body"])]
    else:
        found = parse_s3_notification(event)
    return [(e.action, e.key) for e in found]


def seed_bucket(home: Path, event: dict[str, Any]) -> list[str]:
    """Put every object the event says was created into the folder bucket; the keys put."""
    from winnow_local.adapters.objects_local import LocalObjectSource

    bucket = LocalObjectSource(home / "bucket")
    created = [key for action, key in announced(event) if action == "created"]
    for key in created:
        bucket.put(key, document_bytes(key), {})
    return created


@pytest.mark.parametrize("event_file", EVENT_FILES, ids=[p.name for p in EVENT_FILES])
def test_every_sample_event_runs_through_its_function(event_file: Path, tmp_path: Path) -> None:
    # Given a sample event, the function its name assigns it to, and (for ingest) its objects in the bucket
    function = function_for_event(event_file)
    event = json.loads(event_file.read_text())
    created = seed_bucket(tmp_path, event) if function == "IngestFunction" else []
    # When it is invoked as `sam local invoke FUNCTION -e FILE` would run it
    proc = in_process(["invoke", function, "-e", str(event_file)], tmp_path)
    # Then the handler returned, and its return value is the one JSON document on stdout
    assert proc.code == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    result = json.loads(proc.stdout)
    if function == "SearchFunction" and event["routeKey"] == "POST /uploads":
        # The folder bucket signs upload forms only inside `winnow serve`, which receives them; with
        # WINNOW_BUCKET naming an S3 bucket this event is a 201 (tests/integration/test_uploads.py).
        assert result["statusCode"] == 501, result
        assert "winnow serve" in json.loads(result["body"])["error"]["message"]
    elif function == "SearchFunction":  # an API Gateway response: never a server error
        assert 200 <= result["statusCode"] < 500, result
        json.loads(result["body"])
        if event["routeKey"] in ("GET /health", "GET /openapi.json", "POST /search", "GET /documents"):
            assert result["statusCode"] == 200, result
    elif function == "IngestFunction":
        assert result["batchItemFailures"] == []
        if "results" in result:  # a direct S3 event: one result per object, the created ones indexed
            statuses = {r["key"]: r["status"] for r in result["results"]}
            assert set(statuses) == {key for _, key in announced(event)}
            assert all(statuses[key] == "indexed" for key in created), statuses
            assert not [s for s in statuses.values() if s in ("failed", "retry")], statuses
    else:
        assert result["stats"]["complete"] is True
        assert result["stats"]["dry_run"] is event.get("dry_run", False)


def test_every_event_is_listed_in_docs_with_both_commands() -> None:
    """docs/local.md names each event's function and the exact sam and winnow commands for it."""
    docs = (ROOT / "docs" / "local.md").read_text()
    for event_file in EVENT_FILES:
        function, name = function_for_event(event_file), event_file.name
        assert f"sam local invoke {function} -e events/{name}" in docs, name
        assert f"winnow invoke {function} -e events/{name}" in docs, name


def test_the_scheduled_reconcile_event_is_the_input_the_schedule_sends() -> None:
    """EventBridge sends the rule's constant Input, not its envelope: the sample is exactly that input."""
    template = read_template()
    (schedule,) = [
        e["Properties"]
        for e in template["Resources"]["ReconcileFunction"]["Properties"]["Events"].values()
        if e["Type"] == "Schedule"
    ]
    assert json.loads((EVENTS / "reconcile-schedule.json").read_text()) == json.loads(schedule["Input"])


def test_ingested_document_is_then_found_by_the_search_event(tmp_path: Path) -> None:
    # Given the put event's object indexed through `winnow invoke IngestFunction`
    put = json.loads((EVENTS / "s3-put.json").read_text())
    (key,) = seed_bucket(tmp_path, put)
    assert winnow(["invoke", "IngestFunction", "-e", "events/s3-put.json"], tmp_path).returncode == 0
    # When the document-status and list events run through the search function
    listed = json.loads(
        winnow(["invoke", "SearchFunction", "-e", "events/api-documents-list.json"], tmp_path).stdout
    )
    # Then the tenant's ledger holds the document, indexed (state persists in WINNOW_HOME across invocations)
    documents = json.loads(listed["body"])["documents"]
    assert [(d["key"], d["status"]) for d in documents] == [(key, "indexed")]


def test_a_put_event_before_its_object_exists_says_how_to_repair_it(tmp_path: Path) -> None:
    # Given the put event invoked before its object is in the bucket
    put = json.loads((EVENTS / "s3-put.json").read_text())
    first = winnow(["invoke", "IngestFunction", "-e", "events/s3-put.json"], tmp_path)
    (result,) = json.loads(first.stdout)["results"]
    key = result["key"]
    # Then it is recorded deleted, and stderr says where the object was looked for and what repairs it
    assert first.returncode == 0 and result["status"] == "deleted"
    assert f"{key} is not in {(tmp_path / 'bucket').resolve()}" in first.stderr
    assert "`winnow reconcile --tenant acme`" in first.stderr
    # When the file is added and the same event invoked again
    seed_bucket(tmp_path, put)
    again = winnow(["invoke", "IngestFunction", "-e", "events/s3-put.json"], tmp_path)
    # Then it is skipped as before, and now says that reconcile indexes the object as the bucket holds it
    (skipped,) = json.loads(again.stdout)["results"]
    assert skipped["status"] == "skipped" and skipped["error"] == "stale or duplicate event"
    assert "`winnow reconcile --tenant acme` indexes the object as the bucket holds it now" in again.stderr
    # And that command does repair it
    assert winnow(["reconcile", "--tenant", "acme"], tmp_path).returncode == 0
    listed = winnow(["documents", "--tenant", "acme", "--json"], tmp_path)
    assert [json.loads(line)["status"] for line in listed.stdout.splitlines()] == ["indexed"]


def test_an_unhandled_error_prints_lambdas_error_document_and_exits_non_zero(tmp_path: Path) -> None:
    # Given an event the ingest handler cannot read (a JSON string, not an object)
    proc = winnow(["invoke", "IngestFunction", "-e", "-"], tmp_path, stdin='"not an event"')
    # Then the error comes back as Lambda reports it, the exit status is 1 and stderr says it in a line
    assert proc.returncode == 1
    error = json.loads(proc.stdout)
    assert set(error) == {"errorMessage", "errorType", "requestId", "stackTrace"}
    assert error["errorType"] == "AttributeError"
    assert proc.stderr.strip().splitlines()[-1].startswith("winnow: IngestFunction raised AttributeError")


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (
            ["invoke", "NoSuchFunction"],
            None,
            "no function 'NoSuchFunction' in template.yaml; its functions: ",
        ),
        (["invoke", "SearchFunction", "-e", "-"], "{", "event - is not JSON"),
        (["invoke", "SearchFunction", "-e", "events/none.json"], None, "cannot read event events/none.json"),
    ],
)
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], stdin: str | None, message: str) -> None:
    proc = winnow(args, tmp_path, stdin=stdin)
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("winnow: ") and message in line, line
    assert proc.stdout == ""


def test_environment_comes_from_the_template_where_it_applies_locally() -> None:
    """Given SearchFunction, then its own and the Globals' variables that resolve without a deployed stack
    apply (tenant claim, the bounded provider retries, Powertools names), those naming the stack's
    resources or selecting AWS do not, and a variable already set in the environment wins."""
    spec = function_spec(read_template(), "SearchFunction")
    assert spec.environment["WINNOW_SEARCH_TENANT_CLAIM"] == "tenant"
    assert spec.environment["WINNOW_SEARCH_ALLOW_TENANT_HEADER"] == "false"
    assert spec.environment["VOYAGE_MAX_ATTEMPTS"] == "2"
    assert spec.environment["POWERTOOLS_SERVICE_NAME"] == "winnow-search"
    assert spec.environment["POWERTOOLS_METRICS_NAMESPACE"] == "Winnow"
    for deployed in (
        "WINNOW_LEDGER_TABLE",
        "QDRANT_URL",
        "QDRANT_API_KEY_SECRET_ARN",
        "VOYAGE_API_KEY_SECRET_ARN",
    ):
        assert spec.skipped[deployed] == "needs the deployed stack", deployed
    for aws_choice in ("WINNOW_HOME", "WINNOW_EMBEDDER", "WINNOW_RERANKER"):
        assert spec.skipped[aws_choice] == "selects AWS"
    assert not set(spec.environment) & set(spec.skipped)

    environ = {"VOYAGE_MAX_ATTEMPTS": "5"}
    applied = apply_environment(spec, environ)
    assert environ["VOYAGE_MAX_ATTEMPTS"] == "5" and "VOYAGE_MAX_ATTEMPTS" not in applied
    assert environ["WINNOW_SEARCH_TENANT_CLAIM"] == "tenant"

    ingest = function_spec(read_template(), "IngestFunction")
    assert ingest.environment["WINNOW_INGEST_MAX_OBJECT_BYTES"] == "26214400"
    assert ingest.skipped["WINNOW_BUCKET"] == "needs the deployed stack"


def test_the_lambda_context_carries_the_functions_name_memory_and_timeout() -> None:
    spec: FunctionSpec = function_spec(read_template(), "ReconcileFunction")
    assert (spec.timeout_seconds, spec.memory_mb) == (900, 1024)
    context = InvokeContext(spec, "eu-central-1")
    assert context.function_name == "ReconcileFunction"
    assert (
        context.invoked_function_arn == "arn:aws:lambda:eu-central-1:123456789012:function:ReconcileFunction"
    )
    assert context.memory_limit_in_mb == 1024
    assert 899_000 < context.get_remaining_time_in_millis() <= 900_000
    search = function_spec(read_template(), "SearchFunction")
    assert search.timeout_seconds == 28 and search.code_uri == ROOT / "functions/search/"


def test_verbose_after_the_subcommand_lists_the_environment_and_help_mentions_it(tmp_path: Path) -> None:
    run = in_process(
        ["invoke", "SearchFunction", "-e", str(ROOT / "events" / "api-health.json"), "-v"], tmp_path
    )
    assert run.code == 0, run.stderr
    assert "SearchFunction: " in run.stderr and "template variables applied: " in run.stderr
    helped = in_process(["invoke", "--help"], tmp_path)
    assert "-v, --verbose" in helped.stdout


def test_a_search_of_a_tenant_without_documents_gives_the_clis_hint(tmp_path: Path) -> None:
    run = in_process(["invoke", "SearchFunction", "-e", str(ROOT / "events" / "api-search.json")], tmp_path)
    assert run.code == 0, run.stderr
    assert json.loads(json.loads(run.stdout)["body"])["results"] == []
    assert f"winnow: no documents for tenant acme in {tmp_path.resolve()} (WINNOW_HOME)" in run.stderr
    assert "winnow ingest PATH --tenant acme" in run.stderr
