"""Tracing costs a cold start only where it traces: the X-Ray SDK is imported in Lambda with tracing on,
and never by the CLI, the local server or tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = (
    "import json, sys; import functions.search.app; from winnow import observability as o; "
    "print(json.dumps({'tracer': type(o.tracer).__name__, 'xray': 'aws_xray_sdk' in sys.modules}))"
)


def _probe(**env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_LAMBDA_"))}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_outside_lambda_the_xray_sdk_is_never_imported() -> None:
    assert _probe() == {"tracer": "NoopTracer", "xray": False}


def test_in_lambda_with_tracing_the_real_tracer_is_used() -> None:
    assert _probe(AWS_LAMBDA_FUNCTION_NAME="winnow-search") == {"tracer": "Tracer", "xray": True}


def test_in_lambda_with_tracing_disabled_no_sdk_is_loaded() -> None:
    probe = _probe(AWS_LAMBDA_FUNCTION_NAME="winnow-search", POWERTOOLS_TRACE_DISABLED="true")
    assert probe == {"tracer": "NoopTracer", "xray": False}


METRICS_PROBE = (
    "from winnow.observability import metrics\n"
    "for _ in range(150):\n"
    "    metrics.add_metric(name='DocumentsIndexed', unit='Count', value=1)\n"
)


def _stdout(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_LAMBDA_"))}
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    ).stdout


def test_outside_lambda_many_metrics_print_nothing_on_stdout() -> None:
    # Given the CLI's process (metrics disabled), a batch ingest adding 150 values to one metric
    # Then stdout, where `winnow ingest --json` writes its results, gets no EMF blob at the 100th
    assert _stdout(METRICS_PROBE) == ""


def test_with_metrics_enabled_a_full_set_is_still_published_as_emf() -> None:
    out = _stdout(METRICS_PROBE, POWERTOOLS_METRICS_DISABLED="false")
    assert json.loads(out.splitlines()[0])["DocumentsIndexed"] == [1.0] * 100
