"""The re-ranking stand-in refuses what the servers refuse, with their statuses and error shapes
(text-embeddings-inference's router/src/http/server.rs, Infinity's RerankInput), over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from winnow_fakes.fake_rerank import FakeRerankServer


@pytest.fixture
def tei() -> Iterator[FakeRerankServer]:
    with FakeRerankServer("tei") as fake:
        yield fake


@pytest.fixture
def infinity() -> Iterator[FakeRerankServer]:
    with FakeRerankServer("cohere", max_client_batch_size=4) as fake:
        yield fake


def test_tei_refuses_more_texts_than_its_client_batch_size(tei: FakeRerankServer) -> None:
    response = httpx.post(tei.url, json={"query": "q", "texts": ["a"] * 33})
    assert response.status_code == 422
    assert response.json() == {
        "error": "batch size 33 > maximum allowed batch size 32",
        "error_type": "validation",
    }
    assert httpx.post(tei.url, json={"query": "q", "texts": ["a"] * 32}).status_code == 200


def test_tei_refuses_empty_texts_missing_fields_and_long_untruncated_pairs(tei: FakeRerankServer) -> None:
    empty = httpx.post(tei.url, json={"query": "q", "texts": []})
    assert (empty.status_code, empty.json()["error_type"]) == (400, "empty")
    missing = httpx.post(tei.url, json={"query": "q", "documents": ["a"]})
    assert missing.status_code == 422 and "missing field `texts`" in missing.text
    long = httpx.post(tei.url, json={"query": "q", "texts": ["word " * 600], "truncate": False})
    assert long.status_code == 422 and "must have less than 512 tokens" in long.json()["error"]
    not_json = httpx.post(tei.url, content=b'{"query": "q", "texts": ["a"]}')
    assert not_json.status_code == 415


def test_tei_ignores_unknown_fields_and_answers_sigmoid_scores_best_first(tei: FakeRerankServer) -> None:
    response = httpx.post(
        tei.url, json={"query": "paid holiday", "texts": ["cats", "paid holiday"], "top_n": 1}
    )
    ranks = response.json()
    assert [r["index"] for r in ranks] == [1, 0]
    assert all(0 < r["score"] < 1 and set(r) == {"index", "score"} for r in ranks)
    raw = httpx.post(tei.url, json={"query": "paid holiday", "texts": ["cats"], "raw_scores": True})
    assert raw.json()[0]["score"] == -6.0


def test_cohere_style_validates_like_infinity(infinity: FakeRerankServer) -> None:
    too_many = httpx.post(infinity.url, json={"query": "q", "documents": ["a"] * 5})
    assert too_many.status_code == 422 and too_many.json()["detail"][0]["loc"] == ["body", "documents"]
    bad_top_n = httpx.post(infinity.url, json={"query": "q", "documents": ["a"], "top_n": 0})
    assert bad_top_n.status_code == 422
    unknown_model = httpx.post(infinity.url, json={"query": "q", "documents": ["a"], "model": "x"})
    assert unknown_model.status_code == 400 and unknown_model.json()["error"]["code"] == 400
    cut = httpx.post(
        f"{infinity.origin}/rerank",
        json={"query": "paid holiday", "documents": ["cats", "paid holiday", "holiday"], "top_n": 2},
    ).json()
    assert [r["index"] for r in cut["results"]] == [1, 2]
    assert cut["object"] == "rerank" and cut["model"] == infinity.model_id


def test_a_set_api_key_is_required(infinity: FakeRerankServer) -> None:
    with FakeRerankServer("tei", api_key="k") as guarded:
        assert httpx.post(guarded.url, json={"query": "q", "texts": ["a"]}).status_code == 401
        ok = httpx.post(
            guarded.url, json={"query": "q", "texts": ["a"]}, headers={"Authorization": "Bearer k"}
        )
        assert ok.status_code == 200
