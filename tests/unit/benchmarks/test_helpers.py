"""The benchmarks' own helpers: slicing an eval set, ranking documents by their best chunk, percentiles,
and the cost benchmark's generated document."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.common import percentile, stdout_reserved_for_result
from benchmarks.cost import edit_sections, generate_sections, to_markdown
from benchmarks.stack import Hit, documents_by_best_chunk
from training.data import EvalSet


def _eval_set() -> EvalSet:
    return EvalSet(
        documents={f"d{i}": f"text {i}" for i in range(10)},
        queries={"q1": "one", "q2": "two", "q3": "three", "q4": "unjudged"},
        qrels={"q1": {"d7": 1}, "q2": {"d2": 1, "d9": 2}, "q3": {"d5": 1, "missing": 1}},
    )


def test_limited_keeps_the_relevant_documents_of_the_chosen_queries_then_fills_in_corpus_order() -> None:
    # Given a budget of 4 documents and 2 queries
    small = _eval_set().limited(max_documents=4, max_queries=2)
    # Then q1 and q2 are kept with all their relevant documents, plus one distractor, in corpus order
    assert list(small.queries) == ["q1", "q2"]
    assert list(small.documents) == ["d0", "d2", "d7", "d9"]
    assert small.qrels == {"q1": {"d7": 1}, "q2": {"d2": 1, "d9": 2}}


def test_limited_skips_queries_whose_relevant_documents_do_not_fit() -> None:
    # Given room for 2 documents: q1 needs 1, q2 needs 2 more, q3 needs 1 more
    small = _eval_set().limited(max_documents=2)
    assert list(small.queries) == ["q1", "q3"]
    assert set(small.documents) == {"d7", "d5"}


def test_judged_queries_are_those_with_a_relevant_document_in_the_corpus() -> None:
    assert list(_eval_set().judged_queries) == ["q1", "q2", "q3"]


def test_documents_are_ranked_by_the_first_occurrence_of_their_chunks() -> None:
    hits = [
        Hit(key=k, score=0.0, vector_score=0.0, text="") for k in ("t/b.txt", "t/a.txt", "t/b.txt", "t/x.txt")
    ]
    ranking = documents_by_best_chunk(hits, {"t/a.txt": "a", "t/b.txt": "b"})
    assert ranking == ["b", "a"]


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([], 0.5) == 0.0


def test_generated_document_has_distinct_sections_and_an_edit_changes_exactly_one() -> None:
    sections = generate_sections(12)
    assert len(sections) == 12
    assert len({tuple(p) for _, p in sections}) == 12
    edited = edit_sections(sections, 6)
    changed = [i for i, (a, b) in enumerate(zip(sections, edited, strict=True)) if a != b]
    assert changed == [6]
    assert to_markdown("T", sections) != to_markdown("T", edited)
    assert to_markdown("T", sections).count(b"\n## ") == 12


def test_output_printed_during_a_run_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    # Given something (Powertools' metric auto-flush, say) printing during a benchmark run
    with stdout_reserved_for_result():
        print('{"_aws": "noise"}')
    print("result")
    # Then stdout holds only the result
    captured = capsys.readouterr()
    assert captured.out == "result\n"
    assert '{"_aws": "noise"}' in captured.err


def test_packages_hidden_from_the_cold_start_are_not_shipped_in_the_lambda_bundle() -> None:
    """The cold-init figure hides dev-only packages; that is fair only while the bundle lacks them."""
    from pathlib import Path

    from benchmarks.coldstart import NOT_IN_BUNDLE

    root = Path(__file__).resolve().parents[3]
    shipped = [root / "layers/shared/requirements.txt", *sorted(root.glob("functions/*/requirements.txt"))]
    names = {
        line.split("#")[0]
        .strip()
        .split(";")[0]
        .split("[")[0]
        .split("=")[0]
        .split(">")[0]
        .split("<")[0]
        .lower()
        for path in shipped
        for line in path.read_text().splitlines()
    }
    assert NOT_IN_BUNDLE and not set(NOT_IN_BUNDLE) & names


def test_the_embedding_cache_keeps_the_models_window_so_chunks_match_the_product(
    tmp_path: Path,
) -> None:
    from training.embedcache import CachingEmbedder
    from winnow.models import EmbeddingProfile
    from winnow.ports import Embedder, InputType

    class SmallWindow(Embedder):
        @property
        def profile(self) -> EmbeddingProfile:
            return EmbeddingProfile(provider="test", model="small", dimension=2)

        @property
        def max_input_tokens(self) -> int | None:
            return 7

        def count_tokens(self, texts: Sequence[str]) -> list[int]:
            return [len(text.split()) for text in texts]

        def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    # Given a model with a small window, wrapped by the benchmarks' embedding cache
    cached = CachingEmbedder(SmallWindow(), tmp_path / "cache.sqlite3")
    # Then the wrapper reports the model's window and counts tokens as the model does
    assert cached.max_input_tokens == 7
    assert cached.count_tokens(["one two three", "four"]) == [3, 1]
    cached.close()
