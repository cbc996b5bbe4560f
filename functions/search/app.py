"""Search Lambda: HTTP API (payload v2) → Powertools resolver → the search, answer and document services.

The handler only resolves: the tenant (from the authorizer only), the correlation id and the body checks
run first in ``guarded`` (``winnow.search.http``), so a request without a tenant is answered 401 before
any validation, embedding or Qdrant call; every failure is answered through one table of exception
families, with a correlation id and never a stack trace."""

import json
import time
from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any
from urllib.parse import unquote

from winnow.coldstart import building_long_lived_objects, freeze_long_lived

# What these imports build (Powertools, pydantic models, settings) lives as long as the container:
# imported without cyclic-GC passes, then frozen (see winnow.coldstart).
with building_long_lived_objects():
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
    from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
    from aws_lambda_powertools.event_handler.openapi.params import Path, Query
    from aws_lambda_powertools.event_handler.openapi.types import (
        OpenAPIResponse,
        OpenAPIResponseContentModel,
        OpenAPIResponseContentSchema,
    )
    from aws_lambda_powertools.utilities.typing import LambdaContext

    import winnow
    from winnow.answer.schemas import AnswerRequest, AnswerResponse
    from winnow.factory import Container, build_at_init, get_container
    from winnow.observability import MetricUnit, logger, metrics, tracer
    from winnow.rules import CONVERSATION_ID_RULE, in_conversation
    from winnow.search import documents, http
    from winnow.search.body import decode_json_body
    from winnow.search.schemas import (
        ConversationDeleted,
        DeleteResponse,
        DocumentsPage,
        DocumentStatusModel,
        ErrorResponse,
        Forgotten,
        Health,
        MemoryItem,
        MemoryList,
        RangeCondition,
        SearchRequest,
        SearchResponse,
        UploadRequest,
        UploadResponse,
        error_path,
    )
    from winnow.search.service import SearchService

# The body parser bounds its own work (size, nesting) and refuses text that is not Unicode: see body.py.
app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=decode_json_body)


def service() -> SearchService:
    """The search service the routes use (the composition root keeps one per warm container); the
    benchmarks call it to search without HTTP."""
    return get_container().search_service()


def _rights() -> documents.Rights:
    """Who may see and change which documents: asked of the store searches read (access lists live on
    its points), the ledger and the bucket."""
    container, searches = get_container(), service()
    deny = searches.settings.default_access == "deny"  # the rule searches apply, from the same settings
    return documents.Rights(
        searches.store, container.ledger, container.objects, deny, container.settings.ingest.max_sidecar_bytes
    )


def _error(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The one error response of the API; inside the resolver and outside it (see ``handler``)."""
    body = http.error_body(code, message, str(app.context.get("correlation_id", "")), details)
    return Response(status, content_types.APPLICATION_JSON, body, headers=headers or {})


# --- routes ----------------------------------------------------------------------------------------------
def _error_response(description: str) -> OpenAPIResponse:
    content: dict[str, OpenAPIResponseContentSchema | OpenAPIResponseContentModel] = {
        "application/json": OpenAPIResponseContentModel(model=ErrorResponse)
    }
    return OpenAPIResponse(description=description, content=content)


_AUTH_ERRORS: dict[int, OpenAPIResponse] = {
    401: _error_response("No tenant in the authorizer context"),
    403: _error_response("The tenant, user or groups claim is not valid"),
}


@app.post(
    "/search",
    summary="Search the caller's documents",
    responses={
        200: OpenAPIResponse(description="Relevant passages, or an empty list with relevant=false"),
        400: _error_response(
            "The body is not readable JSON (malformed, nested too deep, not Unicode), or conversation_id "
            "sent by a caller without a user id"
        ),
        **_AUTH_ERRORS,
        404: _error_response("conversation_id is not one of this user's conversations"),
        413: _error_response("The body is over 1 MiB"),
        415: _error_response("The body is not sent as application/json"),
        422: _error_response("Invalid request, with field-level messages"),
        503: _error_response("A provider is unavailable; retry after Retry-After"),
    },
)
@tracer.capture_method
def search(request: SearchRequest) -> SearchResponse:
    caller = app.context["caller"]
    if in_conversation(caller.user, request.conversation_id):  # one-shot requests never touch the store
        return get_container().conversation_service().search(caller, request)
    return service().search(caller, request)


@app.post(
    "/answer",
    summary="Answer a question from the caller's documents, citing the passages",
    responses={
        200: OpenAPIResponse(
            description="An answer citing results by rank, or answer=null with relevant=false"
        ),
        400: _error_response("conversation_id sent by a caller without a user id"),
        **_AUTH_ERRORS,
        404: _error_response("conversation_id is not one of this user's conversations"),
        422: _error_response("Invalid request, with field-level messages"),
        501: _error_response("Answers are not enabled in this deployment; the message says how"),
        503: _error_response("A provider is unavailable; retry after Retry-After"),
    },
)
@tracer.capture_method
def answer(request: AnswerRequest) -> AnswerResponse:
    answers = get_container().answer_service()  # FeatureDisabled (501) before anything is built or called
    # Never start a model call that the function's timeout would cut off: stop 1.5 s before it.
    remaining_ms = app.lambda_context.get_remaining_time_in_millis()
    deadline = time.monotonic() + remaining_ms / 1000 - 1.5
    caller = app.context["caller"]
    if in_conversation(caller.user, request.conversation_id):
        result = get_container().conversation_service().answer(caller, request, answers, deadline)
    else:
        result = answers.answer(caller, request, deadline=deadline)
    if result.model is not None:
        metrics.add_metric(name="AnswerInputTokens", unit=MetricUnit.Count, value=result.usage.input_tokens)
        metrics.add_metric(name="AnswerOutputTokens", unit=MetricUnit.Count, value=result.usage.output_tokens)
        metrics.add_metric(
            name="AnswerGenerateTime", unit=MetricUnit.Milliseconds, value=result.timings_ms.generate
        )
    return result


@app.get(
    "/documents",
    summary="The caller's documents and their ingest status",
    responses={200: OpenAPIResponse(description="A page of documents"), **_AUTH_ERRORS},
)
def list_documents(
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> DocumentsPage:
    records, next_cursor = documents.page(_rights(), app.context["caller"], limit, cursor)
    return DocumentsPage(
        documents=[DocumentStatusModel.of(r, r.key) for r in records], next_cursor=next_cursor
    )


@app.get(
    "/documents/<key>",
    summary="One document's ingest status (the key may contain slashes)",
    responses={
        200: OpenAPIResponse(
            description="The document's status; 'pending' while it is in the bucket and not yet indexed"
        ),
        **_AUTH_ERRORS,
        404: _error_response("Unknown to this tenant"),
    },
)
def document_status(key: Annotated[str, Path(min_length=1, max_length=1024)]) -> DocumentStatusModel:
    full_key = documents.full_key(app.context["tenant"], unquote(key))
    record = documents.status(_rights(), app.context["caller"], full_key)
    return DocumentStatusModel.of(record, full_key)


@app.delete(
    "/documents/<key>",
    summary="Delete one document: the object now, its passages when ingest handles the removal",
    responses={
        202: OpenAPIResponse(description="The object is deleted; poll GET /documents/{key} for 'deleted'"),
        **_AUTH_ERRORS,
        403: _error_response("The caller may read the document but not change it: the message says why"),
        404: _error_response("Unknown to this tenant, or not readable by the caller"),
    },
)
def delete_document(key: Annotated[str, Path(min_length=1, max_length=1024)]) -> Response[DeleteResponse]:
    full_key = documents.full_key(app.context["tenant"], unquote(key))
    documents.delete(_rights(), app.context["caller"], full_key)
    body = DeleteResponse(key=full_key, status="deleting")
    return Response(202, content_types.APPLICATION_JSON, body)


@app.post(
    "/uploads",
    summary="A signed form that uploads one file into the caller's tenant, straight to the bucket",
    responses={
        201: OpenAPIResponse(
            description="POST the fields, then the file, as multipart/form-data to url before it expires",
            content={"application/json": OpenAPIResponseContentModel(model=UploadResponse)},
        ),
        400: _error_response("The path leaves the tenant, names a sidecar or is too long"),
        **_AUTH_ERRORS,
        403: _error_response("The caller may not replace this document or grant a group: the message says"),
        422: _error_response("Invalid request, with field-level messages"),
    },
)
def create_upload(request: UploadRequest) -> Response[UploadResponse]:
    container = get_container()
    signed = documents.sign_upload(
        _rights(),
        app.context["caller"],
        request.path,
        content_type=request.content_type,
        metadata=request.metadata,
        access=request.access.as_list() if request.access is not None else None,
        max_bytes=container.settings.ingest.max_object_bytes,
        expires_in=container.settings.search.upload_expires_seconds,
    )
    body = UploadResponse(
        key=signed.key, url=signed.form.url, fields=signed.form.fields, expires_in=signed.expires_in
    )
    return Response(201, content_types.APPLICATION_JSON, body)


_USER_ONLY = {400: _error_response("The caller has no user id: memory and conversations are per user")}


@app.get(
    "/memory",
    summary="The caller's long-term memory: the exchanges /answer recalls (newest first)",
    responses={200: OpenAPIResponse(description="The memories"), **_USER_ONLY, **_AUTH_ERRORS},
)
def list_memory() -> MemoryList:
    memories = get_container().conversation_service().memories(app.context["caller"])
    return MemoryList(
        memories=[
            MemoryItem(
                id=m.id, conversation_id=m.conversation_id, question=m.question, answer=m.answer, at=m.at
            )
            for m in memories
        ]
    )


@app.delete(
    "/memory",
    summary="Forget the caller for good: every memory and every conversation turn",
    responses={200: OpenAPIResponse(description="How many items went"), **_USER_ONLY, **_AUTH_ERRORS},
)
def forget_memory() -> Forgotten:
    return Forgotten(deleted=get_container().conversation_service().forget(app.context["caller"]))


@app.delete(
    "/conversations/<conversation_id>",
    summary="Delete one conversation for good: its turns and the memories made from it",
    responses={
        200: OpenAPIResponse(description="Deleted"),
        **_USER_ONLY,
        **_AUTH_ERRORS,
        404: _error_response("Not one of this user's conversations"),
    },
)
def delete_conversation(
    conversation_id: Annotated[
        str, Path(pattern=r"^[A-Za-z0-9_-]{8,64}$", description=f"The id: {CONVERSATION_ID_RULE}")
    ],
) -> ConversationDeleted:
    get_container().conversation_service().delete(app.context["caller"], conversation_id)
    return ConversationDeleted(conversation_id=conversation_id, status="deleted")


@app.get("/health", summary="Liveness: no provider calls")
def health() -> Health:
    return Health(status="ok", version=winnow.__version__)


@app.get("/openapi.json", include_in_schema=False)
def openapi() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(openapi_json())
    return document


def openapi_json() -> str:
    return app.get_openapi_json_schema(title="Winnow search API", version=winnow.__version__)


# --- errors ----------------------------------------------------------------------------------------------
_REQUEST_FIELDS = ", ".join(SearchRequest.model_fields)
_UPLOAD_FIELDS = ", ".join(UploadRequest.model_fields)
_RANGE_FIELDS = ", ".join(RangeCondition.model_fields)
MAX_ERROR_DETAILS = 20


def _explain(err: dict[str, Any]) -> dict[str, str]:
    """One validation error as ``{field, message}``, in words a caller can act on."""
    loc = error_path(tuple(err.get("loc", ())))
    field = ".".join(loc) or "body"
    kind = str(err.get("type", ""))
    message = str(err.get("msg", "invalid"))
    uploads = http.route_path(app.current_event.raw_event) == "/uploads"
    if kind == "extra_forbidden":
        allowed = _RANGE_FIELDS if len(loc) == 3 and loc[0] == "filters" else _REQUEST_FIELDS
        if uploads:
            allowed = _UPLOAD_FIELDS
        message = f"unknown field {loc[-1][:40]!r}: the fields are {allowed}" if loc else message
    elif not loc and kind in ("model_attributes_type", "dict_type", "model_type"):
        message = 'the body must be a JSON object such as {"query": "travel expenses"}'
        if uploads:
            message = 'the body must be a JSON object such as {"path": "handbook/leave.pdf"}'
    elif kind == "string_unicode":
        message = "must be valid Unicode text (it holds a lone UTF-16 surrogate)"
    elif kind == "missing":
        message = "this field is required"
    elif message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return {"field": field, "message": message}


@app.exception_handler(RequestValidationError)
def _invalid(exc: RequestValidationError) -> Response:
    errors = exc.errors()
    details = [_explain(err) for err in errors[:MAX_ERROR_DETAILS]]
    summary = "; ".join(f"{d['field']}: {d['message']}" for d in details[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return _error(422, "validation_error", f"invalid request: {summary}{more}", details)


@app.exception_handler(Exception)
def _failed(exc: Exception) -> Response:
    """Every other failure, answered by the table of exception families (``winnow.search.http``)."""
    answer = http.answer_for(exc, _show_configuration_errors())
    if answer.rule.log is not None:
        level, line = answer.rule.log
        getattr(logger, level)(line, extra={"error_type": type(exc).__name__, "error": str(exc)})
    return _error(answer.status, answer.code, answer.message, headers=answer.headers)


def _show_configuration_errors() -> bool:
    try:
        return get_container().settings.search.show_configuration_errors  # the embedded default
    except Exception:
        return False


@app.not_found
def _unknown_route(exc: Exception) -> Response:
    return _error(404, "not_found", "no such route")


# --- entry point -----------------------------------------------------------------------------------------
def guarded(
    handle: Callable[[dict[str, Any], LambdaContext], dict[str, Any]],
) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    """Before the resolver: the correlation id, the tenant and the caller (private routes: built here
    once, from the authorizer only, and passed to every route), the body checks; whatever
    happens, the caller gets a structured answer carrying the correlation id."""

    @wraps(handle)
    def wrapper(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        cid = http.correlation_id(event)
        app.append_context(correlation_id=cid)
        try:
            settings = get_container().settings.search
            tenant = http.require_tenant(event, settings)
            if tenant is not None:
                caller = http.resolve_caller(event, tenant, settings)
                app.append_context(tenant=tenant, caller=caller)
                logger.append_keys(tenant=tenant)
            http.check_body(event)
            http.normalise_document_path(event)
            response = handle(event, context)
        except Exception as exc:  # raised before the routes, or escaped the resolver
            response = _proxy_result(_failed(exc))
        finally:
            app.clear_context()
            logger.remove_keys(["tenant"])
        response["headers"] = {**(response.get("headers") or {}), "X-Correlation-Id": cid}
        return response

    return wrapper


def _proxy_result(response: Response) -> dict[str, Any]:
    return {
        "statusCode": response.status_code,
        "headers": dict(response.headers),
        "body": response.body,
        "isBase64Encoded": False,
    }


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@guarded
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


def _prepare(container: Container) -> None:
    """What every request needs, built at init in Lambda (``build_at_init``): the search service (qdrant-
    client, the Qdrant and Voyage clients, their keys), and the ledger and bucket clients."""
    container.search_service()
    _ = container.ledger, container.objects


build_at_init(_prepare)

# The modules, routes and models imported above live as long as the container (see winnow.coldstart).
freeze_long_lived()

if __name__ == "__main__":  # print the OpenAPI document: python -m functions.search.app
    print(json.dumps(json.loads(openapi_json()), indent=2, sort_keys=True))
