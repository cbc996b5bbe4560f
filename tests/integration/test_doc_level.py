"""training.doc_level measures document-level nDCG@10 through the search handler on claims the measured
models were never fitted on, beside BM25 in the same run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from training import doc_level
from training.data import EXCERPT_EVAL_DIR, load_eval_set

pytestmark = pytest.mark.slow


def test_each_claim_is_measured_once_by_models_fitted_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the 100-document excerpt (8 claims), each document given as one chunk of its opening (the
    # folds, not the figures, are under test: a clean clone embeds each chunk, 250 tokens an abstract),
    # and a record of what each fit reads and what is measured after it
    documents = load_eval_set(eval_dir=EXCERPT_EVAL_DIR).documents
    chunks = tmp_path / "chunks.json"
    chunks.write_text(
        json.dumps({d: [{"text": t[:300], "title": "", "section_path": []}] for d, t in documents.items()}),
        encoding="utf-8",
    )
    events: list[tuple[str, list[str], Any]] = []
    fit, measure = doc_level.Bench.fit, doc_level.Bench.measure

    def recording_fit(self: Any, design: Any, train: Any, *rest: Any) -> Any:
        events.append(("fit", list(train), None))
        return fit(self, design, train, *rest)

    def recording_measure(self: Any, models: Any, qids: Any, shapes: Any) -> Any:
        scores = measure(self, models, qids, shapes)
        events.append(("measure", list(qids), scores))
        return scores

    monkeypatch.setattr(doc_level.Bench, "fit", recording_fit)
    monkeypatch.setattr(doc_level.Bench, "measure", recording_measure)
    # When the shipped artifact and one fit design are measured, cross-validated and in a lockbox
    argv = ["--eval-dir", str(EXCERPT_EVAL_DIR), "--chunks", str(chunks), "--artifact", "main"]
    argv += ["--fit", "claims-only", "--lockbox", "--shape", "default", "--shape", "top10-t0"]
    assert doc_level.main([*argv, "--known-items", "5", "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then the index holds the given chunks, one per document
    assert result["chunks"] == len(documents) == 100
    # And the artifact is measured on every claim, in each request shape, beside BM25
    assert result["artifacts"]["main"]["claims"] == 8
    for row in [result["artifacts"]["main"], result["cv"]["claims-only"], result["lockbox"]["claims-only"]]:
        assert set(row["ndcg@10"]) == {"default", "top10-t0"}
        assert all(0 <= v <= 1 for v in [*row["ndcg@10"].values(), row["bm25"]])
    # And each fit is followed by one measurement of claims it did not read; each measurement scores
    # exactly the claims it was given
    fits = [i for i, (kind, _, _) in enumerate(events) if kind == "fit"]
    assert len(fits) == 6  # five folds, then the lockbox
    for i in fits:
        kind, measured, scores = events[i + 1]
        assert kind == "measure" and measured and not set(measured) & set(events[i][1])
        assert all(set(per_claim) == set(measured) for per_claim in scores.values())
    cv_measured = [q for i in fits[:5] for q in events[i + 1][1]]
    assert len(cv_measured) == len(set(cv_measured)) == 8  # every claim held out exactly once
    assert result["cv"]["claims-only"]["claims"] == 8
    assert 0 < result["lockbox"]["claims-only"]["claims"] < 8
    # And the cross-validated figure is the mean over all claims of their held-out scores
    held = {q: v for i in fits[:5] for q, v in events[i + 1][2]["top10-t0"].items()}
    assert result["cv"]["claims-only"]["ndcg@10"]["top10-t0"] == round(sum(held.values()) / 8, 4)
