"""What a metadata filter costs in Qdrant's local mode, where every condition is evaluated in Python for
every point: a list of mixed values is grouped into a few conditions instead of one per value, so 20
fields x 100 values cannot stall ``winnow serve`` for seconds (figures in docs/guarantees.md)."""

from __future__ import annotations

from typing import Any

import pytest
from qdrant_client import QdrantClient
from qdrant_client.local import payload_filters

from tests.support.qdrant import PROFILE, point, qsettings, query
from winnow.adapters.qdrant_store import QdrantVectorStore
from winnow.ports import FilterValue

WORDS = ["alpha", "beta", "gamma", "delta"]


@pytest.fixture
def store() -> Any:
    client = QdrantClient(":memory:")
    s = QdrantVectorStore(client, PROFILE, qsettings(metadata_fields={}))  # undeclared: typed by value
    s.ensure_collection()
    s.upsert(
        [
            point("acme", f"doc{i}.txt", f"{WORDS[i % 4]} beta", metadata={"year": 2000 + i, "team": f"t{i}"})
            for i in range(40)
        ]
    )
    s.upsert([point("acme", "odd.txt", "alpha beta", metadata={"year": 7.5, "team": True})])
    yield s
    client.close()


def mixed(n: int) -> list[FilterValue]:
    """n values cycling through int, str, fractional float and bool."""
    kinds = [lambda k: 100 + k, lambda k: f"v{k}", lambda k: k + 0.25, lambda k: k % 2 == 0]
    return [kinds[k % 4](k) for k in range(n)]


def test_mixed_lists_still_match_exactly_what_they_list(store: QdrantVectorStore) -> None:
    # Given a list that mixes every kind of value
    filters: dict[str, FilterValue] = {"year": [2003, "2005", 7.5, 2010.0, 1.25, False]}
    # When it filters a search
    found = {r.key for r in store.search(query("acme", "alpha beta", limit=50, filters=filters))}
    # Then exactly the documents with one of those values come back (2010.0 matches a stored 2010)
    assert found == {"doc3.txt", "odd.txt", "doc10.txt"}
    booleans = {
        r.key for r in store.search(query("acme", "alpha beta", limit=50, filters={"team": [True, 3.5, 1]}))
    }
    assert booleans == {"odd.txt"}


def test_twenty_fields_of_a_hundred_mixed_values_cost_a_few_conditions_per_point(
    store: QdrantVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"n": 0}
    original = payload_filters.check_condition

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(payload_filters, "check_condition", counting)

    def conditions_checked(filters: dict[str, FilterValue]) -> int:
        calls["n"] = 0
        store.search(query("acme", "alpha beta", limit=10, filters=filters))
        return calls["n"]

    # Given the cost of a one-value filter on the same field
    one_value = conditions_checked({"year": 1.5})
    # When 20 fields of 100 mixed values filter the search
    heavy = conditions_checked({f"f{j}": mixed(100) for j in range(19)} | {"year": mixed(100)})
    # Then each point is tested against a few conditions, not one per listed value (100 before)
    assert heavy <= 4 * one_value, (heavy, one_value)
