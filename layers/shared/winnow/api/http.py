"""The search API's HTTP edge, shared by every route: what a request must carry before it is resolved
(correlation id, tenant, a readable body) and the one table that turns our exception families into
status codes and error bodies. Clients see a code and a message, never a stack trace or an internal name."""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from winnow.access import Caller, parse_groups
from winnow.api.body import check_media_type
from winnow.api.schemas.common import ErrorResponse
from winnow.errors import (
    AnswerModelUnavailable,
    BadRequest,
    BodyTooLarge,
    ConfigurationError,
    FeatureDisabled,
    Forbidden,
    MalformedBody,
    NotFound,
    ProviderRejected,
    QueryRejected,
    TransientError,
    Unauthorized,
    UnsupportedMediaType,
)
from winnow.rules import PRINCIPAL_RULE, is_principal, is_tenant
from winnow.settings import SearchSettings

PUBLIC_ROUTES = frozenset({"/health", "/openapi.json"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# What a caller sees of any failure on our side; the details go to the logs under the correlation id.
ANSWER_MODEL_UNAVAILABLE = "the answer model is unavailable; retry later"
INTERNAL_MESSAGE = "internal error: the service could not answer; quote the correlation id when reporting it"
_CORRELATION_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


# --- the error table -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ErrorRule:
    """How one exception family is answered. ``message`` None: the exception's own message, written for
    callers; otherwise this fixed text (the exception's message is for the logs only). ``log``: the log
    level and line the failure is worth (None: an ordinary client error, not logged)."""

    status: int
    code: str
    message: str | None = None
    log: tuple[str, str] | None = None


# Most specific first: the first family the exception belongs to answers it.
ERROR_RULES: tuple[tuple[type[BaseException], ErrorRule], ...] = (
    (MalformedBody, ErrorRule(400, "invalid_body")),
    (BodyTooLarge, ErrorRule(413, "body_too_large")),
    (UnsupportedMediaType, ErrorRule(415, "unsupported_media_type")),
    (
        QueryRejected,
        ErrorRule(
            400,
            "bad_request",
            "the search was rejected: check that each filter's values match its field's type",
            log=("warning", "the vector store rejected a search"),
        ),
    ),
    (BadRequest, ErrorRule(400, "bad_request")),
    (Unauthorized, ErrorRule(401, "unauthorized")),
    (Forbidden, ErrorRule(403, "forbidden")),
    (NotFound, ErrorRule(404, "not_found")),
    (FeatureDisabled, ErrorRule(501, "not_enabled")),
    (
        ProviderRejected,
        ErrorRule(
            502,
            "provider_rejected",
            "a search provider rejected the request",
            ("error", "provider rejected the request"),
        ),
    ),
    (
        AnswerModelUnavailable,
        ErrorRule(503, "unavailable", ANSWER_MODEL_UNAVAILABLE, ("warning", "answer model unavailable")),
    ),
    (
        TransientError,
        ErrorRule(
            503,
            "unavailable",
            "a search provider is unavailable; retry later",
            ("warning", "provider unavailable"),
        ),
    ),
    # The message names secrets, collections and models: the operators' business, never the caller's
    # (unless ``show_configuration_errors``: the embedded default, where caller and operator are one).
    (
        ConfigurationError,
        ErrorRule(500, "configuration_error", INTERNAL_MESSAGE, ("error", "configuration error")),
    ),
)
UNEXPECTED = ErrorRule(500, "internal_error", INTERNAL_MESSAGE, ("exception", "unhandled error"))


@dataclass(frozen=True)
class ErrorAnswer:
    status: int
    code: str
    message: str
    headers: dict[str, str]
    rule: ErrorRule


def rule_for(exc: BaseException) -> ErrorRule:
    for family, rule in ERROR_RULES:
        if isinstance(exc, family):
            return rule
    return UNEXPECTED


def answer_for(exc: BaseException, show_configuration_errors: bool = False) -> ErrorAnswer:
    """What the caller is told about ``exc``."""
    rule = rule_for(exc)
    message = rule.message if rule.message is not None else str(exc)
    if isinstance(exc, ConfigurationError) and show_configuration_errors:
        message = str(exc)
    headers: dict[str, str] = {}
    if isinstance(exc, TransientError):
        headers["Retry-After"] = str(max(1, round(exc.retry_after or 5)))
    return ErrorAnswer(rule.status, rule.code, message, headers, rule)


def error_body(
    code: str, message: str, correlation_id: str, details: list[dict[str, Any]] | None = None
) -> str:
    """The one error body of the API (``ErrorResponse``)."""
    body = ErrorResponse.model_validate(
        {"error": {"code": code, "message": message, "details": details}, "correlation_id": correlation_id}
    )
    return body.model_dump_json(exclude_none=True)


# --- what a request must carry -------------------------------------------------------------------------
def correlation_id(event: Any) -> str:
    """The caller's ``X-Correlation-Id`` when it is a sane token, else API Gateway's request id."""
    try:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        given = headers.get("x-correlation-id")
        if given and _CORRELATION_ID.fullmatch(given):
            return str(given)
        return str((event.get("requestContext") or {}).get("requestId") or uuid.uuid4())
    except Exception:  # not an API Gateway event at all
        return str(uuid.uuid4())


def route_path(event: dict[str, Any]) -> str:
    return str(
        event.get("rawPath") or ((event.get("requestContext") or {}).get("http") or {}).get("path", "")
    )


def resolve_tenant(event: dict[str, Any], settings: SearchSettings) -> str | None:
    """The caller's tenant from the authorizer context, never from the body or query string."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    claims = ((authorizer.get("jwt") or {}).get("claims")) or {}
    tenant = claims.get(settings.tenant_claim)
    if tenant is None:
        tenant = (authorizer.get("lambda") or {}).get(settings.authorizer_tenant_key)
    if tenant is None and settings.allow_tenant_header:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        tenant = headers.get(settings.tenant_header.lower())
    return None if tenant is None else str(tenant)


def require_tenant(event: dict[str, Any], settings: SearchSettings) -> str | None:
    """The tenant of a request to a private route (None for a public one); 401 without one, 403 for a
    claim that is not a tenant name. Checked before any validation, embedding or Qdrant call."""
    if route_path(event) in PUBLIC_ROUTES:
        return None
    tenant = resolve_tenant(event, settings)
    if tenant is None:
        raise Unauthorized("no tenant in the authorizer context")
    if not is_tenant(tenant):
        raise Forbidden("the tenant claim is not a valid tenant")
    return tenant


def resolve_caller(event: dict[str, Any], tenant: str, settings: SearchSettings) -> Caller:
    """Who is asking, built once per request from the same place as the tenant: the JWT claims (or a
    Lambda authorizer's context); the ``x-winnow-user``/``-groups`` headers only in the embedded
    default's header mode, never in AWS. No user claim: anonymous (documents without access only)."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    claims = ((authorizer.get("jwt") or {}).get("claims")) or {}
    context = authorizer.get("lambda") or {}
    user: object = claims.get(settings.user_claim, context.get(settings.user_claim))
    groups: object = claims.get(settings.groups_claim, context.get(settings.groups_claim))
    if settings.allow_tenant_header and not claims and not context:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        user = headers.get(settings.user_header.lower())
        groups = headers.get(settings.groups_header.lower())
    if user is not None and not is_principal(str(user)):
        raise Forbidden(f"the user claim is not a valid user id: {PRINCIPAL_RULE}")
    try:
        held = parse_groups(groups)
    except ValueError as exc:
        raise Forbidden(str(exc)) from exc
    return Caller.of(tenant, str(user) if user is not None else None, held, settings.admin_group)


def check_body(event: dict[str, Any]) -> None:
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


def normalise_document_path(event: dict[str, Any]) -> None:
    """``GET /documents/{key+}``: keys contain slashes; encode them so the route's one segment matches."""
    path = str(event.get("rawPath") or "")
    prefix = "/documents/"
    if path.startswith(prefix) and len(path) > len(prefix):
        encoded = prefix + quote(unquote(path[len(prefix) :]), safe="")
        event["rawPath"] = encoded
        http = (event.get("requestContext") or {}).get("http")
        if isinstance(http, dict):
            http["path"] = encoded
