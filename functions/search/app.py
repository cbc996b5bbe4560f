"""Search Lambda: HTTP API (payload v2) → Powertools resolver → SearchService / the ledger.

The tenant comes only from the authorizer (a JWT claim, or a Lambda authorizer context key); requests
without one are answered 401 before any validation, embedding or Qdrant call. Domain errors map to HTTP
here and nowhere else; clients never see a stack trace, and every response carries a correlation id."""

import base64
import binascii
import json
import re
import uuid
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any
from urllib.parse import quote, unquote

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
    from winnow.errors import (
        BadRequest,
        ConfigurationError,
        NotFound,
        ProviderRejected,
        TransientError,
        Unauthorized,
    )
    from winnow.factory import get_container
    from winnow.models import LedgerRecord
    from winnow.observability import logger, metrics, tracer
    from winnow.reconcile.wiring import search_components
    from winnow.rules import is_tenant
    from winnow.search.schemas import (
        DocumentsPage,
        DocumentStatusModel,
        ErrorResponse,
        Health,
        SearchRequest,
        SearchResponse,
    )
    from winnow.search.service import SearchService

app = APIGatewayHttpResolver(enable_validation=True)
PUBLIC_ROUTES = {"/health", "/openapi.json"}
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
        **_AUTH_ERRORS,
        422: _error_response("Invalid request, with field-level messages"),
        503: _error_response("A provider is unavailable; retry after Retry-After"),
    },
)
@tracer.capture_method
def search(request: SearchRequest) -> SearchResponse:
    return service().search(app.context["tenant"], request)


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
        200: OpenAPIResponse(description="The document's status"),
        **_AUTH_ERRORS,
        404: _error_response("Unknown to this tenant"),
    },
)
def document_status(key: Annotated[str, Path(min_length=1, max_length=1024)]) -> DocumentStatusModel:
    tenant = app.context["tenant"]
    full_key = unquote(key)
    if not full_key.startswith(f"{tenant}/"):
        full_key = f"{tenant}/{full_key}"
    record = get_container().ledger.get(tenant, full_key)
    if record is None:
        raise NotFound(f"no document {full_key!r} for this tenant")
    return _document(record)


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
@app.exception_handler(RequestValidationError)
def _invalid(exc: RequestValidationError) -> Response:
    details = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body",)]
        details.append({"field": ".".join(loc) or "body", "message": err.get("msg", "invalid")})
    summary = "; ".join(f"{d['field']}: {d['message']}" for d in details[:5])
    return _error(422, "validation_error", f"invalid request: {summary}", details)


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


@app.exception_handler(ConfigurationError)
def _misconfigured(exc: ConfigurationError) -> Response:
    logger.error("configuration error", extra={"error": str(exc)})
    return _error(500, "configuration_error", str(exc))


@app.exception_handler(ProviderRejected)
def _rejected(exc: ProviderRejected) -> Response:
    logger.error("provider rejected the request", extra={"error": str(exc)})
    return _error(502, "provider_rejected", "a search provider rejected the request")


@app.exception_handler(Exception)
def _bug(exc: Exception) -> Response:
    logger.exception("unhandled error")
    return _error(500, "internal_error", "internal error")


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


def _body_is_text(event: dict[str, Any]) -> bool:
    """A base64 body (API Gateway's encoding of non-text payloads) must decode to UTF-8: Powertools would
    otherwise raise UnicodeDecodeError while reading it, and a client's bad bytes would become a 500."""
    body = event.get("body")
    if not event.get("isBase64Encoded") or not body:
        return True
    try:
        base64.b64decode(str(body), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return True


def _route_path(event: dict[str, Any]) -> str:
    return str(
        event.get("rawPath") or ((event.get("requestContext") or {}).get("http") or {}).get("path", "")
    )


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    cid = correlation_id(event)
    app.append_context(correlation_id=cid)
    path = _route_path(event)
    if path not in PUBLIC_ROUTES:
        tenant = resolve_tenant(event)
        if tenant is None:
            return _finish(
                app_error_response(401, "unauthorized", "no tenant in the authorizer context"), cid
            )
        if not is_tenant(tenant):
            return _finish(
                app_error_response(403, "forbidden", "the tenant claim is not a valid tenant"), cid
            )
        app.append_context(tenant=tenant)
        logger.append_keys(tenant=tenant)
    if not _body_is_text(event):
        return _finish(app_error_response(422, "validation_error", "the request body is not UTF-8 text"), cid)
    _normalise_document_path(event)
    return _finish(app.resolve(event, context), cid)


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
    app.clear_context()
    return response


# The modules, routes and models imported above live as long as the container (see winnow.coldstart).
freeze_long_lived()

if __name__ == "__main__":  # print the OpenAPI document: python -m functions.search.app
    print(json.dumps(json.loads(openapi_json()), indent=2, sort_keys=True))
