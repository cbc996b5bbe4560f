"""Hostile requests to the search API: whatever JSON (or non-JSON) a client sends, whatever query string or
document path it asks for, the answer is a structured 2xx/4xx, never a 500, a stack trace or another
tenant's data. Hypothesis generates the requests; the real search handler answers them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.stack import EmbeddedStack
from winnow_fakes.fake_voyage import FakeVoyageServer

NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)  # see test_isolation.py
FIELDS = [
    "query",
    "top_k",
    "candidates",
    "filters",
    "mode",
    "rerank",
    "relevance_threshold",
    "score_threshold",
]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
search_bodies = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(FIELDS), json_values, min_size=1, max_size=5),
    st.fixed_dictionaries(
        {"query": st.text(min_size=1, max_size=60)},
        optional={
            "filters": st.dictionaries(st.text(max_size=70), json_values, max_size=4),
            "top_k": json_values,
            "mode": st.sampled_from(["hybrid", "dense", "sparse", "HYBRID", ""]),
        },
    ),
)


@pytest.fixture
def loaded(tmp_path: Path, fake_voyage: FakeVoyageServer) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    for tenant in ("acme", "globex"):
        doc = f"# {tenant} notes\n\nThe {tenant} warehouse ships pallets of turbine parts every Tuesday.\n"
        assert stack.upload(f"{tenant}/notes.md", doc.encode(), {"department": "ops"})["status"] == "indexed"
    yield stack
    stack.close()


def assert_structured(status: int, headers: dict[str, str], body: Any) -> None:
    assert status < 500, body
    assert "X-Correlation-Id" in headers
    text = json.dumps(body)
    assert "Traceback" not in text and 'File "' not in text
    assert "globex" not in text  # the caller is acme: nothing of globex's may leak, even in an error
    if status >= 400:
        assert isinstance(body, dict) and body["error"]["code"] and body["error"]["message"], body


@settings(
    max_examples=150,
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(body=search_bodies)
def test_any_json_body_gets_a_structured_answer(loaded: EmbeddedStack, body: Any) -> None:
    if isinstance(body, dict) and "globex" in json.dumps(body):
        return  # an echo of the caller's own input is not a leak; keep the leak check meaningful
    status, headers, payload = loaded.api("POST", "/search", body)
    assert_structured(status, headers, payload)
    assert status in (200, 400, 422), payload
    if status == 200:
        assert all(r["key"].startswith("acme/") for r in payload["results"])


@settings(
    max_examples=60,
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(raw=st.binary(max_size=200))
def test_bodies_that_are_not_json_get_422(loaded: EmbeddedStack, raw: bytes) -> None:
    try:
        json.loads(raw)
    except ValueError:
        pass
    else:
        return  # valid JSON is the other test's business
    status, headers, payload = loaded.api(
        "POST", "/search", raw, headers={"content-type": "application/json"}
    )
    assert_structured(status, headers, payload)
    assert status in (400, 422), payload


content_types = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "application/json",
            "APPLICATION/JSON",
            "application/json; charset=utf-8",
            "application/json; charset=utf-16",
            "application/json;;;",
            "application/json; charset",
            "application/problem+json",
            "application/+json",
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/xml",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "multipart/form-data; boundary=",
            "multipart/form-data; boundary=x",
            "*/*",
            "",
            " ",
        ]
    ),
    st.text(max_size=60),
)
header_names = st.sampled_from(
    ["content-type", "Content-Type", "x-correlation-id", "accept", "content-length", "x-winnow-tenant"]
) | st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)
# Bodies that attack the parser: deep or wide nesting, escapes, surrogates, huge numbers, or just bytes.
hostile_bodies = st.one_of(
    json_values.map(json.dumps),
    st.integers(1, 50_000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 50_000).map(lambda n: '{"query": "x", "filters": {"a": ' + "[" * n + "]" * n + "}}"),
    st.integers(1, 50_000).map(lambda n: '{"a":' * n),
    st.sampled_from(['"\\ud800"', '{"query": "\\udfff"}', '{"query": "x", "\\ud800": 1}', '"\\']),
    st.integers(4000, 6000).map(lambda n: '{"query": "x", "top_k": ' + "7" * n + "}"),
    st.text(max_size=200),
    st.binary(max_size=200),
)


@settings(
    max_examples=200,
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    body=st.none() | hostile_bodies,
    content_type=content_types,
    headers=st.dictionaries(header_names, st.text(max_size=40), max_size=4),
    method=st.sampled_from(["POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS", "post"]),
    path=st.sampled_from(["/search", "/documents", "/documents/notes.md", "/health", "/nope", "/search/"]),
)
def test_any_body_headers_and_method_get_a_structured_answer_below_500(
    loaded: EmbeddedStack,
    body: str | bytes | None,
    content_type: str | None,
    headers: dict[str, str],
    method: str,
    path: str,
) -> None:
    """Whatever a client sends at any route, the answer is a structured 2xx/4xx: a 5xx would let any
    caller fire the service's error alarm at will."""
    if content_type is not None:
        headers = {
            **{k: v for k, v in headers.items() if k.lower() != "content-type"},
            "content-type": content_type,
        }
    status, got, payload = loaded.api(method, path, body, headers=headers)
    if isinstance(body, str | bytes) and b"globex" in (
        body if isinstance(body, bytes) else body.encode("utf-8", "replace")
    ):
        return  # an echo of the caller's own input is not a leak
    assert_structured(status, got, payload)


@settings(
    max_examples=80,
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path=st.text(min_size=1, max_size=80).filter(
        lambda p: "globex" not in p and "?" not in p and "#" not in p
    ),
    limit=st.one_of(st.none(), st.text(max_size=8), st.integers(-5, 500).map(str)),
    cursor=st.one_of(st.none(), st.text(max_size=60)),
)
def test_any_document_path_or_listing_query_gets_a_structured_answer(
    loaded: EmbeddedStack, path: str, limit: str | None, cursor: str | None
) -> None:
    from urllib.parse import quote

    status, headers, payload = loaded.api("GET", "/documents/" + quote(path, safe=""))
    assert_structured(status, headers, payload)
    assert status in (200, 400, 404, 422), payload
    if status == 200:
        assert payload["key"] == "acme/notes.md"
    query = {k: v for k, v in (("limit", limit), ("cursor", cursor)) if v is not None}
    status, headers, payload = loaded.api("GET", "/documents", query=query)
    assert_structured(status, headers, payload)
    assert status in (200, 400, 422), payload
    if status == 200:
        assert [d["key"] for d in payload["documents"]] in ([], ["acme/notes.md"])
