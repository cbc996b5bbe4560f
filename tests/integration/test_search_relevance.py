"""Without a re-ranker, ``score`` is the shipped relevance model's probability that the passage is
relevant, results are ordered by it, and the default threshold refuses what the corpus does not cover.
The true embedded default: the local ONNX model, through the real search handler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from functions.search.app import service
from tests.support.stack import EmbeddedStack
from training.evidence import candidates as gather
from winnow.api.schemas.search import SearchRequest
from winnow.ports import Embedder
from winnow.search.relevance import RelevanceModels, load_models
from winnow_local.cli.demo import SAMPLES_DIR, SOURCES_DIR

TEXTS = {
    "acme/handbook/parental-leave.txt": (SAMPLES_DIR / "handbook" / "parental-leave.txt").read_bytes(),
    "acme/handbook/remote-work.md": (SAMPLES_DIR / "handbook" / "remote-work.md").read_bytes(),
    "acme/handbook/travel-and-expenses.txt": (SOURCES_DIR / "travel-and-expenses.txt").read_bytes(),
    "acme/product/beacon-setup.md": (SAMPLES_DIR / "product" / "beacon-setup.md").read_bytes(),
    "acme/engineering/incident-response.md": (
        SAMPLES_DIR / "engineering" / "incident-response.md"
    ).read_bytes(),
}


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory, onnx_embedder: Embedder) -> Iterator[EmbeddedStack]:
    """The handbook ingested once for the module: every test only searches it."""
    stack = EmbeddedStack(tmp_path_factory.mktemp("handbook") / "home", None, embedder=onnx_embedder)
    for key, data in TEXTS.items():
        assert stack.upload(key, data)["status"] == "indexed"
    yield stack
    stack.close()


def test_score_is_the_shipped_models_probability_and_orders_the_results(handbook: EmbeddedStack) -> None:
    # Given the local model's shipped relevance models
    models = load_models(handbook.container.embedder.profile.slug)
    assert models is not None
    query = "How many weeks of paid leave do new parents get?"
    # When the default mode runs without a re-ranker and without a threshold
    status, body = handbook.search(query, top_k=10, relevance_threshold=0)
    assert status == 200
    # Then each score is the hybrid model's probability over the candidates' evidence, best first
    candidates = gather(service(), "acme", SearchRequest(query=query, top_k=10))
    probability = dict(
        zip(
            [hit.point_id for hit, _ in candidates],
            models.modes["hybrid"].probabilities([e for _, e in candidates]),
            strict=True,
        )
    )
    results = body["results"]
    assert [r["score"] for r in results] == [
        pytest.approx(probability[r["chunk_id"]], abs=1e-6) for r in results
    ]
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert all(0 < r["score"] < 1 for r in results)
    assert results[0]["key"] == "acme/handbook/parental-leave.txt"


def test_the_default_threshold_keeps_the_answer_and_drops_unrelated_policies(handbook: EmbeddedStack) -> None:
    # When the demo's parental-leave question is asked as the demo asks it (two passages, default threshold)
    _, body = handbook.search("How many weeks of paid leave do new parents get?", top_k=2)
    # Then the parental-leave policy answers and the travel policy does not come back
    keys = [r["key"] for r in body["results"]]
    assert keys and keys[0] == "acme/handbook/parental-leave.txt"
    assert "acme/handbook/travel-and-expenses.txt" not in keys


@pytest.mark.parametrize(
    "query", ["Who won the FIFA World Cup in 1998?", "How do I make a classic Neapolitan pizza dough?"]
)
def test_the_default_threshold_refuses_questions_the_corpus_does_not_cover(
    handbook: EmbeddedStack, query: str
) -> None:
    status, body = handbook.search(query)
    assert status == 200
    assert body["relevant"] is False and body["results"] == []
    assert body["message"] == "No relevant passages found"


def _phrases(text: str, words: int = 6) -> list[str]:
    """The middle ``words`` words of every sentence of 14 words or more: what someone pastes to find
    where they read it."""
    import re

    out = []
    for sentence in re.split(r"(?<=[.;:])\s+", " ".join(text.split())):
        tokens = sentence.split()
        if len(tokens) >= 14:
            middle = len(tokens) // 2
            out.append(" ".join(tokens[middle - words // 2 : middle + words // 2]))
    return out


def test_a_phrase_copied_from_a_document_finds_that_document_first(handbook: EmbeddedStack) -> None:
    # Given phrases copied from the middle of the handbook's sentences (keyword evidence the dense model,
    # fitted for paraphrases, barely sees)
    asked = [(phrase, key) for key, data in TEXTS.items() for phrase in _phrases(data.decode())]
    assert len(asked) >= 20
    # When each is searched in the default mode without a threshold
    first = 0
    for phrase, key in asked:
        _, body = handbook.search(phrase, top_k=3, relevance_threshold=0)
        first += bool(body["results"]) and body["results"][0]["key"] == key
    # Then the document it was copied from comes first for nearly every one
    assert first / len(asked) >= 0.95, f"{first} of {len(asked)} phrases found their document first"


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("Does the company pay for a coworking space?", "acme/handbook/remote-work.md"),
        ("Who owns the company laptop?", "acme/handbook/remote-work.md"),
    ],
)
def test_a_short_question_whose_keywords_the_passage_holds_is_answered(
    handbook: EmbeddedStack, query: str, key: str
) -> None:
    # Given short questions the small dense model scores low, whose keywords the right passage holds
    # When each is asked at the default threshold
    status, body = handbook.search(query, top_k=3)
    # Then it is answered, from the document that holds the answer, not refused as off-topic
    assert status == 200 and body["relevant"] is True
    assert body["results"][0]["key"] == key


# --- the threshold's two jobs: the gate and the floor (issue 46) ------------------------------------------
PARENTAL = "How many weeks of paid leave do new parents get?"


def _fitted(threshold: float, floor: float | None) -> RelevanceModels:
    """The shipped models with another threshold and floor, as an artifact would state them."""
    shipped = load_models(service().embedder.profile.slug)
    assert shipped is not None
    return RelevanceModels(shipped.profile, shipped.modes, threshold, floor=floor)


def _scores(handbook: EmbeddedStack, query: str) -> list[float]:
    _, body = handbook.search(query, top_k=5, relevance_threshold=0)
    return [r["score"] for r in body["results"]]


def test_by_default_the_results_after_the_first_need_only_the_floor(
    handbook: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an artifact whose threshold lies between the best result's score and the second's, and
    # whose floor lies below the second's
    scores = _scores(handbook, PARENTAL)
    assert len(scores) >= 3 and scores[0] > scores[1] > scores[2]
    threshold, floor = (scores[0] + scores[1]) / 2, (scores[1] + scores[2]) / 2
    monkeypatch.setattr(service(), "models", _fitted(threshold, floor))
    # When the question is asked as a client asks it
    _, body = handbook.search(PARENTAL)
    # Then the best result clears the gate and the second, under the threshold but over the floor, is
    # kept (a threshold cutting every result returned only the first), the third is not
    assert [r["score"] for r in body["results"]] == pytest.approx(scores[:2], abs=1e-6)
    assert body["results"][1]["score"] < body["relevance_threshold"] == pytest.approx(threshold)
    assert body["relevance_floor"] == pytest.approx(floor) and body["relevant"] is True


def test_the_gate_refuses_when_the_best_result_is_under_the_threshold_whatever_the_floor(
    handbook: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a threshold above the best result's score, and a floor every result clears
    scores = _scores(handbook, PARENTAL)
    monkeypatch.setattr(service(), "models", _fitted(min(1.0, scores[0] + 0.01), 0.0))
    # When asked by default
    _, body = handbook.search(PARENTAL)
    # Then nothing is relevant: the floor keeps nothing once the best result fails the gate
    assert body["relevant"] is False and body["results"] == []
    assert body["message"] == "No relevant passages found"


def test_a_threshold_the_request_sets_is_applied_to_every_result(
    handbook: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the same artifact (its floor under the second result)
    scores = _scores(handbook, PARENTAL)
    threshold = (scores[0] + scores[1]) / 2
    monkeypatch.setattr(service(), "models", _fitted(threshold, 0.0))
    # When the request sends that threshold itself
    _, body = handbook.search(PARENTAL, relevance_threshold=threshold)
    # Then every result clears it: only the first, and the answer says so
    assert [r["score"] for r in body["results"]] == pytest.approx(scores[:1], abs=1e-6)
    assert body["relevance_threshold"] == body["relevance_floor"] == pytest.approx(threshold)


def test_an_artifact_without_a_floor_cuts_every_result_at_its_threshold(
    handbook: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an artifact fitted before the floor (none stated)
    scores = _scores(handbook, PARENTAL)
    threshold = (scores[0] + scores[1]) / 2
    monkeypatch.setattr(service(), "models", _fitted(threshold, None))
    # When asked by default, then every result clears its threshold, as before the floor existed
    _, body = handbook.search(PARENTAL)
    assert [r["score"] for r in body["results"]] == pytest.approx(scores[:1], abs=1e-6)
    assert body["relevance_floor"] == pytest.approx(threshold)


def test_a_deployment_threshold_is_the_gate_and_caps_the_floor(
    handbook: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the shipped artifact, and a deployment that sets a threshold below its floor
    shipped = load_models(service().embedder.profile.slug)
    assert shipped is not None and shipped.floor is not None
    settings = service().settings.model_copy(update={"relevance_threshold": shipped.floor / 2})
    monkeypatch.setattr(service(), "settings", settings)
    # When asked by default
    _, body = handbook.search(PARENTAL)
    # Then the deployment's threshold is the gate, and the floor is never above it
    assert body["relevance_threshold"] == body["relevance_floor"] == pytest.approx(shipped.floor / 2)
    # And with a deployment threshold above the artifact's, its floor stays the artifact's
    settings = service().settings.model_copy(update={"relevance_threshold": 0.9})
    monkeypatch.setattr(service(), "settings", settings)
    _, body = handbook.search(PARENTAL)
    assert body["relevance_threshold"] == 0.9 and body["relevance_floor"] == pytest.approx(shipped.floor)
