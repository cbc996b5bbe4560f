"""Document-level access inside a tenant, through the real handlers with API Gateway JWT-authorizer events.

The property: for generated documents (access lists given in a sidecar or pinned as upload metadata, or
none) and generated callers (users, groups, the admin group, anonymous), under either ``DefaultAccess``,
no route returns, counts, cites or sends to the model a document the caller may not read, and every
document they may read stays findable. It runs on both embedded engines (qdrant-client's local mode and
Qdrant Edge); the expected visibility is computed here, independently of ``winnow.access``.

Then the single rules: write rights (403 saying what is missing, 404 for what the caller cannot read),
grants, in-place access changes without embedding, bad access lists, identity from claims only."""

from __future__ import annotations

import base64
import http.client
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.answer import bedrock_settings
from tests.support.stack import EmbeddedStack
from winnow.ingest.events import s3_event
from winnow.settings import SearchSettings
from winnow_fakes.fake_bedrock import FakeBedrockServer
from winnow_fakes.fake_voyage import FakeVoyageServer
from winnow_local.mcp_server import LocalBackend, WinnowTools

pytestmark = pytest.mark.slow

ADMIN = "winnow-admins"
USERS = ["ann", "bob", "auth0|c4"]
GROUPS = ["hr", "legal", "board"]
WORDS = ["invoice", "harbour", "audit", "salmon", "glacier", "payroll", "orchard", "turbine", "privacy"]
GROUPS_CLAIM = "cognito:groups"
_counter = itertools.count()


def claims(user: str | None = None, groups: list[str] | None = None) -> dict[str, Any]:
    """The user and groups claims as a JWT authorizer passes them (groups as API Gateway flattens a list)."""
    out: dict[str, Any] = {}
    if user is not None:
        out["sub"] = user
    if groups:
        out[GROUPS_CLAIM] = "[" + " ".join(groups) + "]"
    return out


def may_read(access: dict[str, list[str]] | None, user: str | None, groups: list[str], deny: bool) -> bool:
    """The expected rule, written out here on its own: admins read all; no list: every member (none
    with deny); a list: its users and the members of its groups."""
    if ADMIN in groups:
        return True
    if access is None:
        return not deny
    return (user is not None and user in access["users"]) or bool(set(groups) & set(access["groups"]))


accesses = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "users": st.lists(st.sampled_from(USERS), max_size=2, unique=True),
            "groups": st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
        }
    ),
)
callers = st.tuples(
    st.one_of(st.none(), st.sampled_from(USERS)),
    st.lists(st.sampled_from([*GROUPS, ADMIN]), max_size=3, unique=True),
)


@st.composite
def documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    run = next(_counter)
    docs = []
    for n in range(draw(st.integers(2, 5))):
        token = f"zq{run}x{n}"  # a word only this document holds: a search for it must find it
        words = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=8))
        docs.append(
            {
                "path": f"p{run}/doc{n}.md",
                "token": token,
                "text": f"{token} " + " ".join(words) + ".",
                "access": draw(accesses),
                "via": draw(st.sampled_from(["sidecar", "upload"])),
            }
        )
    return docs


@pytest.fixture
def access_stack(
    tmp_path: Path,
    fake_voyage: FakeVoyageServer,
    fake_bedrock: FakeBedrockServer,
) -> Iterator[EmbeddedStack]:
    # show_configuration_errors as the CLI sets it, so the MCP tools' runtime keeps these settings
    search = SearchSettings(show_configuration_errors=True)
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, search=search)
    stack.container.settings.providers.query_cache_size = 0
    stack.container.settings.answer = bedrock_settings(fake_bedrock)
    yield stack
    stack.close()


def put_document(stack: EmbeddedStack, tenant: str, doc: dict[str, Any]) -> dict[str, Any]:
    key = f"{tenant}/{doc['path']}"
    metadata = None
    if doc["access"] is not None and doc["via"] == "sidecar":
        stack.put_object(key + ".metadata.json", json.dumps({"access": doc["access"]}).encode())
    elif doc["access"] is not None:
        metadata = {"winnow-access": json.dumps(doc["access"])}
    return stack.upload(key, doc["text"].encode(), metadata)


# Each example drives real handlers and stores: shrinking could take minutes (see test_isolation.py).
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


@settings(
    max_examples=15,
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(docs=documents(), data=st.data())
def test_no_route_shows_a_caller_a_document_they_may_not_read(
    access_stack: EmbeddedStack,
    fake_bedrock: FakeBedrockServer,
    docs: list[dict[str, Any]],
    data: st.DataObject,
) -> None:
    stack = access_stack
    tenant = f"acc{next(_counter)}"
    deny = data.draw(st.booleans(), label="DefaultAccess=deny")
    stack.container.settings.search.default_access = "deny" if deny else "allow"
    # Given the documents indexed with their access lists (sidecar or pinned upload metadata)
    for doc in docs:
        assert put_document(stack, tenant, doc)["status"] == "indexed"
    keys = {f"{tenant}/{d['path']}": d for d in docs}

    for user, groups in data.draw(st.lists(callers, min_size=2, max_size=4), label="callers"):
        who = claims(user, groups)
        readable = {k for k, d in keys.items() if may_read(d["access"], user, groups, deny)}

        def api(method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
            status, _, payload = stack.api(method, path, body, tenant=tenant, claims=who, **kw)  # noqa: B023
            return status, payload

        # When they search for any document's words, in any mode, even filtering on the access fields
        probe = data.draw(st.sampled_from(docs), label="probe")
        mode = data.draw(st.sampled_from(["hybrid", "dense", "sparse"]), label="mode")
        filters = data.draw(
            st.sampled_from([{}, {"access_open": True}, {"access_users": USERS}, {"access_groups": GROUPS}]),
            label="filters",
        )
        body = {
            "query": probe["text"],
            "mode": mode,
            "top_k": 50,
            "candidates": 200,
            "relevance_threshold": 0,
        }
        status, found = api("POST", "/search", {**body, "filters": filters})
        # Then nothing unreadable is returned or counted (a filter on access fields never widens)
        assert status == 200, found
        assert {r["key"] for r in found["results"]} <= readable, (user, groups, filters)
        assert found["count"] == len(found["results"])
        # and every readable document stays findable by its own word
        for key in readable:
            status, hit = api("POST", "/search", {"query": keys[key]["token"], "mode": "sparse", **_wide()})
            assert status == 200 and key in {r["key"] for r in hit["results"]}, (user, groups, key)
        # The listing holds exactly the readable documents
        status, page = api("GET", "/documents", query={"limit": 100})
        assert status == 200 and {d["key"] for d in page["documents"]} == readable
        # The status route answers 404 for an unreadable key exactly as for a key that does not exist
        for key in keys:
            status, doc = api("GET", f"/documents/{quote(key, safe='')}")
            if key in readable:
                assert status == 200 and doc["key"] == key
            else:
                _, missing = api("GET", f"/documents/{quote(key + 'x', safe='')}")
                assert status == 404 and doc["error"]["code"] == missing["error"]["code"] == "not_found"
                assert doc["error"]["message"] == missing["error"]["message"].replace(
                    repr(key + "x"), repr(key)
                )
        # The model is sent readable passages only (the question without any document's own word, so
        # that word in the prompt can only come from a passage), and only readable ones are cited
        fake_bedrock.reset()
        status, answer = api("POST", "/answer", {**body, "query": probe["text"].split(" ", 1)[1]})
        assert status == 200, answer
        assert {r["key"] for r in answer["results"]} <= readable
        assert {c["key"] for c in answer["citations"]} <= readable
        for request in fake_bedrock.converse_requests():
            sent = json.dumps(request.body)
            assert all(d["token"] not in sent for k, d in keys.items() if k not in readable)
        # And an agent (MCP tools, through the same handler with the same claims) sees the same
        tools = WinnowTools(LocalBackend(tenant, user, groups))
        listed = tools.list_documents(limit=100)
        assert {d["key"] for d in listed["documents"]} == readable
        hits = tools.search(probe["text"], 50, None, mode)
        assert {h["key"] for h in hits["passages"]} <= readable


def _wide() -> dict[str, Any]:
    return {"top_k": 50, "candidates": 200, "relevance_threshold": 0}


# --- write rights and grants ----------------------------------------------------------------------------
@pytest.fixture
def hr(stack: EmbeddedStack) -> EmbeddedStack:
    """acme: an HR file for ann and the hr group, and an open notice."""
    stack.put_object("acme/hr/pay.md.metadata.json", b'{"access": {"users": ["ann"], "groups": ["hr"]}}')
    assert stack.upload("acme/hr/pay.md", b"Salary bands for the zephyr grade.")["status"] == "indexed"
    assert stack.upload("acme/notice.md", b"The zephyr canteen opens at nine.")["status"] == "indexed"
    return stack


def found(stack: EmbeddedStack, query: str, **who: Any) -> set[str]:
    status, _, body = stack.api("POST", "/search", {"query": query, **_wide()}, claims=claims(**who))
    assert status == 200, body
    return {r["key"] for r in body["results"]}


def test_deleting_needs_the_admin_group_or_a_listed_user(hr: EmbeddedStack) -> None:
    path = "/documents/hr%2Fpay.md"
    # A member of a group that may read it, but not change it: 403 saying what is missing
    status, _, body = hr.api("DELETE", path, claims=claims("bob", ["hr"]))
    assert status == 403 and "admin group or being one of its listed users" in body["error"]["message"]
    # Someone who may not even read it: 404, as for a key that does not exist
    status, _, body = hr.api("DELETE", path, claims=claims("eve", ["sales"]))
    assert status == 404 and body["error"]["code"] == "not_found"
    assert hr.container.objects.head("acme/hr/pay.md").size > 0
    # A listed user may
    assert hr.api("DELETE", path, claims=claims("ann", []))[0] == 202
    # and so may the admin group, on any document
    assert hr.api("DELETE", "/documents/notice.md", claims=claims(None, [ADMIN]))[0] == 202


def test_an_unreadable_key_costs_the_same_lookups_as_a_missing_one(
    hr: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counting the real ledger's and bucket's calls (they still run): the work, hence the timing, of a
    # 404 must not tell "exists but not yours" from "does not exist"
    calls: list[str] = []
    for name, part in (("ledger", hr.container.ledger), ("bucket", hr.container.objects)):
        method = "get" if name == "ledger" else "head"
        real = getattr(part, method)
        monkeypatch.setattr(
            part, method, lambda *a, _r=real, _n=name, **k: (calls.append(_n), _r(*a, **k))[1]
        )

    def lookups(path: str) -> list[str]:
        calls.clear()
        status, _, body = hr.api("GET", path, claims=claims("eve", ["sales"]))
        assert status == 404 and body["error"]["code"] == "not_found"
        return sorted(calls)

    missing = lookups("/documents/hr%2Fnone.md")
    assert lookups("/documents/hr%2Fpay.md") == missing == ["bucket", "bucket", "ledger", "ledger"]
    # A deleted restricted document, whose list only its ledger record keeps: the same work again
    assert hr.remove("acme/hr/pay.md")["status"] == "deleted"
    assert lookups("/documents/hr%2Fpay.md") == missing
    # With DefaultAccess=deny a missing key is refused before its record is read: still the same work
    hr.container.settings.search.default_access = "deny"
    assert lookups("/documents/hr%2Fpay.md") == lookups("/documents/hr%2Fnone.md")


def test_an_upload_cannot_replace_a_document_or_grant_a_group_without_the_right(hr: EmbeddedStack) -> None:
    objects = hr.container.objects
    objects.accept_signed_uploads("http://127.0.0.1:9/local/uploads", b"secret")  # type: ignore[attr-defined]
    # Replacing the HR file as a mere hr member: 403
    status, _, body = hr.api("POST", "/uploads", {"path": "hr/pay.md"}, claims=claims("bob", ["hr"]))
    assert status == 403 and "listed users" in body["error"]["message"]
    # Granting a group one is not in: 403 naming it
    request = {"path": "new.md", "access": {"groups": ["board"]}}
    status, _, body = hr.api("POST", "/uploads", request, claims=claims("bob", ["hr"]))
    assert status == 403 and "'board'" in body["error"]["message"]
    # Granting one's own group: a form that pins the access list
    request = {"path": "new.md", "access": {"users": ["bob"], "groups": ["hr"]}}
    status, _, form = hr.api("POST", "/uploads", request, claims=claims("bob", ["hr"]))
    assert status == 201, form
    assert json.loads(form["fields"]["x-amz-meta-winnow-access"]) == {"users": ["bob"], "groups": ["hr"]}
    # The admin group grants anything, and replaces anything
    request = {"path": "hr/pay.md", "access": {"groups": ["board"]}}
    assert hr.api("POST", "/uploads", request, claims=claims(None, [ADMIN]))[0] == 201
    # The access list cannot be smuggled in as ordinary metadata
    request = {"path": "x.md", "metadata": {"winnow-access": '{"groups": ["board"]}'}}
    status, _, body = hr.api("POST", "/uploads", request, claims=claims("bob", ["hr"]))
    assert status == 422 and "reserved" in body["error"]["message"]


# --- changing access -----------------------------------------------------------------------------------
def test_a_new_sidecar_changes_access_in_place_without_embedding(hr: EmbeddedStack) -> None:
    assert found(hr, "zephyr salary bands", user="bob", groups=["hr"]) >= {"acme/hr/pay.md"}
    embedded = hr.embedded_texts()
    # When the sidecar moves the HR file from hr to legal
    hr.put_object("acme/hr/pay.md.metadata.json", b'{"access": {"users": ["ann"], "groups": ["legal"]}}')
    out = hr.invoke_ingest(s3_event([hr.created_record("acme/hr/pay.md.metadata.json")]))
    assert out["results"][0]["status"] == "indexed"
    # Then nothing was embedded, and the very next search sees the new list
    assert hr.embedded_texts() == embedded
    assert "acme/hr/pay.md" not in found(hr, "zephyr salary bands", user="bob", groups=["hr"])
    assert "acme/hr/pay.md" in found(hr, "zephyr salary bands", user="cy", groups=["legal"])


def test_a_re_upload_with_new_access_updates_the_payload_and_embeds_nothing(stack: EmbeddedStack) -> None:
    text = b"The zephyr board minutes for March."
    first = stack.upload("acme/board.md", text, {"winnow-access": '{"groups": ["board"]}'})
    assert first["status"] == "indexed"
    assert found(stack, "zephyr board minutes", groups=["board"]) == {"acme/board.md"}
    # When the same bytes come again with another access list
    again = stack.upload("acme/board.md", text, {"winnow-access": '{"users": ["ann"]}'})
    # Then embedded is 0 and the change is visible at once
    assert again["embedded"] == 0 and again["status"] in ("unchanged", "indexed"), again
    assert found(stack, "zephyr board minutes", groups=["board"]) == set()
    assert found(stack, "zephyr board minutes", user="ann") == {"acme/board.md"}


def test_reconcile_repairs_an_access_change_whose_event_was_lost(hr: EmbeddedStack) -> None:
    time.sleep(1.1)  # reconcile compares whole seconds: the sidecar must be newer than the record
    # Given the HR file's sidecar moved it from hr to legal, and its S3 event never arrived
    hr.put_object("acme/hr/pay.md.metadata.json", b'{"access": {"users": ["ann"], "groups": ["legal"]}}')
    assert "acme/hr/pay.md" in found(hr, "zephyr salary bands", user="bob", groups=["hr"])
    embedded = hr.embedded_texts()  # bob's query vector is cached from here on
    # When reconcile runs, Then it re-applies the metadata in place: the new list holds, nothing embedded
    stats = hr.container.reconciler().run("acme").totals
    assert stats.metadata_modified == 1
    assert "acme/hr/pay.md" not in found(hr, "zephyr salary bands", user="bob", groups=["hr"])
    assert "acme/hr/pay.md" in found(hr, "zephyr salary bands", user="bob", groups=["legal"])
    assert hr.embedded_texts() == embedded


@pytest.mark.parametrize(
    ("sidecar", "metadata", "reason"),
    [
        (b'{"access": {"users": "ann"}}', None, "access.users must be a list"),
        (b'{"access": {"groups": ["h r"]}}', None, "not allowed"),
        (b'{"access": {"people": ["ann"]}}', None, "unknown field"),
        (json.dumps({"access": {"users": [f"u{i}" for i in range(201)]}}).encode(), None, "over the 200"),
        (None, {"winnow-access": "{groups: hr}"}, "not valid JSON"),
        (None, {"winnow-access": '["hr"]'}, "access must be an object"),
    ],
)
def test_a_bad_access_list_fails_the_document_with_one_line(
    stack: EmbeddedStack, sidecar: bytes | None, metadata: dict[str, str] | None, reason: str
) -> None:
    if sidecar is not None:
        stack.put_object("acme/secret.md.metadata.json", sidecar)
    result = stack.upload("acme/secret.md", b"The zephyr secret plan.", metadata)
    assert result["status"] == "failed" and reason in result["error"] and "\n" not in result["error"]
    # never indexed readable by all
    assert found(stack, "zephyr secret plan") == set()
    assert found(stack, "zephyr secret plan", groups=[ADMIN]) == set()


def test_an_unreadable_new_sidecar_closes_the_document_to_admins(hr: EmbeddedStack) -> None:
    assert "acme/notice.md" in found(hr, "zephyr canteen")
    hr.put_object("acme/notice.md.metadata.json", b'{"access": {"users": ["ann"]')
    out = hr.invoke_ingest(s3_event([hr.created_record("acme/notice.md.metadata.json")]))
    assert out["results"][0]["status"] == "failed"
    assert "acme/notice.md" not in found(hr, "zephyr canteen")
    assert "acme/notice.md" in found(hr, "zephyr canteen", groups=[ADMIN])


def test_a_restricted_document_that_failed_stays_hidden_and_unchangeable(hr: EmbeddedStack) -> None:
    # The HR file, and a board file pinned at upload, fail to index: neither has points to carry its
    # list, yet both lists are known (sidecar, pinned metadata)
    assert hr.upload("acme/hr/pay.md", b"binary\x00" * 8)["status"] == "failed"
    pinned = {"winnow-access": json.dumps({"users": [], "groups": ["board"]})}
    assert hr.upload("acme/board.md", b"\x00" * 64, pinned)["status"] == "failed"
    eve = claims("eve", ["sales"])
    status, _, body = hr.api("GET", "/documents", claims=eve)
    assert status == 200 and {d["key"] for d in body["documents"]} == {"acme/notice.md"}
    for path in ("/documents/hr%2Fpay.md", "/documents/board.md"):
        status, _, body = hr.api("GET", path, claims=eve)
        assert status == 404 and body["error"]["code"] == "not_found", body
        assert hr.api("DELETE", path, claims=eve)[0] == 404
    status, _, body = hr.api("POST", "/uploads", {"path": "hr/pay.md"}, claims=eve)
    assert status == 403, body
    # Those on the lists still see them and why they failed
    status, _, body = hr.api("GET", "/documents/hr%2Fpay.md", claims=claims("bob", ["hr"]))
    assert status == 200 and body["status"] == "failed"
    status, _, body = hr.api("GET", "/documents", claims=claims(None, ["board"]))
    assert {d["key"] for d in body["documents"]} == {"acme/notice.md", "acme/board.md"}
    # Deleted while failed, its record keeps the list it failed with
    assert hr.remove("acme/board.md")["status"] == "deleted"
    assert hr.api("GET", "/documents/board.md", claims=eve)[0] == 404
    status, _, body = hr.api("GET", "/documents/board.md", claims=claims(None, ["board"]))
    assert status == 200 and body["status"] == "deleted"


def test_a_deleted_restricted_document_stays_hidden_from_those_not_on_its_list(
    access_stack: EmbeddedStack,
) -> None:
    # A restricted document (sidecar) and one pinned at upload, indexed then deleted: no points, no
    # object, no sidecar; only their ledger records remain to say who may see them
    stack = access_stack
    stack.put_object("acme/hr/pay.md.metadata.json", b'{"access": {"users": ["ann"], "groups": ["hr"]}}')
    assert stack.upload("acme/hr/pay.md", b"Salary bands for the zephyr grade.")["status"] == "indexed"
    pinned = {"winnow-access": json.dumps({"users": [], "groups": ["board"]})}
    assert stack.upload("acme/board.md", b"The zephyr merger closes in May.", pinned)["status"] == "indexed"
    assert stack.upload("acme/notice.md", b"The zephyr canteen opens at nine.")["status"] == "indexed"
    stack.delete_object("acme/hr/pay.md.metadata.json")
    for key in ("acme/hr/pay.md", "acme/board.md"):
        assert stack.remove(key)["status"] == "deleted"
    # An outsider: neither listed nor answered but with the missing key's 404
    eve = claims("eve", ["sales"])
    status, _, body = stack.api("GET", "/documents", claims=eve)
    assert status == 200 and {d["key"] for d in body["documents"]} == {"acme/notice.md"}
    status, _, missing = stack.api("GET", "/documents/hr%2Fnone.md", claims=eve)
    assert status == 404 and "acme/hr/none.md" in missing["error"]["message"]
    for path, key in (("hr%2Fpay.md", "acme/hr/pay.md"), ("board.md", "acme/board.md")):
        status, _, body = stack.api("GET", f"/documents/{path}", claims=eve)
        expected = json.dumps(missing["error"]).replace("acme/hr/none.md", key)
        assert status == 404 and json.dumps(body["error"]) == expected
        assert stack.api("DELETE", f"/documents/{path}", claims=eve)[0] == 404
    # Those on the lists still see the deleted records
    for who, path, key in (
        (claims("bob", ["hr"]), "/documents/hr%2Fpay.md", "acme/hr/pay.md"),
        (claims(None, ["board"]), "/documents/board.md", "acme/board.md"),
    ):
        status, _, body = stack.api("GET", path, claims=who)
        assert status == 200 and body["status"] == "deleted", body
        status, _, body = stack.api("GET", "/documents", claims=who)
        assert {d["key"]: d["status"] for d in body["documents"]}[key] == "deleted"
    # With DefaultAccess=deny the lists still admit their readers, and no one else
    stack.container.settings.search.default_access = "deny"
    assert stack.api("GET", "/documents/hr%2Fpay.md", claims=claims("ann", []))[0] == 200
    assert stack.api("GET", "/documents/hr%2Fpay.md", claims=eve)[0] == 404


def test_a_failed_sidecar_is_shown_only_to_those_who_see_its_document(hr: EmbeddedStack) -> None:
    # A bad sidecar of the HR file fails under its own key, with a reason quoting the list
    hr.put_object("acme/hr/pay.md.metadata.json", b'{"access": {"groups": ["hr", "la yoffs"]}}')
    out = hr.invoke_ingest(s3_event([hr.created_record("acme/hr/pay.md.metadata.json")]))
    assert out["results"][0]["status"] == "failed" and "la yoffs" in out["results"][0]["error"]
    status, _, body = hr.api("GET", "/documents", claims=claims("eve", []))
    assert status == 200 and {d["key"] for d in body["documents"]} == {"acme/notice.md"}
    status, _, body = hr.api("GET", "/documents/hr%2Fpay.md.metadata.json", claims=claims("eve", []))
    assert status == 404 and body["error"]["code"] == "not_found", body
    # The admins, who still read the closed document, see why
    status, _, body = hr.api("GET", "/documents", claims=claims(None, [ADMIN]))
    assert "acme/hr/pay.md.metadata.json" in {d["key"] for d in body["documents"]}


def test_listing_pages_never_name_or_count_a_hidden_document(hr: EmbeddedStack) -> None:
    # Restricted keys between open ones, in key order: a page must not end on one (its cursor would name
    # it) nor come back short or empty (pages of one would count them)
    for n in range(3):
        hr.upload(f"acme/hr/z{n}-layoffs.md", b"zephyr cuts", {"winnow-access": '{"groups": ["hr"]}'})
    hr.upload("acme/hr/zz.md", b"zephyr open")
    for limit in (1, 2):
        pages, cursor = [], None
        while True:
            query = {"limit": str(limit)} | ({"cursor": cursor} if cursor else {})
            status, _, body = hr.api("GET", "/documents", query=query, claims=claims("eve", []))
            assert status == 200, body
            pages.append([d["key"] for d in body["documents"]])
            cursor = body["next_cursor"]
            if cursor is None:
                break
            padded = cursor + "=" * (-len(cursor) % 4)
            assert b"layoffs" not in base64.urlsafe_b64decode(padded)
        assert [k for page in pages for k in page] == ["acme/hr/zz.md", "acme/notice.md"]
        assert all(len(page) == limit for page in pages[:-1]) and pages[-1], pages


# --- who is asking --------------------------------------------------------------------------------------
def test_identity_comes_from_the_claims_never_from_headers_in_aws(hr: EmbeddedStack) -> None:
    # A deployed API (no header mode): headers naming a user and groups change nothing
    headers = {"x-winnow-user": "ann", "x-winnow-groups": f"hr,{ADMIN}"}
    status, _, body = hr.api("POST", "/search", {"query": "zephyr salary", **_wide()}, headers=headers)
    assert status == 200 and "acme/hr/pay.md" not in {r["key"] for r in body["results"]}
    # nor does the request body
    status, _, body = hr.api("POST", "/search", {"query": "zephyr", "user": "ann"})
    assert status == 422


def test_winnow_serve_reads_the_user_and_groups_headers_beside_the_tenant(hr: EmbeddedStack) -> None:
    hr.container.settings.search.allow_tenant_header = True  # what `winnow serve` turns on
    base = {"x-winnow-tenant": "acme"}
    query = {"query": "zephyr salary", **_wide()}

    def keys_for(headers: dict[str, str]) -> set[str]:
        status, _, body = hr.api("POST", "/search", query, tenant=None, headers={**base, **headers})
        assert status == 200, body
        return {r["key"] for r in body["results"]}

    assert "acme/hr/pay.md" not in keys_for({})  # anonymous
    assert "acme/hr/pay.md" in keys_for({"x-winnow-user": "ann"})
    assert "acme/hr/pay.md" in keys_for({"x-winnow-groups": "sales,hr"})


@pytest.mark.parametrize("groups", [["hr"], "hr", "[sales hr]", "sales, hr", '["hr"]'])
def test_a_groups_claim_is_read_as_identity_providers_send_it(hr: EmbeddedStack, groups: Any) -> None:
    who = {"sub": "zed", GROUPS_CLAIM: groups}
    status, _, body = hr.api("POST", "/search", {"query": "zephyr salary", **_wide()}, claims=who)
    assert status == 200 and "acme/hr/pay.md" in {r["key"] for r in body["results"]}


def test_results_say_restricted_and_show_the_list_only_to_those_who_may_change_it(hr: EmbeddedStack) -> None:
    def result(**who: Any) -> dict[str, Any]:
        _, _, body = hr.api("POST", "/search", {"query": "zephyr salary", **_wide()}, claims=claims(**who))
        return next(r for r in body["results"] if r["key"] == "acme/hr/pay.md")

    member = result(user="bob", groups=["hr"])
    assert member["restricted"] is True and member["access"] is None
    assert result(user="ann")["access"] == {"users": ["ann"], "groups": ["hr"]}
    assert result(groups=[ADMIN])["access"] == {"users": ["ann"], "groups": ["hr"]}


# --- winnow serve's own upload route --------------------------------------------------------------------
def raw_upload(httpd: Any, key: str, data: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    host, port = str(httpd.server_address[0]), int(httpd.server_address[1])
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        sent = {"x-winnow-tenant": "acme", **headers}
        connection.request("POST", f"/upload?key={key}", body=data, headers=sent)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def signed_upload(
    httpd: Any, path: str, data: bytes, access: dict[str, list[str]], headers: dict[str, str]
) -> tuple[int, Any]:
    """``POST /uploads`` for a form pinning ``access``, then the file through that form: the status of
    whichever step answered last, and its body."""
    import httpx

    sent = {"x-winnow-tenant": "acme", **headers}
    asked = httpx.post(
        f"{httpd.url}/uploads", json={"path": path, "access": access}, headers=sent, timeout=120
    )
    if asked.status_code != 201:
        return asked.status_code, asked.json()
    form = asked.json()
    posted = httpx.post(form["url"], data=form["fields"], files={"file": ("f.md", data)}, timeout=120)
    return posted.status_code, json.loads(posted.content or b"{}")


def test_winnow_serve_raw_uploads_follow_the_same_write_rules(tmp_path: Path) -> None:
    from tests.support.serve import serving

    ann = {"x-winnow-user": "ann", "x-winnow-groups": "hr"}
    hr_only = {"users": ["ann"], "groups": ["hr"]}
    with serving(tmp_path / "home") as httpd:
        # A sidecar is never a raw upload, whoever sends it (one upload rule): access comes in the form
        for who in ({}, ann):
            status, body = raw_upload(
                httpd, "hr/pay.md.metadata.json", json.dumps({"access": hr_only}).encode(), who
            )
            assert status == 400 and "sidecar" in body["error"]["message"]
        # A form granting a group its uploader is not in: refused, nothing stored
        status, body = signed_upload(httpd, "hr/pay.md", b"Salary bands for the zephyr grade.", hr_only, {})
        assert status == 403 and "'hr'" in body["error"]["message"]
        # ann, in hr, may; and her document is then hers and hr's
        status, _ = signed_upload(httpd, "hr/pay.md", b"Salary bands for the zephyr grade.", hr_only, ann)
        assert status == 204
        # An hr member who is not listed may read it but not replace it; nor may anyone else
        status, body = raw_upload(httpd, "hr/pay.md", b"Replaced.", {"x-winnow-groups": "hr"})
        assert status == 403 and "listed users" in body["error"]["message"]
        assert raw_upload(httpd, "hr/pay.md", b"Replaced.", {"x-winnow-user": "eve"})[0] == 403
        # and nobody may re-open it through a new form
        status, _ = signed_upload(httpd, "hr/pay.md", b"Open now.", {"groups": []}, {})
        assert status == 403
