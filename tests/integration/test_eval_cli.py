"""``winnow eval`` as a user runs it: generated documents in the embedded default (or behind a running
``winnow serve``), labelled questions in both formats, the figures, the report and the errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import Winnow
from tests.support.serve import serving
from winnow.search.relevance import DEFAULT_PROFILE, default_threshold, load_models

TOPICS = {
    "leave": ("Parental leave", "New parents receive eighteen weeks of fully paid parental leave."),
    "tyres": ("Bicycle tyres", "To fix a puncture, lever the tyre off the rim and patch the inner tube."),
    "bread": (
        "Sourdough bread",
        "Feed the starter with flour and water, then let the dough prove overnight.",
    ),
    "comets": ("Comets", "A comet's tail points away from the Sun because of the solar wind."),
}
OFFTOPIC = ["who painted the mona lisa", "stock price of a shipping company", "best chess opening for black"]


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Winnow, Path]:
    root = tmp_path_factory.mktemp("eval")
    docs = root / "docs"
    docs.mkdir()
    for name, (title, text) in TOPICS.items():
        (docs / f"{name}.md").write_text(f"# {title}\n\n{text}\n")
    winnow = Winnow(root / "home")
    done = winnow("ingest", str(docs), "--tenant", "acme")
    assert done.code == 0, done.stderr
    return winnow, root


def questions(root: Path) -> Path:
    rows: list[dict[str, object]] = [
        {
            "question": "how many weeks of parental leave do new parents get",
            "document": "leave.md",
            "answer": "eighteen weeks",
        },
        {"question": "how do I patch a punctured bicycle tyre", "document": "tyres.md"},
        {"question": "how long should sourdough prove", "document": "acme/bread.md", "answer": "overnight"},
        {"question": "why does a comet's tail point away from the sun", "document": "comets"},
    ]
    rows += [{"question": text, "offtopic": True} for text in OFFTOPIC]
    return write_jsonl(root / "questions.jsonl", rows)


def test_eval_reports_the_figures_a_threshold_and_an_html_report(indexed: tuple[Winnow, Path]) -> None:
    winnow, root = indexed
    report = root / "report.html"
    run = winnow("eval", str(questions(root)), "--tenant", "acme", "--json", "--report", str(report))
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    metrics = result["metrics"]
    assert set(metrics) == {"ndcg@10", "hit@1", "hit@3", "mrr@10", "answer@3", "refused", "offtopic_refused"}
    assert all(0 <= value <= 1 for value in metrics.values())
    # Four distinct topics, each question about one: the right document comes first.
    assert metrics["hit@1"] == 1.0 and metrics["answer@3"] == 1.0
    assert result["questions"] == {"asked": 7, "done": 7, "answerable": 4, "offtopic": 3, "errors": 0}
    # The deployed default: the one the shipped artifact was fitted with
    assert result["threshold"] == pytest.approx(default_threshold(load_models(DEFAULT_PROFILE)))
    recommended = result["recommended_threshold"]
    assert 0 <= recommended <= 1 and "only 3 off-topic questions" in result["threshold_choice"]["caveat"]
    assert result["latency_ms"]["p50"] > 0
    page = report.read_text()
    assert "<svg" in page and "Refusal trade-off" in page and "off-topic (3)" in page


def test_eval_of_a_beir_folder_ingests_its_corpus_first(indexed: tuple[Winnow, Path]) -> None:
    winnow, root = indexed
    beir = root / "beir"
    beir.mkdir()
    write_jsonl(
        beir / "corpus.jsonl", [{"_id": f"doc-{n}", "title": t, "text": x} for n, (t, x) in TOPICS.items()]
    )
    write_jsonl(
        beir / "queries.jsonl",
        [
            {"_id": "q1", "text": "comet tail and the solar wind"},
            {"_id": "q2", "text": "starter flour and water"},
        ],
    )
    (beir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc-comets\t1\nq2\tdoc-bread\t2\n")
    run = winnow("eval", str(beir), "--tenant", "beir", "--json")
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["metrics"]["ndcg@10"] == 1.0 and result["metrics"]["offtopic_refused"] is None
    assert result["recommended_threshold"] is None  # no off-topic questions: nothing to choose from
    assert "corpus: 4 documents ingested" in run.stderr


def test_a_bad_line_is_named_and_no_traceback_is_printed(indexed: tuple[Winnow, Path]) -> None:
    winnow, root = indexed
    bad = root / "bad.jsonl"
    bad.write_text('{"question": "fine", "document": "leave.md"}\n{"question": "no document"}\n')
    run = winnow("eval", str(bad), "--tenant", "acme")
    assert run.code != 0
    assert f"{bad} line 2" in run.stderr and "Traceback" not in run.stderr


def test_eval_asks_a_running_winnow_serve_through_api_url(tmp_path: Path) -> None:
    home = tmp_path / "home"
    beir = tmp_path / "beir"
    beir.mkdir()
    write_jsonl(
        beir / "corpus.jsonl", [{"_id": name, "title": t, "text": x} for name, (t, x) in TOPICS.items()]
    )
    write_jsonl(beir / "queries.jsonl", [{"_id": "q1", "text": "patching an inner tube"}])
    (beir / "qrels.tsv").write_text("q1\ttyres\t1\n")
    offtopic = tmp_path / "offtopic.txt"
    offtopic.write_text("\n".join(OFFTOPIC) + "\n")
    with serving(home) as httpd:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "winnow_local",
                "eval",
                str(beir),
                "--offtopic",
                str(offtopic),
                "--api-url",
                url,
                "--tenant",
                "remote",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
            cwd=tmp_path,
            env={**Winnow(tmp_path / "unused").env},
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["target"] == url and result["metrics"]["hit@1"] == 1.0
    assert result["questions"]["offtopic"] == 3 and result["metrics"]["offtopic_refused"] is not None
    assert not (tmp_path / "unused").exists()  # asked the server; opened no index of its own
