"""A browser's form POST to S3, with S3's POST-policy checks in front of moto.

moto stores whatever a form POST sends: it checks neither the signature nor the policy's conditions
(``moto/s3/responses.py``, ``_bucket_response_post``). Real S3 does both, so this gate does them the way
S3 documents them before forwarding the very same multipart body to moto: the SigV4 signature of the
base64 policy (signing key from the test credentials), the expiry, every condition (exact values,
``content-length-range``), and no form field the policy does not name. A form that S3 would refuse gets
S3's 403 here and never reaches the bucket."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from winnow.postpolicy import policy_problem

SECRET = "testing"  # what tests/support/aws.py gives boto3


def _signing_key(secret: str, date: str, region: str) -> bytes:
    key = f"AWS4{secret}".encode()
    for part in (date, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def s3_refusal(url: str, fields: dict[str, str], size: int, now: datetime | None = None) -> str | None:
    """Why S3 would refuse this form, or None."""
    policy = fields.get("policy", "")
    credential = fields.get("x-amz-credential", "")
    parts = credential.split("/")
    if len(parts) != 5 or fields.get("x-amz-algorithm") != "AWS4-HMAC-SHA256":
        return "AccessDenied: not a SigV4 form"
    expected = hmac.new(_signing_key(SECRET, parts[1], parts[2]), policy.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, fields.get("x-amz-signature", "")):
        return "SignatureDoesNotMatch"
    document = json.loads(base64.b64decode(policy))
    bucket = urlsplit(url).path.strip("/").split("/")[0] or str(urlsplit(url).hostname).split(".")[0]
    problem = policy_problem(document, {**fields, "bucket": bucket}, size, now)
    return f"AccessDenied: {problem}" if problem else None


def post_form(url: str, fields: dict[str, str], data: bytes, filename: str = "file") -> httpx.Response:
    """POST the form as a browser would (fields, then the file); S3's 403 when the policy forbids it."""
    problem = s3_refusal(url, fields, len(data))
    if problem is not None:
        return httpx.Response(403, text=problem)
    files: Any = {"file": (filename, data, fields.get("Content-Type", "application/octet-stream"))}
    return httpx.post(url, data=fields, files=files, timeout=30)
