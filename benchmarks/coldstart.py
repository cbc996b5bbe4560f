"""Cold start of the search function in its AWS shape: what init pays, what the first request pays, and a
warm request, with everything every request needs built on the first request (before) or at init (after).

``python -m benchmarks.coldstart [--runs N] [--json]``

Each run is a fresh process that imports ``functions.search.app`` (init), then answers one ``POST /search``
(first request), then ``WARM_REQUESTS`` more (the median is the warm request). "after" sets
``AWS_LAMBDA_INITIALIZATION_TYPE=on-demand`` as Lambda does, so ``winnow.factory.build_at_init`` builds the
search service, the clients and the keys at init; "before" leaves it unset, as a handler that builds on
first use behaved. The services: Secrets Manager (the Voyage key), S3 and DynamoDB on moto over HTTP
(``ThreadedMotoServer`` on loopback), Voyage played by the loopback fake (the real REST adapters and
httpx), Qdrant Edge on disk holding a small index (there is no Qdrant server stand-in here: with Qdrant
Cloud, qdrant-client and the Qdrant key's secret move to init the same way, through the same
``Container.store``). AWS calls are counted by operation in each phase (botocore is imported before the
clock starts in both, to count them: its import is left out of both figures). The baseline, in the same
run: a fresh process that only imports ``qdrant_client``; the goal is init + first request (after) within
1.3x of it. Medians of ``--runs``, timed inside each process (the interpreter's own start-up is the same
for all and left out), with the child's peak memory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.common import (
    AWS_TESTING,
    CHILD_PEAK_RSS,
    ChildProcess,
    child_env,
    moto_server,
    run_child,
    table,
)

WARM_REQUESTS = 20
GOAL_INIT_RATIO = 1.3
DOCUMENTS = {
    "holidays.txt": "Every employee receives twenty-eight days of paid holiday per year.",
    "travel.txt": "Travel expenses are reimbursed within fourteen days when submitted with receipts.",
    "laptops.txt": "Laptops must use full-disk encryption and lock after five minutes.",
    "canteen.txt": "Lentil soup is served with rye bread on Mondays in the staff canteen.",
}
QUERY = "how are travel expenses reimbursed"

# Packages this dev environment has but the Lambda bundle does not ship, which the handler would still
# import here because a library probes for them: httpcore imports ``trio`` whenever it is installed
# (~65-85 ms), and ``trio`` is only here as selenium's dependency (the e2e tests). Every child runs with
# them unimportable, so the figure is the bundle's init, not the dev machine's.
NOT_IN_BUNDLE = ("trio",)
_PREAMBLE = f"import sys\nfor _name in {NOT_IN_BUNDLE!r}:\n    sys.modules[_name] = None\n" + CHILD_PEAK_RSS
_QDRANT_CHILD = (
    _PREAMBLE
    + """
import json, time
started = time.perf_counter()
import qdrant_client
print(json.dumps({"import_ms": (time.perf_counter() - started) * 1000, "peak_rss_mb": _peak_rss_mb()}))
"""
)
_CHILD = (
    _PREAMBLE
    + r"""
import json, statistics, sys, time
import botocore.client
calls = []
_call = botocore.client.BaseClient._make_api_call
def _counted(self, name, params):
    calls.append(name)
    return _call(self, name, params)
botocore.client.BaseClient._make_api_call = _counted

def taken():
    counts = {}
    for name in calls:
        counts[name] = counts.get(name, 0) + 1
    calls.clear()
    return counts

event = json.loads(sys.argv[1])
started = time.perf_counter()
from functions.search.app import handler
from winnow_local.context import LocalLambdaContext

init_ms = (time.perf_counter() - started) * 1000
init_calls = taken()
started = time.perf_counter()
first = handler(event, LocalLambdaContext())
first_ms = (time.perf_counter() - started) * 1000
first_calls = taken()
warm = []
for _ in range(int(sys.argv[2])):
    started = time.perf_counter()
    response = handler(event, LocalLambdaContext())
    warm.append((time.perf_counter() - started) * 1000)
print(json.dumps({
    "init_ms": init_ms,
    "first_request_ms": first_ms,
    "warm_request_ms": statistics.median(warm) if warm else 0.0,
    "init_calls": init_calls,
    "first_request_calls": first_calls,
    "status": first["statusCode"],
    "results": len(json.loads(first["body"]).get("results", [])),
    "peak_rss_mb": _peak_rss_mb(),
}))
"""
)


@contextmanager
def aws_shape(home: Path) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    """moto and the Voyage fake on loopback, a small index in ``home``: the child's environment and the
    search event."""
    import boto3

    from benchmarks.stack import EmbeddedStack, patched_environ
    from winnow.adapters._aws import key_value_table
    from winnow_fakes.fake_voyage import FakeVoyageServer
    from winnow_local.apigw import http_api_event

    moto = ChildProcess(moto_server)
    aws = {"AWS_ENDPOINT_URL": moto.greeting, **AWS_TESTING}
    try:
        with FakeVoyageServer() as fake, patched_environ(aws):
            voyage = {
                "WINNOW_EMBEDDER": "voyage",
                "WINNOW_RERANKER": "voyage",
                "VOYAGE_BASE_URL": fake.base_url,
            }
            with EmbeddedStack(home, env={**voyage, "VOYAGE_API_KEY": fake.api_key}) as stack:
                stack.ingest([(name, text.encode()) for name, text in DOCUMENTS.items()])
                tenant, claim = stack.tenant, stack.container.settings.search.tenant_claim

            def client(service: str) -> Any:
                return boto3.client(service, endpoint_url=aws["AWS_ENDPOINT_URL"], region_name="us-east-1")

            name = f"winnow-{uuid.uuid4().hex[:8]}"
            client("s3").create_bucket(Bucket=name)
            client("dynamodb").create_table(**key_value_table(name))
            secret = client("secretsmanager").create_secret(Name=name, SecretString=fake.api_key)["ARN"]
            env = child_env(drop=("WINNOW_", "QDRANT_", "VOYAGE_", "AWS_")) | aws | voyage
            env |= {
                "WINNOW_HOME": str(home),
                "WINNOW_BUCKET": name,
                "WINNOW_LEDGER_TABLE": name,
                "VOYAGE_API_KEY_SECRET_ARN": secret,
            }
            event = http_api_event("POST", "/search", body={"query": QUERY}, tenant=tenant, claim=claim)
            yield env, event
    finally:
        moto.ask("stop")
        moto.close()


def child(
    env: dict[str, str], event: dict[str, Any], at_init: bool, warm: int = WARM_REQUESTS
) -> dict[str, Any]:
    """One fresh search process: its init, first and warm request, and the AWS calls of each phase."""
    env = dict(env)
    if at_init:
        env["AWS_LAMBDA_INITIALIZATION_TYPE"] = "on-demand"
    else:
        env.pop("AWS_LAMBDA_INITIALIZATION_TYPE", None)
    result = run_child(_CHILD, [json.dumps(event), str(warm)], env)
    if result["status"] != 200 or result["results"] == 0:
        raise RuntimeError(f"the first search did not answer with results: {result}")
    return result


def run(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, aws_shape(Path(tmp) / "home") as (env, event):
        child(env, event, at_init=True, warm=1)  # untimed: fills the bytecode and page caches
        run_child(_QDRANT_CHILD, [], env)
        return measure(env, event, runs)


def measure(env: dict[str, str], event: dict[str, Any], runs: int) -> dict[str, Any]:
    """Medians of ``runs`` fresh processes of each kind, alternating, so load on a shared machine hits
    all alike."""
    rows: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    qdrant = []
    for _ in range(runs):
        rows["before"].append(child(env, event, at_init=False))
        rows["after"].append(child(env, event, at_init=True))
        qdrant.append(run_child(_QDRANT_CHILD, [], env))

    def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            **{
                field: round(statistics.median(r[field] for r in results), 1)
                for field in ("init_ms", "first_request_ms", "warm_request_ms", "peak_rss_mb")
            },
            "init_calls": results[-1]["init_calls"],
            "first_request_calls": results[-1]["first_request_calls"],
        }

    after = summary(rows["after"])
    baseline_ms = round(statistics.median(r["import_ms"] for r in qdrant), 1)
    ratio = (after["init_ms"] + after["first_request_ms"]) / baseline_ms
    return {
        "runs": runs,
        "before": summary(rows["before"]),
        "after": after,
        "qdrant_client_import_ms": baseline_ms,
        "ratio": round(ratio, 2),
        "goal_ratio": GOAL_INIT_RATIO,
        "meets_goal": ratio <= GOAL_INIT_RATIO,
    }


def _calls(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


def report(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            f"{r['init_ms']:.0f}",
            f"{r['first_request_ms']:.0f}",
            f"{r['warm_request_ms']:.1f}",
            f"{r['peak_rss_mb']:.0f}",
            _calls(r["init_calls"]),
            _calls(r["first_request_calls"]),
        ]
        for name, r in (
            ("before (built on first request)", result["before"]),
            ("after (built at init)", result["after"]),
        )
    ]
    return "\n".join(
        [
            f"search function cold start, median of {result['runs']} fresh processes (ms)",
            table(
                [
                    "",
                    "init",
                    "first request",
                    "warm",
                    "peak MB",
                    "AWS calls at init",
                    "AWS calls, 1st request",
                ],
                rows,
            ),
            f"init + first request (after) against `import qdrant_client` alone "
            f"({result['qdrant_client_import_ms']:.0f} ms): {result['ratio']:.2f}x, goal <= "
            f"{result['goal_ratio']}x: {'met' if result['meets_goal'] else 'NOT met'}",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.runs)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
