"""Tenant isolation as a property: for random documents spread over 2-4 tenants (with names chosen to
collide: prefixes of each other, case variants, keys that embed another tenant's name), random metadata
(including a ``tenant`` field naming someone else), random access lists (the same user and group names
in every tenant) and random filters (including ones on ``tenant``, ``key``, other tenants' keys and the
access fields), searched by callers whose claims name those users, groups and the admin group, no search
ever returns another tenant's chunk, and neither the
document listing nor the status route ever reveals another tenant's key; no upload form writes outside
the caller's prefix and no delete removes another tenant's object.

One embedded stack per test function (real handlers, Qdrant local mode, SQLite ledger, fake Voyage);
every example gets fresh tenants, so earlier examples' documents stay around as extra bait."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.stack import EmbeddedStack
from winnow_fakes.fake_voyage import FakeVoyageServer

WORDS = [
    "invoice",
    "harbour",
    "quarterly",
    "audit",
    "salmon",
    "glacier",
    "contract",
    "payroll",
    "orchard",
    "turbine",
    "privacy",
    "incident",
    "ledger",
    "migration",
    "vaccine",
    "warranty",
]
PATHS = ["notes.md", "docs/plan.txt", "a b+c.md", "reports/2024/q1.md", "x.html"]
DEPARTMENTS = ["finance", "legal", "ops", "FINANCE"]
# Every tenant's documents list the same names: a user or group of one tenant is nobody in another.
ACCESS_NAMES = ["u1", "u2"]
ADMIN = "winnow-admins"
ADMIN_CLAIMS = {"sub": "u1", "cognito:groups": [ADMIN]}  # the most any caller of a tenant can hold
_counter = itertools.count()


def tenant_family(base: str) -> list[str]:
    """Names that differ by a suffix or by case only: isolation must be exact, never by prefix."""
    return [base, f"{base}-2", f"{base}.x", base.upper(), f"{base}_b"]


@st.composite
def corpora(draw: st.DrawFn) -> dict[str, list[dict[str, Any]]]:
    base = f"iso{next(_counter)}t"
    tenants = draw(st.lists(st.sampled_from(tenant_family(base)), min_size=2, max_size=4, unique=True))
    corpus: dict[str, list[dict[str, Any]]] = {}
    for tenant in tenants:
        others = [t for t in tenants if t != tenant]
        paths = draw(
            st.lists(
                st.sampled_from([*PATHS, *(f"{o}/stolen.md" for o in others)]),
                min_size=1,
                max_size=2,
                unique=True,
            )
        )
        docs = []
        for path in paths:
            words = draw(st.lists(st.sampled_from(WORDS), min_size=4, max_size=12))
            metadata = {
                "department": draw(st.sampled_from(DEPARTMENTS)),
                "tenant": draw(st.sampled_from(tenants)),  # a metadata field that lies about the owner
                "owner": draw(st.sampled_from(tenants)),
            }
            ext = path.rsplit(".", 1)[1]
            text = " ".join(words).capitalize() + "."
            body = (
                f"<html><head><title>T</title></head><body><p>{text}</p></body></html>"
                if ext == "html"
                else text
            )
            docs.append(
                {"key": f"{tenant}/{path}", "body": body.encode(), "metadata": metadata, "text": text}
            )
        corpus[tenant] = docs
    return corpus


def filter_values(all_tenants: list[str], all_keys: list[str]) -> st.SearchStrategy[Any]:
    scalar = st.sampled_from(
        [*all_tenants, *all_keys, *DEPARTMENTS, *ACCESS_NAMES, ADMIN, "markdown", "text", "html"]
    )
    return st.one_of(
        scalar,
        st.lists(scalar, min_size=1, max_size=4),
        st.builds(lambda lo: {"gte": lo}, st.integers(0, 3000).map(float)),
    )


@pytest.fixture
def iso_stack(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    stack.container.settings.providers.query_cache_size = 0
    # Sign upload forms as `winnow serve` does (no server needed: the test reads the signed key only).
    stack.container.objects.accept_signed_uploads("http://127.0.0.1:9/local/uploads", b"test secret")  # type: ignore[attr-defined]
    yield stack
    stack.close()


# Each example drives real handlers and stores: shrinking a failure could take minutes, past the test
# timeout that would then hide the assertion. The unshrunk falsifying example is reported as is.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


@settings(
    max_examples=20,
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(corpus=corpora(), data=st.data())
def test_no_tenant_ever_sees_another_tenants_chunks_or_keys(
    iso_stack: EmbeddedStack, corpus: dict[str, list[dict[str, Any]]], data: st.DataObject
) -> None:
    stack = iso_stack
    tenants = list(corpus)
    all_keys = [d["key"] for docs in corpus.values() for d in docs]
    # Given every tenant's documents indexed, with user metadata and (for some) a sidecar
    for docs in corpus.values():
        for doc in docs:
            if data.draw(st.booleans(), label="sidecar"):
                sidecar = {
                    "metadataAttributes": {"year": data.draw(st.integers(1990, 2030)), "tenant": tenants[0]}
                }
                stack.put_object(doc["key"] + ".metadata.json", json.dumps(sidecar).encode())
            pinned = data.draw(st.sampled_from([None, {"users": ["u1"]}, {"groups": ["u2"]}]), label="access")
            metadata = {**doc["metadata"], **({"winnow-access": json.dumps(pinned)} if pinned else {})}
            result = stack.upload(doc["key"], doc["body"], metadata)
            assert result["status"] == "indexed", result
    own_points = {
        t: set().union(*(stack.container.store.point_ids(t, d["key"]) for d in docs))
        for t, docs in corpus.items()
    }

    deleted: set[str] = set()
    for tenant in tenants:
        own_keys = {d["key"] for d in corpus[tenant]}
        # When the tenant searches with any query (including another tenant's exact text) and any filters
        other_texts = [d["text"] for t, docs in corpus.items() if t != tenant for d in docs]
        for _ in range(2):
            query = data.draw(st.sampled_from([*other_texts, " ".join(WORDS[:5])]), label="query")
            names = data.draw(
                st.lists(
                    st.sampled_from(
                        [
                            *("tenant", "key", "department", "owner", "year", "source_type", "title"),
                            *("access_users", "access_groups", "access_open"),
                        ]
                    ),
                    max_size=3,
                    unique=True,
                ),
                label="filter names",
            )
            filters = {n: data.draw(filter_values(tenants, all_keys), label=f"filter {n}") for n in names}
            mode = data.draw(st.sampled_from(["hybrid", "dense", "sparse"]), label="mode")
            who = data.draw(
                st.sampled_from([{}, {"sub": "u1"}, {"cognito:groups": ["u2"]}, ADMIN_CLAIMS]),
                label="claims",
            )
            status, body = stack.search(
                query,
                tenant=tenant,
                claims=who,
                filters=filters,
                mode=mode,
                relevance_threshold=0,
                top_k=50,
                candidates=200,
            )
            # Then the answer holds only the tenant's own chunks (or is a 4xx that holds nothing)
            assert status in (200, 400, 422), body
            results = body.get("results", []) if isinstance(body, dict) else []
            for r in results:
                assert r["key"] in own_keys, (tenant, r["key"], filters)
                assert r["chunk_id"] in own_points[tenant], (tenant, r["key"])

        # and an unfiltered search for its own text finds it (isolation is not achieved by finding nothing)
        mine = corpus[tenant][0]
        status, body = stack.search(
            mine["text"],
            tenant=tenant,
            claims=ADMIN_CLAIMS,
            relevance_threshold=0,
            top_k=50,
            candidates=200,
        )
        assert status == 200 and mine["key"] in {r["key"] for r in body["results"]}

        # The listing shows exactly the tenant's keys (documents and sidecars), page by page
        listed: list[str] = []
        cursor = None
        for _ in range(20):
            query_params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            status, _, page = stack.api(
                "GET", "/documents", tenant=tenant, query=query_params, claims=ADMIN_CLAIMS
            )
            assert status == 200, page
            listed += [d["key"] for d in page["documents"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
            # a cursor is bound to its tenant: replayed by another one it is refused, not followed
            thief = data.draw(st.sampled_from([t for t in tenants if t != tenant]), label="thief")
            status, _, stolen = stack.api(
                "GET", "/documents", tenant=thief, query={"limit": 2, "cursor": cursor}
            )
            assert status == 400, stolen
        assert sorted(listed) == sorted(own_keys)

        # and the status route answers 404 for every other tenant's key, in every spelling
        for key in all_keys:
            if key in own_keys:
                continue
            relative = key.split("/", 1)[1]
            for spelling in (quote(key, safe=""), quote(relative, safe=""), f"../{key}"):
                status, _, doc = stack.api(
                    "GET", f"/documents/{spelling}", tenant=tenant, claims=ADMIN_CLAIMS
                )
                if status == 200:  # only possible when the tenant has a document at that same relative path
                    assert doc["key"] in own_keys, (tenant, spelling, doc["key"])
                else:
                    assert status == 404 and doc["error"]["code"] == "not_found", (spelling, doc)

        # Uploads and deletes aimed at other tenants' keys, in every spelling, stay inside the tenant:
        # a signed form only ever writes <tenant>/..., and a delete only ever removes the tenant's own key
        for key in all_keys:
            if key in own_keys:
                continue
            relative = key.split("/", 1)[1]
            for path in (key, relative, f"../{key}", f"/{key}", f"{tenant}/../{key}"):
                status, _, form = stack.api(
                    "POST", "/uploads", {"path": path}, tenant=tenant, claims=ADMIN_CLAIMS
                )
                if status == 201:
                    assert form["key"].startswith(f"{tenant}/") and form["fields"]["key"] == form["key"]
                else:
                    assert status in (400, 422) and "url" not in form, (path, form)
            for spelling in (quote(key, safe=""), f"../{key}", quote(f"{tenant}/../{key}", safe="")):
                status, _, doc = stack.api(
                    "DELETE", f"/documents/{spelling}", tenant=tenant, claims=ADMIN_CLAIMS
                )
                if status == 202:  # the tenant's own document at that same relative path
                    assert doc["key"] in own_keys, (tenant, spelling, doc)
                    deleted.add(doc["key"])
                else:
                    assert status in (400, 404), (spelling, doc)
    # Every object a tenant did not delete itself is still in the bucket
    for key in all_keys:
        if key not in deleted:
            stack.container.objects.head(key)
