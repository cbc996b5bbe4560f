"""The ``winnow`` command end to end: its ``main`` in this process with its own WINNOW_HOME (a subprocess
where another process matters), the local ONNX model, Qdrant local mode, the SQLite ledger and the folder
bucket, through the real handlers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import LEAVE, InProcessWinnow, Winnow

pytestmark = pytest.mark.slow

INGEST_FIELDS = {"key", "status", "chunks", "embedded", "reused", "error"}
RESULT_FIELDS = {"rank", "score", "vector_score", "chunk_id", "key", "title", "page", "section", "text"}
RESULT_FIELDS |= {
    "metadata",
    "kind",
    "ocr",
    "figure_text",
    "image_url",
    "restricted",
    "access",
    "context",
    "highlight",
}

ROUTER = """Router setup

Connect the Orchard base station to your router with the grey ethernet cable, then hold the pairing
button for five seconds until the light blinks blue. The base station needs a 2.4 GHz network.
"""

ROUTER_DEBIAN = """Orchard base station for Debian
==============================

The Debian package starts the base station daemon at boot and keeps its log in /var/log/orchard.
"""

SPECS = """<html><head><title>Harvester specifications</title></head><body>
<h1>Harvester specifications</h1>
<h2>Battery</h2>
<p>The apple harvesting robot runs for nine hours on one charge of its 48 volt lithium battery.</p>
<h2>Speed</h2>
<p>It picks up to three thousand apples per hour in a well pruned orchard.</p>
</body></html>
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with nested documents in three formats and a text file of no format's name, a sidecar,
    and a hidden file to skip."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "policies").mkdir()
    (root / "product" / "hardware").mkdir(parents=True)
    (root / "policies" / "leave.md").write_text(LEAVE)
    (root / "policies" / "leave.md.metadata.json").write_text(
        json.dumps({"metadataAttributes": {"department": "people", "year": 2024}})
    )
    (root / "product" / "router.txt").write_text(ROUTER)
    (root / "product" / "README.Debian").write_text(ROUTER_DEBIAN)  # text under a name of no format
    (root / "product" / "hardware" / "specs.html").write_text(SPECS)
    (root / ".DS_Store").write_bytes(b"\x00\x01junk")
    return root


@pytest.fixture(scope="module")
def winnow(tmp_path_factory: pytest.TempPathFactory) -> Winnow:
    return InProcessWinnow(tmp_path_factory.mktemp("cli") / "home")


@pytest.fixture(scope="module")
def ingested(winnow: Winnow, corpus: Path) -> list[dict[str, Any]]:
    run = winnow("ingest", str(corpus), "--tenant", "acme", "--prefix", "kb/", "--json")
    assert run.code == 0, run.stderr
    return run.json_lines()


def test_ingest_folder_prints_one_json_object_per_document(ingested: list[dict[str, Any]]) -> None:
    # Given a folder with nested files, a sidecar and a hidden file, ingested with --json
    # Then there is one object per document (the sidecar and the hidden file are not documents),
    # each with exactly the documented fields and a key of <tenant>/<prefix><relative path>
    assert {r["key"] for r in ingested} == {
        "acme/kb/policies/leave.md",
        "acme/kb/product/router.txt",
        "acme/kb/product/README.Debian",
        "acme/kb/product/hardware/specs.html",
    }
    for result in ingested:
        assert set(result) == INGEST_FIELDS
        assert result["status"] == "indexed", result
        assert result["chunks"] >= 1
        assert result["embedded"] == result["chunks"]
        assert result["reused"] == 0
        assert result["error"] is None


def test_reingesting_unchanged_files_embeds_nothing(
    winnow: Winnow, corpus: Path, ingested: list[dict[str, Any]]
) -> None:
    # Given the folder was ingested already
    # When it is ingested again without changes
    run = winnow("ingest", str(corpus), "--tenant", "acme", "--prefix", "kb/", "--json")
    # Then every document is unchanged and nothing is embedded again
    assert run.code == 0, run.stderr
    results = run.json_lines()
    assert len(results) == len(ingested)
    assert {r["status"] for r in results} == {"unchanged"}
    assert sum(r["embedded"] for r in results) == 0


def test_search_finds_the_right_document_with_citations(winnow: Winnow, ingested: list[Any]) -> None:
    # Given the tenant's documents are indexed
    # When a question about parental leave is asked
    run = winnow("search", "How many weeks of paid parental leave do new parents get?", "--tenant", "acme")
    # Then the passage that answers it is shown with a citation line naming document, section and score
    assert run.code == 0, run.stderr
    blocks = run.stdout.split("\n\n")[1:]  # after the "N passages for ..." header
    answer = next(block for block in blocks if "eighteen weeks" in block)
    assert answer.startswith("[")
    citation = answer.strip().splitlines()[-1].strip()
    assert citation.startswith("-- kb/policies/leave.md, ")
    assert 'section "Length of leave"' in citation
    assert "score 0." in citation


def test_search_json_is_the_response_body(winnow: Winnow, ingested: list[Any]) -> None:
    run = winnow(
        "search", "how long does the harvester battery last", "--tenant", "acme", "--json", "--top-k", "2"
    )
    assert run.code == 0, run.stderr
    body = json.loads(run.stdout)
    assert set(body) >= {"query", "count", "relevant", "message", "results", "timings_ms"}
    assert body["relevant"] is True
    assert body["count"] == len(body["results"]) <= 2
    top = body["results"][0]
    assert top["key"] == "acme/kb/product/hardware/specs.html"
    assert set(top) == RESULT_FIELDS
    assert "nine hours" in top["text"]


def test_search_marks_each_results_highlighted_sentences(winnow: Winnow, ingested: list[Any]) -> None:
    import re

    # Given the results the API returns for a question, with the sentences the search core highlighted
    query = "How many weeks of paid parental leave do new parents get?"
    body = json.loads(winnow("search", query, "--tenant", "acme", "--json").stdout)
    assert body["results"] and all(r["highlight"] for r in body["results"]), body["results"]
    # When the same search prints for a reader (a pipe here: plain ** marks, no terminal codes)
    run = winnow("search", query, "--tenant", "acme")
    assert run.code == 0, run.stderr
    assert "\x1b[" not in run.stdout
    # Then each passage marks exactly its highlighted sentences, in text order
    blocks = run.stdout.split("\n\n")[1:]
    assert len(blocks) == len(body["results"])
    for block, result in zip(blocks, body["results"], strict=True):
        marked = [" ".join(m.split()) for m in re.findall(r"\*\*(.*?)\*\*", block, re.S)]
        spans = sorted((h["start"], h["end"]) for h in result["highlight"])
        assert marked == [" ".join(result["text"][a:b].split()) for a, b in spans]
    leave = next(block for block in blocks if "eighteen weeks" in block)
    assert "eighteen weeks" in leave.split("**")[1]  # the answering sentence is the one marked


def test_filters_reach_the_search(winnow: Winnow, ingested: list[Any]) -> None:
    # Given only the leave policy carries department=people (from its sidecar)
    # When a question matching another document is asked with that filter
    run = winnow(
        "search",
        "router pairing button",
        "--tenant",
        "acme",
        "--json",
        "--mode",
        "sparse",
        "--filter",
        "department=people",
        "--filter",
        "year>=2020",
        "--threshold",
        "0",
    )
    # Then only the filtered document can answer
    assert run.code == 0, run.stderr
    keys = {r["key"] for r in json.loads(run.stdout)["results"]}
    assert keys <= {"acme/kb/policies/leave.md"}
    # And a filter no document matches says so, instead of "nothing relevant"
    run = winnow("search", "router pairing button", "--tenant", "acme", "--filter", "department=legal")
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "No passages: --filter department=legal matched no documents of tenant acme."
    # While a filter that matches documents, none of them relevant, keeps the API's answer
    run = winnow(
        "search",
        "sourdough bread recipe",
        "--tenant",
        "acme",
        "--filter",
        "department=people",
        "--threshold",
        "1",
    )
    assert run.code == 0, run.stderr
    assert "No relevant passages found" in run.stdout


def test_documents_lists_statuses(winnow: Winnow, ingested: list[Any], tmp_path: Path) -> None:
    # Given a broken PDF next to the indexed documents
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\nthis is not really a pdf")
    run = winnow("ingest", str(broken), "--tenant", "acme", "--prefix", "kb/", "--json")
    # Then ingest reports it failed, with a reason, and exits non-zero
    assert run.code == 1
    [result] = run.json_lines()
    assert result["key"] == "acme/kb/broken.pdf"
    assert result["status"] == "failed"
    assert result["error"]
    # And the ledger lists every document with its status
    run = winnow("documents", "--tenant", "acme", "--json")
    assert run.code == 0, run.stderr
    statuses = {d["key"]: d["status"] for d in run.json_lines()}
    assert statuses["acme/kb/broken.pdf"] == "failed"
    assert statuses["acme/kb/policies/leave.md"] == "indexed"
    # And the human listing shows names and statuses
    run = winnow("documents", "--tenant", "acme")
    assert run.code == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if "kb/broken.pdf" in line)
    assert line.startswith("failed")


def test_delete_removes_the_document_from_search(winnow: Winnow, tmp_path: Path) -> None:
    # Given a tenant with one document
    doc = tmp_path / "tides.md"
    doc.write_text("# Tide tables\n\nHigh tide at Porthmeor beach is at 14:32 on the first of June.\n")
    assert winnow("ingest", str(doc), "--tenant", "deltest").code == 0
    found = winnow("search", "when is high tide at Porthmeor", "--tenant", "deltest", "--json")
    assert json.loads(found.stdout)["results"][0]["key"] == "deltest/tides.md"
    # When it is deleted
    run = winnow("delete", "deltest/tides.md", "--json")
    # Then the delete event ran, and the document is gone from search and marked deleted in the ledger
    assert run.code == 0, run.stderr
    [result] = run.json_lines()
    assert (result["key"], result["status"]) == ("deltest/tides.md", "deleted")
    gone = winnow(
        "search", "when is high tide at Porthmeor", "--tenant", "deltest", "--json", "--threshold", "0"
    )
    assert json.loads(gone.stdout)["results"] == []
    listed = winnow("documents", "--tenant", "deltest", "--json").json_lines()
    assert all(d["status"] == "deleted" for d in listed if d["key"] == "deltest/tides.md")
    # And the listing's summary does not count the deleted document as one of the tenant's documents
    summary = winnow("documents", "--tenant", "deltest").stderr.strip().splitlines()[-1]
    assert summary == "0 documents for tenant deltest (and 1 deleted)"
    # And deleting it again says what to do
    again = winnow("delete", "deltest/tides.md")
    assert again.code == 1
    assert "no object 'deltest/tides.md'" in again.stderr


def test_delete_refuses_a_key_whose_first_segment_is_no_tenant(winnow: Winnow) -> None:
    # Given keys whose first segment breaks the tenant rule (no --tenant to fill it in)
    for key in ("no tenant/x.md", "/x.md", "x.md"):
        # When one is deleted
        run = winnow("delete", key)
        # Then the CLI says it is not a full key, and never suggests listing a tenant that cannot exist
        assert run.code == 1
        [line] = run.stderr.strip().splitlines()
        assert "is not a full key" in line, line


def test_invalid_request_exits_non_zero_with_the_api_message(winnow: Winnow, ingested: list[Any]) -> None:
    # Given a top_k the API refuses (the CLI passes it through)
    for top_k in ("51", "0"):
        run = winnow("search", "parental leave", "--tenant", "acme", "--top-k", top_k)
        # Then the 422's message, in the command's own terms, is one line and the exit status is 1
        # (0 and 51 alike: no usage screen for one and an API error for the other)
        assert run.code == 1
        assert run.stdout == ""
        [line] = run.stderr.strip().splitlines()
        assert line.startswith("winnow: --top-k: "), line
    # And an empty query names the argument, without pydantic's "Value error, " prefix
    run = winnow("search", "   ", "--tenant", "acme")
    assert run.code == 1
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("winnow: QUERY: ") and "Value error" not in line, line
    # And with --json the body is still printed as the client would receive it
    run = winnow("search", "parental leave", "--tenant", "acme", "--top-k", "51", "--json")
    assert run.code == 1
    assert json.loads(run.stdout)["error"]["code"] == "validation_error"


def test_bad_filter_syntax_says_which_forms_work(winnow: Winnow) -> None:
    run = winnow("search", "anything", "--filter", "department")
    assert run.code == 1
    assert run.stderr.strip() == (
        "winnow: bad filter 'department': use FIELD=VALUE (repeat for any-of), FIELD>=NUMBER or FIELD<=NUMBER"
    )


def test_unknown_tenant_names_the_state_folder_and_says_how_to_add_documents(
    winnow: Winnow, ingested: list[Any]
) -> None:
    run = winnow("search", "parental leave", "--tenant", "nobody")
    assert run.code == 1
    assert run.stderr.strip() == (
        f"winnow: no documents for tenant nobody in {winnow.home.resolve()} (WINNOW_HOME); ingest some with "
        "`winnow ingest PATH --tenant nobody`, or run from the folder you ingested in"
    )


def test_a_home_held_by_another_process_says_which_and_what_to_do(
    winnow: Winnow, ingested: list[Any]
) -> None:
    # Given another process (as `winnow serve` would) holding the home's Qdrant Edge folder
    from winnow_local.adapters.qdrant_edge import EdgeFolder

    holder = EdgeFolder(str(winnow.home / "qdrant"))
    try:
        run = Winnow(winnow.home)("search", "parental leave", "--tenant", "acme")
    finally:
        holder.close()
    # Then one line names the folder and the documented way out, not an undocumented variable
    assert run.code == 1
    [line] = run.stderr.strip().splitlines()
    assert "in use by another process" in line and "WINNOW_HOME" in line
    assert "QDRANT_PATH" not in line


def test_missing_model_files_say_run_make_install(tmp_path: Path) -> None:
    # Given a model path that does not exist
    winnow = InProcessWinnow(
        tmp_path / "home", WINNOW_LOCAL_MODEL_PATH=str(tmp_path / "missing" / "model.onnx")
    )
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\nSome text about apples and pears in the orchard.\n")
    # When ingesting or searching
    for run in (winnow("ingest", str(doc)), winnow("search", "apples")):
        # Then one line says what to do, and nothing crashes with a traceback
        assert run.code == 1
        [line] = run.stderr.strip().splitlines()
        assert line.startswith("winnow: ")
        assert "run `make install`" in line


def test_missing_path_is_one_line(winnow: Winnow, tmp_path: Path) -> None:
    run = winnow("ingest", str(tmp_path / "nope"))
    assert run.code == 1
    assert run.stderr.strip() == f"winnow: no such file or folder: {tmp_path / 'nope'}"


def test_reconcile_repairs_a_lost_delete(winnow: Winnow, tmp_path: Path) -> None:
    # Given two indexed documents, one of whose objects vanished without a delete event
    (tmp_path / "ferry.md").write_text(
        "# Ferry timetable\n\nThe first ferry to Lundy leaves Bideford quay at 08:15 on Tuesdays.\n"
    )
    (tmp_path / "bus.md").write_text("# Bus timetable\n\nThe number 21 bus leaves the harbour every hour.\n")
    assert winnow("ingest", str(tmp_path), "--tenant", "recon").code == 0
    (winnow.home / "bucket" / "recon" / "ferry.md").unlink()
    # When reconcile runs as a dry run
    dry = winnow("reconcile", "--tenant", "recon", "--dry-run", "--json")
    # Then it reports the delete it would make and changes nothing
    assert dry.code == 0, dry.stderr
    [stats] = dry.json_lines()
    assert (stats["dry_run"], stats["deleted"]) == (True, 1)
    listed = {d["key"]: d["status"] for d in winnow("documents", "--tenant", "recon", "--json").json_lines()}
    assert listed == {"recon/ferry.md": "indexed", "recon/bus.md": "indexed"}
    # When it runs for real
    run = winnow("reconcile", "--tenant", "recon")
    # Then the document is gone from the index, and the summary says so
    assert run.code == 0, run.stderr
    assert run.stdout.startswith("reconciled tenant recon: 1 scanned")
    assert "1 deleted" in run.stdout
    gone = winnow("search", "first ferry to Lundy", "--tenant", "recon", "--json", "--threshold", "0")
    assert {r["key"] for r in json.loads(gone.stdout)["results"]} == {"recon/bus.md"}


def test_search_prints_a_table_passage_as_a_table(tmp_path: Path) -> None:
    # Given a Markdown document whose answer is a row of a table
    runner = InProcessWinnow(tmp_path / "home")
    (tmp_path / "status.md").write_text(
        "# HTTP status codes\n\n"
        "| Code | Enum Name | Details |\n|---|---|---|\n"
        "| 451 | UNAVAILABLE_FOR_LEGAL_REASONS | Unavailable for legal reasons |\n"
        "| 500 | INTERNAL_SERVER_ERROR | Internal server error |\n"
        "| 503 | SERVICE_UNAVAILABLE | Service unavailable |\n"
    )
    assert runner("ingest", str(tmp_path / "status.md"), "--tenant", "acme").code == 0
    # When it is searched
    run = runner("search", "which status code is unavailable for legal reasons", "--tenant", "acme")
    # Then the passage is a header, a rule and one row a line, not the rows run together
    assert run.code == 0, run.stderr
    lines = run.stdout.split("\n")
    header = next(i for i, line in enumerate(lines) if line.split("|")[0].strip() == "Code")
    assert [c.strip() for c in lines[header].split("|")] == ["Code", "Enum Name", "Details"]
    assert set(lines[header + 1].strip()) <= {"-", "+"}
    rows = [line.split("|")[0].strip() for line in lines[header + 2 : header + 5]]
    assert rows == ["> 451", "500", "503"]  # and the row that answers is marked (a pipe: ">")
    assert "Columns:" not in run.stdout


def test_demo_json_prints_one_json_line_per_document_and_per_question(tmp_path: Path) -> None:
    # Given a fresh home, when the demo runs with --json (the README says every such command has it)
    run = InProcessWinnow(tmp_path / "home")("demo", "--json")
    assert run.code == 0, run.stderr
    # Then stdout is JSON lines only: the documents as `winnow ingest --json` prints them, all indexed
    lines = run.json_lines()
    documents = [line for line in lines if "status" in line]
    questions = [line for line in lines if "query" in line]
    assert len(documents) + len(questions) == len(lines)
    assert documents and all(set(d) == INGEST_FIELDS and d["status"] == "indexed" for d in documents)
    # and each question with the API's response: the expected document first, nothing for the last
    *answered, nothing = questions
    for question in answered:
        assert question["response"]["results"][0]["key"] == question["expected_key"], question["query"]
    assert nothing["expected_key"] is None and nothing["response"]["relevant"] is False


def test_user_and_groups_say_who_is_asking(winnow: Winnow, tmp_path: Path) -> None:
    # Given a board memo readable by ann and the board group only, ingested from a folder with its sidecar
    folder = tmp_path / "board"
    folder.mkdir()
    (folder / "memo.md").write_text("# Board memo\n\nThe quokka merger closes in the spring.\n")
    (folder / "memo.md.metadata.json").write_text('{"access": {"users": ["ann"], "groups": ["board"]}}')
    assert winnow("ingest", str(folder), "--tenant", "board25", "--json").code == 0

    def keys(*who: str) -> tuple[set[str], set[str]]:
        query = ("search", "when does the quokka merger close", "--tenant", "board25", "--json")
        run = winnow(*query, "--threshold", "0", *who)
        listed = winnow("documents", "--tenant", "board25", "--json", *who)
        found = {r["key"] for r in json.loads(run.stdout)["results"]} if run.stdout.strip() else set()
        return found, {d["key"] for d in listed.json_lines()}

    memo = {"board25/memo.md"}
    # When nobody is named, Then the memo is neither found nor listed; as ann, or a board member, it is
    assert keys() == (set(), set())
    assert keys("--user", "ann") == (memo, memo)
    assert keys("--groups", "legal,board") == (memo, memo)
