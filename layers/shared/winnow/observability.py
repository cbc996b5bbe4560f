"""The one place that builds Powertools' Logger, Tracer and Metrics, so every function logs, traces and
counts the same way. Outside Lambda (tests, CLI) tracing is off and metrics are flushed to nowhere unless
a handler decorates itself."""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "winnow")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Winnow")

_in_lambda = "AWS_LAMBDA_FUNCTION_NAME" in os.environ
if not _in_lambda:
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

__all__ = ["MetricUnit", "logger", "metrics", "tracer"]
