"""``winnow invoke FUNCTION -e events/FILE.json``: one event through one function's handler, as
``sam local invoke FUNCTION -e FILE`` runs it, in this process and without Docker.

What comes from ``template.yaml``: the function (its logical id), its handler (``CodeUri`` + ``Handler``),
its timeout and memory (for the Lambda context) and its environment, Globals merged with its own, with
parameters at their defaults. A variable applies locally only when it resolves to a value here: those that
name the stack's resources (bucket, table, queue, secrets), parameters without a default, and the three
that select AWS (``WINNOW_HOME``, ``WINNOW_EMBEDDER``, ``WINNOW_RERANKER``) are left out, so the handler
runs on the embedded default (or on what your own environment sets, which always wins)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
EVENTS = ROOT / "events"

# Chosen for AWS by the template; locally the embedded default (or your environment) decides.
DEPLOYMENT_ONLY = frozenset({"WINNOW_HOME", "WINNOW_EMBEDDER", "WINNOW_RERANKER"})
# Which function each sample event belongs to, by its file name's prefix (docs/local.md lists them).
EVENT_FUNCTIONS = {
    "api-": "SearchFunction",
    "s3-": "IngestFunction",
    "sqs-": "IngestFunction",
    "reconcile-": "ReconcileFunction",
}
ACCOUNT = "123456789012"  # what sam local invoke puts in ARNs


class InvokeError(Exception):
    """The command cannot run (unknown function, unreadable event): one line for the user."""


def function_for_event(path: Path | str) -> str:
    name = Path(path).name
    for prefix, function in EVENT_FUNCTIONS.items():
        if name.startswith(prefix):
            return function
    raise InvokeError(f"{name}: no function for this event; name it {', '.join(EVENT_FUNCTIONS)}…")


# --- template ------------------------------------------------------------------------------------------
def _cfn_loader() -> Any:
    """PyYAML's safe loader that reads CloudFormation's short tags (``!Ref X``) as their long form."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if suffix == "Ref":
            return {"Ref": value}
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
        return {f"Fn::{suffix}": value}

    Loader.add_multi_constructor("!", construct)
    return Loader


def read_template(path: Path = TEMPLATE) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_cfn_loader())  # noqa: S506 (safe loader)
    except OSError as exc:
        raise InvokeError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
        raise InvokeError(f"{path} is not a SAM template (no Resources)")
    return data


def function_names(template: Mapping[str, Any]) -> list[str]:
    return sorted(
        name
        for name, resource in template["Resources"].items()
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Function"
    )


def resolve(template: Mapping[str, Any], value: Any) -> str | None:
    """The value as a string when it is known without deploying: a literal, or a parameter with a
    default; None for anything that names a resource or needs the deployed stack."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, dict) and set(value) == {"Ref"}:
        parameter = template.get("Parameters", {}).get(value["Ref"])
        if isinstance(parameter, dict) and "Default" in parameter:
            return resolve(template, parameter["Default"])
    return None


@dataclass
class FunctionSpec:
    """What ``sam local invoke`` takes from the template for one function."""

    logical_id: str
    code_uri: Path
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # variable → why it does not apply locally


def function_spec(template: Mapping[str, Any], logical_id: str, root: Path = ROOT) -> FunctionSpec:
    names = function_names(template)
    if logical_id not in names:
        raise InvokeError(f"no function {logical_id!r} in template.yaml; its functions: {', '.join(names)}")
    globals_ = template.get("Globals", {}).get("Function", {})
    props = template["Resources"][logical_id].get("Properties", {})

    def prop(name: str, default: Any) -> Any:
        return props.get(name, globals_.get(name, default))

    variables = dict(globals_.get("Environment", {}).get("Variables", {}))
    variables.update(props.get("Environment", {}).get("Variables", {}))
    environment: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for name, raw in variables.items():
        value = resolve(template, raw)
        if name in DEPLOYMENT_ONLY:
            skipped[name] = "selects AWS"
        elif value is None:
            skipped[name] = "needs the deployed stack"
        else:
            environment[name] = value
    return FunctionSpec(
        logical_id=logical_id,
        code_uri=root / str(prop("CodeUri", ".")),
        handler=str(prop("Handler", "app.handler")),
        timeout_seconds=int(resolve(template, prop("Timeout", 3)) or 3),
        memory_mb=int(resolve(template, prop("MemorySize", 128)) or 128),
        environment=environment,
        skipped=skipped,
    )


# --- the Lambda side -------------------------------------------------------------------------------------
class InvokeContext:
    """The Lambda context object: the names sam local invoke gives, and a clock that runs down from the
    function's timeout (reconcile pages by it)."""

    def __init__(self, spec: FunctionSpec, region: str) -> None:
        self.function_name = spec.logical_id
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = spec.memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{spec.logical_id}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{spec.logical_id}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + spec.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def load_handler(spec: FunctionSpec, root: Path = ROOT) -> Callable[[Any, Any], Any]:
    """The handler function: ``functions/search/`` + ``app.handler`` → ``functions.search.app.handler``
    (the same module object the rest of the process uses), else the file itself."""
    module_part, _, attribute = spec.handler.rpartition(".")
    if not module_part or not attribute:
        raise InvokeError(f"{spec.logical_id}: Handler {spec.handler!r} is not module.function")
    source = spec.code_uri / (module_part.replace(".", "/") + ".py")
    if not source.is_file():
        raise InvokeError(f"{spec.logical_id}: handler file {source} not found")
    try:
        dotted = ".".join(source.resolve().relative_to(root.resolve()).with_suffix("").parts)
        module = importlib.import_module(dotted)
    except (ValueError, ImportError):
        loaded = importlib.util.spec_from_file_location(f"_invoke_{spec.logical_id}", source)
        if loaded is None or loaded.loader is None:
            raise InvokeError(f"{spec.logical_id}: cannot load {source}") from None
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise InvokeError(f"{spec.logical_id}: {source} has no function {attribute!r}")
    return handler


def read_event(path: str | None) -> Any:
    """The event: a JSON file, ``-`` for standard input, none for ``{}`` (as sam local invoke sends)."""
    if path is None:
        return {}
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvokeError(f"cannot read event {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvokeError(f"event {path} is not JSON: {exc}") from exc


def apply_environment(spec: FunctionSpec, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Set the template's variables that apply locally, never over one already set; the ones set."""
    target = os.environ if environ is None else environ
    applied = {name: value for name, value in spec.environment.items() if name not in target}
    target.update(applied)
    return applied


@dataclass
class Outcome:
    ok: bool
    payload: Any  # the handler's return value, or Lambda's error document


def invoke(spec: FunctionSpec, event: Any, root: Path = ROOT) -> Outcome:
    """Run the handler once. An exception becomes Lambda's error document (``errorMessage``,
    ``errorType``, ``requestId``, ``stackTrace``), as the runtime reports an unhandled error."""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    context = InvokeContext(spec, region)
    handler = load_handler(spec, root)
    try:
        result = handler(event, context)
    except Exception as exc:
        return Outcome(
            False,
            {
                "errorMessage": str(exc),
                "errorType": type(exc).__name__,
                "requestId": context.aws_request_id,
                "stackTrace": traceback.format_tb(exc.__traceback__),
            },
        )
    return Outcome(True, result)


def hints(event: Any, payload: Any) -> list[str]:
    """What to do next when a direct S3 event changed nothing a user expected: the object was not in the
    bucket (so a create recorded ``deleted``), or the event is no newer than the one last applied (so
    invoking it again is ``skipped``). Reconcile compares the bucket with the index, whatever the events."""
    from winnow.errors import InvalidKey
    from winnow.factory import get_container
    from winnow.ingest.events import parse_s3_notification
    from winnow.ingest.results import IngestOutcome
    from winnow.rules import split_key

    if not isinstance(event, dict) or not isinstance(payload, dict):
        return []
    if event.get("rawPath") in ("/search", "/answer"):
        return search_hints(event, payload)
    created = {e.key for e in parse_s3_notification(event) if e.action == "created"}
    storage = get_container().settings.storage
    bucket = "the bucket" if storage.bucket else str(storage.local_bucket_dir.expanduser().resolve())
    lines = []
    for result in payload.get("results") or []:
        key, status = str(result.get("key")), result.get("status")
        try:
            tenant = split_key(key)[0]
        except InvalidKey:
            continue
        reconcile = f"`winnow reconcile --tenant {tenant}`"
        if status == IngestOutcome.DELETED and key in created:
            lines.append(
                f"{key} is not in {bucket}, so this create event recorded it as deleted; put the file at "
                f"{bucket}/{key} and run {reconcile} to index it (the same event again is skipped)"
            )
        elif status == IngestOutcome.SKIPPED and result.get("error") == "stale or duplicate event":
            lines.append(
                f"{key}: this event is no newer than the last one applied to the object, so it changes "
                f"nothing; {reconcile} indexes the object as the bucket holds it now"
            )
    return lines


def search_hints(event: dict[str, Any], payload: dict[str, Any]) -> list[str]:
    """A search that found nothing for a tenant without documents here: the CLI's hint (ingest some, or
    run from the folder you ingested in), as relevance is not why."""
    from winnow.factory import get_container
    from winnow_local.runtime import LocalRuntime, no_documents

    try:
        body = json.loads(payload.get("body") or "null")
        claims = event["requestContext"]["authorizer"]["jwt"]["claims"]
        tenant = claims[get_container().settings.search.tenant_claim]
    except (ValueError, KeyError, TypeError):
        return []
    found = isinstance(body, dict) and (body.get("results") or body.get("answer"))
    if found or payload.get("statusCode") != 200 or not isinstance(tenant, str):
        return []
    return [] if LocalRuntime().has_documents(tenant) else [no_documents(tenant)]


# --- the command ---------------------------------------------------------------------------------------
def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "invoke",
        help="run one function's handler on an event file, like `sam local invoke` (no Docker)",
        description="Run a template.yaml function's handler on an event, as `sam local invoke FUNCTION -e "
        "FILE` would: a Lambda context, the function's environment from the template where it applies "
        "locally, the embedded default for the rest. Prints the return value as JSON; exits 1 when the "
        "handler raises.",
    )
    parser.add_argument("function", metavar="FUNCTION", help="logical id, e.g. SearchFunction")
    parser.add_argument(
        "-e", "--event", default=None, metavar="FILE", help="event JSON file, - for stdin (default {})"
    )
    parser.add_argument("-t", "--template", default=str(TEMPLATE), metavar="FILE", help="SAM template")
    parser.set_defaults(func=cmd_invoke)


def cmd_invoke(args: Any) -> int:
    from winnow_local.errors import CliError

    try:
        spec = function_spec(read_template(Path(args.template)), args.function)
        event = read_event(args.event)
        applied = apply_environment(spec)
        if getattr(args, "verbose", False):
            print(
                f"{spec.logical_id}: {spec.handler} from {spec.code_uri}; template variables applied: "
                f"{', '.join(sorted(applied)) or 'none'}; left out: "
                f"{', '.join(f'{k} ({v})' for k, v in sorted(spec.skipped.items())) or 'none'}",
                file=sys.stderr,
            )
        outcome = invoke(spec, event)
    except InvokeError as exc:
        raise CliError(str(exc)) from exc
    print(json.dumps(outcome.payload, ensure_ascii=False, default=str), flush=True)
    for hint in hints(event, outcome.payload):
        print(f"winnow: {hint}", file=sys.stderr)
    if not outcome.ok:
        error = outcome.payload
        print(
            f"winnow: {spec.logical_id} raised {error['errorType']}: {error['errorMessage']}", file=sys.stderr
        )
        return 1
    return 0
