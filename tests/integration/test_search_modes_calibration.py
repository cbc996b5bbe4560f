"""``sparse`` and ``dense`` modes are calibrated too: a query whose every keyword a passage holds is not
refused at the default threshold, however few documents the tenant has (BM25's IDF, hence its raw score,
shrinks with a small tenant). The true embedded default: the local ONNX model, the real search handler,
small tenants generated here."""

from __future__ import annotations

import pytest

from tests.support.stack import EmbeddedStack

# Two documents a tenant; the query is three of the first document's words that the second lacks.
TENANTS = [
    (
        "The catalyst lowers the activation energy of the reaction, so the molecules react at room "
        "temperature and the yield rises without extra heating.",
        "The quarterly budget review lists travel costs, office rent and the new payroll provider chosen "
        "by the finance team.",
        "catalyst activation energy",
    ),
    (
        "Glaciers retreat when summer melting exceeds winter snowfall; the moraine they leave marks the "
        "furthest advance of the ice.",
        "The library lends laptops for two weeks and renews them once when nobody else has reserved one.",
        "moraine glacier retreat",
    ),
    (
        "The compiler inlines small functions and unrolls loops when optimisation level three is chosen "
        "on the command line.",
        "Our garden club meets on Saturdays to swap seeds, prune the orchard and plan the spring fair.",
        "compiler inlines functions",
    ),
]


@pytest.mark.parametrize("mode", ["sparse", "dense", "hybrid"])
def test_an_exact_keyword_match_in_a_two_document_tenant_is_not_refused(
    onnx_stack: EmbeddedStack, mode: str
) -> None:
    kept = []
    for n, (answer, other, query) in enumerate(TENANTS):
        tenant = f"small{n}"
        assert onnx_stack.upload(f"{tenant}/answer.txt", answer.encode())["status"] == "indexed"
        assert onnx_stack.upload(f"{tenant}/other.txt", other.encode())["status"] == "indexed"
        status, body = onnx_stack.search(query, tenant=tenant, mode=mode)
        assert status == 200
        top = body["results"][0] if body["results"] else None
        kept.append((query, top["key"] if top else None, top["score"] if top else None))
    assert all(key is not None and key.endswith("/answer.txt") for _, key, _ in kept), kept
