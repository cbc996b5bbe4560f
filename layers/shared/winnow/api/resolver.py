"""The resolver every route is served by and what runs around it: before the routes, the correlation id,
the tenant, the caller and the body checks (``guarded``); after them, every failure answered through one
table of exception families (``winnow.api.http``), with a correlation id and never a stack trace."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.types import (
    OpenAPIResponse,
    OpenAPIResponseContentModel,
    OpenAPIResponseContentSchema,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from winnow.api import http
from winnow.api.body import decode_json_body
from winnow.api.schemas.common import ErrorResponse
from winnow.api.schemas.documents import UploadRequest
from winnow.api.schemas.filters import RangeCondition, error_path
from winnow.api.schemas.search import SearchRequest
from winnow.observability import logger
from winnow.settings import SearchSettings

Settings = Callable[[], SearchSettings]  # asked per request: the composition root builds them once
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]
MAX_ERROR_DETAILS = 20
_REQUEST_FIELDS = ", ".join(SearchRequest.model_fields)
_UPLOAD_FIELDS = ", ".join(UploadRequest.model_fields)
_RANGE_FIELDS = ", ".join(RangeCondition.model_fields)


# --- what the OpenAPI document says of errors -------------------------------------------------------------
def error_response(description: str) -> OpenAPIResponse:
    content: dict[str, OpenAPIResponseContentSchema | OpenAPIResponseContentModel] = {
        "application/json": OpenAPIResponseContentModel(model=ErrorResponse)
    }
    return OpenAPIResponse(description=description, content=content)


AUTH_ERRORS: dict[int, OpenAPIResponse] = {
    401: error_response("No tenant in the authorizer context"),
    403: error_response("The tenant, user or groups claim is not valid"),
}


# --- the resolver ---------------------------------------------------------------------------------------
def resolver(settings: Settings) -> APIGatewayHttpResolver:
    """A resolver whose body parser bounds its own work (size, nesting) and refuses text that is not
    Unicode (``winnow.api.body``), and whose every error is the API's one error body."""
    app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=decode_json_body)

    @app.exception_handler(RequestValidationError)
    def _invalid(exc: RequestValidationError) -> Response:
        errors = exc.errors()
        uploads = http.route_path(app.current_event.raw_event) == "/uploads"
        details = [explain(err, uploads) for err in errors[:MAX_ERROR_DETAILS]]
        summary = "; ".join(f"{d['field']}: {d['message']}" for d in details[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        return error(app, 422, "validation_error", f"invalid request: {summary}{more}", details)

    @app.exception_handler(Exception)
    def _failed(exc: Exception) -> Response:
        return failed(app, exc, settings)

    @app.not_found
    def _unknown_route(exc: Exception) -> Response:
        return error(app, 404, "not_found", "no such route")

    return app


def error(
    app: APIGatewayHttpResolver,
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The one error response of the API; inside the resolver and outside it (see ``guarded``)."""
    body = http.error_body(code, message, str(app.context.get("correlation_id", "")), details)
    return Response(status, content_types.APPLICATION_JSON, body, headers=headers or {})


def failed(app: APIGatewayHttpResolver, exc: Exception, settings: Settings) -> Response:
    """Every failure but a validation error, answered by the table of exception families."""
    answer = http.answer_for(exc, _show_configuration_errors(settings))
    if answer.rule.log is not None:
        level, line = answer.rule.log
        getattr(logger, level)(line, extra={"error_type": type(exc).__name__, "error": str(exc)})
    return error(app, answer.status, answer.code, answer.message, headers=answer.headers)


def _show_configuration_errors(settings: Settings) -> bool:
    try:
        return settings().show_configuration_errors  # the embedded default
    except Exception:
        return False


def explain(err: dict[str, Any], uploads: bool = False) -> dict[str, str]:
    """One validation error as ``{field, message}``, in words a caller can act on."""
    loc = error_path(tuple(err.get("loc", ())))
    field = ".".join(loc) or "body"
    kind = str(err.get("type", ""))
    message = str(err.get("msg", "invalid"))
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


# --- around the resolver ----------------------------------------------------------------------------------
def guarded(app: APIGatewayHttpResolver, settings: Settings) -> Callable[[Handler], Handler]:
    """Before the resolver: the correlation id, the tenant and the caller (private routes: built here
    once, from the authorizer only, and passed to every route), the body checks; whatever
    happens, the caller gets a structured answer carrying the correlation id."""

    def decorate(handle: Handler) -> Handler:
        @wraps(handle)
        def wrapper(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
            cid = http.correlation_id(event)
            app.append_context(correlation_id=cid)
            try:
                search = settings()
                tenant = http.require_tenant(event, search)
                if tenant is not None:
                    caller = http.resolve_caller(event, tenant, search)
                    app.append_context(tenant=tenant, caller=caller)
                    logger.append_keys(tenant=tenant)
                http.check_body(event)
                http.normalise_document_path(event)
                response = handle(event, context)
            except Exception as exc:  # raised before the routes, or escaped the resolver
                response = _proxy_result(failed(app, exc, settings))
            finally:
                app.clear_context()
                logger.remove_keys(["tenant"])
            response["headers"] = {**(response.get("headers") or {}), "X-Correlation-Id": cid}
            return response

        return wrapper

    return decorate


def _proxy_result(response: Response) -> dict[str, Any]:
    return {
        "statusCode": response.status_code,
        "headers": dict(response.headers),
        "body": response.body,
        "isBase64Encoded": False,
    }
