"""The search API through the real handler with API Gateway HTTP API events: auth, validation, filters,
tenant isolation, modes, re-ranking, the relevance threshold, outages and the OpenAPI document."""

from __future__ import annotations

import gc
import json
import math
from pathlib import Path
from typing import Any

import pytest

from functions.search import app as search_app
from tests.support.stack import EmbeddedStack
from training.evidence import candidates
from winnow import coldstart
from winnow.access import ReadScope
from winnow.ports import SearchQuery
from winnow.search.query import DEFAULT_CANDIDATES, RERANKED_CANDIDATES, default_candidates
from winnow_fakes.fake_voyage import Fault
from winnow_local.context import LocalLambdaContext

ROOT = Path(__file__).resolve().parents[2]

DOCS = {
    "acme/finance/expenses.md": (
        b"# Expenses policy\n\n## Travel\n\nTravel expenses are reimbursed within fourteen days when "
        b"submitted with receipts through the finance portal.\n",
        {"department": "finance", "year": "2024"},
    ),
    "acme/it/security.md": (
        b"# Security policy\n\n## Laptops\n\nLaptops must use full-disk encryption and lock the screen "
        b"after five minutes of inactivity.\n",
        {"department": "it", "year": "2023"},
    ),
    "acme/people/holidays.md": (
        b"# Holidays\n\n## Allowance\n\nEvery employee receives twenty-eight days of paid holiday per year "
        b"and may carry five days over.\n",
        {"department": "people", "year": "2025"},
    ),
    "globex/finance/expenses.md": (
        b"# Globex expenses\n\n## Travel\n\nGlobex reimburses travel expenses within thirty days of the "
        b"trip, receipts required.\n",
        {"department": "finance", "year": "2024"},
    ),
}


@pytest.fixture
def loaded(stack: EmbeddedStack) -> EmbeddedStack:
    for key, (data, metadata) in DOCS.items():
        assert stack.upload(key, data, metadata)["status"] == "indexed"
    # sidecar-typed metadata for numeric filters
    return stack


def service_models(stack: EmbeddedStack) -> Any:
    from winnow.search.relevance import load_models

    return load_models(stack.container.embedder.profile.slug)


def keys(body: dict[str, Any]) -> list[str]:
    return [r["key"] for r in body["results"]]


# --- auth ---------------------------------------------------------------------------------------------
def test_no_tenant_is_401_before_any_provider_call(loaded: EmbeddedStack) -> None:
    calls = loaded.fake.total_requests
    status, headers, body = loaded.api("POST", "/search", {"query": "travel expenses"}, tenant=None)
    assert status == 401
    assert body["error"]["code"] == "unauthorized"
    assert body["correlation_id"] == headers["X-Correlation-Id"]
    assert loaded.fake.total_requests == calls


def test_no_tenant_is_401_even_when_the_body_is_invalid(loaded: EmbeddedStack) -> None:
    status, _, _ = loaded.api("POST", "/search", {"nonsense": True}, tenant=None)
    assert status == 401


def test_tenant_in_body_is_rejected_and_in_query_string_ignored(loaded: EmbeddedStack) -> None:
    status, _, body = loaded.api("POST", "/search", {"query": "travel", "tenant": "globex"})
    assert status == 422 and "tenant" in body["error"]["message"]
    status, _, body = loaded.api(
        "POST", "/search", {"query": "travel expenses", "relevance_threshold": 0}, query={"tenant": "globex"}
    )
    assert status == 200
    assert keys(body) and all(k.startswith("acme/") for k in keys(body))


def test_lambda_authorizer_context_supplies_the_tenant(loaded: EmbeddedStack) -> None:
    from winnow_local.apigw import http_api_event

    event = http_api_event("POST", "/search", body={"query": "travel expenses", "relevance_threshold": 0})
    event["requestContext"]["authorizer"] = {"lambda": {"tenant": "globex"}}
    response = search_app.handler(event, LocalLambdaContext())
    body = json.loads(response["body"])
    assert response["statusCode"] == 200
    assert keys(body) == ["globex/finance/expenses.md"]


def test_tenant_header_is_ignored_unless_enabled(loaded: EmbeddedStack) -> None:
    status, _, _ = loaded.api(
        "POST", "/search", {"query": "x"}, tenant=None, headers={"x-winnow-tenant": "acme"}
    )
    assert status == 401


def test_malformed_tenant_claim_is_403(loaded: EmbeddedStack) -> None:
    status, _, body = loaded.api("POST", "/search", {"query": "travel"}, tenant="../globex")
    assert status == 403 and body["error"]["code"] == "forbidden"


# --- validation ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 51}, "top_k"),
        ({"query": "x", "top_k": True}, "top_k"),
        ({"query": "x", "top_k": "5"}, "top_k"),
        ({"query": "x", "top_k": 10, "candidates": 5}, "candidates"),
        ({"query": "x", "candidates": 201}, "candidates"),
        ({"query": "x", "mode": "fuzzy"}, "mode"),
        ({"query": "x", "rerank": "yes"}, "rerank"),
        ({"query": "x", "relevance_threshold": 1.5}, "relevance_threshold"),
        ({"query": "x", "relevance_threshold": False}, "relevance_threshold"),
        ({"query": "x", "score_threshold": -0.1}, "score_threshold"),
        ({"query": "x", "filters": {"year": {"gte": "2020"}}}, "filters"),
        ({"query": "x", "filters": {"year": {"between": 1}}}, "filters"),
        ({"query": "x", "filters": {"bad name!": "a"}}, "filters"),
        ({"query": "x", "filters": {"a": []}}, "filters"),
        ({"query": "x", "surprise": 1}, "surprise"),
    ],
)
def test_invalid_requests_get_422_with_field_messages(
    loaded: EmbeddedStack, body: dict[str, Any], field: str
) -> None:
    calls = loaded.fake.total_requests
    status, _, payload = loaded.api("POST", "/search", body)
    assert status == 422, payload
    assert payload["error"]["code"] == "validation_error"
    assert field in payload["error"]["message"]
    assert payload["error"]["details"]
    assert loaded.fake.total_requests == calls


def test_body_that_is_not_json_is_400(loaded: EmbeddedStack) -> None:
    status, _, payload = loaded.api("POST", "/search", "{not json")
    assert status == 400 and payload["error"]["code"] == "invalid_body"
    assert "not valid JSON" in payload["error"]["message"]


def test_query_is_trimmed_and_echoed(loaded: EmbeddedStack) -> None:
    status, body = loaded.search("   travel expenses  ")
    assert status == 200 and body["query"] == "travel expenses"


# --- retrieval ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_every_mode_finds_the_document_with_a_citation(loaded: EmbeddedStack, mode: str) -> None:
    status, body = loaded.search("laptops full-disk encryption", mode=mode)
    assert status == 200
    assert body["relevant"] is True and body["count"] == len(body["results"]) >= 1
    top = body["results"][0]
    assert top["key"] == "acme/it/security.md"
    assert top["title"] == "Security policy" and top["section"] == "Laptops"
    assert top["page"] is None
    assert 0 <= top["score"] <= 1
    assert set(top) == {
        "rank",
        "score",
        "vector_score",
        "chunk_id",
        "key",
        "title",
        "page",
        "section",
        "text",
        "metadata",
        "kind",
        "ocr",
        "figure_text",
        "image_url",
        "restricted",
        "access",
        "context",
        "highlight",
    }
    assert top["kind"] == "text" and top["ocr"] is False
    assert top["figure_text"] is None and top["image_url"] is None
    assert top["restricted"] is False and top["access"] is None
    assert top["context"] is None  # only when asked for (tests/integration/test_search_context.py)
    assert set(body["timings_ms"]) == {"embed", "search", "rerank", "total"}


def test_results_are_ordered_and_unique(loaded: EmbeddedStack) -> None:
    _, body = loaded.search("policy days expenses laptops", relevance_threshold=0, top_k=10)
    scores = [(-r["score"], r["key"]) for r in body["results"]]
    assert scores == sorted(scores)
    ids = [r["chunk_id"] for r in body["results"]]
    assert len(ids) == len(set(ids))
    assert [r["rank"] for r in body["results"]] == list(range(1, len(ids) + 1))


def test_without_reranker_or_relevance_model_hybrid_returns_the_fused_top_k_ordered_by_cosine(
    stack: EmbeddedStack,
) -> None:
    """An embedding profile with no fitted relevance model (here the fake Voyage embedder's): the fusion
    picks which chunks come back and the cosine score orders them, since ordering every fused candidate
    by cosine would make hybrid mode return exactly what dense mode returns. (With a model, the model's
    probability orders: tests/integration/test_search_relevance.py.)"""
    assert service_models(stack) is None
    # Given: many short notes sharing only a common word with the query, and longer documents that
    # carry the query's rare word (BM25 favours them, the bag-of-words cosine favours the short notes)
    for i in range(12):
        stack.upload(f"acme/notes/{i}.md", f"# Note {i}\n\nThe report of team {i}.\n".encode())
    for i in range(3):
        text = f"# Engine {i}\n\nThe zephyr engine {i} has pistons, valves, gaskets and a report.\n"
        stack.upload(f"acme/engines/{i}.md", text.encode())
    query, top_k = "zephyr report", 4
    container = stack.container
    fused = container.store.search(
        SearchQuery(
            tenant="acme",
            dense=container.embedder.embed([query], "query")[0],
            sparse=container.sparse.encode_query(query),
            mode="hybrid",
            limit=default_candidates(top_k),
            filters={},
            reader=ReadScope(open_documents=True),
        )
    )
    _, dense_body = stack.search(query, mode="dense", top_k=top_k, relevance_threshold=0)
    fused_top = {hit.point_id for hit in fused[:top_k]}
    assert {r["chunk_id"] for r in dense_body["results"]} != fused_top  # the data tells the two apart

    # When: the default mode runs without a re-ranker
    status, body = stack.search(query, top_k=top_k, relevance_threshold=0)

    # Then: the result set is the fused top_k, in score order
    assert status == 200
    assert {r["chunk_id"] for r in body["results"]} == fused_top
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert any(r["key"].startswith("acme/engines/") for r in body["results"])


def _engines_and_notes(stack: EmbeddedStack) -> None:
    """Short notes sharing only a common word with "zephyr report", and longer documents carrying its rare
    word: BM25 favours the engines, the fake embedder's bag-of-words cosine favours the short notes."""
    for i in range(12):
        stack.upload(f"acme/notes/{i}.md", f"# Note {i}\n\nThe report of team {i}.\n".encode())
    for i in range(3):
        text = f"# Engine {i}\n\nThe zephyr engine {i} has pistons, valves, gaskets and a report.\n"
        stack.upload(f"acme/engines/{i}.md", text.encode())


def test_a_ranked_model_orders_by_its_order_model_and_scores_the_best_by_its_answer_model(
    stack: EmbeddedStack,
) -> None:
    """The hybrid default's ``RankedRelevance`` through the real handler: results in the order model's
    order, the best passage's score from the answer model's best candidate, every score a probability."""
    from winnow.api.schemas.search import SearchRequest
    from winnow.search.relevance import LogisticModel, RankedRelevance, RelevanceModels

    # Given documents where the keyword evidence and the cosine disagree, and a ranked model whose order
    # model reads only the BM25 share and whose answer model reads only the cosine
    _engines_and_notes(stack)
    stack.upload("acme/notes/summary.md", b"# Report\n\nReport.\n")  # the best cosine, a weak BM25 match
    ranked = RankedRelevance(
        order=LogisticModel(("bm25_rel",), (6.0,), 0.0),
        answer=LogisticModel(("cosine",), (8.0,), -4.0),
        gap_weight=1.0,
        answer_weight=1.0,
        intercept=0.0,
    )
    service = search_app.service()
    service.models = RelevanceModels(
        profile=stack.container.embedder.profile.slug, modes={"hybrid": ranked}, threshold=0.5
    )
    query, top_k = "zephyr report", 5
    evidence = {
        h.point_id: e for h, e in candidates(service, "acme", SearchRequest(query=query, top_k=top_k))
    }
    best_cosine = max(e.cosine for e in evidence.values())
    best_bm25 = max(e.bm25 or 0.0 for e in evidence.values())
    by_cosine = max(evidence, key=lambda p: evidence[p].cosine)
    assert by_cosine != max(evidence, key=lambda p: evidence[p].bm25 or 0.0)

    # When the default mode runs without a re-ranker and without a threshold
    status, body = stack.search(query, top_k=top_k, relevance_threshold=0)

    # Then the results are in the order model's order (best BM25 share first), not the cosine's
    assert status == 200
    results = body["results"]
    bm25 = [evidence[r["chunk_id"]].bm25 or 0.0 for r in results]
    assert bm25[0] == best_bm25 and bm25 == sorted(bm25, reverse=True)
    assert results[0]["key"].startswith("acme/engines/")
    # And the best passage's score is the answer model's best logit over all candidates, recalibrated
    assert results[0]["score"] == pytest.approx(1 / (1 + math.exp(-(8.0 * best_cosine - 4.0))), abs=1e-6)
    assert evidence[results[0]["chunk_id"]].cosine < best_cosine  # the best score is not its own cosine's
    # And each other score falls with its order-model gap to the best, a probability in (0, 1)
    for r, b in zip(results, bm25, strict=True):
        expected = 1 / (1 + math.exp(-(6.0 * (b / best_bm25 - 1.0) + 8.0 * best_cosine - 4.0)))
        assert r["score"] == pytest.approx(expected, abs=1e-6) and 0 < r["score"] < 1


def test_a_hybrid_query_of_keyword_stop_words_only_is_answered_by_the_dense_side(
    stack: EmbeddedStack,
) -> None:
    # Given documents that share more or fewer words with a query whose every word is a keyword stop-word
    # (the fake embedder still reads them: its stop list is another)
    for name, text in {
        "all": "They went there then, if not sooner.",
        "some": "They stayed there all week.",
        "one": "Then it rained on the hills.",
        "none": "Pistons, valves and gaskets.",
    }.items():
        assert stack.upload(f"acme/words/{name}.txt", text.encode())["status"] == "indexed"
    query = "they there then if not"
    assert not stack.container.sparse.encode_query(query).indices
    # When it is asked in the default (hybrid) mode and in dense mode
    status, body = stack.search(query, top_k=3, relevance_threshold=0)
    _, dense = stack.search(query, mode="dense", top_k=3, relevance_threshold=0)
    # Then hybrid answers from the dense retriever (nothing is lost to an empty keyword side): the same
    # passages in the same order, their vector_score the cosine
    assert status == 200 and keys(body)[0] == "acme/words/all.txt"
    assert [(r["chunk_id"], r["vector_score"]) for r in body["results"]] == [
        (r["chunk_id"], r["vector_score"]) for r in dense["results"]
    ]


def test_filters_any_of_and_numeric_ranges(loaded: EmbeddedStack) -> None:
    _, body = loaded.search("policy", filters={"department": ["it", "people"]}, relevance_threshold=0)
    assert set(keys(body)) == {"acme/it/security.md", "acme/people/holidays.md"}
    _, body = loaded.search("policy", filters={"department": "finance"}, relevance_threshold=0)
    assert keys(body) == ["acme/finance/expenses.md"]


def test_a_filter_can_never_reach_another_tenant(loaded: EmbeddedStack) -> None:
    for filters in ({"tenant": "globex"}, {"key": "globex/finance/expenses.md"}, {"department": "finance"}):
        _, body = loaded.search("globex reimburses travel expenses", filters=filters, relevance_threshold=0)
        assert all(k.startswith("acme/") for k in keys(body)), filters


def test_threshold_gives_an_honest_nothing(loaded: EmbeddedStack) -> None:
    status, body = loaded.search("quantum chromodynamics of gluon plasma", relevance_threshold=0.9)
    assert status == 200
    assert body == {**body, "relevant": False, "count": 0, "results": []}
    assert body["message"] == "No relevant passages found"


def test_default_threshold_comes_from_config(loaded: EmbeddedStack) -> None:
    _, unrelated = loaded.search("zebra migration across the serengeti")
    assert unrelated["relevant"] is False
    _, related = loaded.search("paid holiday days per year")
    assert related["relevant"] is True


def test_rerank_orders_by_reranker_score(rerank_stack: EmbeddedStack) -> None:
    for key, (data, metadata) in DOCS.items():
        rerank_stack.upload(key, data, metadata)
    status, body = rerank_stack.search("holiday allowance paid days", relevance_threshold=0)
    assert status == 200
    assert len(rerank_stack.fake.requests_to("rerank")) == 1
    assert body["results"][0]["key"] == "acme/people/holidays.md"
    assert body["timings_ms"]["rerank"] > 0
    # and rerank can be turned off per request
    _, plain = rerank_stack.search("holiday allowance paid days", relevance_threshold=0, rerank=False)
    assert len(rerank_stack.fake.requests_to("rerank")) == 1
    assert plain["timings_ms"]["rerank"] == 0


def test_scores_no_floor_was_fitted_for_are_all_cut_at_the_threshold(rerank_stack: EmbeddedStack) -> None:
    # Given a profile with no relevance artifact (Voyage), re-ranked or scored by the cosine
    for key, (data, metadata) in DOCS.items():
        rerank_stack.upload(key, data, metadata)
    for fields in ({}, {"rerank": False}):
        # When asked by default
        status, body = rerank_stack.search("holiday allowance paid days", **fields)
        # Then the local model's floor, fitted on its probabilities, is not applied: every result clears
        # the threshold
        assert status == 200 and body["relevance_floor"] == body["relevance_threshold"] > 0
        assert all(r["score"] >= body["relevance_threshold"] for r in body["results"])


def _boiler_room_with_limits_watched(stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One document uploaded; the list that each later store search appends its ``limit`` to."""
    stack.upload("acme/x.md", b"# X\n\nThe boiler room is on the second floor.")
    store = stack.container.store
    search, limits = store.search, []
    monkeypatch.setattr(store, "search", lambda query: limits.append(query.limit) or search(query))
    return limits


def test_a_default_request_fetches_the_default_candidates_with_or_without_a_reranker(
    rerank_stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a re-ranker configured, and the store's searches watched
    limits = _boiler_room_with_limits_watched(rerank_stack, monkeypatch)
    # When default requests run re-ranked and not, with a larger top_k, and with candidates asked for
    for fields in ({}, {"rerank": False}, {"rerank": False, "top_k": 12}, {"candidates": 20}):
        status, _ = rerank_stack.search("boiler room", relevance_threshold=0, **fields)
        assert status == 200
    # Then each retriever brings 30 for the re-ranker and 30 without it (issue 46: the answering passage
    # among the candidates), 3 x top_k when more, or what was asked
    assert limits == [RERANKED_CANDIDATES, DEFAULT_CANDIDATES, 36, 20] == [30, 30, 36, 20]


def test_candidates_as_searched_are_as_many_as_the_search_fetches_for_its_reranker(
    rerank_stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the passage benchmark's bound reads (``training.evidence``): a search's results are always
    some of these."""
    from winnow.api.schemas.search import SearchRequest

    # Given a re-ranker configured, and the store's searches watched
    limits = _boiler_room_with_limits_watched(rerank_stack, monkeypatch)
    service = search_app.service()
    # When candidates are gathered as the relevance model orders them, as searched, and as searched
    # without the re-ranker
    for request, as_searched in (
        (SearchRequest(query="boiler room"), False),
        (SearchRequest(query="boiler room"), True),
        (SearchRequest(query="boiler room", rerank=False), True),
    ):
        assert candidates(service, "acme", request, as_searched=as_searched)
    # Then the model's pool, the re-ranked search's and the one with the re-ranker turned off are the
    # default candidates of each
    assert limits == [DEFAULT_CANDIDATES, RERANKED_CANDIDATES, DEFAULT_CANDIDATES]


def test_query_embedding_and_rerank_share_one_connection(rerank_stack: EmbeddedStack) -> None:
    # Given Voyage as embedder and re-ranker, wired by the factory
    rerank_stack.upload("acme/x.md", b"# X\n\nThe boiler room is on the second floor.")
    # When a re-ranked search embeds the query and then re-ranks
    status, _ = rerank_stack.search("where is the boiler room", relevance_threshold=0)
    assert status == 200
    fake = rerank_stack.fake
    assert fake is not None
    query_embedding = fake.requests_to("embeddings")[-1]
    (rerank,) = fake.requests_to("rerank")
    # Then both calls came over one keep-alive connection (one pool, one TLS context for both adapters)
    assert query_embedding.body["input_type"] == "query"
    assert rerank.peer_port == query_embedding.peer_port != 0


def test_the_cold_search_builds_its_clients_with_the_collector_paused_and_leaves_it_on(
    loaded: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a process's cold start: a container whose search service was never built, and the collector on
    monkeypatch.setattr(coldstart, "_built", False)
    monkeypatch.setattr(loaded.container, "_search", None)
    assert gc.isenabled()
    frozen_before = gc.get_freeze_count()
    # When the first search arrives
    status, body = loaded.search("paid holiday days per year")
    # Then it answers, the objects it built are frozen, and the collector runs again
    assert status == 200 and keys(body)[0] == "acme/people/holidays.md"
    assert gc.get_freeze_count() > frozen_before
    assert gc.isenabled()


def test_a_cold_search_that_fails_to_build_leaves_the_collector_on(
    loaded: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a cold container whose components cannot be built, in a process's cold start
    monkeypatch.setattr(coldstart, "_built", False)

    def broken() -> None:
        raise RuntimeError("cannot reach Qdrant")

    monkeypatch.setattr(loaded.container, "_search", None)
    monkeypatch.setattr(loaded.container.index, "reads", broken)
    # When the first search arrives
    status, _, body = loaded.api("POST", "/search", {"query": "anything"})
    # Then it is a structured 500 and the collector runs again
    assert status == 500 and body["error"]["code"] == "internal_error"
    assert gc.isenabled()


def test_provider_outage_is_503_with_retry_after(loaded: EmbeddedStack) -> None:
    loaded.fake.set_outage(Fault.unavailable(retry_after=7))
    status, headers, body = loaded.api("POST", "/search", {"query": "a question never asked before"})
    assert status == 503
    assert int(headers["Retry-After"]) >= 1
    assert body["error"]["code"] == "unavailable" and "results" not in body
    assert "Traceback" not in json.dumps(body)


def test_reranker_outage_is_503_not_a_partial_answer(rerank_stack: EmbeddedStack) -> None:
    rerank_stack.upload("acme/x.md", b"# X\n\nThe boiler room is on the second floor.")
    rerank_stack.fake.set_outage(Fault.server_error(502, endpoint="rerank"))
    status, _, body = rerank_stack.api("POST", "/search", {"query": "where is the boiler room"})
    assert status == 503 and "results" not in body


# --- documents --------------------------------------------------------------------------------------------
def test_documents_are_listed_per_tenant_with_a_cursor(loaded: EmbeddedStack) -> None:
    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        status, _, page = loaded.api("GET", "/documents", query=query)
        assert status == 200
        seen += [d["key"] for d in page["documents"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(k for k in DOCS if k.startswith("acme/"))
    doc = page["documents"][-1] if page["documents"] else None
    assert doc is None or set(doc) >= {"key", "status", "chunks", "error", "updated_at"}


def test_document_status_and_404_for_other_tenants(loaded: EmbeddedStack) -> None:
    status, _, doc = loaded.api("GET", "/documents/acme/it/security.md")
    assert status == 200 and doc["status"] == "indexed" and doc["chunks"] >= 1
    status, _, doc = loaded.api("GET", "/documents/it/security.md")  # relative to the tenant
    assert status == 200 and doc["key"] == "acme/it/security.md"
    status, _, body = loaded.api("GET", "/documents/globex/finance/expenses.md")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_bad_cursor_is_400_and_bad_limit_422(loaded: EmbeddedStack) -> None:
    status, _, _ = loaded.api("GET", "/documents", query={"cursor": "!!!"})
    assert status == 400
    status, _, _ = loaded.api("GET", "/documents", query={"limit": 0})
    assert status == 422


def test_health_makes_no_provider_call(loaded: EmbeddedStack) -> None:
    calls = loaded.fake.total_requests
    status, headers, body = loaded.api("GET", "/health", tenant=None)
    assert status == 200 and body["status"] == "ok"
    assert "X-Correlation-Id" in headers
    assert loaded.fake.total_requests == calls


def test_unknown_route_is_a_structured_404(loaded: EmbeddedStack) -> None:
    status, _, body = loaded.api("GET", "/nope")
    assert status == 404 and body["error"]["code"] == "not_found"


# --- contract -----------------------------------------------------------------------------------------------
def test_committed_openapi_document_matches_the_code() -> None:
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text())
    generated = json.loads(search_app.openapi_json())
    assert committed == generated, "docs/openapi.json drifted: run `make openapi` and commit it"


# --- engines ------------------------------------------------------------------------------------------------
def _answers(stack: EmbeddedStack) -> list[tuple[int, list[tuple[str, str]]]]:
    """What the handler returns for a fixed set of requests: status and (key, section) of each hit."""
    for key, (data, metadata) in DOCS.items():
        assert stack.upload(key, data, metadata)["status"] == "indexed"
    requests: list[tuple[str, dict[str, Any]]] = [
        ("travel expenses receipts", {}),
        ("laptops full-disk encryption", {"mode": "dense"}),
        ("paid holiday allowance", {"mode": "sparse"}),
        ("policy days expenses laptops", {"top_k": 10}),
        ("travel expenses", {"filters": {"department": "finance"}}),
        ("travel expenses", {"filters": {"department": ["it", "people"]}}),
    ]
    answers = []
    for text, fields in requests:
        status, body = stack.search(text, relevance_threshold=0, **fields)
        answers.append((status, [(r["key"], r["section"]) for r in body["results"]]))
    return answers


def test_the_embedded_engine_answers_through_the_handlers(tmp_path: Path, fake_voyage: Any) -> None:
    # Given documents ingested through the ingest handler into the embedded default (no Qdrant URL)
    stack = EmbeddedStack(tmp_path / "edge", fake_voyage)
    try:
        # Then they are stored on Qdrant Edge
        assert type(stack.container.store).__name__ == "EdgeVectorStore"
        # And the search handler answers each request with the tenant's documents
        answers = _answers(stack)
    finally:
        stack.close()
    assert all(status == 200 and hits for status, hits in answers)
    assert all(key.startswith("acme/") for _, hits in answers for key, _ in hits)
