"""The one place that builds Powertools' Logger, Tracer and Metrics, so every function logs, traces and
counts the same way.

Outside Lambda (CLI, local server, tests) tracing and metric flushing are off and logs go to stderr at
WARNING unless ``POWERTOOLS_LOG_LEVEL`` says otherwise, so that ``winnow ... --json`` output on stdout
stays machine-readable.

When tracing is off, handlers get a no-op tracer: Powertools' Tracer imports the X-Ray SDK (and botocore)
even when disabled, a cost every cold start would pay for nothing (training/NOTEBOOK.md). In Lambda with
tracing on (the template's ``Tracing: Active``) the real Tracer is used."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "winnow")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Winnow")
IN_LAMBDA = "AWS_LAMBDA_FUNCTION_NAME" in os.environ


def outside_lambda_defaults() -> None:
    """Tracing and metric flushing off unless the environment says otherwise: what a process outside
    Lambda gets when it imports this module (a command running in an existing process asks again)."""
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")


if not IN_LAMBDA:
    outside_lambda_defaults()
    logger = Logger(
        service=SERVICE,
        level=os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
        logger_handler=logging.StreamHandler(sys.stderr),
    )
else:
    logger = Logger(service=SERVICE)

TRACING = os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").lower() not in ("1", "true", "yes")

F = TypeVar("F", bound=Callable[..., Any])


class NoopTracer:
    """The subset of Powertools' Tracer our handlers use, doing nothing."""

    def capture_lambda_handler(self, handler: F) -> F:
        return handler

    def capture_method(self, method: F) -> F:
        return method

    def put_annotation(self, key: str, value: Any) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str | None = None) -> None:
        return None


def _tracer() -> Any:
    if not TRACING:
        return NoopTracer()
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE)


tracer: Any = _tracer()


class _Metrics(Metrics):
    """Powertools' Metrics, recording nothing while metrics are disabled (the CLI, the local server):
    Powertools prints a set that reaches 100 values as EMF on stdout even then, which broke
    ``winnow ingest --json`` output on a folder of more than 100 documents."""

    def add_metric(self, name: str, unit: Any, value: float, resolution: Any = 60) -> None:
        if is_metrics_disabled():
            return
        super().add_metric(name=name, unit=unit, value=value, resolution=resolution)


metrics = _Metrics(namespace=NAMESPACE, service=SERVICE)

__all__ = ["IN_LAMBDA", "TRACING", "MetricUnit", "NoopTracer", "logger", "metrics", "tracer"]
