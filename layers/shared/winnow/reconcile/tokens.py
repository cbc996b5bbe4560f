"""Continuation tokens: where a paged reconcile run stopped (phase, tenant, last key handled, the ledger
page cursor) and its totals so far, as opaque URL-safe text a caller passes back."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import asdict, dataclass

from winnow.errors import BadRequest
from winnow.reconcile.stats import ReconcileStats

TOKEN_VERSION = 1


@dataclass
class Position:
    phase: str = "objects"  # objects → leftover (whole bucket only) → finish
    tenant: str | None = None
    after: str | None = None  # last key fully handled in ``tenant``
    ledger_page: str | None = None  # cursor that fetched the ledger page holding the next record


@dataclass
class Continuation:
    """A decoded token: the run's options (they win over a resumed invocation's own), where it stopped,
    and its totals so far."""

    scope: str | None
    dry_run: bool
    reread: bool
    position: Position
    totals: ReconcileStats


def encode_token(
    tenant: str | None, dry_run: bool, position: Position, totals: ReconcileStats, *, reread: bool = False
) -> str:
    body = {
        "v": TOKEN_VERSION,
        "scope": tenant,
        "dry_run": dry_run,
        "reread": reread,
        "position": asdict(position),
        "totals": totals.to_dict(),
    }
    raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_token(token: str) -> Continuation:
    """A token written before ``reread`` existed decodes as a run without it."""
    try:
        padded = token + "=" * (-len(token) % 4)
        body = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
        if body.get("v") != TOKEN_VERSION:
            raise ValueError("unknown token version")
        position = Position(**body["position"])
        if position.phase not in ("objects", "leftover", "finish"):
            raise ValueError("unknown phase")
        scope = body["scope"]
        if scope is not None and not isinstance(scope, str):
            raise ValueError("bad scope")
        reread = body.get("reread", False)
        if not isinstance(reread, bool):
            raise ValueError("bad reread flag")
        totals = ReconcileStats.from_dict(body["totals"])
        return Continuation(scope, bool(body["dry_run"]), reread, position, totals)
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error) as exc:
        raise BadRequest("invalid reconcile continuation token") from exc


__all__ = ["Continuation", "Position", "decode_token", "encode_token"]
