"""The one place that builds Powertools' Logger, Tracer and Metrics, so every function logs, traces and
counts the same way.

Outside Lambda (CLI, local server, tests) tracing and metric flushing are off and logs go to stderr at
WARNING unless ``POWERTOOLS_LOG_LEVEL`` says otherwise, so that ``winnow ... --json`` output on stdout
stays machine-readable."""

from __future__ import annotations

import logging
import os
import sys

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "winnow")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Winnow")
IN_LAMBDA = "AWS_LAMBDA_FUNCTION_NAME" in os.environ

if not IN_LAMBDA:
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    logger = Logger(
        service=SERVICE,
        level=os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
        logger_handler=logging.StreamHandler(sys.stderr),
    )
else:
    logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

__all__ = ["IN_LAMBDA", "MetricUnit", "logger", "metrics", "tracer"]
