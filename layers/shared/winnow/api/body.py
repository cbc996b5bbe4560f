"""Reading a search request's body: which media types count as JSON, and a JSON decoder whose work is
bounded before it starts (size, then nesting depth, both checked in linear time), so no body can make
the parser recurse without end or hand the schema text that is not valid Unicode."""

from __future__ import annotations

import json
import re
from typing import Any

from winnow.errors import BodyTooLarge, MalformedBody, UnsupportedMediaType
from winnow.jsonbounds import nesting_depth

# A valid search request is a few kilobytes; 1 MiB is also what ``winnow serve`` reads.
MAX_BODY_CHARS = 1024 * 1024
# The deepest valid request is 4 levels ({"filters": {"year": {"gte": 1}}}); this leaves room for
# helpful validation messages about wrong shapes, and none for the parser's recursion.
MAX_DEPTH = 32
SEND = 'send a JSON object such as {"query": "travel expenses", "top_k": 5}'

_JSON_SUFFIX = re.compile(r"application/[a-z0-9!#$&^_.-]+\+json")


def check_media_type(content_type: str | None) -> None:
    """Accept ``application/json`` and ``application/*+json``, in any case, with an optional UTF-8
    charset; no header at all is read as JSON too. Anything else is a 415."""
    if content_type is None or not content_type.strip():
        return
    media_type, *params = (part.strip() for part in content_type.split(";"))
    media_type = media_type.lower()
    if media_type != "application/json" and not _JSON_SUFFIX.fullmatch(media_type):
        raise UnsupportedMediaType(
            f"content-type {media_type[:60]!r} is not supported: send the body as JSON with "
            "content-type: application/json"
        )
    for param in params:
        name, _, value = param.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in ("utf-8", "utf8"):
            raise UnsupportedMediaType(
                f"charset {charset[:30]!r} is not supported: send the JSON body as UTF-8"
            )


def decode_json_body(text: str | bytes | bytearray) -> Any:
    """The body as JSON, or ``MalformedBody`` / ``BodyTooLarge`` with a message that says what to send.
    Every string in the result (keys too) is valid Unicode: a lone surrogate (``"\\ud800"``) is refused
    here, before any code needs to encode it."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedBody(f"the request body is not UTF-8 text: {SEND}") from exc
    if len(text) > MAX_BODY_CHARS:
        raise BodyTooLarge(f"the request body is over {MAX_BODY_CHARS // 1024} KiB: {SEND}")
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise MalformedBody(f"the request body nests arrays or objects more than {MAX_DEPTH} deep: {SEND}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedBody(
            f"the request body is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}): {SEND}"
        ) from exc
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise MalformedBody(f"the request body holds a number too long to read: {SEND}") from exc
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MalformedBody(
            "the request body contains a lone UTF-16 surrogate (such as \\ud800), which is not text: "
            "send valid Unicode"
        ) from exc
    return value
