"""API Gateway HTTP API (payload format 2.0) events built on this machine, and their responses turned back
into HTTP. The CLI and the local server go through these so that the search Lambda's handler sees exactly
what API Gateway would send it, and nothing in the handler needs to know it runs locally."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

# The deployed API's routes, as the SAM template declares them. API Gateway puts the matched one in
# ``routeKey`` and fills ``pathParameters`` from it; anything else reaches the ``$default`` route.
ROUTES: tuple[tuple[str, str], ...] = (
    ("POST", "/search"),
    ("GET", "/documents"),
    ("GET", "/documents/{key+}"),
    ("GET", "/health"),
    ("GET", "/openapi.json"),
)

QueryValue = str | int | float | bool | Sequence[str]


def _route_pattern(template: str) -> re.Pattern[str]:
    """``/documents/{key+}`` → a regex whose named groups are the path parameters (greedy ``+``)."""
    parts: list[str] = []
    for piece in re.split(r"(\{[^{}]+\})", template):
        if piece.startswith("{") and piece.endswith("}"):
            name = piece[1:-1]
            if name.endswith("+"):
                parts.append(f"(?P<{name[:-1]}>.+)")
            else:
                parts.append(f"(?P<{name}>[^/]+)")
        else:
            parts.append(re.escape(piece))
    return re.compile("^" + "".join(parts) + "$")


_COMPILED_ROUTES = [(method, template, _route_pattern(template)) for method, template in ROUTES]


def match_route(method: str, path: str) -> tuple[str, dict[str, str]]:
    """The ``routeKey`` API Gateway would report, and the path parameters it would extract."""
    for route_method, template, pattern in _COMPILED_ROUTES:
        if route_method != method.upper():
            continue
        found = pattern.match(path)
        if found:
            return f"{route_method} {template}", dict(found.groupdict())
    return "$default", {}


def _query_pairs(query: Mapping[str, QueryValue] | str | None) -> list[tuple[str, str]]:
    if query is None:
        return []
    if isinstance(query, str):
        return parse_qsl(query.lstrip("?"), keep_blank_values=True)
    pairs: list[tuple[str, str]] = []
    for name, value in query.items():
        if isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        elif isinstance(value, str | int | float):
            pairs.append((name, str(value)))
        else:
            pairs.extend((name, str(item)) for item in value)
    return pairs


def http_api_event(
    method: str,
    path: str,
    body: Any = None,
    query: Mapping[str, QueryValue] | str | None = None,
    headers: Mapping[str, str] | None = None,
    tenant: str | None = None,
    claim: str = "tenant",
    *,
    source_ip: str = "127.0.0.1",
    claims: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A payload v2 event for ``method path``.

    ``body`` may be bytes (sent base64-encoded, as API Gateway does for binary bodies), a string (sent
    as is) or any JSON-serialisable value (sent as JSON). With ``tenant``, the request carries a JWT
    authorizer context whose ``claim`` names the tenant, as a deployed API with a JWT authorizer would;
    without it there is no authorizer context at all.
    """
    method = method.upper()
    raw_path = path.split("?", 1)[0] or "/"
    if query is None and "?" in path:
        query = path.split("?", 1)[1]
    pairs = _query_pairs(query)
    raw_query = urlencode(pairs)
    query_parameters: dict[str, str] = {}
    for name, value in pairs:  # API Gateway joins repeated parameters with commas
        query_parameters[name] = f"{query_parameters[name]},{value}" if name in query_parameters else value

    lowered: dict[str, str] = {}
    for name, value in (headers or {}).items():
        key = name.lower()
        lowered[key] = f"{lowered[key]},{value}" if key in lowered else value
    lowered.setdefault("host", "localhost")
    lowered.setdefault("user-agent", "winnow-local")

    encoded_body: str | None
    is_base64 = False
    if body is None:
        encoded_body = None
    elif isinstance(body, bytes | bytearray):
        encoded_body = base64.b64encode(bytes(body)).decode("ascii")
        is_base64 = True
    elif isinstance(body, str):
        encoded_body = body
    else:
        encoded_body = json.dumps(body)
        lowered.setdefault("content-type", "application/json")
    if encoded_body is not None:
        lowered.setdefault("content-length", str(len(encoded_body)))

    route_key, path_parameters = match_route(method, raw_path)
    now = time.time()
    request_id = str(uuid.uuid4())
    request_context: dict[str, Any] = {
        "accountId": "000000000000",
        "apiId": "local",
        "domainName": lowered["host"].split(":", 1)[0],
        "domainPrefix": "local",
        "http": {
            "method": method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": lowered["user-agent"],
        },
        "requestId": request_id,
        "routeKey": route_key,
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    if tenant is not None:
        request_context["authorizer"] = {"jwt": {"claims": {**(claims or {}), claim: tenant}, "scopes": []}}

    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": lowered,
        "requestContext": request_context,
        "isBase64Encoded": is_base64,
    }
    if query_parameters:
        event["queryStringParameters"] = query_parameters
    if path_parameters:
        event["pathParameters"] = path_parameters
    if encoded_body is not None:
        event["body"] = encoded_body
    return event


def to_http_response(result: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """A Lambda proxy result (payload v2) as API Gateway turns it into HTTP: status, headers, body bytes.

    Like API Gateway, a result without ``statusCode`` is treated as a JSON body with status 200.
    """
    if "statusCode" not in result:
        payload = json.dumps(dict(result)).encode("utf-8")
        return 200, {"content-type": "application/json", "content-length": str(len(payload))}, payload

    status = int(result["statusCode"])
    headers = {str(name).lower(): str(value) for name, value in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name).lower()] = ",".join(str(value) for value in values)
    cookies = result.get("cookies") or []
    if cookies:
        headers["set-cookie"] = "; ".join(str(cookie) for cookie in cookies)

    raw_body = result.get("body")
    if raw_body is None:
        body = b""
    elif result.get("isBase64Encoded"):
        body = base64.b64decode(raw_body)
    elif isinstance(raw_body, bytes):
        body = raw_body
    else:
        body = str(raw_body).encode("utf-8")
    headers["content-length"] = str(len(body))
    headers.setdefault("content-type", "application/json")
    return status, headers, body
