"""The scale benchmarks' entry points on tiny inputs: they print the promised JSON with sane figures and
check their own results (full runs and their figures: training/NOTEBOOK.md)."""

from __future__ import annotations

import json

import pytest

from benchmarks import reconcile_scale, scale

pytestmark = pytest.mark.slow


def test_scale_prints_latency_and_memory_on_edge(capsys: pytest.CaptureFixture[str]) -> None:
    # When the scale benchmark loads 300 synthetic chunks over two tenants and times 20 queries per mode
    assert scale.main(["--json", "--quiet", "--chunks", "300", "--tenants", "2", "--queries", "20"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then the promised keys are there, for Edge and this size
    assert result["chunks"] == 300 and result["engine"] == "edge"
    assert result["tenant_chunks"] == 150
    assert 0 < result["hybrid_p50_ms"] <= result["hybrid_p95_ms"]
    assert result["peak_rss_mb"] >= result["loaded_rss_mb"] > 0
    # And every mode ran its queries and found candidates in the searched tenant only
    for mode in ("sparse", "dense", "hybrid"):
        figures = result["search"][mode]
        assert figures["queries"] == 20
        assert 0 < figures["mean_hits"] <= 15
    assert result["meets_goal"] == (result["hybrid_p50_ms"] <= 25.0)


def test_scale_times_hybrid_with_and_without_the_access_filter(capsys: pytest.CaptureFixture[str]) -> None:
    # When the scale benchmark runs its access scenario on 400 chunks
    argv = ["--json", "--quiet", "--chunks", "400", "--queries", "20", "--access"]
    assert scale.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    # Then hybrid was timed with callers' read conditions too, against the same run's unfiltered p50
    access = result["access"]
    filtered = result["search"]["hybrid+access"]
    assert filtered["queries"] == 20 and 0 < access["hybrid_p50_ms"] <= access["hybrid_p95_ms"]
    assert access["p50_ratio"] == round(access["hybrid_p50_ms"] / result["hybrid_p50_ms"], 2)
    # and the filtered search still fills the candidate list: 400 chunks hold more readable ones than 15
    assert filtered["mean_hits"] == 15
    assert access["groups"] == 1000 and access["caller_groups"] == [1, 20]


def test_scale_refuses_more_tenants_than_chunks(capsys: pytest.CaptureFixture[str]) -> None:
    assert scale.main(["--quiet", "--chunks", "5", "--tenants", "6"]) == 2
    assert "--tenants" in capsys.readouterr().err


def test_reconcile_scale_finds_every_planted_case_and_reports_memory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When the reconcile benchmark runs on 100 documents with planted drift, through moto over HTTP (in a
    # child process, with a consumer draining the ingest queue)
    assert reconcile_scale.main(["--json", "--quiet", "--objects", "100"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then it found exactly what was planted, and one event per document to (re)index or remove came
    # through the queue
    assert result["correct"] is True
    assert (
        result["found"]
        == result["planted"]
        == {
            "unchanged": 90,
            "new": 5,
            "modified": 3,
            "deleted": 1,
            "orphans": 1,
        }
    )
    assert result["queued"] == 9 and result["events_as_planted"] is True
    assert result["objects_per_s"] > 0 and result["cpu_seconds"] >= 0
    assert result["run_peak_rss_mb"] is None or result["run_peak_rss_mb"] >= result["rss_before_mb"] > 0


def test_ingest_scale_compares_the_concurrent_schedule_with_todays_and_loses_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pathlib import Path

    from benchmarks import ingest_scale

    bundled = Path(__file__).resolve().parents[1] / "data" / "scifact"
    # When the bulk-ingest benchmark sends 12 abstracts and one long document through the real handler
    # (moto and the simulated Voyage in child processes), with a short simulated latency
    argv = ["--json", "--quiet", "--docs", "12", "--long", "1", "--concurrency", "4"]
    argv += ["--scifact", str(bundled), "--base-latency", "0.02"]
    assert ingest_scale.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    # Then both schedules ingested all 13 documents: none lost, none doubled, no record failed
    assert result["docs"] == 13 and result["lost"] == 0 and result["duplicated"] == 0
    assert result["failed_records"] == 0
    for run in result["runs"].values():
        assert run["chunks"] >= 13 and run["invocations"] == 2  # batches of 10: 10 + 3
        # the handler's S3 and DynamoDB requests are counted: one GET per new document, among others
        assert run["aws_requests"]["s3:GetObject"] == 13
        assert run["aws_requests_per_doc"] == pytest.approx(sum(run["aws_requests"].values()) / 13, abs=0.01)
    # And today's schedule sends one embedding request per document, the gathered one fewer
    baseline = result["runs"]["baseline"]
    assert baseline["voyage_requests"] == 13 and baseline["requests_per_doc"] == 1.0
    others = [run for name, run in result["runs"].items() if name != "baseline"]
    assert others and all(run["voyage_requests"] < 13 for run in others)
    # And the promised figures are there
    assert result["runs"]["baseline"]["concurrency"] == 1 and result["concurrency"] == 4
    assert result["docs_per_s"] > 0 and result["baseline_docs_per_s"] > 0
    assert result["speedup"] == pytest.approx(result["docs_per_s"] / result["baseline_docs_per_s"], rel=0.01)
    assert result["throttled"] == 0
