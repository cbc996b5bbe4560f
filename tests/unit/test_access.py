"""The access rules one at a time: what an access list may hold, how a groups claim is read, who a caller
is from an event, and what each caller may read, change and grant (winnow.access, winnow.api.http)."""

from __future__ import annotations

from typing import Any

import pytest

from winnow.access import (
    MAX_ACCESS_NAMES,
    MAX_CALLER_GROUPS,
    AccessList,
    Caller,
    access_of_payload,
    applicable_access,
    list_to_pin,
    parse_access,
    parse_groups,
    split_metadata,
)
from winnow.adapters.qdrant_filters import QdrantConditions, read_condition
from winnow.api.http import resolve_caller
from winnow.errors import Forbidden, InvalidMetadata
from winnow.models import ReadScope
from winnow.settings import SearchSettings
from winnow_local.apigw import http_api_event


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (["ann"], "must be an object"),
        ({"users": "ann"}, "must be a list"),
        ({"users": ["a b"]}, "not allowed"),
        ({"groups": ["hr,legal"]}, "not allowed"),
        ({"groups": ["*"]}, "not allowed"),
        ({"groups": ["x" * 257]}, "not allowed"),
        ({"groups": [7]}, "not allowed"),
        ({"users": [f"u{i}" for i in range(MAX_ACCESS_NAMES + 1)]}, "over the 200"),
        ({"readers": ["ann"]}, "unknown field"),
    ],
)
def test_a_bad_access_list_is_refused_with_what_to_send(value: Any, problem: str) -> None:
    with pytest.raises(InvalidMetadata, match=problem):
        parse_access(value)


def test_an_access_list_keeps_names_once_in_order() -> None:
    access = parse_access({"users": ["auth0|64f1", "ann", "ann"], "groups": ["hr"]})
    assert access == AccessList(users=("auth0|64f1", "ann"), groups=("hr",))
    assert parse_access({}) == AccessList()  # both empty: the admins only


@pytest.mark.parametrize(
    ("claim", "groups"),
    [
        (["hr", "legal"], {"hr", "legal"}),
        ("[hr legal]", {"hr", "legal"}),  # API Gateway's flattening of a list claim
        ('["hr", "legal"]', {"hr", "legal"}),
        ("hr,legal", {"hr", "legal"}),
        ("hr legal", {"hr", "legal"}),
        (" hr , legal ", {"hr", "legal"}),
        (None, set()),
        (42, set()),
        (["hr", "a b", "*", ""], {"hr"}),  # names no document can list match nothing
    ],
)
def test_a_groups_claim_is_read_as_providers_send_it(claim: Any, groups: set[str]) -> None:
    assert parse_groups(claim) == groups


def test_a_groups_claim_too_long_to_check_is_refused() -> None:
    with pytest.raises(ValueError, match="more than"):
        parse_groups([f"g{i}" for i in range(MAX_CALLER_GROUPS + 1)])


def test_the_access_fields_of_a_point_and_back() -> None:
    user, fields = split_metadata({"department": "hr", "_access": {"users": ["ann"], "groups": []}})
    assert user == {"department": "hr"}
    assert fields == {"access_users": ["ann"], "access_groups": [], "access_open": False}
    assert access_of_payload(fields) == AccessList(users=("ann",))
    _, open_fields = split_metadata({"department": "hr"})
    assert open_fields["access_open"] is True and access_of_payload(open_fields) is None
    assert access_of_payload({}) is None  # written before access lists existed: open


def test_who_reads_changes_and_grants() -> None:
    hr = AccessList(users=("ann",), groups=("hr",))
    ann, bob = Caller("acme", "ann"), Caller("acme", "bob", frozenset({"hr"}))
    anonymous, admin = Caller("acme"), Caller.of("acme", None, ["winnow-admins"], "winnow-admins")
    assert admin.is_admin and not Caller.of("acme", "x", ["winnow-admins"], "").is_admin
    for deny in (False, True):
        assert ann.can_read(hr, deny) and bob.can_read(hr, deny) and not anonymous.can_read(hr, deny)
        assert admin.can_read(hr, deny) and admin.can_read(None, deny)
        assert anonymous.can_read(None, deny) is (not deny)
    # changing: admins and listed users; a document without a list: whoever reads it; a new key: anyone
    assert ann.write_problem(True, hr, False) is None and admin.write_problem(True, hr, True) is None
    assert "listed users" in str(bob.write_problem(True, hr, False))
    assert anonymous.write_problem(True, None, False) is None
    assert "admin group" in str(anonymous.write_problem(True, None, True))
    assert anonymous.write_problem(False, None, True) is None
    # granting: only groups one is in, unless admin
    assert "'board'" in str(bob.grant_problem(AccessList(groups=("hr", "board"))))
    assert bob.grant_problem(AccessList(users=("zed",), groups=("hr",))) is None
    assert admin.grant_problem(AccessList(groups=("board",))) is None
    # a sidecar (which may hold the list): only admins change one, even a listed user may not
    assert "admin group" in str(ann.write_problem(True, hr, False, sidecar=True))
    assert admin.write_problem(True, hr, False, sidecar=True) is None


def test_one_rule_says_which_list_applies_and_what_an_upload_pins() -> None:
    """Issue 44, items 1 and 3: the pinned list wins over the sidecar's; leaving the list out keeps."""
    board, carol = AccessList(users=("alice",), groups=("board",)), AccessList(users=("carol",))
    assert applicable_access(carol, board) == carol  # an explicit list in an upload takes effect
    assert applicable_access(None, board) == board and applicable_access(None, None) is None
    assert list_to_pin(carol, board, board) == carol  # asked for: pinned
    assert list_to_pin(None, board, None) == board  # left out: the current list is kept
    assert list_to_pin(None, board, board) is None  # the sidecar gives it anyway: it keeps governing
    assert list_to_pin(None, None, None) is None  # an open or new document stays as it is


def test_a_caller_who_may_read_nothing_gets_a_condition_no_point_meets() -> None:
    # An empty ``should`` is ignored by Qdrant (it would match every point): never built
    c = QdrantConditions()
    nothing = read_condition(c, ReadScope())
    assert nothing.should is None and len(nothing.must) == 2
    assert {m.match.value for m in nothing.must} == {True, False}
    assert read_condition(c, ReadScope(everything=True)) is None
    scoped = read_condition(c, ReadScope(open_documents=True, users=("ann",), groups=("hr",)))
    assert len(scoped.should) == 4 and scoped.must is None


def _event(claims: dict[str, Any] | None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    event = http_api_event("POST", "/search", {"query": "x"}, headers=headers, tenant="acme", claims=claims)
    if claims is None:
        del event["requestContext"]["authorizer"]
    return event


def test_the_caller_comes_from_the_claims_the_settings_name() -> None:
    settings = SearchSettings(user_claim="oid", groups_claim="roles", admin_group="ops")
    caller = resolve_caller(_event({"oid": "u-1", "sub": "other", "roles": ["ops", "hr"]}), "acme", settings)
    assert caller == Caller("acme", "u-1", frozenset({"ops", "hr"}), True)
    # the headers count only in the embedded default's header mode, and never beside a token
    headers = {"x-winnow-user": "ann", "x-winnow-groups": "ops"}
    assert resolve_caller(_event({}, headers), "acme", settings) == Caller("acme")
    local = settings.model_copy(update={"allow_tenant_header": True})
    assert resolve_caller(_event(None, headers), "acme", local) == Caller(
        "acme", "ann", frozenset({"ops"}), True
    )
    assert resolve_caller(_event({"oid": "u-2"}, headers), "acme", local) == Caller("acme", "u-2")


@pytest.mark.parametrize(
    "claims",
    [{"sub": "a b"}, {"sub": ""}, {"cognito:groups": [f"g{i}" for i in range(MAX_CALLER_GROUPS + 1)]}],
)
def test_a_malformed_identity_claim_is_forbidden(claims: dict[str, Any]) -> None:
    with pytest.raises(Forbidden):
        resolve_caller(_event(claims), "acme", SearchSettings())
