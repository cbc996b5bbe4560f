"""In Lambda's init phase the search function builds what every request needs (the search service, its
clients and the Voyage key from Secrets Manager), so the first request pays nothing of it; outside
Lambda nothing is built at import. Fresh processes against moto and the Voyage fake on loopback
(``benchmarks.coldstart``), judged by the AWS calls each phase makes, never by time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.coldstart import aws_shape, child, measure, report


@pytest.fixture(scope="module")
def shape(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    with aws_shape(Path(tmp_path_factory.mktemp("coldstart")) / "home") as built:
        yield built


def test_in_lambdas_init_phase_the_key_is_read_at_init_and_the_first_request_reads_nothing(
    shape: tuple[dict[str, str], dict[str, Any]],
) -> None:
    env, event = shape
    # When a fresh search process starts as Lambda starts it, then answers a search
    result = child(env, event, at_init=True, warm=1)
    # Then the secret was read during init, and the first request made no AWS call at all
    assert result["init_calls"].get("GetSecretValue") == 1
    assert result["first_request_calls"] == {}
    assert result["status"] == 200 and result["results"] > 0


def test_outside_lambda_nothing_is_built_at_import(shape: tuple[dict[str, str], dict[str, Any]]) -> None:
    env, event = shape
    # When the same process starts without Lambda's init marker (tests, the embedded default, the CLI)
    result = child(env, event, at_init=False, warm=1)
    # Then importing the handler called nothing, and the first request built and read the key
    assert result["init_calls"] == {}
    assert result["first_request_calls"].get("GetSecretValue") == 1
    assert result["status"] == 200 and result["results"] > 0


def test_the_benchmark_compares_init_and_first_request_with_importing_qdrant_client_alone(
    shape: tuple[dict[str, str], dict[str, Any]],
) -> None:
    env, event = shape
    # When the cold-start benchmark measures one run of each kind of fresh process
    result = measure(env, event, runs=1)
    # Then the ratio is init + first request (built at init) over the import of qdrant_client alone
    after = result["after"]
    assert result["runs"] == 1 and result["qdrant_client_import_ms"] > 0
    expected = (after["init_ms"] + after["first_request_ms"]) / result["qdrant_client_import_ms"]
    assert result["ratio"] == pytest.approx(expected, abs=0.01)
    assert result["meets_goal"] == (result["ratio"] <= result["goal_ratio"])
    # And each child reported its own peak memory, and the table shows both rows and the baseline
    assert after["peak_rss_mb"] > 0 and result["before"]["peak_rss_mb"] > 0
    assert "qdrant_client" in report(result) and "built at init" in report(result)
