"""S3's browser-upload (POST policy) rules, for the signed uploads of ``winnow serve``: the same form
shape as S3's presigned POST (``key``, ``Content-Type``, ``x-amz-meta-*``, a base64 ``policy`` of
``{"expiration", "conditions"}``), signed with HMAC-SHA256 under a per-server secret instead of SigV4.
The conditions are judged as S3 judges them: every one must hold, and every form field must be named by
one, so a form cannot add metadata, change the key or send more bytes than the policy allows. Field names
are read without regard to case, as S3 reads them, so a form naming a field twice (``key``, ``KEY``) keeps
no policy: what is checked is what is stored (``signed_object``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

SIGNATURE_FIELD = "x-winnow-signature"
# Fields S3 does not require a condition for: the policy and signature themselves, the file.
_UNCHECKED = frozenset({"policy", "file", SIGNATURE_FIELD, "x-amz-signature"})
_META = "x-amz-meta-"


def encode_policy(conditions: list[Any], expires_in: int, now: datetime | None = None) -> str:
    expiration = (now or datetime.now(UTC)) + timedelta(seconds=expires_in)
    document = {"expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"), "conditions": conditions}
    return base64.b64encode(json.dumps(document, separators=(",", ":")).encode()).decode("ascii")


def sign(secret: bytes, policy: str) -> str:
    return hmac.new(secret, policy.encode("ascii"), hashlib.sha256).hexdigest()


def verify(secret: bytes, policy: str, signature: str) -> bool:
    return hmac.compare_digest(sign(secret, policy), signature)


def decode_policy(policy: str) -> dict[str, Any]:
    """The policy document, or ValueError when it is not one."""
    document = json.loads(base64.b64decode(policy.encode("ascii"), validate=True))
    if not isinstance(document, dict) or not isinstance(document.get("conditions"), list):
        raise ValueError("not a POST policy")
    return document


def _by_name(fields: dict[str, str]) -> dict[str, str] | str:
    """The fields by lower-cased name, or why not: two names equal but for case would let a check read
    one and the write the other (``key`` checked, ``KEY`` stored), so such a form keeps no policy."""
    given: dict[str, str] = {}
    for name, value in fields.items():
        if name.lower() in given:
            return f"the form field {name[:60]!r} is sent twice (names are not case-sensitive)"
        given[name.lower()] = value
    return given


def policy_problem(
    document: dict[str, Any], fields: dict[str, str], size: int, now: datetime | None = None
) -> str | None:
    """Why the form (its fields, names compared case-insensitively, and a file of ``size`` bytes) breaks
    the policy, or None when it keeps it. The key must be pinned by an exact condition."""
    given = _by_name(fields)
    if isinstance(given, str):
        return given
    try:
        stamp = str(document.get("expiration"))
        expiration = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "the policy has no valid expiration"
    if (now or datetime.now(UTC)) >= expiration:
        return "the upload form has expired: ask /uploads for a new one"
    named: set[str] = set()
    pinned: set[str] = set()
    for condition in document["conditions"]:
        if isinstance(condition, dict) and len(condition) == 1:
            ((name, expected),) = condition.items()
            name = str(name).lower()
            named.add(name)
            pinned.add(name)
            if given.get(name) != expected:
                return f"the form field {name!r} is not the one the upload form was signed for"
        elif isinstance(condition, list) and len(condition) == 3 and condition[0] == "content-length-range":
            low, high = int(condition[1]), int(condition[2])
            if not low <= size <= high:
                return f"the file is {size} bytes: this upload form allows {low} to {high}"
        elif isinstance(condition, list) and len(condition) == 3 and condition[0] in ("eq", "starts-with"):
            name = str(condition[1]).lstrip("$").lower()
            named.add(name)
            value = given.get(name, "")
            ok = value == condition[2] if condition[0] == "eq" else value.startswith(str(condition[2]))
            if not ok:
                return f"the form field {name!r} is not the one the upload form was signed for"
            if condition[0] == "eq":
                pinned.add(name)
        else:
            return "the policy holds a condition this server does not know"
    if "key" not in pinned:
        return "the upload form's policy does not name the exact key"
    unchecked = [n for n in given if n not in _UNCHECKED and not n.startswith("x-ignore-")]
    extra = sorted(n for n in unchecked if n not in named)
    if extra:
        return f"the form field {extra[0][:60]!r} is not allowed by the upload form's policy"
    return None


@dataclass(frozen=True)
class SignedObject:
    """What a form that keeps its policy stores: read from the very fields the policy was checked
    against (names lower-cased, as ``policy_problem`` reads them)."""

    key: str
    content_type: str | None
    metadata: dict[str, str]
    fields: dict[str, str]  # every checked field: a field a policy comes to pin is read from here


def signed_object(fields: dict[str, str]) -> SignedObject:
    """The object a checked form writes; call only after ``policy_problem`` found none."""
    given = _by_name(fields)
    if isinstance(given, str):
        raise ValueError(given)
    metadata = {n[len(_META) :]: v for n, v in given.items() if n.startswith(_META)}
    return SignedObject(given["key"], given.get("content-type"), metadata, given)
