"""``POST /search`` and ``POST /answer``."""

import time

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from winnow.api.resolver import AUTH_ERRORS, error_response
from winnow.api.schemas.answer import AnswerRequest, AnswerResponse
from winnow.api.schemas.search import SearchRequest, SearchResponse
from winnow.factory import get_container
from winnow.observability import MetricUnit, metrics, tracer
from winnow.rules import in_conversation
from winnow.search.service import SearchService

# Never start a model call that the function's timeout would cut off: stop this long before it.
ANSWER_MARGIN_SECONDS = 1.5


def service() -> SearchService:
    """The search service the routes use (the composition root keeps one per warm container); the
    benchmarks call it to search without HTTP."""
    return get_container().search_service()


def routes() -> Router:
    router = Router()

    @router.post(
        "/search",
        summary="Search the caller's documents",
        responses={
            200: OpenAPIResponse(description="Relevant passages, or an empty list with relevant=false"),
            400: error_response(
                "The body is not readable JSON (malformed, nested too deep, not Unicode), or conversation_id "
                "sent by a caller without a user id"
            ),
            **AUTH_ERRORS,
            404: error_response("conversation_id is not one of this user's conversations"),
            413: error_response("The body is over 1 MiB"),
            415: error_response("The body is not sent as application/json"),
            422: error_response("Invalid request, with field-level messages"),
            503: error_response("A provider is unavailable; retry after Retry-After"),
        },
    )
    @tracer.capture_method
    def search(request: SearchRequest) -> SearchResponse:
        caller, query = router.context["caller"], request.to_query()
        if in_conversation(caller.user, request.conversation_id):  # one-shot requests never touch the store
            return get_container().conversation_service().search(caller, query, request.conversation_id)
        return service().search(caller, query)

    @router.post(
        "/answer",
        summary="Answer a question from the caller's documents, citing the passages",
        responses={
            200: OpenAPIResponse(
                description="An answer citing results by rank, or answer=null with relevant=false"
            ),
            400: error_response("conversation_id sent by a caller without a user id"),
            **AUTH_ERRORS,
            404: error_response("conversation_id is not one of this user's conversations"),
            422: error_response("Invalid request, with field-level messages"),
            501: error_response("Answers are not enabled in this deployment; the message says how"),
            503: error_response("A provider is unavailable; retry after Retry-After"),
        },
    )
    @tracer.capture_method
    def answer(request: AnswerRequest) -> AnswerResponse:
        answers = get_container().answer_service()  # FeatureDisabled (501) before anything is built or called
        remaining_ms = router.lambda_context.get_remaining_time_in_millis()
        deadline = time.monotonic() + remaining_ms / 1000 - ANSWER_MARGIN_SECONDS
        caller, question = router.context["caller"], request.to_question()
        if in_conversation(caller.user, request.conversation_id):
            conversations = get_container().conversation_service()
            result = conversations.answer(caller, question, request.conversation_id, answers, deadline)
        else:
            result = answers.answer(caller, question, deadline=deadline)
        if result.model is not None:
            usage = result.usage
            metrics.add_metric(name="AnswerInputTokens", unit=MetricUnit.Count, value=usage.input_tokens)
            metrics.add_metric(name="AnswerOutputTokens", unit=MetricUnit.Count, value=usage.output_tokens)
            metrics.add_metric(
                name="AnswerGenerateTime", unit=MetricUnit.Milliseconds, value=result.timings_ms.generate
            )
        return result

    return router
