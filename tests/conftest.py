"""How tests run: ``make test`` runs them on two worker processes a core (pytest-xdist,
``-n 4 --dist loadfile`` here):
each module runs whole, in order, on one worker, so its module-scoped fixtures are built once; session
fixtures are built once per worker. Modules marked ``pytestmark = pytest.mark.slow`` start first (see
``pytest_collection_modifyitems``), so a long module never starts last. Every test must hold on any worker
in any module order: servers bind port 0, files go under ``tmp_path``/``tmp_path_factory``, environment
changes go through ``monkeypatch`` (never ``os.environ[...] =``), and a test reads no state another module
left.

Shared fixtures live in ``tests/support/<area>.py`` pytest plugins, one owner per area:
- ``tests.support.aws``: moto over HTTP (ThreadedMotoServer), S3 bucket, DynamoDB ledger table, SQS queue.
- ``tests.support.voyage``: the loopback fake Voyage server.
- ``tests.support.documents``: real PDF / DOCX / HTML / Markdown files generated for tests.
- ``tests.support.answer``: loopback fake Bedrock runtime and Ollama servers, stacks that answer through them.
- ``tests.support.textract``: the loopback fake Amazon Textract.
- ``tests.support.browser``: headless Chromium (one per worker, ``browser`` resets it for each module) and
  the page tests' steps.
- ``tests.support.template``: template.yaml and events/ read as CloudFormation would, ``clean_settings_env``.
- ``tests.support.stack``: a whole embedded Winnow (local bucket, SQLite ledger, Qdrant local mode) wired to
  the real handlers.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import settings

# CI and `make test` run every property test on the same examples, so a red run is reproducible and never
# luck; `HYPOTHESIS_PROFILE=explore make pytest` draws new examples to look for defects. Neither times an
# example (Hypothesis's default 200 ms deadline fails a correct test when the machine is busy).
settings.register_profile("repeatable", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# Tests must never reach real AWS or real Voyage, whatever the developer's shell exports.
for _name in ("VOYAGE_API_KEY", "QDRANT_URL", "QDRANT_API_KEY", "WINNOW_BUCKET", "WINNOW_LEDGER_TABLE"):
    os.environ.pop(_name, None)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "WinnowTest")

# Files tests write (tmp_path, Qdrant Edge's ":memory:" folders, the SAM builds, subprocesses' temp files)
# go to /dev/shm where there is one, unless TMPDIR names a place: Edge syncs each write to disk, and on a
# busy disk those syncs, not the work, took most of the time (test_uploads.py: 75 s on disk, 11 s in
# memory). Nothing a test checks depends on the disk; `TMPDIR=/tmp make pytest` runs them on disk. A small
# /dev/shm (a container's default is 64 MB) is not used: one Edge test holds about 660 MB while it runs.
_SHM_NEEDED = 8 * 1024**3


def _roomy_shm() -> bool:
    try:
        stats = os.statvfs("/dev/shm")
    except OSError:
        return False
    return os.access("/dev/shm", os.W_OK | os.X_OK) and stats.f_bavail * stats.f_frsize >= _SHM_NEEDED


if not os.environ.get("TMPDIR") and _roomy_shm():
    os.environ["TMPDIR"] = "/dev/shm"
    tempfile.tempdir = None  # pytest's capture already asked: forget its answer

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with a slow test first, each module's tests together and in their written order: with
    ``--dist loadfile`` the workers take modules in this order, so the long ones start while short ones
    fill in around them."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules, items and fixtures collected live to the end of the run: frozen, the cyclic
    collector no longer walks them at each full collection."""
    gc.freeze()


@pytest.fixture(autouse=True, scope="module")
def _module_leaves_no_process_state() -> Iterator[None]:
    """What one module changes in the process (environment variables, the process-wide container) is undone
    before the next module runs, whichever modules share a worker: benchmarks run in process set
    WINNOW_HOME and build containers of their own."""
    from winnow.factory import set_container

    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)
    set_container(None)
