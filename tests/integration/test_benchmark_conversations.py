"""``training.conversations`` on the SciFact excerpt that ships in the repository: dialogues whose
follow-ups are ambiguous alone, every way of searching them scored, the rewrites sent to the fake."""

from __future__ import annotations

from benchmarks.common import Progress
from training.conversations import build_dialogues, run
from training.data import EXCERPT_EVAL_DIR


def test_dialogues_are_built_from_the_documents_and_ambiguous_alone() -> None:
    documents = {
        "1": "Cells of the liver respond to insulin treatment in mice.",
        "2": "Treatment of patients with cells grown in culture.",
        "3": "Patients with heart failure received cells and treatment.",
    }
    claims = [("Insulin acts on liver cells.", "1"), ("Heart failure outcomes improve.", "3")]
    dialogues = build_dialogues(documents, claims, 2, {d: f"t/{d}.txt" for d in documents})
    assert [d.document for d in dialogues] == ["t/1.txt", "t/3.txt"]
    assert dialogues[0].turns == ("Insulin acts on liver cells.", "and what about treatment?")
    assert len(dialogues[1].turns) == 3  # alternately two and three turns
    # every follow-up word is common in the corpus and new to the dialogue
    for d in dialogues:
        for follow in d.turns[1:]:
            word = follow.removeprefix("and what about ").rstrip("?")
            assert sum(word in text.lower() for text in documents.values()) >= 2
            assert word not in d.turns[0].lower()


def test_the_benchmark_scores_every_way_and_scripts_one_rewrite_per_follow_up() -> None:
    result = run(6, 30, Progress(quiet=True), EXCERPT_EVAL_DIR)
    assert result["dialogues"] >= 4
    follow_ups = result["dialogues"] + result["three_turn"]
    assert result["rewrite_requests"] == follow_ups
    assert set(result["hit_at_3"]) == {"alone", "verbatim", "rule", "rewrite"}
    assert all(0 <= v <= 1 for v in result["hit_at_3"].values())
    assert result["hit_at_3"]["rule"] > result["hit_at_3"]["alone"]
