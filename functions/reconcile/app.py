"""Reconcile Lambda: make the index match the bucket (``winnow.reconcile``), on a schedule or on demand.

Input: ``{"tenant": optional, "dry_run": false, "reread": false, "continuation": optional, "chain": true}``
(``reread``: also send the documents an older reader made, after an upgrade; opt-in, since reading again
runs OCR and vision again); an EventBridge scheduled event without an input means the whole bucket.
Pages of the listing are processed until less time is left than ``WINNOW_RECONCILE_MARGIN_MS``; then
the run stops at a key boundary, flushes the queued events and re-invokes this function asynchronously
with the continuation token (``chain: false`` returns the token instead, for a Step Functions loop or a
script). Self-invocation is the simplest robust choice: no extra state machine, Lambda's async retries
re-run a failed page from the same token, and ``ReservedConcurrentExecutions: 1`` keeps chains from
overlapping. The result carries the run's totals so far; metrics count this invocation's work only, so
CloudWatch sums match the totals."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from winnow.errors import BadRequest
from winnow.factory import get_container
from winnow.observability import MetricUnit, logger, metrics, tracer
from winnow.reconcile.stats import ReconcileStats

_METRICS = {
    "scanned": "ReconcileScanned",
    "new": "ReconcileNew",
    "modified": "ReconcileModified",
    "unchanged": "ReconcileUnchanged",
    "deleted": "ReconcileDeleted",
    "failed": "ReconcileFailed",
    "orphans_removed": "ReconcileOrphansRemoved",
    "repaired": "ReconcileRepaired",
    "metadata_modified": "ReconcileMetadataModified",
    "reread": "ReconcileReread",
}


def parse_request(event: Any) -> tuple[str | None, bool, str | None, bool, bool]:
    """(tenant, dry_run, continuation, chain, reread). Unknown keys (a scheduled event's envelope) are
    ignored."""
    if not isinstance(event, dict):
        raise BadRequest("the input must be a JSON object")
    tenant = event.get("tenant")
    continuation = event.get("continuation")
    dry_run = event.get("dry_run", False)
    chain = event.get("chain", True)
    reread = event.get("reread", False)
    if tenant is not None and (not isinstance(tenant, str) or not tenant):
        raise BadRequest("tenant must be a non-empty string")
    if continuation is not None and not isinstance(continuation, str):
        raise BadRequest("continuation must be a string")
    if not all(isinstance(flag, bool) for flag in (dry_run, chain, reread)):
        raise BadRequest("dry_run, chain and reread must be booleans")
    return tenant, dry_run, continuation, chain, reread


def _emit(stats: ReconcileStats) -> None:
    metrics.add_metric(name="ReconcileInvocations", unit=MetricUnit.Count, value=1)
    if stats.dry_run:
        return  # a dry run changes nothing: counting what it would do would blur the dashboards
    for field, name in _METRICS.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=getattr(stats, field))
    metrics.add_metric(name="ReconcileDuration", unit=MetricUnit.Milliseconds, value=stats.duration_ms)
    if stats.switched:
        metrics.add_metric(name="ReconcileProfileSwitched", unit=MetricUnit.Count, value=1)


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    container = get_container()
    settings = container.settings.reconcile
    try:
        tenant, dry_run, continuation, chain, reread = parse_request(event)
        result = container.reconciler().run(
            tenant,
            dry_run=dry_run,
            reread=reread,
            continuation=continuation,
            should_stop=lambda: context.get_remaining_time_in_millis() < settings.margin_ms,
        )
    except BadRequest as exc:
        logger.warning("reconcile request rejected", extra={"error": str(exc)})
        metrics.add_metric(name="ReconcileRejected", unit=MetricUnit.Count, value=1)
        return {"error": str(exc)}
    _emit(result.invocation)
    response: dict[str, Any] = {
        "stats": result.totals.to_dict(),
        "complete": result.continuation is None,
        "continuation": result.continuation,
        "chained": False,
    }
    if result.continuation and chain:
        if result.totals.invocations >= settings.max_invocations:
            logger.error(
                "reconcile stopped: too many invocations", extra={"invocations": result.totals.invocations}
            )
        else:
            container.invoker.invoke(
                context.invoked_function_arn, {"continuation": result.continuation, "chain": True}
            )
            response["chained"] = True
    return response
