"""Each benchmark's entry point, run on a tiny corpus through the real handlers, prints the promised JSON
with sane figures. The full runs are not part of the test command (see training/NOTEBOOK.md)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchmarks import cost, speed
from training import quality
from training.data import EXCERPT_EVAL_DIR, OFFTOPIC_FILE, OFFTOPIC_HELDOUT_FILE, read_lines
from training.quality_report import THRESHOLDS

pytestmark = pytest.mark.slow

# The excerpt that ships in the repository, so the tests need nothing beside it.
EVAL = ["--eval-dir", str(EXCERPT_EVAL_DIR)]


def _metrics_ok(scores: dict[str, float]) -> None:
    assert set(scores) == {"ndcg@10", "recall@10", "mrr@10"}
    for value in scores.values():
        assert 0.0 <= value <= 1.0


def test_quality_prints_one_json_object_with_every_mode_and_both_baselines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given 12 SciFact documents and 3 of their queries, 20 off-topic questions to fit on and 20 to measure
    # (each set is searched once a mode and once a fold: the shipped 130 and 132 made 650 searches), and a
    # record of what each fit reads and what is searched after it (the held-out queries of its fold)
    fitting, heldout = tmp_path / "offtopic.txt", tmp_path / "offtopic_heldout.txt"
    fitting.write_text("\n".join(read_lines(OFFTOPIC_FILE)[:20]), encoding="utf-8")
    heldout.write_text("\n".join(read_lines(OFFTOPIC_HELDOUT_FILE)[:20]), encoding="utf-8")
    events: list[tuple[str, set[str], set[str]]] = []
    fit_models, winnow_hits = quality.fit_models, quality.winnow_hits

    def recording_fit(candidates: Any, qrels: Any, qids: Any, profile: str, **kw: Any) -> Any:
        known = kw.get("known")
        events.append(("fit", set(qids), set(known.ids) if known is not None else set()))
        return fit_models(candidates, qrels, qids, profile, **kw)

    def recording_hits(stack: Any, queries: dict[str, str], mode: str, threshold: float = 0.0) -> Any:
        events.append(("search", set(queries), set()))
        return winnow_hits(stack, queries, mode, threshold)

    monkeypatch.setattr(quality, "fit_models", recording_fit)
    monkeypatch.setattr(quality, "winnow_hits", recording_hits)
    # When the quality benchmark runs with --json
    limits = ["--limit-docs", "12", "--limit-queries", "3", "--known-items", "6"]
    offtopic = ["--offtopic", str(fitting), "--offtopic-heldout", str(heldout)]
    assert quality.main([*EVAL, "--json", "--quiet", *limits, *offtopic]) == 0
    # Then stdout holds exactly one JSON object of the documented shape
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {
        "modes",
        "baselines",
        "queries",
        "documents",
        "cv",
        "threshold",
        "offtopic",
        "demo",
        "known_item",
    }
    assert result["documents"] == 12
    assert result["queries"] == 3
    assert {"sparse", "dense", "hybrid"} <= set(result["modes"])
    assert set(result["baselines"]) == {"bm25", "dense"}
    for scores in [*result["modes"].values(), *result["baselines"].values()]:
        _metrics_ok(scores)
    # And on so small a corpus every system finds something relevant for these queries
    assert result["modes"]["hybrid"]["recall@10"] > 0
    assert result["baselines"]["bm25"]["recall@10"] > 0
    # And cross-validated figures sit beside them: one fold per query here (3 < 5), every query held out once
    cv = result["cv"]
    assert cv["folds"] == 3 and cv["default_mode"] == "hybrid"
    for name in ("sparse", "dense", "hybrid", "baseline bm25", "baseline dense"):
        assert len(cv["ndcg@10"][name]["folds"]) == 3
    assert len(cv["margin_vs_bm25"]) == 3
    # And the threshold table and the off-topic shares are measured: the held-out set that is reported and
    # the fitting set the threshold rule reads (cross-validated over its folds too)
    assert [r["threshold"] for r in result["threshold"]["passages"]] == list(THRESHOLDS)
    assert set(result["offtopic"]) == {"heldout", "fitting"}
    for figures in result["offtopic"].values():
        assert figures["queries"] == 20 and 0 <= figures["refused"] <= 1
    assert 0 <= result["threshold"]["offtopic_fitting_refused_cv"] <= 1
    for figures in ("answerable_refused_cv_by_mode", "offtopic_heldout_refused_by_mode"):
        assert set(result["threshold"][figures]) == {"sparse", "dense", "hybrid"}
        assert all(0 <= v <= 1 for v in result["threshold"][figures].values())
    # And the calibration of the held-out scores: each band's mean score inside it, shares in [0, 1]
    bands = result["threshold"]["calibration"]
    assert bands and all(b["passages"] > 0 for b in bands)
    for b in bands:
        assert b["band"] <= b["mean_score"] <= b["band"] + 0.1 and 0 <= b["relevant"] <= 1
    assert 0 <= result["threshold"]["calibration_error"] <= 1
    # And the generated known-item queries (keywords, phrases) are measured held out, beside BM25
    known = result["known_item"]
    assert known["per_style"] == 6 and set(known["styles"]) == {"keywords", "phrase"}
    for figures in known["styles"].values():
        assert figures["queries"] == 6 and 0 <= figures["refused_cv"] <= 1
        for run in (figures["default_cv"], figures["bm25"]):
            assert 0 <= run["ndcg@10"] <= 1 and 0 <= run["hit@3"] <= 1
    # And the cross-validation is honest: one fit per fold, each fitted on the known-item queries of the
    # other folds only, its own fold's known-item queries searched after it and never fitted on by it
    fits = [i for i, (kind, _, _) in enumerate(events) if kind == "fit"]
    assert len(fits) == 3
    held_out_known: list[set[str]] = []
    for n, start in enumerate(fits):
        _, judged_train, known_train = events[start]
        end = fits[n + 1] if n + 1 < len(fits) else len(events)
        searched = set().union(*(ids for _, ids, _ in events[start + 1 : end]))
        known_searched = {q for q in searched if q.startswith(("keywords-", "phrase-"))}
        assert known_searched and known_train and not known_searched & known_train
        assert len(judged_train) == 2  # two of the three judged queries
        held_out_known.append(known_searched)
    assert set().union(*held_out_known) == {f"{s}-{i}" for s in ("keywords", "phrase") for i in range(6)}
    assert sum(len(h) for h in held_out_known) == 12  # each known-item query held out exactly once


def test_speed_reports_ingest_against_naive_and_latency_per_mode(capsys: pytest.CaptureFixture[str]) -> None:
    # When the speed benchmark runs on 8 documents with few queries
    assert speed.main([*EVAL, "--json", "--quiet", "--limit-docs", "8", "--search-queries", "3"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then both ingest paths indexed every document and report positive rates
    for name in ("winnow", "naive"):
        assert result["ingest"][name]["documents"] == 8
        assert result["ingest"][name]["chunks"] >= 8
        assert result["ingest"][name]["docs_per_s"] > 0
    assert result["ingest"]["speedup"] > 0
    # And each mode has latency percentiles, p95 not below p50
    assert set(result["search"]) == {"sparse", "dense", "hybrid"}
    for figures in result["search"].values():
        assert figures["queries"] == 3
        assert 0 < figures["p50_ms"] <= figures["p95_ms"]
    assert result["peak_rss_mb"] > 0 and result["engine"] == "edge"
    assert "bundle_mb" in result
    # And the table form renders every section
    assert "naive baseline" in speed.render(result) and "warm search" in speed.render(result)


def test_cost_counts_far_fewer_tokens_for_an_edit_than_for_the_whole_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When the cost benchmark edits one section of a 10-section document
    assert cost.main(["--json", "--quiet", "--pages", "10"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then the edit embedded only part of the document, counted at the fake Voyage server
    document, edit = result["document"], result["edit"]
    assert document["tokens"] > 0 and document["chunks"] >= 10
    assert 0 < edit["tokens"] < document["tokens"]
    assert edit["chunks_reused"] > 0
    assert 0 < edit["chunks_embedded"] < document["chunks"]
    assert result["ratio"] == pytest.approx(edit["tokens"] / document["tokens"], abs=1e-4)
    assert result["goal_met"] == (result["ratio"] <= result["goal"])


@pytest.mark.parametrize("benchmark", [quality, speed])
def test_a_missing_eval_set_is_one_line_that_says_where_to_put_it(
    benchmark: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # When a benchmark is pointed at a folder without the evaluation files
    code = benchmark.main(["--eval-dir", str(tmp_path), "--json", "--quiet"])
    # Then it stops with one line naming the default place and the shipped excerpt, and no traceback
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert "shared/eval/scifact" in err and "tests/data/scifact" in err


def test_documents_benchmark_prints_ocr_and_hit_rates(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import documents

    # Given one scanned page, 40 rows of /etc/services and the smallest plain-text distractor
    # When the documents benchmark runs with --json
    assert documents.main(["--json", "--pages", "1", "--services", "40", "--distractors", "1"]) == 0
    # Then it reports OCR error rates and speed, and both hit rates, within their ranges
    result = json.loads(capsys.readouterr().out)
    ocr = result["ocr"]
    assert ocr["engine"] == "tesseract"
    assert 0.0 <= ocr["cer_clean"] <= 0.1 and ocr["pages_per_s_clean"] > 0
    assert result["ocr_pages_ingested"] == 1 and len(result["distractors"]) == 1
    assert result["scan_questions"] >= 1 and result["table_questions"] == 40
    assert 0.0 <= result["hit3_scans"] <= 1.0 and result["hit3_tables"] > 0.5
    # And the scanned-page rate at the default threshold (a refused question counts as a miss) is no higher
    assert 0.0 <= result["hit3_scans_default"] <= result["hit3_scans"]
    assert 0 < result["default_threshold"] < 1
    assert result["table_questions_pdf"] >= 13 and result["hit3_tables_pdf"] > 0.5


def test_the_fit_writes_an_artifact_with_its_threshold_version_and_provenance(tmp_path: Path) -> None:
    """What ``python -m training.fit`` writes (``--write-model``), here into a folder of the test's own."""
    import re
    import shutil

    from training.data import load_eval_set
    from winnow.search.relevance import MODELS_DIR, load_models

    # Given 12 SciFact documents, 3 of their queries, 6 fitting off-topic questions, and a folder holding
    # the shipped artifacts
    eval_set = load_eval_set(eval_dir=EXCERPT_EVAL_DIR).limited(12, 3)
    offtopic = read_lines(OFFTOPIC_FILE)[:6]
    models = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models)
    shipped = {p.name: json.loads(p.read_text(encoding="utf-8"))["version"] for p in models.glob("*.json")}
    # When the models are fitted and written
    quality.run(
        eval_set,
        tmp_path / "run",
        folds=3,
        embed_cache=None,
        offtopic=offtopic,
        write_model=models,
        known_items=6,
    )
    # Then the fitted profile's artifact holds the models, the threshold the rule chose, the next version,
    # and where they came from: the data it read, the folds, the command that fits it again, the day;
    # the other profiles' artifacts are untouched
    (path,) = [p for p in models.glob("*.json") if p.read_bytes() != (MODELS_DIR / p.name).read_bytes()]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == shipped[path.name] + 1 and 0 <= data["threshold"] <= 1
    provenance = data["provenance"]
    assert provenance["command"] == quality.FIT_COMMAND
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", provenance["date"])
    assert provenance["folds"].startswith("3 folds over query ids, seed ")
    assert "12 documents, 3 judged claims" in provenance["data"]["corpus"]
    assert provenance["data"]["offtopic"] == "6 of training/data/offtopic.txt"
    assert provenance["threshold_rule"].startswith("lowest threshold refusing at least 96%")
    # And the search loads it for its profile, with that threshold as its default
    loaded = load_models(path.stem, models)
    assert loaded is not None and loaded.threshold == data["threshold"] and loaded.version == data["version"]
    assert {"hybrid", "dense", "sparse"} <= set(loaded.modes)


def test_long_work_benchmark_prints_every_run(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import serve_long_work

    serve_long_work.main(["--paragraphs", "6", "--model-seconds", "0.2"])
    out = capsys.readouterr().out
    for run in ("b alone", "one upload", "six tenants uploading", "a follow-up /answer"):
        assert run in out, out


def test_table_ingest_benchmark_prints_chunks_and_memory(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import table_ingest

    table_ingest.main(["--kb", "4"])
    out = capsys.readouterr().out
    assert "long cells" in out and "short cells" in out and "peak RSS MB" in out
    assert "indexed" in out, out


def _backup_and_leave(tmp_path: Path) -> tuple[Path, Path]:
    """Two generated documents (no /usr/share) and three questions with their answering excerpts: the
    folder and the question file the passage benchmark takes."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "backup.md").write_text(
        "# Backups\n\nNightly backups run at two in the morning and are kept for thirty days.\n\n"
        "# Restores\n\nA restore is requested through the service desk and takes about four hours.\n",
        encoding="utf-8",
    )
    (folder / "leave.txt").write_text(
        "Employees receive twenty-eight days of paid holiday per year.\n\n"
        "Unused days may be carried into the first quarter of the next year.\n",
        encoding="utf-8",
    )
    questions = tmp_path / "questions.tsv"
    questions.write_text(
        "id\tdocument\tquestion\tanswer_excerpt\n"
        "b1\tbackup.md\twhen do the backups happen\trun at two in the morning\n"
        "b2\tbackup.md\thow long does getting files back take\ttakes about four hours\n"
        "l1\tleave.txt\thow much vacation do staff get\ttwenty-eight days of paid holiday\n",
        encoding="utf-8",
    )
    return folder, questions


def test_passage_benchmark_prints_every_figure_for_winnow_and_both_bm25_baselines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from training import passages

    # Given two generated documents (no /usr/share) and three questions with their answering excerpts
    folder, questions = _backup_and_leave(tmp_path)
    # When the passage benchmark runs on them with --json
    argv = ["--json", "--quiet", "--documents", str(folder), "--questions", str(questions)]
    assert passages.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    # Then every retriever reports every group, each figure a share, and chunk lengths per format
    assert result["documents"] == 2 and result["questions"] == 3
    for system in ("winnow", "bm25_same_chunks", "bm25_gold_passages"):
        assert set(result[system]) == {"all", "source:given", "format:md", "format:txt"}
        for figures in result[system].values():
            assert all(0.0 <= figures[k] <= 1.0 for k in ("rank1", "top3", "document_first", "refused"))
    assert result["bm25_gold_passages"]["all"]["document_first"] > 0
    assert set(result["chunk_lengths"]) == {"md", "txt"}
    assert 0.0 <= result["offtopic_refused"] <= 1.0
    # And every top-3 miss has one kind
    assert sum(result["misses_by_kind"].values()) == len(result["misses_top3"])
    # And the candidates Winnow orders hold every answer of so small a corpus (fewer chunks than
    # candidates), in every group
    assert result["winnow_reachable"] == dict.fromkeys(result["winnow"], 1.0)


def test_passage_benchmark_with_context_counts_answers_in_the_text_around_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from training import passages

    # Given a document whose answer sits in the section after the one its question matches
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "shell.md").write_text(
        "# Shell\n\n## Settings file\n\nTo make completion ignore case, put this line in /etc/inputrc:\n\n"
        "## Setting\n\nset completion-ignore-case on\n\n## History\n\nThe history keeps 500 commands.\n",
        encoding="utf-8",
    )
    questions = tmp_path / "questions.tsv"
    questions.write_text(
        "id\tdocument\tquestion\tanswer_excerpt\n"
        "s1\tshell.md\tmake completion ignore case in the inputrc file\tset completion-ignore-case on\n",
        encoding="utf-8",
    )
    argv = ["--json", "--quiet", "--documents", str(folder), "--questions", str(questions)]
    # When it runs with --context neighbours
    assert passages.main([*argv, "--context", "neighbours"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then the answer counts when it is in a result's context, never less often than in the passages alone
    assert result["context"] == "neighbours"
    for group, figures in result["winnow_with_context"].items():
        assert figures["top3"] >= result["winnow"][group]["top3"]
    assert result["winnow_with_context"]["all"]["top3"] == 1.0


def test_passage_benchmark_answers_each_question_with_the_models_of_its_held_out_fold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from training import passages
    from winnow.search.relevance import LogisticModel, RelevanceModels, load_models

    # Given two documents, three questions, and a fold file (as training.quality --fold-models writes
    # it): the first fold holds out the backup questions with the shipped models at a threshold nothing
    # clears; the second the leave question and every fitting off-topic question with a model that
    # scores every passage 0.99995, at 0.9999, which only that model clears
    folder, questions = _backup_and_leave(tmp_path)
    profile = "local-all-minilm-l6-v2-int8-384"
    shipped = load_models(profile)
    assert shipped is not None
    always = LogisticModel(("cosine",), (0.0,), 10.0)
    constant = RelevanceModels(profile, dict.fromkeys(("hybrid", "dense", "sparse"), always), 0.9999)
    offtopic = read_lines(OFFTOPIC_FILE)

    def fold(held: list[str], models: RelevanceModels, threshold: float, off: list[str]) -> dict:
        return {
            "held_out": held,
            "offtopic_held_out": off,
            "models": models.to_json(),
            "threshold": threshold,
        }

    folds = tmp_path / "folds.json"
    folds.write_text(
        json.dumps(
            {"folds": [fold(["b1", "b2"], shipped, 1.0, []), fold(["l1"], constant, 0.9999, offtopic)]}
        ),
        encoding="utf-8",
    )
    argv = ["--json", "--quiet", "--documents", str(folder), "--questions", str(questions)]
    # When the passage benchmark runs with --fold-models
    assert passages.main([*argv, "--fold-models", str(folds)]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then each question met its own fold's models and threshold: the backup ones refused, the leave one
    # and every fitting off-topic one answered by the model only their fold has
    assert result["fold_models"] == str(folds)
    assert result["winnow"]["format:md"]["refused"] == 1.0 and result["offtopic_refused"] == 0.0
    assert result["winnow"]["format:txt"]["refused"] == 0.0
    assert result["winnow"]["format:txt"]["top3"] == 1.0
    # And the held-out off-topic set, which no fold holds, is asked of the shipped models
    assert 0.0 <= result["offtopic_heldout_refused"] <= 1.0 and result["offtopic_heldout_questions"] > 100
    # And a fold file that holds out none of a question's folds, or models of another profile, is refused
    folds.write_text(json.dumps({"folds": [fold(["b1"], shipped, 0.0, offtopic)]}), encoding="utf-8")
    with pytest.raises(ValueError, match="holds out no fold with b2, l1"):
        passages.main([*argv, "--fold-models", str(folds)])
    other = RelevanceModels("local-other-8", shipped.modes, shipped.threshold)
    folds.write_text(
        json.dumps({"folds": [fold(["b1", "b2", "l1"], other, 0.0, offtopic)]}), encoding="utf-8"
    )
    with pytest.raises(ValueError, match="holds models of local-other-8, not " + profile):
        passages.main([*argv, "--fold-models", str(folds)])


def test_passage_fitting_set_reads_the_candidates_of_a_default_request(tmp_path: Path) -> None:
    from benchmarks.common import Progress
    from training.passages import fitting_set
    from winnow.api.schemas.search import SearchRequest
    from winnow.search.query import default_candidates

    # Given a document of 90 short sections (more chunks than a default candidate list) and one question
    folder = tmp_path / "docs"
    folder.mkdir()
    colours = ("red", "green", "blue", "amber")
    sections = [
        f"# Widget {n}\n\nWidget number {n} is painted {colours[n % 4]} and weighs {n + 3} kilograms.\n"
        for n in range(90)
    ]
    (folder / "widgets.md").write_text("\n".join(sections), encoding="utf-8")
    questions = tmp_path / "questions.tsv"
    questions.write_text(
        "id\tdocument\tquestion\tanswer_excerpt\n"
        "w7\twidgets.md\thow heavy is widget seven\tweighs 10 kilograms\n",
        encoding="utf-8",
    )
    # When the relevance fit's view of the passage questions is collected
    fs = fitting_set(
        {},
        Progress(True),
        {"offtopic-0": "Who painted the ceiling of the Sistine Chapel?"},
        folder,
        questions,
    )
    # Then each question (and off-topic question) has a default request's candidates, as the handler
    # orders and drops them for this benchmark, not those of a client asking for twenty passages
    default = default_candidates(SearchRequest(query="x").top_k)
    assert default < default_candidates(20)
    assert len(fs.candidates["w7"]) == default and len(fs.offtopic["offtopic-0"]) == default
    # And the chunk that answers is judged so, by its id
    assert len(fs.qrels["w7"]) == 1 and next(iter(fs.qrels["w7"])) in dict(fs.candidates["w7"])
    assert fs.kinds == {"w7": ("given", "md")}


def test_quality_fold_models_need_the_passage_questions(tmp_path: Path) -> None:
    # When --fold-models is given without --passages, then it is a usage error, before any work
    with pytest.raises(SystemExit) as exit_info:
        quality.main([*EVAL, "--fold-models", str(tmp_path / "folds.json")])
    assert exit_info.value.code == 2 and not (tmp_path / "folds.json").exists()


def test_quality_lockbox_needs_the_passage_questions(capsys: pytest.CaptureFixture[str]) -> None:
    # When --lockbox is given without --passages, then it is a usage error that says so, before any work
    with pytest.raises(SystemExit) as exit_info:
        quality.main([*EVAL, "--lockbox", "out"])
    assert exit_info.value.code == 2 and "--lockbox needs --passages" in capsys.readouterr().err
    # And with them, the fit is told to leave the lockbox out
    assert quality.parse_args([*EVAL, "--passages", "--lockbox", "out"]).lockbox == "out"


def test_quality_passages_refuses_too_few_questions_to_hold_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from training.passages import FittingSet

    # Given a machine where only two passage questions have their documents, fewer than the folds
    def two_questions(*args: Any, **kwargs: Any) -> FittingSet:
        return FittingSet({"q1": [], "q2": []}, {"q1": {}, "q2": {}}, {}, {})

    monkeypatch.setattr(quality, "fitting_set", two_questions)
    folds = tmp_path / "folds.json"
    # When the quality benchmark is asked to fit and measure on them
    argv = [*EVAL, "--quiet", "--passages", "--fold-models", str(folds), "--limit-docs", "12"]
    code = quality.main([*argv, "--limit-queries", "3"])
    # Then it stops with one line saying why, and writes nothing a later run could mistake for held out
    assert code == 2 and not folds.exists()
    assert "at least one passage question per fold (3 folds); 2 questions" in capsys.readouterr().err


def test_quality_passages_refuse_a_reranked_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a Voyage key (the default mode re-ranks, and its threshold reads the re-ranker's scores)
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")
    # When --passages is asked for, then it is a usage error before any work
    with pytest.raises(SystemExit) as exit_info:
        quality.main([*EVAL, "--passages"])
    assert exit_info.value.code == 2


def test_ingest_cap_memory_benchmark_prints_each_input(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import ingest_cap_memory

    ingest_cap_memory.main(["--chunks", "40", "--model-runs", "off"])
    out = capsys.readouterr().out
    assert all(kind in out for kind in ingest_cap_memory.KINDS) and "peak RSS MB" in out, out
    assert "failed" not in out, out
