"""Shared fixtures live in ``tests/support/<area>.py`` pytest plugins, one owner per area:
- ``tests.support.aws``: moto over HTTP (ThreadedMotoServer), S3 bucket, DynamoDB ledger table, SQS queue.
- ``tests.support.voyage``: the loopback fake Voyage server.
- ``tests.support.documents``: real PDF / DOCX / HTML / Markdown files generated for tests.
- ``tests.support.answer``: loopback fake Bedrock runtime and Ollama servers, stacks that answer through them.
- ``tests.support.textract``: the loopback fake Amazon Textract.
- ``tests.support.browser``: headless Chromium (``browser``) and the page tests' steps.
- ``tests.support.template``: template.yaml and events/ read as CloudFormation would, ``clean_settings_env``.
- ``tests.support.stack``: a whole embedded Winnow (local bucket, SQLite ledger, Qdrant local mode) wired to
  the real handlers.
"""

from __future__ import annotations

import importlib.util
import os

from hypothesis import settings

# CI and `make test` run every property test on the same examples, so a red run is reproducible and never
# luck; `HYPOTHESIS_PROFILE=explore make pytest` draws new examples to look for defects.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# Tests must never reach real AWS or real Voyage, whatever the developer's shell exports.
for _name in ("VOYAGE_API_KEY", "QDRANT_URL", "QDRANT_API_KEY", "WINNOW_BUCKET", "WINNOW_LEDGER_TABLE"):
    os.environ.pop(_name, None)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "WinnowTest")

pytest_plugins = [
    name
    for name in (
        "tests.support.aws",
        "tests.support.voyage",
        "tests.support.documents",
        "tests.support.stack",
        "tests.support.answer",
        "tests.support.textract",
        "tests.support.template",
        "tests.support.browser",
    )
    if importlib.util.find_spec(name) is not None
]
