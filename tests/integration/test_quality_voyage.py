"""The quality benchmark with Voyage: with VOYAGE_API_KEY set it embeds with the Voyage embedder and adds
the re-ranked mode, through our real adapters against the loopback fake Voyage server (figures cannot be
measured here; the code path can). Generated documents and queries: no evaluation set needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training import quality
from training.data import EvalSet
from training.quality_report import THRESHOLDS, render
from winnow_fakes.fake_voyage import DEFAULT_API_KEY, FakeVoyageServer

TOPICS = {
    "volcano": "Volcanic eruptions release lava, ash and sulphur dioxide from magma chambers.",
    "glacier": "Glaciers carve valleys as compacted snow and ice flow slowly downhill.",
    "coral": "Coral reefs bleach when warm water makes the polyps expel their algae.",
    "desert": "Desert dunes migrate as wind carries sand grains over the crest.",
    "monsoon": "Monsoon rains arrive when seasonal winds reverse over the warm ocean.",
    "tsunami": "A tsunami forms when an undersea earthquake displaces a column of water.",
    "aurora": "Auroras glow when solar wind particles strike oxygen high in the atmosphere.",
    "geyser": "Geysers erupt as groundwater heated by magma boils under a narrow vent.",
}


def generated_eval_set() -> EvalSet:
    documents = {f"d-{name}": f"{name.title()}\n\n{text}" for name, text in TOPICS.items()}
    for i in range(8):  # distractors sharing no topic word
        documents[f"x-{i}"] = f"Note {i}\n\nThe committee met on day {i} and approved the minutes."
    queries = {f"q-{name}": f"how do {name}s form and what happens" for name in TOPICS}
    qrels = {f"q-{name}": {f"d-{name}": 1} for name in TOPICS}
    return EvalSet(documents=documents, queries=queries, qrels=qrels)


def test_with_a_voyage_key_the_benchmark_embeds_and_reranks_with_voyage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeVoyageServer() as fake:
        # Given a Voyage key and a Voyage endpoint (the fake) in the environment
        monkeypatch.setenv("VOYAGE_API_KEY", DEFAULT_API_KEY)
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.base_url)
        env = quality.provider_env()
        assert env == {"WINNOW_EMBEDDER": "voyage", "WINNOW_RERANKER": "voyage"}
        # When the quality benchmark runs on a generated set, with fitting and held-out off-topic questions
        result = quality.run(
            generated_eval_set(),
            tmp_path,
            env=env,
            folds=3,
            embed_cache=tmp_path / "cache.sqlite3",
            offtopic=["Who won the 1998 football world cup?", "How do I knit a scarf?", "What is a sonnet?"],
            offtopic_heldout=["How does a jet engine work?", "Who designed Helvetica?"],
        )
        # Then documents and queries went through the Voyage embedder and the re-ranker ran
        assert fake.requests_to("embeddings") and fake.requests_to("rerank")
    assert set(result["modes"]) == {"sparse", "dense", "hybrid", "hybrid+rerank"}
    assert result["cv"]["default_mode"] == "hybrid+rerank"
    cv = result["cv"]["ndcg@10"]
    assert {"hybrid+rerank", "baseline bm25"} <= set(cv) and len(cv["hybrid+rerank"]["folds"]) == 3
    assert all(0 <= v <= 1 for v in cv["hybrid+rerank"]["folds"])
    assert [row["threshold"] for row in result["threshold"]["passages"]] == list(THRESHOLDS)
    # And both off-topic sets are measured through the re-ranker, the fitting one also cross-validated
    assert result["offtopic"]["fitting"]["queries"] == 3 and result["offtopic"]["heldout"]["queries"] == 2
    assert 0 <= result["threshold"]["offtopic_fitting_refused_cv"] <= 1
    # And the table renders, as one command prints it
    assert "hybrid+rerank" in render(result)
    json.dumps({k: result[k] for k in ("modes", "cv", "threshold", "offtopic")})


def test_without_a_key_the_benchmark_keeps_the_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    assert quality.provider_env() == {}
