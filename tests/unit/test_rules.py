"""The rules of winnow.rules (tenant, key, metadata field name, S3 sequencer order, timestamp format, S3
notification shape), each defined once: every layer that checks a tenant or a field name agrees with them
for any string, the sequencer order is the one the S3 docs prescribe, the notification builder writes what
S3 sends and the parser reads it back, and no other module keeps a copy of any of them."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from winnow.adapters._ledger_common import accepts, check_identity
from winnow.adapters.qdrant_store import QdrantVectorStore
from winnow.api.schemas.search import SearchRequest
from winnow.errors import BadRequest, DocumentError, InvalidKey, InvalidMetadata
from winnow.ingest.events import ObjectEvent, parse_s3_notification, s3_event
from winnow.ingest.metadata import from_user_metadata, parse_sidecar
from winnow.models import DocumentStatus, LedgerRecord
from winnow.reconcile.notifications import s3_notification as reconcile_notification
from winnow.rules import (
    SEQUENCER_WIDTH,
    UNASSIGNED_TENANT,
    decode_event_key,
    encode_event_key,
    is_field_name,
    is_sequencer,
    is_tenant,
    iso_timestamp,
    now_iso,
    object_key,
    path_in_tenant,
    s3_notification,
    s3_record,
    sequencer_is_newer,
    sequencer_sort_key,
    split_key,
)
from winnow.settings import QdrantSettings
from winnow_local.cli.common import check_tenant as _check_tenant
from winnow_local.cli.filters import FilterSyntaxError, parse_filters
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
@example(name="dept.team")
def test_every_layer_agrees_on_what_a_field_name_is(name: str) -> None:
    sidecar = json.dumps({"metadataAttributes": {name: "x"}}).encode("ascii")
    verdicts = {
        "rule": is_field_name(name),
        "sidecar": _accepts(lambda: parse_sidecar(sidecar, 10_000), InvalidMetadata),
        "s3 user metadata": bool(from_user_metadata({name: "x"})),
        "request schema": _accepts(lambda: SearchRequest(query="q", filters={name: "x"}), ValidationError),
        "store filter": _accepts(lambda: STORE._search_filter("acme", {name: "x"}), BadRequest),
        "cli --filter": _cli_filter_field(name) == name,
    }
    assert len(set(verdicts.values())) == 1, verdicts


def _cli_filter_field(name: str) -> str | None:
    """The field ``winnow search --filter NAME=x`` filters on (whitespace and operators are the CLI's
    syntax, so a name holding them parses as another field), or None when the CLI refuses it."""
    try:
        fields = list(parse_filters([f"{name}=x"]))
    except FilterSyntaxError:
        return None
    return fields[0] if fields else None


def _key_tenant(key: str) -> str | None:
    try:
        return split_key(key)[0]
    except InvalidKey:
        return None


STORE = QdrantVectorStore.__new__(QdrantVectorStore)  # the filter builder needs no client or collection
STORE._settings = QdrantSettings()
# The field-name rule, not the declaration rule: a server's store also refuses a well-named field nobody
# declared (tests/integration/test_qdrant_store.py), which would hide what this compares.
STORE.declared_only = False


# Each rule and a shape that only its definition has. A module other than winnow/rules.py that matches
# one keeps a copy of that rule.
_DEFINITIONS = {
    "tenant alphabet": r"\{0,127\}",
    "field-name alphabet": r"\{0,63\}|_-\]\{1,64\}",
    "tenant and key functions": r"def (is_tenant|split_key|object_key|path_in_tenant|path_problem)\b",
    "a key built or taken apart by hand": r"f\"\{tenant\}/|\[len\(tenant\) \+ 1 ?:",
    "sequencer pattern": r"0-9A-Fa-f\]\{|0-9A-Fa-f\]\+",
    "sequencer order": r"\.ljust\(|def sequencer_(is_newer|sort_key)\b",
    "timestamp format": r"timespec=\"milliseconds\"|replace\(\"\+00:00\", \"Z\"\)|def now_iso\b",
    "notification shape": r"\"eventVersion\"|\"s3SchemaVersion\"|def s3_record\b",
    "notification key encoding": r"\bquote_plus\(|\bunquote_plus\(",
}


@pytest.mark.parametrize("rule", sorted(_DEFINITIONS))
def test_each_rule_has_one_definition(rule: str) -> None:
    # Given every Python module of the shipped package, the functions and the local tools
    roots = [ROOT / "layers" / "shared" / "winnow", ROOT / "functions", ROOT / "winnow_local"]
    sources = [path for root in roots if root.exists() for path in root.rglob("*.py")]
    # When each is searched for the rule's own shape
    shape = re.compile(_DEFINITIONS[rule])
    owners = {p.relative_to(ROOT).as_posix() for p in sources if shape.search(p.read_text(encoding="utf-8"))}
    # Then only winnow/rules.py spells it
    assert owners == {"layers/shared/winnow/rules.py"}, rule


# The local server's search page, wherever the local package keeps it.
_PAGES = [p for root in ("layers", "winnow_local") for p in (ROOT / root).glob("**/static/*.html")]


@settings(deadline=None)
@given(name=name_text)
@example(name="a.b_c-9")
@example(name="a" * 128)
@example(name="a" * 129)
@example(name="acme\n")
@example(name="_unassigned")
@example(name="acmé")
def test_the_search_pages_tenant_field_checks_the_same_rule(name: str) -> None:
    # Given the tenant pattern the local search page checks in the browser (HTML cannot import Python)
    patterns = [
        m for page in _PAGES for m in re.findall(r'id="tenant"[^>]*?pattern="([^"]+)"', page.read_text())
    ]
    assert patterns, "the search page's tenant field has no pattern"
    # Then it accepts exactly the tenants the rule accepts (an HTML pattern must match the whole value)
    for pattern in patterns:
        assert (re.fullmatch(pattern, name) is not None) is is_tenant(name), pattern


# --- keys -------------------------------------------------------------------------------------------
@settings(deadline=None)
@given(tenant=name_text, path=name_text)
def test_a_key_names_its_tenant_and_splits_back(tenant: str, path: str) -> None:
    # Given a valid tenant and a non-empty path, When they are joined into a key
    if not is_tenant(tenant) or not path:
        return
    key = object_key(tenant, path)
    # Then splitting the key gives them back
    assert split_key(key) == (tenant, path)


@pytest.mark.parametrize(
    ("key", "path"),
    [("acme/hr/leave.pdf", "hr/leave.pdf"), ("hr/leave.pdf", "hr/leave.pdf"), ("acmeco/x.md", "acmeco/x.md")],
)
def test_a_keys_path_within_its_tenant(key: str, path: str) -> None:
    # Given a key of tenant acme, a bare path, and a key of a tenant whose name starts with acme
    # Then only the tenant's own prefix is taken off (the search routes and the CLI both show this)
    assert path_in_tenant("acme", key) == path


@pytest.mark.parametrize("key", ["acme", "acme/", "/doc.md", "-acme/doc.md", "acme\n/doc.md", ""])
def test_a_key_without_a_tenant_segment_is_invalid(key: str) -> None:
    with pytest.raises(InvalidKey, match="expected <tenant>/<path>"):
        split_key(key)


# --- S3 sequencer order -----------------------------------------------------------------------------
hex_digits = "0123456789abcdefABCDEF"
sequencers = st.text(alphabet=hex_digits, min_size=1, max_size=SEQUENCER_WIDTH)


@given(a=sequencers, b=sequencers)
def test_sequencer_order_is_the_s3_docs_rule(a: str, b: str) -> None:
    # Given two sequencers, When the shorter is right-padded with zeros (the S3 notification docs' rule)
    width = max(len(a), len(b))
    a_padded, b_padded = int(a.ljust(width, "0"), 16), int(b.ljust(width, "0"), 16)
    # Then "newer" is exactly "greater as a number once padded"
    assert sequencer_is_newer(a, b) is (a_padded > b_padded)


@given(a=sequencers, b=sequencers)
def test_the_ledgers_sort_key_orders_as_the_domain_does(a: str, b: str) -> None:
    # Given two valid sequencers, Then the ledgers' stored sort keys compare as the domain's rule
    assert (sequencer_sort_key(a) > sequencer_sort_key(b)) is sequencer_is_newer(a, b)
    assert (sequencer_sort_key(a) == sequencer_sort_key(b)) is (
        not sequencer_is_newer(a, b) and not sequencer_is_newer(b, a)
    )
    # And the ledgers' acceptance rule refuses exactly the events that are not newer
    assert accepts(a, sequencer_sort_key(b), same_event_ok=False) is sequencer_is_newer(a, b)


@given(a=sequencers, b=sequencers, c=sequencers)
def test_sequencer_order_is_a_strict_order(a: str, b: str, c: str) -> None:
    assert not sequencer_is_newer(a, a)
    assert not (sequencer_is_newer(a, b) and sequencer_is_newer(b, a))
    if sequencer_is_newer(a, b) and sequencer_is_newer(b, c):
        assert sequencer_is_newer(a, c)


@given(a=sequencers, zeros=st.integers(min_value=1, max_value=8))
def test_trailing_zeros_and_case_do_not_change_a_sequencer(a: str, zeros: int) -> None:
    for same in (a + "0" * zeros, a.swapcase()):
        assert not sequencer_is_newer(a, same) and not sequencer_is_newer(same, a)


@given(a=st.one_of(st.none(), st.text(max_size=80)), b=st.one_of(st.none(), st.text(max_size=80)))
def test_comparing_any_sequencers_never_raises_and_a_missing_one_is_never_stale(
    a: str | None, b: str | None
) -> None:
    # Given anything an SQS body may carry (the batch scheduler compares before ingest validates)
    newer = sequencer_is_newer(a, b)
    # Then the comparison answers, and an event or a record without a sequencer is never stale
    if a is None or b is None:
        assert newer is True


@given(value=st.text(max_size=80))
def test_only_a_valid_sequencer_gets_a_sort_key(value: str) -> None:
    if is_sequencer(value):
        assert len(sequencer_sort_key(value)) == SEQUENCER_WIDTH
    else:
        with pytest.raises(DocumentError, match="malformed S3 event sequencer"):
            sequencer_sort_key(value)


def test_sequencers_of_growing_length_keep_event_order() -> None:
    # Given sequencers as S3 sends them when their length grows (an 18-digit one after a 16-digit one)
    events = ["0055AED6DCD90281E5", "0055AED6DCD9028200", "0055AED6DCD90283", "0055AED6DCD9028401"]
    # Then each is newer than every one before it
    for earlier, later in itertools.pairwise(events):
        assert sequencer_is_newer(later, earlier) and not sequencer_is_newer(earlier, later)


# --- timestamps -------------------------------------------------------------------------------------
def test_timestamps_are_utc_iso_with_milliseconds_as_s3_writes_them() -> None:
    stamp = now_iso()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp


def test_any_moment_is_written_in_utc_with_milliseconds() -> None:
    # Given the same instant as an aware time elsewhere, as UTC, and as a naive (UTC) time
    elsewhere = datetime(2024, 5, 1, 14, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    in_utc = datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)
    naive = datetime(2024, 5, 1, 12, 30, 15, 123456)
    # Then each is written the one way
    assert {iso_timestamp(t) for t in (elsewhere, in_utc, naive)} == {"2024-05-01T12:30:15.123Z"}


# --- S3 notifications -------------------------------------------------------------------------------
def _paths(value: object, prefix: str = "") -> set[str]:
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in {f"{prefix}/{k}"} | _paths(v, f"{prefix}/{k}")}
    return set()


@pytest.mark.parametrize(
    ("sample", "size", "etag"),
    [("s3-put.json", 10, "abc"), ("s3-delete.json", None, None)],
)
def test_the_notification_builder_writes_what_s3_sends(
    sample: str, size: int | None, etag: str | None
) -> None:
    # Given a notification S3 sent (events/) and one we build for the same kind of change
    sent = json.loads((ROOT / "events" / sample).read_text(encoding="utf-8"))["Records"][0]
    built = s3_record(sent["eventName"], "b", "acme/x.md", size=size, etag=etag, sequencer="00AB")
    # Then they have the same fields, nested field for nested field
    assert _paths(built) == _paths(sent)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]{8}\.\d{3}Z", built["eventTime"])


# S3 keys are UTF-8: any character but a lone surrogate.
keys = st.text(
    alphabet=st.sampled_from(list("ab /+%&?=é#~.")) | st.characters(exclude_categories=("Cs",)),
    min_size=1,
    max_size=60,
)


@given(key=keys, size=st.none() | st.integers(0, 2**40), sequencer=st.none() | sequencers)
def test_every_builder_round_trips_through_the_parser(
    key: str, size: int | None, sequencer: str | None
) -> None:
    # Given a change to an object whose key holds spaces, plus signs, percent signs or non-ASCII letters
    key = key.replace("\x00", "")
    if not key:
        return
    event = ObjectEvent("created", "bucket", key, sequencer, "etag", None, size, "ObjectCreated:Put")
    # When the rule's builder, the CLI's s3_event and reconcile's notification encode it
    built = [
        s3_notification(
            [s3_record("ObjectCreated:Put", "bucket", key, size=size, etag="etag", sequencer=sequencer)]
        ),
        s3_event([("ObjectCreated:Put", key, size, "etag", sequencer)], "bucket"),
        reconcile_notification(event),
    ]
    # Then the ingest parser reads the same event back from each
    for notification in built:
        assert parse_s3_notification(notification) == [event]
    assert decode_event_key(encode_event_key(key)) == key
