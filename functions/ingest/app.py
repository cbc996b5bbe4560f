"""Ingest Lambda: S3 notifications (via SQS, or direct as ``sam local invoke`` sends) → IngestService.

Thin on purpose: decode the event, call the service per object, encode the answer. Partial batch
failures go back to SQS through Powertools' BatchProcessor, so only the records that hit a transient
problem are retried (and end in the DLQ after the queue's maxReceiveCount). A batch's documents run on a
small thread pool (``WINNOW_INGEST_BATCH_CONCURRENCY``) and their texts are embedded together, in
requests within the provider's limits (``winnow.ingest.gather``); events on the same document stay
sequential (``winnow.ingest.schedule``). The batch stops before the function's time does: messages not
started when less than ``WINNOW_INGEST_TIME_RESERVE_SECONDS`` is left are handed back for redelivery,
and a document in progress parses within the time left (``winnow.ingest.deadline``)."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from winnow.errors import TransientError
from winnow.factory import build_at_init, get_container
from winnow.ingest.deadline import Deadline, OutOfTime
from winnow.ingest.events import ObjectEvent, is_sqs_batch, parse_s3_notification, parse_sqs_body
from winnow.ingest.gather import run_lanes
from winnow.ingest.results import IngestOutcome, IngestResult
from winnow.ingest.schedule import event_lanes, lanes
from winnow.observability import MetricUnit, logger, metrics, tracer


class ConcurrentBatchProcessor(BatchProcessor):
    """Powertools' ``BatchProcessor`` with the records run lane by lane on a thread pool, their
    documents' embedding gathered into shared requests (``winnow.ingest.schedule``, ``.gather``). The
    success and failure bookkeeping is Powertools' own, so the answer lists exactly the failed message
    ids, as with sequential processing."""

    def process(self) -> list[tuple[Any, ...]]:
        container = get_container()
        service = container.ingest_service()  # built once here, not raced for by the workers
        schedule = lanes([str(record.get("body", "")) for record in self.records])
        results: dict[int, tuple[Any, ...]] = {}
        deadline = _deadline(getattr(self, "lambda_context", None))
        handed_back: list[int] = []

        def run(index: int) -> None:
            record = self.records[index]
            if deadline is not None and deadline.spent():  # then every later message is handed back too
                results[index] = self._hand_back(record)
                handed_back.append(index)
                return
            with _bound(deadline):
                results[index] = self._process_record(record)

        run_lanes(service.embedder, schedule, run, container.settings.ingest.batch_concurrency)
        if handed_back:
            logger.warning("time ran out; messages handed back", extra={"messages": len(handed_back)})
            with _metrics_lock:
                metrics.add_metric(name="MessagesHandedBack", unit=MetricUnit.Count, value=len(handed_back))
        return [results[i] for i in range(len(self.records))]

    def _hand_back(self, record: dict[str, Any]) -> tuple[Any, ...]:
        """A message not started for lack of time: reported failed, so SQS delivers it again."""
        exc = OutOfTime(_HANDED_BACK)
        data = self._to_batch_type(record=record, event_type=self.event_type, model=self.model)
        return tuple(self.failure_handler(record=data, exception=(type(exc), exc, None)))


_HANDED_BACK = "the function's time ran out before this message started; handed back"


def _deadline(context: Any) -> Deadline | None:
    return Deadline.of(context, get_container().settings.ingest.time_reserve_seconds)


def _bound(deadline: Deadline | None) -> AbstractContextManager[None]:
    return deadline.bound() if deadline is not None else nullcontext()


# A batch whose every record hit a transient fault (a provider outage) is answered like any other
# partial failure, listing every record: raising instead would turn an expected, retried condition
# into a failed invocation with a stack trace, for the same outcome (SQS redelivers them all).
processor = ConcurrentBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
_metrics_lock = threading.Lock()  # Powertools' metric set is a plain dict, flushed at 100 values


_METRIC_BY_OUTCOME = {
    IngestOutcome.INDEXED: "DocumentsIndexed",
    IngestOutcome.FAILED: "DocumentsFailed",
    IngestOutcome.DELETED: "DocumentsDeleted",
}


def _count(result: IngestResult) -> None:
    with _metrics_lock:
        _add_metrics(result)


def _add_metrics(result: IngestResult) -> None:
    name = _METRIC_BY_OUTCOME.get(result.status)
    if name:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
    if result.status in (IngestOutcome.INDEXED, IngestOutcome.UNCHANGED):
        metrics.add_metric(name="ChunksEmbedded", unit=MetricUnit.Count, value=result.embedded)
        metrics.add_metric(name="ChunksReused", unit=MetricUnit.Count, value=result.reused)
        if result.ocr_pages:
            metrics.add_metric(name="OcrPages", unit=MetricUnit.Count, value=result.ocr_pages)
        if result.vision_calls:
            metrics.add_metric(name="VisionCalls", unit=MetricUnit.Count, value=result.vision_calls)
            metrics.add_metric(name="VisionTokens", unit=MetricUnit.Count, value=result.vision_tokens)
    metrics.add_metric(name="IngestDuration", unit=MetricUnit.Milliseconds, value=result.duration_ms)


def handle_object_event(event: ObjectEvent) -> IngestResult:
    result = get_container().ingest_service().handle(event)
    _count(result)
    return result


def _record_handler(record: SQSRecord) -> list[dict[str, Any]]:
    """One SQS message: every object event inside it. A transient error raises, so the batch processor
    reports this message (and only this one) as failed."""
    results = []
    for object_event in parse_sqs_body(record.body):
        try:
            results.append(handle_object_event(object_event).to_dict())
        except TransientError as exc:
            logger.warning(
                "transient ingest failure; SQS will redeliver",
                extra={"key": object_event.key, "error_type": type(exc).__name__, "error": str(exc)},
            )
            raise
    return results


def _direct(event: dict[str, Any], context: Any) -> dict[str, Any]:
    events = parse_s3_notification(event)
    results: list[dict[str, Any]] = [{} for _ in events]
    deadline = _deadline(context)

    def run(index: int) -> None:
        object_event = events[index]
        try:
            if deadline is not None and deadline.spent():
                raise OutOfTime(_HANDED_BACK)
            with _bound(deadline):
                results[index] = handle_object_event(object_event).to_dict()
        except TransientError as exc:
            logger.warning("transient ingest failure", extra={"key": object_event.key, "error": str(exc)})
            results[index] = IngestResult(object_event.key, IngestOutcome.RETRY, error=str(exc)).to_dict()

    container = get_container()
    service = container.ingest_service()
    run_lanes(service.embedder, event_lanes(events), run, container.settings.ingest.batch_concurrency)
    return {"results": results, "batchItemFailures": []}


# In Lambda, the clients and keys every batch needs are built at init (see ``build_at_init``).
build_at_init(lambda container: container.ingest_service())


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if is_sqs_batch(event):
        response = process_partial_response(
            event=event, record_handler=_record_handler, processor=processor, context=context
        )
        return dict(response)
    return _direct(event, context)
