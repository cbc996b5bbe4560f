"""Search Lambda: HTTP API (payload v2) → Powertools resolver → SearchService / the ledger.

The tenant comes only from the authorizer (a JWT claim, or a Lambda authorizer context key); requests
without one are answered 401 before any validation, embedding or Qdrant call. Domain errors map to HTTP
here and nowhere else; clients never see a stack trace, and every response carries a correlation id."""

import base64
import binascii
import json
import re
import time
import uuid
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any
from urllib.parse import quote, unquote

from winnow.coldstart import building_long_lived_objects, freeze_long_lived

# What these imports build (Powertools, pydantic models, settings) lives as long as the container:
# imported without cyclic-GC passes, then frozen (see winnow.coldstart).
with building_long_lived_objects():
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
    from aws_lambda_powertools.event_handler.openapi.exceptions import (
        RequestUnsupportedContentType,
        RequestValidationError,
    )
    from aws_lambda_powertools.event_handler.openapi.params import Path, Query
    from aws_lambda_powertools.event_handler.openapi.types import (
        OpenAPIResponse,
        OpenAPIResponseContentModel,
        OpenAPIResponseContentSchema,
    )
    from aws_lambda_powertools.utilities.typing import LambdaContext

    import winnow
    from winnow.answer.schemas import AnswerRequest, AnswerResponse
    from winnow.answer.service import AnswerService
    from winnow.errors import (
        BadRequest,
        BodyTooLarge,
        ConfigurationError,
        FeatureDisabled,
        MalformedBody,
        NotFound,
        ProviderRejected,
        QueryRejected,
        TransientError,
        Unauthorized,
        UnsupportedMediaType,
    )
    from winnow.factory import get_container
    from winnow.models import LedgerRecord
    from winnow.observability import MetricUnit, logger, metrics, tracer
    from winnow.reconcile.wiring import search_components
    from winnow.rules import is_tenant
    from winnow.search import documents
    from winnow.search.body import check_media_type, decode_json_body
    from winnow.search.schemas import (
        DeleteResponse,
        DocumentsPage,
        DocumentStatusModel,
        ErrorResponse,
        Health,
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
PUBLIC_ROUTES = {"/health", "/openapi.json"}
BODY_METHODS = {"POST", "PUT", "PATCH"}
# What a caller sees of any failure on our side; the details go to the logs under the correlation id.
INTERNAL_MESSAGE = "internal error: the service could not answer; quote the correlation id when reporting it"
_service: SearchService | None = None


def service() -> SearchService:
    """One service (one client of each kind) per warm container. The first build imports qdrant-client
    and opens the clients: without collector passes (see ``winnow.coldstart``)."""
    global _service
    container = get_container()
    cold: AbstractContextManager[None] = building_long_lived_objects() if _service is None else nullcontext()
    with cold:
        # The active collection: the configured profile's, or the previous one while reconcile rebuilds.
        embedder, store = search_components(container)
        if _service is None or _service.store is not store:
            _service = SearchService(
                embedder=embedder,
                store=store,
                sparse=container.sparse,
                reranker=container.reranker,
                settings=container.settings.search,
                cache_size=container.settings.providers.query_cache_size,
            )
        return _service


# --- tenant and correlation ------------------------------------------------------------------------------
def resolve_tenant(event: dict[str, Any]) -> str | None:
    """The caller's tenant from the authorizer context, never from the body or query string."""
    settings = get_container().settings.search
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    claims = ((authorizer.get("jwt") or {}).get("claims")) or {}
    tenant = claims.get(settings.tenant_claim)
    if tenant is None:
        tenant = (authorizer.get("lambda") or {}).get(settings.authorizer_tenant_key)
    if tenant is None and settings.allow_tenant_header:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        tenant = headers.get(settings.tenant_header.lower())
    if tenant is None:
        return None
    return str(tenant)


def correlation_id(event: dict[str, Any]) -> str:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    given = headers.get("x-correlation-id")
    if given and re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", given):
        return str(given)
    return str((event.get("requestContext") or {}).get("requestId") or uuid.uuid4())


def _current_correlation_id() -> str:
    return str(app.context.get("correlation_id", ""))


def _error(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    body = ErrorResponse.model_validate(
        {
            "error": {"code": code, "message": message, "details": details},
            "correlation_id": _current_correlation_id(),
        }
    )
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body.model_dump_json(exclude_none=True),
        headers=headers or {},
    )


# --- routes ----------------------------------------------------------------------------------------------
def _error_response(description: str) -> OpenAPIResponse:
    content: dict[str, OpenAPIResponseContentSchema | OpenAPIResponseContentModel] = {
        "application/json": OpenAPIResponseContentModel(model=ErrorResponse)
    }
    return OpenAPIResponse(description=description, content=content)


_AUTH_ERRORS: dict[int, OpenAPIResponse] = {
    401: _error_response("No tenant in the authorizer context"),
    403: _error_response("The tenant claim is not a valid tenant"),
}


@app.post(
    "/search",
    summary="Search the caller's documents",
    responses={
        200: OpenAPIResponse(description="Relevant passages, or an empty list with relevant=false"),
        400: _error_response("The body is not readable JSON: malformed, nested too deep, not Unicode"),
        **_AUTH_ERRORS,
        413: _error_response("The body is over 1 MiB"),
        415: _error_response("The body is not sent as application/json"),
        422: _error_response("Invalid request, with field-level messages"),
        503: _error_response("A provider is unavailable; retry after Retry-After"),
    },
)
@tracer.capture_method
def search(request: SearchRequest) -> SearchResponse:
    return service().search(app.context["tenant"], request)


@app.post(
    "/answer",
    summary="Answer a question from the caller's documents, citing the passages",
    responses={
        200: OpenAPIResponse(
            description="An answer citing results by rank, or answer=null with relevant=false"
        ),
        **_AUTH_ERRORS,
        422: _error_response("Invalid request, with field-level messages"),
        501: _error_response("Answers are not enabled in this deployment; the message says how"),
        503: _error_response("A provider is unavailable; retry after Retry-After"),
    },
)
@tracer.capture_method
def answer(request: AnswerRequest) -> AnswerResponse:
    container = get_container()
    generator = container.generator  # FeatureDisabled (501) before anything is built or called
    answers = AnswerService(service(), generator, container.settings.answer)
    # Never start a model call that the function's timeout would cut off: stop 1.5 s before it.
    remaining_ms = app.lambda_context.get_remaining_time_in_millis()
    result = answers.answer(
        app.context["tenant"], request, deadline=time.monotonic() + remaining_ms / 1000 - 1.5
    )
    if result.model is not None:
        metrics.add_metric(name="AnswerInputTokens", unit=MetricUnit.Count, value=result.usage.input_tokens)
        metrics.add_metric(name="AnswerOutputTokens", unit=MetricUnit.Count, value=result.usage.output_tokens)
        metrics.add_metric(
            name="AnswerGenerateTime", unit=MetricUnit.Milliseconds, value=result.timings_ms.generate
        )
    return result


def _document(record: LedgerRecord) -> DocumentStatusModel:
    return DocumentStatusModel(
        key=record.key,
        status=str(record.status),
        chunks=record.chunks,
        embedded=record.embedded,
        reused=record.reused,
        error=record.error,
        title=record.title,
        source_type=record.source_type,
        created_at=record.created_at,
        updated=record.updated_at,
    )


@app.get(
    "/documents",
    summary="The caller's documents and their ingest status",
    responses={200: OpenAPIResponse(description="A page of documents"), **_AUTH_ERRORS},
)
def list_documents(
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> DocumentsPage:
    if cursor is not None:
        try:
            base64.urlsafe_b64decode(cursor.encode() + b"=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError) as exc:
            raise BadRequest("cursor is not one this API returned") from exc
    try:
        records, next_cursor = get_container().ledger.list(app.context["tenant"], limit=limit, cursor=cursor)
    except ValueError as exc:
        raise BadRequest("cursor is not one this API returned") from exc
    return DocumentsPage(documents=[_document(r) for r in records], next_cursor=next_cursor)


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
    tenant = app.context["tenant"]
    container = get_container()
    full_key = documents.full_key(tenant, unquote(key))
    record = documents.status(container.ledger, container.objects, tenant, full_key)
    if record is None:
        return DocumentStatusModel(
            key=full_key,
            status=documents.PENDING,
            chunks=0,
            embedded=0,
            reused=0,
            error=None,
            title=None,
            source_type=None,
            created_at=None,
            updated=None,
        )
    return _document(record)


@app.delete(
    "/documents/<key>",
    summary="Delete one document: the object now, its passages when ingest handles the removal",
    responses={
        202: OpenAPIResponse(description="The object is deleted; poll GET /documents/{key} for 'deleted'"),
        **_AUTH_ERRORS,
        404: _error_response("Unknown to this tenant"),
    },
)
def delete_document(key: Annotated[str, Path(min_length=1, max_length=1024)]) -> Response[DeleteResponse]:
    tenant = app.context["tenant"]
    container = get_container()
    full_key = documents.full_key(tenant, unquote(key))
    documents.delete(container.ledger, container.objects, tenant, full_key)
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
        422: _error_response("Invalid request, with field-level messages"),
    },
)
def create_upload(request: UploadRequest) -> Response[UploadResponse]:
    container = get_container()
    signed = documents.sign_upload(
        container.objects,
        app.context["tenant"],
        request.path,
        content_type=request.content_type,
        metadata=request.metadata,
        max_bytes=container.settings.ingest.max_object_bytes,
        expires_in=container.settings.search.upload_expires_seconds,
    )
    body = UploadResponse(
        key=signed.key, url=signed.form.url, fields=signed.form.fields, expires_in=signed.expires_in
    )
    return Response(201, content_types.APPLICATION_JSON, body)


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
    if kind == "extra_forbidden":
        allowed = _RANGE_FIELDS if len(loc) == 3 and loc[0] == "filters" else _REQUEST_FIELDS
        if _route_path(app.current_event.raw_event) == "/uploads":
            allowed = _UPLOAD_FIELDS
        message = f"unknown field {loc[-1][:40]!r}: the fields are {allowed}" if loc else message
    elif not loc and kind in ("model_attributes_type", "dict_type", "model_type"):
        message = 'the body must be a JSON object such as {"query": "travel expenses"}'
        if _route_path(app.current_event.raw_event) == "/uploads":
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


@app.exception_handler(MalformedBody)
def _malformed(exc: MalformedBody) -> Response:
    return _error(400, "invalid_body", str(exc))


@app.exception_handler(BodyTooLarge)
def _too_large(exc: BodyTooLarge) -> Response:
    return _error(413, "body_too_large", str(exc))


@app.exception_handler(UnsupportedMediaType)
def _unsupported_media_type(exc: UnsupportedMediaType) -> Response:
    return _error(415, "unsupported_media_type", str(exc))


@app.exception_handler(RequestUnsupportedContentType)
def _unsupported_content_type(exc: RequestUnsupportedContentType) -> Response:
    # The handler checks the media type before resolving; this only catches what slips past it.
    return _error(415, "unsupported_media_type", "send the body as JSON with content-type: application/json")


@app.exception_handler(QueryRejected)
def _query_rejected(exc: QueryRejected) -> Response:
    logger.warning("the vector store rejected a search", extra={"error": str(exc)})
    return _error(
        400, "bad_request", "the search was rejected: check that each filter's values match its field's type"
    )


@app.exception_handler(Unauthorized)
def _unauthorized(exc: Unauthorized) -> Response:
    return _error(401, "unauthorized", str(exc))


@app.exception_handler(BadRequest)
def _bad_request(exc: BadRequest) -> Response:
    return _error(400, "bad_request", str(exc))


@app.exception_handler(NotFound)
def _not_found(exc: NotFound) -> Response:
    return _error(404, "not_found", str(exc))


@app.exception_handler(TransientError)
def _unavailable(exc: TransientError) -> Response:
    retry_after = max(1, round(exc.retry_after or 5))
    logger.warning("provider unavailable", extra={"error_type": type(exc).__name__, "error": str(exc)})
    return _error(
        503,
        "unavailable",
        "a search provider is unavailable; retry later",
        headers={"Retry-After": str(retry_after)},
    )


@app.exception_handler(FeatureDisabled)
def _disabled(exc: FeatureDisabled) -> Response:
    return _error(501, "not_enabled", str(exc))


@app.exception_handler(ConfigurationError)
def _misconfigured(exc: ConfigurationError) -> Response:
    # The message names secrets, collections and models: the operators' business, never the caller's.
    logger.error("configuration error", extra={"error_type": type(exc).__name__, "error": str(exc)})
    try:
        operator = get_container().settings.search.show_configuration_errors  # the embedded default
    except Exception:
        operator = False
    return _error(500, "configuration_error", str(exc) if operator else INTERNAL_MESSAGE)


@app.exception_handler(ProviderRejected)
def _rejected(exc: ProviderRejected) -> Response:
    logger.error("provider rejected the request", extra={"error": str(exc)})
    return _error(502, "provider_rejected", "a search provider rejected the request")


@app.exception_handler(Exception)
def _bug(exc: Exception) -> Response:
    logger.exception("unhandled error")
    return _error(500, "internal_error", INTERNAL_MESSAGE)


@app.not_found
def _unknown_route(exc: Exception) -> Response:
    return _error(404, "not_found", "no such route")


# --- entry point -----------------------------------------------------------------------------------------
def _normalise_document_path(event: dict[str, Any]) -> None:
    """``GET /documents/{key+}``: keys contain slashes; encode them so the route's one segment matches."""
    path = str(event.get("rawPath") or "")
    prefix = "/documents/"
    if path.startswith(prefix) and len(path) > len(prefix):
        encoded = prefix + quote(unquote(path[len(prefix) :]), safe="")
        event["rawPath"] = encoded
        http = (event.get("requestContext") or {}).get("http")
        if isinstance(http, dict):
            http["path"] = encoded


def _check_body(event: dict[str, Any]) -> None:
    """Before Powertools reads the body: it must be declared as JSON (any case, ``+json`` too; the header is
    then normalised so Powertools parses it), and a base64 body (API Gateway's encoding of non-text
    payloads) must decode to UTF-8, or Powertools would raise while reading it."""
    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method", "")).upper()
    headers = event.get("headers") or {}
    if method in BODY_METHODS:
        names = [name for name in headers if str(name).lower() == "content-type"]
        check_media_type(", ".join(str(headers[name]) for name in names) if names else None)
        for name in names:
            del headers[name]
        if names:
            headers["content-type"] = "application/json"
    body = event.get("body")
    if event.get("isBase64Encoded") and body:
        try:
            base64.b64decode(str(body), validate=True).decode("utf-8")
        except (binascii.Error, ValueError) as exc:
            raise MalformedBody("the request body is not UTF-8 text: send JSON encoded as UTF-8") from exc


def _route_path(event: dict[str, Any]) -> str:
    return str(
        event.get("rawPath") or ((event.get("requestContext") or {}).get("http") or {}).get("path", "")
    )


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Whatever happens below, the caller gets a structured answer with a correlation id: an exception
    that escapes the resolver (or the checks before it) is logged and answered with a generic 500."""
    try:
        cid = correlation_id(event)
    except Exception:  # not an API Gateway event at all
        cid = str(uuid.uuid4())
    app.append_context(correlation_id=cid)
    try:
        response = _respond(event, context)
    except Exception:
        logger.exception("unhandled error outside the routes")
        response = app_error_response(500, "internal_error", INTERNAL_MESSAGE)
    finally:
        app.clear_context()
        logger.remove_keys(["tenant"])
    return _finish(response, cid)


def _respond(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = _route_path(event)
    if path not in PUBLIC_ROUTES:
        tenant = resolve_tenant(event)
        if tenant is None:
            return app_error_response(401, "unauthorized", "no tenant in the authorizer context")
        if not is_tenant(tenant):
            return app_error_response(403, "forbidden", "the tenant claim is not a valid tenant")
        app.append_context(tenant=tenant)
        logger.append_keys(tenant=tenant)
    try:
        _check_body(event)
    except UnsupportedMediaType as exc:
        return app_error_response(415, "unsupported_media_type", str(exc))
    except MalformedBody as exc:
        return app_error_response(400, "invalid_body", str(exc))
    _normalise_document_path(event)
    return app.resolve(event, context)


def app_error_response(status: int, code: str, message: str) -> dict[str, Any]:
    body = _error(status, code, message)
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": body.body,
        "isBase64Encoded": False,
    }


def _finish(response: dict[str, Any], cid: str) -> dict[str, Any]:
    headers = dict(response.get("headers") or {})
    headers["X-Correlation-Id"] = cid
    response["headers"] = headers
    return response


# The modules, routes and models imported above live as long as the container (see winnow.coldstart).
freeze_long_lived()

if __name__ == "__main__":  # print the OpenAPI document: python -m functions.search.app
    print(json.dumps(json.loads(openapi_json()), indent=2, sort_keys=True))
