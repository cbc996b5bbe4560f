"""Reconcile: one operation that makes the index match the bucket again and says what it did (see
``winnow.reconcile.service`` for how). ``run_reconcile`` is what the CLI calls; the Lambda handler pages
through ``Reconciler.run`` with continuation tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from winnow.reconcile.stats import ReconcileStats

if TYPE_CHECKING:
    from winnow.reconcile.service import Reconciler


class Wired(Protocol):
    """What reconcile needs of the composition root (``winnow.factory.Container``), named here so that
    reconcile does not import the root that builds it."""

    def reconciler(self) -> Reconciler: ...

    def forget_active(self) -> None: ...


def run_reconcile(
    container: Wired, tenant: str | None = None, dry_run: bool = False, reread: bool = False
) -> ReconcileStats:
    """Reconcile one tenant or the whole bucket to the end, in this process. Without a queue URL the
    events go straight to the ingest service, so the index matches the bucket when this returns."""
    result = container.reconciler().run(tenant, dry_run=dry_run, reread=reread)
    container.forget_active()
    return result.totals


__all__ = ["ReconcileStats", "run_reconcile"]
