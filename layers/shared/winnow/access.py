"""Who may read and change a document inside its tenant, and who is asking: each rule defined once.

A document may carry ``access: {"users": [...], "groups": [...]}`` (its sidecar, or ``POST /uploads``).
Ingest keeps it in the document's metadata under ``ACCESS_KEY`` (a name no metadata field or filter can
take), so the metadata hash, the in-place payload update and reconcile treat access like any other
metadata, and no access change ever re-embeds. On every point it becomes three payload fields the vector
store indexes (``access_users``, ``access_groups``, ``access_open``), so the read condition sits inside
the query filter beside the tenant.

The caller is one small value (``Caller``: tenant, user, groups, admin) built from verified claims only
(``winnow.api.http.resolve_caller``) and passed down to every route."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from winnow.errors import InvalidMetadata
from winnow.models import AccessList, ReadScope
from winnow.rules import PRINCIPAL_RULE, is_principal

ACCESS_KEY = "_access"  # in ingest's metadata dict; breaks the field-name rule on purpose
UPLOAD_METADATA_NAME = "winnow-access"  # S3 user metadata that POST /uploads pins in the signed form
MAX_ACCESS_NAMES = 200  # per list: users, groups
MAX_CALLER_GROUPS = 1000  # groups one token may carry
USERS_FIELD = "access_users"
GROUPS_FIELD = "access_groups"
OPEN_FIELD = "access_open"  # True on documents without an access list
PAYLOAD_FIELDS = (USERS_FIELD, GROUPS_FIELD, OPEN_FIELD)
T = TypeVar("T")


def parse_access(value: object) -> AccessList:
    """An ``access`` value checked once for every way in (sidecar, upload form, request body):
    an object with ``users`` and/or ``groups``, each a list of at most ``MAX_ACCESS_NAMES`` names."""
    if not isinstance(value, dict):
        raise InvalidMetadata('access must be an object such as {"users": ["u1"], "groups": ["hr"]}')
    unknown = [str(name)[:40] for name in value if name not in ("users", "groups")]
    if unknown:
        raise InvalidMetadata(f"access has unknown field {unknown[0]!r}: use 'users' and 'groups'")
    return AccessList(users=_names(value, "users"), groups=_names(value, "groups"))


def _names(value: dict[str, Any], which: str) -> tuple[str, ...]:
    names = value.get(which, [])
    if not isinstance(names, list):
        raise InvalidMetadata(f"access.{which} must be a list of names")
    if len(names) > MAX_ACCESS_NAMES:
        raise InvalidMetadata(f"access.{which} has {len(names)} names, over the {MAX_ACCESS_NAMES} limit")
    for name in names:
        if not is_principal(name):
            shown = str(name)[:40] if isinstance(name, str) else type(name).__name__
            raise InvalidMetadata(f"access.{which} name {shown!r} is not allowed: use {PRINCIPAL_RULE}")
    return tuple(dict.fromkeys(names))


def decode_access(text: str) -> AccessList:
    """The access list an upload form pinned (``x-amz-meta-winnow-access``)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidMetadata(f"{UPLOAD_METADATA_NAME} is not valid JSON") from exc
    return parse_access(value)


def applicable_access(pinned: T | None, sidecar: T | None) -> T | None:
    """The one rule for which list a document is read under: the list its object carries (pinned by an
    upload form, checked against its uploader's rights when signed) wins over its sidecar's, so an
    explicit list in an upload takes effect; without either, the document is open."""
    return pinned if pinned is not None else sidecar


def list_to_pin(
    requested: AccessList | None, current: AccessList | None, from_sidecar: AccessList | None
) -> AccessList | None:
    """What an upload form pins (``x-amz-meta-winnow-access``): the list asked for; without one, the
    document's current list, so leaving the list out never opens or widens a document, for anyone.
    Nothing when the document is open or new, or when its sidecar gives that very list anyway (the
    sidecar then keeps governing it)."""
    if requested is not None:
        return requested
    return None if current is None or current == from_sidecar else current


def access_in(metadata: dict[str, Any]) -> AccessList | None:
    """The access list ingest put in a document's metadata, or None for an open document."""
    value = metadata.get(ACCESS_KEY)
    return parse_access(value) if value is not None else None


def split_metadata(metadata: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A document's metadata as stored: (user metadata for ``meta``, the access payload fields)."""
    user = {k: v for k, v in metadata.items() if k != ACCESS_KEY}
    access = access_in(metadata)
    return user, {
        USERS_FIELD: list(access.users) if access else [],
        GROUPS_FIELD: list(access.groups) if access else [],
        OPEN_FIELD: access is None,
    }


def access_of_payload(payload: dict[str, Any]) -> AccessList | None:
    """A stored point's access list; None for an open document (or one written before access existed)."""
    if payload.get(OPEN_FIELD, True) is True:
        return None
    return AccessList(
        users=tuple(str(u) for u in payload.get(USERS_FIELD) or ()),
        groups=tuple(str(g) for g in payload.get(GROUPS_FIELD) or ()),
    )


def parse_groups(value: object) -> frozenset[str]:
    """A groups claim as identity providers send it: a JSON list, or one string separated by spaces or
    commas (API Gateway flattens a list claim to ``[a b]``). Names that break the rule are dropped: they
    can only match nothing."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = text[1:-1]
            value = parsed
        if isinstance(value, str):
            value = value.replace(",", " ").split()
    if not isinstance(value, list | tuple):
        return frozenset()
    if len(value) > MAX_CALLER_GROUPS:
        raise ValueError(f"the groups claim holds more than {MAX_CALLER_GROUPS} groups")
    return frozenset(str(g) for g in value if is_principal(g))


@dataclass(frozen=True)
class Caller:
    """Who is asking, from verified claims only: the identity every route and (later) conversation
    honours. ``user`` None: anonymous, who reads only documents without an access list."""

    tenant: str
    user: str | None = None
    groups: frozenset[str] = field(default_factory=frozenset)
    is_admin: bool = False

    @classmethod
    def of(
        cls, tenant: str, user: str | None = None, groups: Iterable[str] = (), admin_group: str = ""
    ) -> Caller:
        held = frozenset(groups)
        return cls(tenant, user or None, held, bool(admin_group) and admin_group in held)

    def scope(self, default_deny: bool) -> ReadScope:
        if self.is_admin:
            return ReadScope(everything=True)
        return ReadScope(
            open_documents=not default_deny,
            users=(self.user,) if self.user else (),
            groups=tuple(sorted(self.groups)),
        )

    def can_read(self, access: AccessList | None, default_deny: bool) -> bool:
        if self.is_admin:
            return True
        if access is None:
            return not default_deny
        return (self.user is not None and self.user in access.users) or bool(self.groups & set(access.groups))

    def write_problem(
        self, exists: bool, access: AccessList | None, default_deny: bool, sidecar: bool = False
    ) -> str | None:
        """Why this caller may not replace or delete a document (``exists``, with ``access``, None for no
        list), or None when they may: admins; a document's listed users; for a document without a list,
        whoever may read such documents; for a new key, any member of the tenant (``grant_problem``
        still bounds what they may give). A sidecar may hold its document's list: only admins delete one
        (nobody uploads one through the API), so no listed user can open a document by removing it."""
        if self.is_admin:
            return None
        if sidecar:
            return "only members of the admin group may change a sidecar (it may hold the access list)"
        if not exists:
            return None
        if access is None:
            return "only members of the admin group may change documents here" if default_deny else None
        if self.user is not None and self.user in access.users:
            return None
        return "changing this document needs the admin group or being one of its listed users"

    def grant_problem(self, access: AccessList | None) -> str | None:
        """Why this caller may not give ``access`` to a new or replaced document: a group they are not in."""
        if self.is_admin or access is None:
            return None
        foreign = sorted(set(access.groups) - self.groups)
        if foreign:
            return f"you are not in group {foreign[0][:60]!r}: only admins may grant a group they are not in"
        return None
