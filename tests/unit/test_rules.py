"""One tenant rule and one metadata field-name rule (winnow.rules), and every layer that checks a tenant
or a field name agreeing with them for any string: the request schema, ingest key parsing, sidecar
validation, the ledgers, the vector store's filter builder and the CLI."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from winnow.adapters._ledger_common import check_identity
from winnow.adapters.qdrant_store import QdrantVectorStore
from winnow.errors import BadRequest, InvalidKey, InvalidMetadata
from winnow.ingest.metadata import from_user_metadata, parse_sidecar
from winnow.ingest.service import split_key
from winnow.models import DocumentStatus, LedgerRecord
from winnow.rules import UNASSIGNED_TENANT, is_field_name, is_tenant
from winnow.search.schemas import SearchRequest
from winnow_local.cli.common import check_tenant as _check_tenant
from winnow_local.errors import CliError

ROOT = Path(__file__).resolve().parents[2]

# Strings near the rules' edges: the allowed alphabet, separators, whitespace (a trailing newline is
# what ``re.match`` with ``$`` let through), dots, and non-ASCII letters and digits.
name_text = st.text(
    alphabet=st.sampled_from(list("aZ09._-/ \n\r\t\x00é٣\u2028")) | st.characters(),
    max_size=140,
)


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("acme", True),
        ("a", True),
        ("A.b_c-9", True),
        ("a" * 128, True),
        ("a" * 129, False),
        ("acme\n", False),
        ("acme\r\n", False),
        ("\nacme", False),
        ("", False),
        ("-acme", False),
        (".acme", False),
        ("_unassigned", False),
        ("acme/x", False),
        ("acmé", False),
        ("١٢٣", False),  # Unicode digits are not [0-9]
    ],
)
def test_the_tenant_rule(name: str, valid: bool) -> None:
    assert is_tenant(name) is valid


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("department", True),
        ("year_2024", True),
        ("dept-team", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("dept.team", False),  # the store reads a dot as a nested path
        ("department\n", False),
        ("_private", False),
        ("", False),
        ("bad name", False),
    ],
)
def test_the_field_name_rule(name: str, valid: bool) -> None:
    assert is_field_name(name) is valid


def test_non_strings_follow_neither_rule() -> None:
    for value in (None, 1, b"acme", ["acme"]):
        assert not is_tenant(value) and not is_field_name(value)


def _accepts(check: Callable[[], object], *errors: type[Exception]) -> bool:
    try:
        check()
    except errors:
        return False
    return True


@settings(deadline=None)
@given(name=name_text)
def test_every_layer_agrees_on_what_a_tenant_is(name: str) -> None:
    record = LedgerRecord(tenant=name, key=f"{name}/doc.md", status=DocumentStatus.INDEXED)
    verdicts = {
        "rule": is_tenant(name),
        "object key": _key_tenant(f"{name}/doc.md") == name,
        "ledger": _accepts(lambda: check_identity(record), ValueError) and name != UNASSIGNED_TENANT,
        "store": _accepts(lambda: STORE._search_filter(name, {}), ValueError),
        "cli": _accepts(lambda: _check_tenant(name), CliError),
    }
    assert len(set(verdicts.values())) == 1, verdicts


@settings(deadline=None)
@given(name=name_text)
def test_every_layer_agrees_on_what_a_field_name_is(name: str) -> None:
    sidecar = json.dumps({"metadataAttributes": {name: "x"}}).encode("ascii")
    verdicts = {
        "rule": is_field_name(name),
        "sidecar": _accepts(lambda: parse_sidecar(sidecar, 10_000), InvalidMetadata),
        "s3 user metadata": bool(from_user_metadata({name: "x"})),
        "request schema": _accepts(lambda: SearchRequest(query="q", filters={name: "x"}), ValidationError),
        "store filter": _accepts(lambda: STORE._search_filter("acme", {name: "x"}), BadRequest),
    }
    assert len(set(verdicts.values())) == 1, verdicts


def _key_tenant(key: str) -> str | None:
    try:
        return split_key(key)[0]
    except InvalidKey:
        return None


STORE = QdrantVectorStore.__new__(QdrantVectorStore)  # the filter builder needs no client or collection


def test_no_other_module_keeps_a_pattern_of_its_own() -> None:
    # Given every Python module that ships (the layer package and the functions)
    sources = [*(ROOT / "layers" / "shared" / "winnow").rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
    # Then only winnow/rules.py spells the tenant or field-name alphabet as a pattern
    shapes = re.compile(r"\{0,127\}|\{0,63\}|_-\]\{1,64\}")
    owners = {p.relative_to(ROOT).as_posix() for p in sources if shapes.search(p.read_text(encoding="utf-8"))}
    assert owners == {"layers/shared/winnow/rules.py"}
