"""The API's requests as the cores read them (``SearchRequest.to_query``, ``AnswerRequest.to_question``):
every choice carried over, the filters in the store's terms, and the candidates rule applied by the core's
own query."""

from __future__ import annotations

from dataclasses import replace

from winnow.answer.question import Question
from winnow.api.schemas.answer import AnswerRequest
from winnow.api.schemas.search import SearchRequest
from winnow.ports import RangeFilter
from winnow.search.query import DEFAULT_CANDIDATES, RERANKED_CANDIDATES, Query


def test_a_request_becomes_the_cores_query_with_the_stores_filters() -> None:
    # Given a request with every field a caller may set, a range among its filters
    request = SearchRequest.model_validate(
        {
            "query": "  travel expenses ",
            "top_k": 3,
            "candidates": 40,
            "filters": {"year": {"gte": 2020}, "department": ["it", "people"], "ocr": True},
            "mode": "sparse",
            "rerank": False,
            "relevance_threshold": 0.25,
            "score_threshold": 0.1,
            "context": "section",
            "conversation_id": "abcdefgh",
        }
    )
    # When the route maps it to the core's query
    query = request.to_query()
    # Then each choice is carried over, the range as the store's RangeFilter, the rest as sent
    assert query == Query(
        query="travel expenses",
        top_k=3,
        candidates=40,
        filters={"year": RangeFilter(gte=2020.0), "department": ["it", "people"], "ocr": True},
        mode="sparse",
        rerank=False,
        relevance_threshold=0.25,
        score_threshold=0.1,
        context="section",
    )


def test_the_core_picks_the_candidates_a_request_leaves_open() -> None:
    query = SearchRequest(query="x").to_query()
    assert query.candidate_count() == DEFAULT_CANDIDATES
    assert query.candidate_count(reranked=True) == RERANKED_CANDIDATES
    assert SearchRequest(query="x", top_k=20).to_query().candidate_count() == 60
    assert SearchRequest(query="x", candidates=7, top_k=7).to_query().candidate_count(reranked=True) == 7


def test_the_api_states_the_default_candidates_once_with_their_count() -> None:
    # Given the two default counts agree today (30, issue 46), the description says so in one clause
    assert DEFAULT_CANDIDATES == RERANKED_CANDIDATES
    described = SearchRequest.model_json_schema()["properties"]["candidates"]["description"]
    assert described.count(f"max({DEFAULT_CANDIDATES}, 3 * top_k)") == 1
    assert "with or without a re-ranker" in described


def test_an_answer_request_searches_with_its_own_context_default() -> None:
    # /answer reads the text around each passage unless told otherwise; its search asks for it
    assert AnswerRequest(query="x").to_query().context == "neighbours"


def test_an_answer_request_is_the_answer_cores_question() -> None:
    # Given an /answer request with its own cap, memory off and a conversation to continue
    request = AnswerRequest.model_validate(
        {"query": " pay? ", "top_k": 3, "max_answer_tokens": 64, "memory": False, "conversation_id": "a" * 32}
    )
    # When the edge maps it to the core's question
    question = request.to_question()
    # Then the question carries the search, the cap and the memory choice; the conversation id stays with
    # the edge, which hands it to the conversation service on its own
    assert question == Question(request.to_query(), max_answer_tokens=64, memory=False)
    assert question.search.query == "pay?" and question.search.top_k == 3
    assert not hasattr(question, "conversation_id")
    # And a follow-up made standalone changes only the searched text
    assert question.searching("what is the pay?") == Question(
        replace(request.to_query(), query="what is the pay?"), max_answer_tokens=64, memory=False
    )
