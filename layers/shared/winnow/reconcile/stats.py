"""What a reconcile run did, in the shape users know from managed knowledge-base syncs (scanned, new,
modified, unchanged, deleted, failed), plus what only Winnow repairs (missing points, orphan points)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# The counters: summed across the invocations of a paged run.
COUNTERS = (
    "scanned",
    "new",
    "modified",
    "unchanged",
    "deleted",
    "failed",
    "orphans_removed",
    "repaired",
    "metadata_scanned",
    "metadata_modified",
    "reread",
)


@dataclass
class ReconcileStats:
    """Counts of one run (``dry_run``: what it would have done).

    Every scanned document lands in exactly one of ``new``, ``modified``, ``repaired``, ``unchanged``,
    ``failed``, ``metadata_modified`` or ``reread``. ``new``/``modified``/``repaired``/``deleted`` count
    documents handed to the ingest queue (ingest may still find a re-uploaded file byte-identical and embed
    nothing). ``failed`` counts documents whose current version is recorded as failed, keys that name
    no tenant, and work that could not be queued or applied. ``orphans_removed`` counts points that no
    ledger record owned. ``metadata_*`` count ``.metadata.json`` sidecars and documents re-sent only
    because their metadata may have changed (no embedding). ``reread`` counts documents sent only to be
    read again because an older reader made their passages (a run with ``reread`` only: it runs parsing,
    OCR and vision again; passages whose text is unchanged keep their vectors)."""

    scanned: int = 0
    new: int = 0
    modified: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    orphans_removed: int = 0
    repaired: int = 0
    metadata_scanned: int = 0
    metadata_modified: int = 0
    reread: int = 0
    duration_ms: float = 0.0
    dry_run: bool = False
    tenant: str | None = None
    complete: bool = False  # the whole listing was processed (no continuation left)
    invocations: int = 1
    configured_profile: str | None = None
    active_profile: str | None = None  # what searches read when the run ended
    rebuilding: bool = False  # an embedding-profile rebuild is under way (searches stay on the old one)
    switched: bool = False  # this run moved searches to the configured profile's collection

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["duration_ms"] = round(self.duration_ms, 1)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReconcileStats:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def add(self, other: ReconcileStats) -> None:
        """Fold a later invocation's counts into these totals."""
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.duration_ms += other.duration_ms
        self.invocations += other.invocations
        self.switched = self.switched or other.switched
        for name in ("complete", "configured_profile", "active_profile", "rebuilding"):
            setattr(self, name, getattr(other, name))

    def counters(self) -> dict[str, int]:
        return {name: int(getattr(self, name)) for name in COUNTERS}
