"""The search API's edge (winnow.api.http): the one table from exception families to status codes, the
error body, and what a request must carry (tenant, correlation id) before it is resolved."""

from __future__ import annotations

import json
from typing import Any

import pytest

from winnow.api import http
from winnow.errors import (
    BadRequest,
    BodyTooLarge,
    ConfigurationError,
    DocumentBusy,
    EnqueueFailed,
    FeatureDisabled,
    Forbidden,
    MalformedBody,
    NotFound,
    ProfileMismatch,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
    QueryRejected,
    TransientError,
    Unauthorized,
    UnsupportedMediaType,
)
from winnow.settings import SearchSettings

INTERNAL = "collection winnow_voyage-3-5-lite-1024 at qdrant.internal:6333 said: payload index missing"

# Each family, the status and code it is answered with, and whether its own message reaches the caller.
FAMILIES: list[tuple[Exception, int, str, bool]] = [
    (MalformedBody("the request body is not valid JSON"), 400, "invalid_body", True),
    (BodyTooLarge("the request body is over 1024 KiB"), 413, "body_too_large", True),
    (UnsupportedMediaType("send the body as JSON"), 415, "unsupported_media_type", True),
    (QueryRejected(INTERNAL), 400, "bad_request", False),
    (BadRequest("cursor is not one this API returned"), 400, "bad_request", True),
    (Unauthorized("no tenant in the authorizer context"), 401, "unauthorized", True),
    (Forbidden("the tenant claim is not a valid tenant"), 403, "forbidden", True),
    (NotFound("no document 'acme/x.md' for this tenant"), 404, "not_found", True),
    (FeatureDisabled("answers are not enabled here"), 501, "not_enabled", True),
    (ProviderRejected(INTERNAL), 502, "provider_rejected", False),
    (ProviderUnavailable(INTERNAL), 503, "unavailable", False),
    (ProviderRateLimited(INTERNAL, retry_after=7), 503, "unavailable", False),
    (DocumentBusy(INTERNAL), 503, "unavailable", False),
    (EnqueueFailed(INTERNAL, keys=["acme/x.md"]), 503, "unavailable", False),
    (ConfigurationError(INTERNAL), 500, "configuration_error", False),
    (ProfileMismatch(INTERNAL), 500, "configuration_error", False),
    (RuntimeError(INTERNAL), 500, "internal_error", False),
    (KeyError(INTERNAL), 500, "internal_error", False),
]


@pytest.mark.parametrize(("exc", "status", "code", "own_message"), FAMILIES, ids=lambda v: type(v).__name__)
def test_each_exception_family_has_its_status_and_code(
    exc: Exception, status: int, code: str, own_message: bool
) -> None:
    # When the table answers the exception
    answer = http.answer_for(exc)
    # Then it has the family's status and code, and the caller sees the message only when it is theirs
    assert (answer.status, answer.code) == (status, code)
    assert (answer.message == str(exc)) is own_message


@pytest.mark.parametrize(("exc", "status", "code", "own_message"), FAMILIES, ids=lambda v: type(v).__name__)
def test_no_error_body_names_our_internals(exc: Exception, status: int, code: str, own_message: bool) -> None:
    # Given an exception whose message or class names internals
    answer = http.answer_for(exc)
    # When its body is built
    body = http.error_body(answer.code, answer.message, "cid-1")
    text = json.dumps(json.loads(body))
    # Then the body is the API's error shape and names no class, collection or host
    assert json.loads(body) == {"error": {"code": code, "message": answer.message}, "correlation_id": "cid-1"}
    assert type(exc).__name__ not in text
    assert "qdrant.internal" not in text and "winnow_voyage" not in text
    assert "Traceback" not in text


def test_a_transient_failure_says_when_to_retry() -> None:
    assert http.answer_for(ProviderRateLimited("throttled", retry_after=7.4)).headers == {"Retry-After": "7"}
    assert http.answer_for(TransientError("down")).headers == {"Retry-After": "5"}
    assert http.answer_for(TransientError("down", retry_after=0.1)).headers == {"Retry-After": "1"}
    assert http.answer_for(BadRequest("no")).headers == {}


def test_the_operator_of_the_embedded_default_sees_configuration_errors() -> None:
    exc = ConfigurationError("Voyage is selected but no key is set: set VOYAGE_API_KEY")
    assert http.answer_for(exc, show_configuration_errors=True).message == str(exc)
    assert http.answer_for(exc).message == http.INTERNAL_MESSAGE
    # and only configuration errors: other internals stay hidden
    assert (
        http.answer_for(RuntimeError(INTERNAL), show_configuration_errors=True).message
        == http.INTERNAL_MESSAGE
    )


def test_server_side_failures_are_logged_client_mistakes_are_not() -> None:
    assert http.rule_for(RuntimeError()).log == ("exception", "unhandled error")
    assert http.rule_for(ConfigurationError("x")).log == ("error", "configuration error")
    assert http.rule_for(ProviderUnavailable("x")).log == ("warning", "provider unavailable")
    assert http.rule_for(BadRequest("x")).log is None and http.rule_for(NotFound("x")).log is None


def test_the_most_specific_family_answers() -> None:
    # QueryRejected is a BadRequest, and MalformedBody too: each keeps its own answer
    assert issubclass(QueryRejected, BadRequest) and issubclass(MalformedBody, BadRequest)
    assert http.rule_for(QueryRejected("x")).message is not None
    assert http.rule_for(MalformedBody("x")).code == "invalid_body"
    families = [family for family, _ in http.ERROR_RULES]
    for i, earlier in enumerate(families):
        for later in families[i + 1 :]:
            assert not issubclass(later, earlier), f"{later.__name__} is shadowed by {earlier.__name__}"


# --- what a request carries -------------------------------------------------------------------------------
def event(path: str = "/search", claims: dict[str, Any] | None = None, **headers: str) -> dict[str, Any]:
    authorizer = {"jwt": {"claims": claims}} if claims is not None else {}
    return {
        "rawPath": path,
        "headers": headers,
        "requestContext": {
            "requestId": "req-1",
            "http": {"method": "POST", "path": path},
            "authorizer": authorizer,
        },
    }


def test_a_private_route_needs_a_valid_tenant_from_the_authorizer() -> None:
    settings = SearchSettings()
    assert http.require_tenant(event(claims={settings.tenant_claim: "acme"}), settings) == "acme"
    with pytest.raises(Unauthorized):
        http.require_tenant(event(claims={}), settings)
    with pytest.raises(Forbidden):
        http.require_tenant(event(claims={settings.tenant_claim: "acme/../globex"}), settings)
    # the tenant header counts only where the deployment allows it
    with pytest.raises(Unauthorized):
        http.require_tenant(event(**{settings.tenant_header: "acme"}), settings)


def test_public_routes_need_no_tenant() -> None:
    for path in http.PUBLIC_ROUTES:
        assert http.require_tenant(event(path), SearchSettings()) is None


def test_the_correlation_id_is_the_callers_when_sane() -> None:
    assert http.correlation_id(event(**{"X-Correlation-Id": "order-42:retry.1"})) == "order-42:retry.1"
    assert http.correlation_id(event(**{"X-Correlation-Id": "bad id\n"})) == "req-1"
    assert http.correlation_id(event(**{"X-Correlation-Id": "x" * 129})) == "req-1"
    # an event that is not API Gateway's still gets one
    assert len(http.correlation_id({"headers": ["x-correlation-id: abc"]})) == 36
