"""The state of one reconcile invocation: its scope and position, its statistics, the events waiting to
be sent, and the documents seen last (for the sidecars that sort a little after them)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from winnow.ingest.events import ObjectEvent
from winnow.models import LedgerRecord, ObjectInfo
from winnow.reconcile.stats import ReconcileStats
from winnow.reconcile.tokens import Position

RECENT_DOCUMENTS = 1024  # documents remembered for their sidecars, which sort a little later
Category = str  # a ReconcileStats counter name


@dataclass
class Recent:
    info: ObjectInfo
    record: LedgerRecord | None
    sent: bool


@dataclass
class Run:
    scope: str | None
    dry_run: bool
    should_stop: Callable[[], bool]
    stats: ReconcileStats
    position: Position
    run_id: str
    reread: bool = False  # send documents an older reader made (re-reading costs OCR and vision again)
    pending: list[tuple[ObjectEvent, Category]] = field(default_factory=list)
    recent: OrderedDict[str, Recent] = field(default_factory=OrderedDict)

    def count(self, category: Category) -> None:
        setattr(self.stats, category, getattr(self.stats, category) + 1)

    def remember(self, key: str, recent: Recent) -> None:
        self.recent[key] = recent
        self.recent.move_to_end(key)
        while len(self.recent) > RECENT_DOCUMENTS:
            self.recent.popitem(last=False)
