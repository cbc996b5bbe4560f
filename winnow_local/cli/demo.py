"""``winnow demo``: ingest the samples we ship and ask them a few questions, through the real handlers.

The samples describe Tidewell, a fictional company, and its Beacon air-quality monitor: a handbook (remote
work, parental leave, travel and expenses), product docs (setup, troubleshooting, specifications and
warranty) and an engineering runbook, in Markdown, plain text, HTML, DOCX and PDF. The DOCX and the PDF
are rendered at run time from ``sample_sources/`` (see ``winnow_local.docgen``), so no binaries live in git.

Everything goes to one tenant (``demo``) under ``WINNOW_HOME``; nothing else is touched, and re-running
re-indexes nothing because the staged files are byte-identical.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from winnow.rules import object_key
from winnow_local.cli.common import FAILED_STATUSES, print_json
from winnow_local.cli.ingest import collect_files, ingest_files, summary
from winnow_local.cli.search import print_search_results
from winnow_local.docgen import render
from winnow_local.errors import CliError
from winnow_local.runtime import LocalRuntime

SAMPLES_DIR = Path(__file__).parents[1] / "samples"
SOURCES_DIR = Path(__file__).parents[1] / "sample_sources"
# Generated at run time: staged path → (source in sample_sources/, format).
GENERATED = {
    "handbook/travel-and-expenses.docx": ("travel-and-expenses.txt", "docx"),
    "product/beacon-specs-and-warranty.pdf": ("beacon-specs-and-warranty.txt", "pdf"),
}


@dataclass(frozen=True)
class DemoQuery:
    query: str
    expected: str | None  # the document the answer should come from, None when nothing is relevant
    filters: dict[str, Any] = field(default_factory=dict)


QUERIES = (
    DemoQuery("How long is the warranty on the Beacon?", "product/beacon-specs-and-warranty.pdf"),
    DemoQuery("What does a blinking amber light mean?", "product/beacon-troubleshooting.html"),
    DemoQuery("How much is the home office stipend?", "handbook/remote-work.md", {"department": "people"}),
    DemoQuery("When do I have to submit my expense receipts?", "handbook/travel-and-expenses.docx"),
    DemoQuery("How many weeks of paid leave do new parents get?", "handbook/parental-leave.txt"),
)
NOTHING_RELEVANT = DemoQuery("What is the best recipe for sourdough bread?", None)


def stage_samples(target: Path) -> Path:
    """Copy the shipped samples into ``target`` and render the generated formats next to them."""
    target.mkdir(parents=True, exist_ok=True)
    for source in sorted(SAMPLES_DIR.rglob("*")):
        if source.is_file() and "__pycache__" not in source.parts:
            destination = target / source.relative_to(SAMPLES_DIR)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
    for relative, (source_name, fmt) in GENERATED.items():
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        data = render((SOURCES_DIR / source_name).read_text(encoding="utf-8"), fmt)
        if not destination.exists() or destination.read_bytes() != data:
            destination.write_bytes(data)
    return target


def _command(query: DemoQuery, tenant: str) -> str:
    filters = "".join(f" --filter {name}={value}" for name, value in query.filters.items())
    return f'$ winnow search "{query.query}" --tenant {tenant} --top-k 2{filters}'


def run_demo(tenant: str = "demo", out: IO[str] | None = None, *, as_json: bool = False) -> int:
    """Stage, ingest and query; 0 when every step worked. ``as_json``: one JSON line per document (as
    ``winnow ingest --json``), then one per question, ``{"query", "filters", "expected_key",
    "response"}`` with the search API's response body."""
    from winnow.factory import get_container

    out = out or sys.stdout
    say = io.StringIO() if as_json else out  # the narration, dropped when the output is JSON
    home = get_container().settings.storage.home.resolve()
    staged = stage_samples(home / "demo-samples")
    runtime = LocalRuntime()

    print(f"Winnow demo: tenant {tenant!r}, state in {home}\n", file=say)
    files = collect_files([str(staged)], tenant, "")
    print(
        f"1. Ingesting {len(files)} sample documents (Markdown, text, HTML, DOCX, PDF) from {staged}",
        file=say,
    )
    results = ingest_files(runtime, files, as_json=as_json, out=out)
    print(f"   {summary(results)}", file=say)
    if any(r.get("status") in FAILED_STATUSES for r in results):
        print("winnow: some samples failed to index (see above)", file=sys.stderr)
        return 1

    print("\n2. Asking questions the samples answer", file=say)
    for query in (*QUERIES, NOTHING_RELEVANT):
        if query is NOTHING_RELEVANT:
            print("\n3. Asking about something the samples do not cover", file=say)
        print(f"\n{_command(query, tenant)}", file=say)
        body: dict[str, Any] = {"query": query.query, "top_k": 2}
        if query.filters:
            body["filters"] = query.filters
        response = runtime.call_api("POST", "/search", body=body, tenant=tenant)
        if response.status >= 400:
            raise CliError(response.error_message)
        if as_json:
            expected = object_key(tenant, query.expected) if query.expected else None
            line = {"query": query.query, "filters": query.filters, "expected_key": expected}
            print_json(line | {"response": response.json()}, out)
        else:
            print_search_results(response.json(), tenant, out)

    winnow, activate = winnow_command()
    print(
        f"\nNext: `{winnow} serve` and open http://127.0.0.1:3000/?tenant={tenant}, "
        f'or try `{winnow} search "..." --tenant {tenant}` and `{winnow} documents --tenant {tenant}`'
        f"{activate}.",
        file=say,
    )
    return 0


def winnow_command(
    executable: str | None = None, path: str | None = None, cwd: str | None = None
) -> tuple[str, str]:
    """How to type ``winnow`` from here: the bare name when it is on PATH, else the virtual environment's
    script (``.venv/bin/winnow`` after ``make demo``), with how to activate that environment."""

    script = Path(executable or sys.executable).parent / "winnow"
    on_path = shutil.which("winnow", path=path)
    if not script.exists() or (on_path and Path(on_path).resolve() == script.resolve()):
        return "winnow", ""
    try:
        shown = os.path.relpath(script, cwd or os.getcwd())
    except ValueError:  # another drive
        shown = str(script)
    if shown.startswith(".."):
        shown = str(script)
    activate = Path(shown).parent / "activate"
    return shown, f" (or `source {activate}` first, then type just `winnow`)"
