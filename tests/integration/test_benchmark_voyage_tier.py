"""The Voyage-tier benchmark, on a short virtual run: beyond the tier, searches get 503 with Retry-After
(never a 500), each throttled search costs Voyage at most one retry (no cascade), and what fits is
answered."""

from __future__ import annotations

from benchmarks import voyage_tier


def test_over_the_tier_searches_get_503_with_retry_after_and_no_cascade() -> None:
    # Given 3 searches a second for 65 virtual seconds, tokens counted at the fake's strict bound (about
    # 4x prose, so tier 1's rerank budget holds about 1.4 searches a second)
    result = voyage_tier.run(rate=3.0, seconds=65, tier=1, candidates=30, token_share=1.0)
    statuses = result["api_statuses"]
    # Then every answer is a 200 or a 503, the 503s each carry a Retry-After, and some were answered
    assert set(statuses) == {200, 503}
    assert "none" not in result["retry_after_of_non_200"]
    assert sum(result["retry_after_of_non_200"].values()) == statuses[503]
    assert 0 < result["first_minute_per_second"] < 3.0
    # And Voyage saw at most two rerank requests per refused search (one retry), never a storm
    assert result["voyage_statuses"]["rerank 429"] <= 2 * statuses[503]
