"""What one ``GET /documents`` request costs a caller who reads little (issue 44, item 9): at most
``SCAN_BUDGET`` records read and checked, however many the tenant holds; the pages still show exactly
what the caller may read, in key order, and no cursor names a hidden record."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.support.stack import EmbeddedStack
from winnow import documents
from winnow.models import DocumentStatus, LedgerRecord

BUDGET = 8
HIDDEN = 5 * BUDGET + 3


def _claims(user: str) -> dict[str, Any]:
    return {"sub": user}


@pytest.fixture
def crowded(stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch) -> tuple[EmbeddedStack, list[int]]:
    """acme under DefaultAccess=deny: ann's two documents around many records no one but admins read;
    and the number of records each listing request checked."""
    stack.container.settings.search.default_access = "deny"
    assert (
        stack.upload("acme/a-first.md", b"Kettle notes.", {"winnow-access": '{"users": ["ann"]}'})["status"]
        == "indexed"
    )
    assert stack.upload("acme/m-closed.md", b"Closed notes.")["status"] == "indexed"
    assert (
        stack.upload("acme/z-last.md", b"Boiler notes.", {"winnow-access": '{"users": ["ann"]}'})["status"]
        == "indexed"
    )
    for n in range(HIDDEN):  # deleted documents whose records kept no list: admins only
        stack.container.ledger.put(LedgerRecord("acme", f"acme/h{n:03d}-secret.md", DocumentStatus.DELETED))
    monkeypatch.setattr(documents, "SCAN_BUDGET", BUDGET, raising=False)
    checked: list[int] = []
    visible = documents.Rights.visible

    def counting(self: documents.Rights, caller: Any, records: list[LedgerRecord]) -> list[LedgerRecord]:
        checked[-1] += len(records)
        return visible(self, caller, records)

    monkeypatch.setattr(documents.Rights, "visible", counting)
    return stack, checked


def _walk(stack: EmbeddedStack, checked: list[int], user: str, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    for _ in range(4 * HIDDEN):  # a walk that never ends fails below instead of hanging
        checked.append(0)
        query = {"limit": str(limit)} | ({"cursor": cursor} if cursor else {})
        status, _, body = stack.api("GET", "/documents", query=query, claims=_claims(user))
        assert status == 200, body
        pages.append([d["key"] for d in body["documents"]])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        anchor, dot, _ = cursor.rpartition(".")
        anchor = anchor if dot else cursor
        assert b"secret" not in base64.urlsafe_b64decode(anchor + "=" * (-len(anchor) % 4))
    raise AssertionError(f"the listing did not end: {pages}")


@pytest.mark.parametrize("limit", [1, 2, 50])
def test_a_caller_who_reads_little_costs_one_budget_per_request(
    crowded: tuple[EmbeddedStack, list[int]], limit: int
) -> None:
    stack, checked = crowded
    # When ann, who reads two of the tenant's documents, lists them page by page
    pages = _walk(stack, checked, "ann", limit)
    # Then no request checked more than the budget, however many hidden records lie between
    assert max(checked) <= BUDGET, checked
    # and the pages together show exactly her documents, in key order, none twice
    assert [k for page in pages for k in page] == ["acme/a-first.md", "acme/z-last.md"]
    # and the walk took about one request per budget of records, not one per record
    assert len(pages) <= (HIDDEN + 3) // BUDGET + 3, pages


def test_a_caller_who_reads_nothing_is_told_so_one_budget_at_a_time(
    crowded: tuple[EmbeddedStack, list[int]],
) -> None:
    stack, checked = crowded
    # When bob, who reads nothing, asks for one document
    pages = _walk(stack, checked, "bob", 1)
    # Then every request checked at most the budget, and the walk shows nothing
    assert max(checked) <= BUDGET and sum(checked) == HIDDEN + 3, checked
    assert not any(pages)


def test_an_admin_still_gets_full_pages(crowded: tuple[EmbeddedStack, list[int]]) -> None:
    stack, checked = crowded
    checked.append(0)
    status, _, body = stack.api(
        "GET", "/documents", query={"limit": "5"}, claims={"sub": "root", "cognito:groups": "[winnow-admins]"}
    )
    assert status == 200 and len(body["documents"]) == 5 and body["next_cursor"], body


@pytest.mark.parametrize("cursor", [".0", ".x", "abc.-1", "!!.3", ".1234567890"])
def test_a_cursor_this_api_did_not_return_is_400(
    crowded: tuple[EmbeddedStack, list[int]], cursor: str
) -> None:
    stack, checked = crowded
    checked.append(0)
    status, _, body = stack.api("GET", "/documents", query={"cursor": cursor}, claims=_claims("ann"))
    assert status == 400 and "cursor" in body["error"]["message"], body
