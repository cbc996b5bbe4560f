"""The API Gateway payload v2 events the CLI and the local server build, and the way their responses are
turned back into HTTP, match what API Gateway itself does."""

from __future__ import annotations

import base64
import json

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from winnow_local.apigw import http_api_event, match_route, to_http_response


def test_post_event_carries_json_body_claims_and_route() -> None:
    # Given a search request for tenant acme
    event = http_api_event("post", "/search", body={"query": "warranty"}, tenant="acme", claim="org")
    # When Powertools reads it as API Gateway would deliver it
    parsed = APIGatewayProxyEventV2(event)
    # Then method, path, route, body and the JWT claim are where a deployed API puts them
    assert event["version"] == "2.0"
    assert parsed.request_context.http.method == "POST"
    assert parsed.raw_path == "/search"
    assert parsed.route_key == "POST /search"
    assert parsed.json_body == {"query": "warranty"}
    assert parsed.request_context.authorizer.jwt_claim["org"] == "acme"
    assert parsed.headers["content-type"] == "application/json"
    assert event["isBase64Encoded"] is False
    assert event["requestContext"]["requestId"]


def test_without_tenant_there_is_no_authorizer_context() -> None:
    event = http_api_event("GET", "/health")
    assert "authorizer" not in event["requestContext"]
    assert "body" not in event


def test_greedy_path_parameter_and_query_string() -> None:
    # Given a document key with slashes and a query with a repeated parameter
    event = http_api_event(
        "GET", "/documents/handbook/leave policy.md", query={"limit": 5, "tag": ["a", "b"]}
    )
    # Then the {key+} route matches with the whole key, and the query looks like API Gateway's
    assert event["routeKey"] == "GET /documents/{key+}"
    assert event["pathParameters"] == {"key": "handbook/leave policy.md"}
    assert event["rawQueryString"] == "limit=5&tag=a&tag=b"
    assert event["queryStringParameters"] == {"limit": "5", "tag": "a,b"}


def test_query_in_path_is_split_out() -> None:
    event = http_api_event("GET", "/documents?limit=2&cursor=abc%2F1")
    assert event["rawPath"] == "/documents"
    assert event["routeKey"] == "GET /documents"
    assert event["queryStringParameters"] == {"limit": "2", "cursor": "abc/1"}


def test_headers_are_lower_cased_and_bytes_bodies_base64() -> None:
    event = http_api_event("POST", "/search", body=b"\x00\xffraw", headers={"X-Winnow-Tenant": "t1"})
    assert event["headers"]["x-winnow-tenant"] == "t1"
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"\x00\xffraw"


def test_unknown_route_goes_to_default() -> None:
    assert match_route("DELETE", "/search") == ("$default", {})
    assert match_route("GET", "/nope") == ("$default", {})
    assert match_route("GET", "/documents") == ("GET /documents", {})


def test_response_translation_keeps_status_headers_and_body() -> None:
    # Given a handler's proxy result with a JSON error body
    body = json.dumps({"error": {"code": "bad_request", "message": "query is required"}})
    result = {
        "statusCode": 422,
        "headers": {"Content-Type": "application/json", "X-Request-Id": "r1"},
        "body": body,
    }
    # When it is turned into HTTP
    status, headers, payload = to_http_response(result)
    # Then the client sees the same status, lower-cased headers and the body bytes verbatim
    assert status == 422
    assert headers["content-type"] == "application/json"
    assert headers["x-request-id"] == "r1"
    assert headers["content-length"] == str(len(payload))
    assert payload == body.encode()


def test_base64_response_body_is_decoded_and_bare_dicts_become_json() -> None:
    status, _, payload = to_http_response(
        {"statusCode": 200, "body": base64.b64encode(b"abc").decode(), "isBase64Encoded": True}
    )
    assert (status, payload) == (200, b"abc")
    status, headers, payload = to_http_response({"ok": True})
    assert status == 200
    assert json.loads(payload) == {"ok": True}
    assert headers["content-type"] == "application/json"
