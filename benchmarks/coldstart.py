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
clock starts in both, to count them: its import is left out of both figures). Medians of ``--runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.common import table

REPO_ROOT = Path(__file__).resolve().parents[1]

WARM_REQUESTS = 20
DOCUMENTS = {
    "holidays.txt": "Every employee receives twenty-eight days of paid holiday per year.",
    "travel.txt": "Travel expenses are reimbursed within fourteen days when submitted with receipts.",
    "laptops.txt": "Laptops must use full-disk encryption and lock after five minutes.",
    "canteen.txt": "Lentil soup is served with rye bread on Mondays in the staff canteen.",
}
QUERY = "how are travel expenses reimbursed"

_CHILD = r"""
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
}))
"""


@contextmanager
def aws_shape(home: Path) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    """moto and the Voyage fake on loopback, a small index in ``home``: the child's environment and the
    search event."""
    import boto3
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    from benchmarks.stack import EmbeddedStack, patched_environ
    from winnow.adapters._aws import key_value_table
    from winnow_fakes.fake_voyage import FakeVoyageServer
    from winnow_local.apigw import http_api_event

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    aws = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
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
            env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("WINNOW_", "QDRANT_", "VOYAGE_", "AWS_"))
                and k != "PYTHONDONTWRITEBYTECODE"
            }
            env.update(aws)
            env.update(voyage)
            env.update(
                {
                    "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "layers" / "shared"), str(REPO_ROOT)]),
                    "WINNOW_HOME": str(home),
                    "WINNOW_BUCKET": name,
                    "WINNOW_LEDGER_TABLE": name,
                    "VOYAGE_API_KEY_SECRET_ARN": secret,
                }
            )
            event = http_api_event("POST", "/search", body={"query": QUERY}, tenant=tenant, claim=claim)
            yield env, event
    finally:
        server.stop()


def child(
    env: dict[str, str], event: dict[str, Any], at_init: bool, warm: int = WARM_REQUESTS
) -> dict[str, Any]:
    """One fresh search process: its init, first and warm request, and the AWS calls of each phase."""
    env = dict(env)
    if at_init:
        env["AWS_LAMBDA_INITIALIZATION_TYPE"] = "on-demand"
    else:
        env.pop("AWS_LAMBDA_INITIALIZATION_TYPE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(event), str(warm)],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child process failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["status"] != 200 or result["results"] == 0:
        raise RuntimeError(f"the first search did not answer with results: {result}")
    return result


def run(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, aws_shape(Path(tmp) / "home") as (env, event):
        child(env, event, at_init=True, warm=1)  # untimed: fills the bytecode and page caches
        rows: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for _ in range(runs):  # alternating, so load on a shared machine hits both alike
            rows["before"].append(child(env, event, at_init=False))
            rows["after"].append(child(env, event, at_init=True))

    def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            **{
                field: round(statistics.median(r[field] for r in results), 1)
                for field in ("init_ms", "first_request_ms", "warm_request_ms")
            },
            "init_calls": results[-1]["init_calls"],
            "first_request_calls": results[-1]["first_request_calls"],
        }

    return {"runs": runs, "before": summary(rows["before"]), "after": summary(rows["after"])}


def _calls(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


def report(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            f"{r['init_ms']:.0f}",
            f"{r['first_request_ms']:.0f}",
            f"{r['warm_request_ms']:.1f}",
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
                ["", "init", "first request", "warm request", "AWS calls at init", "AWS calls, 1st request"],
                rows,
            ),
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
