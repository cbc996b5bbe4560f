"""Nobody but an admin, or a caller granting what they may grant, widens who reads a document (issue 44,
items 1 to 3): not by re-uploading without a list, not by deleting a sidecar, not by deleting and uploading
again, not through ``winnow serve``'s own upload routes; and an admin's explicit list takes effect over
the sidecar's. Through the real search handler (JWT claims) and ingest, forms applied as S3 applies them
(their ``x-amz-meta-*`` fields become the object's metadata)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.integration.test_access import ADMIN, claims, raw_upload, signed_upload
from tests.support.stack import EmbeddedStack

META = "x-amz-meta-"
BOARD = {"users": ["alice"], "groups": ["board"]}
_runs = itertools.count()
# Who may read what, probed through GET /documents/{key}: users and group sets of the tenant.
PROBES = [(u, g) for u in (None, "alice", "bob", "carol") for g in ([], ["board"], ["hr"])]


@pytest.fixture
def forms(stack: EmbeddedStack) -> EmbeddedStack:
    stack.container.objects.accept_signed_uploads(  # type: ignore[attr-defined]
        "http://127.0.0.1:9/local/uploads", b"secret"
    )
    return stack


def readers(stack: EmbeddedStack, key: str) -> set[tuple[str | None, tuple[str, ...]]]:
    """The probes that may read ``key`` (200, not 404), as each route decides it."""
    out = set()
    for user, groups in PROBES:
        status, _, _ = stack.api(
            "GET", f"/documents/{quote(key.split('/', 1)[1], safe='')}", claims=claims(user, groups)
        )
        if status == 200:
            out.add((user, tuple(groups)))
    return out


def expected_readers(access: dict[str, list[str]] | None) -> set[tuple[str | None, tuple[str, ...]]]:
    """Written out here on its own: no list, every member; a list, its users and its groups' members."""
    return {
        (u, tuple(g))
        for u, g in PROBES
        if access is None or u in access.get("users", []) or set(g) & set(access.get("groups", []))
    }


def apply_form(stack: EmbeddedStack, form: dict[str, Any], data: bytes) -> dict[str, Any]:
    """What S3 does with a presigned POST: the object, with the form's metadata, and its event."""
    fields = form["fields"]
    metadata = {k[len(META) :]: v for k, v in fields.items() if k.startswith(META)}
    return stack.upload(fields["key"], data, metadata or None)


def restricted(stack: EmbeddedStack, key: str, access: dict[str, list[str]], via: str) -> None:
    if via == "sidecar":
        stack.put_object(key + ".metadata.json", json.dumps({"access": access}).encode())
        assert stack.upload(key, b"Board minutes on the quorn merger.")["status"] == "indexed"
    else:
        pinned = {"winnow-access": json.dumps(access)}
        assert stack.upload(key, b"Board minutes on the quorn merger.", pinned)["status"] == "indexed"
    assert readers(stack, key) == expected_readers(access)


# --- the attacks of the red team, one by one ------------------------------------------------------------
@pytest.mark.parametrize("via", ["upload", "sidecar"])
def test_a_listed_user_re_uploading_without_a_list_keeps_the_document_closed(
    forms: EmbeddedStack, via: str
) -> None:
    restricted(forms, "acme/minutes.md", BOARD, via)
    # When alice, listed, asks for a form to replace it without saying who may read it
    status, _, form = forms.api("POST", "/uploads", {"path": "minutes.md"}, claims=claims("alice"))
    assert status == 201, form
    # Then the form keeps the list (pinned, or left to the sidecar that gives it)
    pinned = form["fields"].get(META + "winnow-access")
    assert (json.loads(pinned) if pinned else None) == (BOARD if via == "upload" else None)
    assert apply_form(forms, form, b"Board minutes, amended.")["status"] == "indexed"
    # and a member in no group neither finds it nor lists it
    assert readers(forms, "acme/minutes.md") == expected_readers(BOARD)
    status, _, body = forms.api("POST", "/search", {"query": "board minutes amended"}, claims=claims("bob"))
    assert status == 200 and all(r["key"] != "acme/minutes.md" for r in body["results"])
    status, _, listing = forms.api("GET", "/documents", claims=claims("bob"))
    assert all(d["key"] != "acme/minutes.md" for d in listing["documents"])


def test_a_listed_user_cannot_open_a_document_by_deleting_its_sidecar(forms: EmbeddedStack) -> None:
    restricted(forms, "acme/minutes.md", BOARD, "sidecar")
    # When alice, listed, deletes the sidecar that holds the list
    status, _, body = forms.api("DELETE", "/documents/minutes.md.metadata.json", claims=claims("alice"))
    # Then she is refused, saying who may, and the document stays closed
    assert status == 403 and "admin group" in body["error"]["message"], body
    assert forms.container.objects.head("acme/minutes.md.metadata.json").size > 0
    assert readers(forms, "acme/minutes.md") == expected_readers(BOARD)
    # and someone who cannot read the document is told it does not exist, as for the document itself
    status, _, _ = forms.api("DELETE", "/documents/minutes.md.metadata.json", claims=claims("bob"))
    assert status == 404
    # An admin may (an operator's act: the document then follows its object alone)
    assert forms.api("DELETE", "/documents/minutes.md.metadata.json", claims=claims(None, [ADMIN]))[0] == 202


def test_deleting_and_uploading_again_keeps_the_list_the_record_remembers(forms: EmbeddedStack) -> None:
    restricted(forms, "acme/minutes.md", BOARD, "upload")
    assert forms.api("DELETE", "/documents/minutes.md", claims=claims("alice"))[0] == 202
    assert forms.remove("acme/minutes.md")["status"] == "deleted"
    # When alice puts the document back without a list
    status, _, form = forms.api("POST", "/uploads", {"path": "minutes.md"}, claims=claims("alice"))
    assert status == 201, form
    apply_form(forms, form, b"Board minutes, restored.")
    # Then it comes back with the list it had
    assert readers(forms, "acme/minutes.md") == expected_readers(BOARD)


def test_an_admins_explicit_list_wins_over_the_sidecars(forms: EmbeddedStack) -> None:
    restricted(forms, "acme/minutes.md", BOARD, "sidecar")
    # When an admin re-uploads it for carol alone
    request = {"path": "minutes.md", "access": {"users": ["carol"]}}
    status, _, form = forms.api("POST", "/uploads", request, claims=claims(None, [ADMIN]))
    assert status == 201, form
    apply_form(forms, form, b"Board minutes on the quorn merger.")
    # Then carol reads it and the sidecar's readers no longer do
    assert readers(forms, "acme/minutes.md") == expected_readers({"users": ["carol"], "groups": []})


def test_winnow_serve_uploads_keep_the_list_of_the_document_they_replace(tmp_path: Path) -> None:
    from tests.support.serve import serving

    alice = {"x-winnow-user": "alice"}
    with serving(tmp_path / "home") as httpd:
        # alice, in no group, may give the document to herself and the board only as an admin would
        status, body = signed_upload(httpd, "minutes.md", b"Board minutes.", BOARD, alice)
        assert status == 403 and "'board'" in body["error"]["message"]
        admin = {"x-winnow-groups": ADMIN}
        assert signed_upload(httpd, "minutes.md", b"Board minutes.", BOARD, admin)[0] == 204

        def seen_by(headers: dict[str, str]) -> bool:
            import httpx

            sent = {"x-winnow-tenant": "acme", **headers}
            answer = httpx.get(f"{httpd.url}/documents/minutes.md", headers=sent, timeout=60)
            return answer.status_code == 200

        assert (
            seen_by(alice) and seen_by({"x-winnow-groups": "board"}) and not seen_by({"x-winnow-user": "bob"})
        )
        # When alice, listed, replaces it through the raw upload route, without a list
        status, record = raw_upload(httpd, "minutes.md", b"Board minutes, amended by alice.", alice)
        assert status == 200 and record["status"] == "indexed", record
        # Then the document still has its list: bob does not see it, the board does
        assert (
            seen_by(alice) and seen_by({"x-winnow-groups": "board"}) and not seen_by({"x-winnow-user": "bob"})
        )


# --- the property: callers x routes x list changes -------------------------------------------------------
ROUTES = ["form", "form_with_list", "delete", "delete_sidecar", "delete_then_form"]
lists = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "users": st.lists(st.sampled_from(["alice", "bob", "carol"]), max_size=2, unique=True),
            "groups": st.lists(st.sampled_from(["board", "hr"]), max_size=2, unique=True),
        }
    ),
)
callers = st.tuples(
    st.sampled_from([None, "alice", "bob", "carol"]),
    st.lists(st.sampled_from(["board", "hr", ADMIN]), max_size=2, unique=True),
)


@settings(
    max_examples=25,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # each example runs real handlers and stores
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    before=lists,
    via=st.sampled_from(["upload", "sidecar"]),
    caller=callers,
    route=st.sampled_from(ROUTES),
    asked=lists.filter(lambda value: value is not None),
)
def test_no_route_widens_who_reads_a_document_but_an_allowed_grant(
    forms: EmbeddedStack,
    before: dict[str, list[str]] | None,
    via: str,
    caller: tuple[str | None, list[str]],
    route: str,
    asked: dict[str, list[str]],
) -> None:
    path = f"w{next(_runs)}/doc.md"
    key = f"acme/{path}"
    # Given a document with a list (in its sidecar or pinned by its upload), or none
    if before is None:
        assert forms.upload(key, b"Quorn merger notes.")["status"] == "indexed"
    else:
        restricted(forms, key, before, via)
    readable_before = readers(forms, key)
    user, groups = caller
    who = claims(user, groups)
    granted: set[tuple[str | None, tuple[str, ...]]] = set()
    # When the caller takes one route that could change who reads it
    if route in ("form", "form_with_list", "delete_then_form"):
        if route == "delete_then_form":
            status, _, _ = forms.api("DELETE", f"/documents/{path}", claims=who)
            if status == 202:
                forms.remove(key)
        request: dict[str, Any] = {"path": path}
        if route == "form_with_list":
            request["access"] = asked
        status, _, form = forms.api("POST", "/uploads", request, claims=who)
        if status == 201:
            apply_form(forms, form, b"Quorn merger notes, replaced.")
            if route == "form_with_list":
                granted = expected_readers(asked)
                # an allowed grant names only groups the caller is in (or the caller is an admin)
                assert ADMIN in groups or set(asked["groups"]) <= set(groups)
    else:
        target = f"{path}.metadata.json" if route == "delete_sidecar" else path
        status, _, _ = forms.api("DELETE", f"/documents/{target}", claims=who)
        if status == 202:
            forms.remove(f"{key}.metadata.json" if route == "delete_sidecar" else key)
    readable_after = readers(forms, key)
    # Then nobody reads it who did not before, but those a permitted list names
    if ADMIN not in groups:
        assert readable_after <= readable_before | granted, (route, before, via, caller, readable_after)
    # and a list given explicitly is the list that applies, whoever gave it (admins included)
    if route == "form_with_list" and granted:
        assert readable_after == granted


def test_an_upload_over_a_hidden_key_tells_only_that_the_key_is_taken(forms: EmbeddedStack) -> None:
    """Issue 44, item 16, decided (docs/guarantees.md): a key is one name in the tenant, so writing over a
    document one may not read is refused (403) where a free key gets a form (201). The refusal says no
    more than that: the same answer as to a member who reads the document but may not change it."""
    restricted(forms, "acme/minutes.md", BOARD, "upload")
    status, _, hidden = forms.api("POST", "/uploads", {"path": "minutes.md"}, claims=claims("bob"))
    status_reader, _, reader = forms.api(
        "POST", "/uploads", {"path": "minutes.md"}, claims=claims("bob", ["board"])
    )
    assert status == status_reader == 403
    assert hidden["error"] == reader["error"], (hidden, reader)
    assert forms.api("POST", "/uploads", {"path": "free.md"}, claims=claims("bob"))[0] == 201
