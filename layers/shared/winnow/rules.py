"""Names that cross layers, each defined once: what a tenant is, and what a metadata field may be called.
The search handler, the request schema, ingest key parsing, the ledgers, the vector store and the local
server all ask these functions; none keeps a pattern of its own. The patterns are private and matched
with ``fullmatch``, so no caller can reach for ``re.match`` and let ``"acme\\n"`` through."""

from __future__ import annotations

import re

_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TENANT_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"

# Ledger rows for object keys that name no tenant. It breaks the tenant rule on purpose (a leading
# underscore), so no real tenant can ever read or overwrite them.
UNASSIGNED_TENANT = "_unassigned"

# No '.': the vector store reads a dotted name as a path into nested payload, so ``dept.team`` could be
# indexed but never filtered on.
_FIELD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
FIELD_NAME_RULE = "1-64 letters, digits, '_' or '-', starting with a letter or digit"


def is_tenant(name: object) -> bool:
    """Whether ``name`` is a valid tenant: a JWT claim, the first segment of an object key, a header."""
    return isinstance(name, str) and _TENANT.fullmatch(name) is not None


def is_field_name(name: object) -> bool:
    """Whether ``name`` may name a metadata field: in a sidecar, in S3 user metadata, in a filter."""
    return isinstance(name, str) and _FIELD_NAME.fullmatch(name) is not None


# A path a caller chooses inside their tenant (``handbook/leave.pdf``): the object key is
# ``<tenant>/<path>``, and S3 keys are at most 1,024 bytes of UTF-8.
MAX_KEY_BYTES = 1024
PATH_RULE = (
    "a relative path such as 'handbook/leave.pdf': no leading '/', no '.', '..' or empty segments, "
    "no backslashes or control characters"
)


def path_problem(tenant: str, path: object) -> str | None:
    """Why ``<tenant>/<path>`` is not a key a caller may write, or None when it is. The one rule for
    caller-chosen paths: the search API's uploads and deletes, and ``winnow serve``'s upload route."""
    if not isinstance(path, str) or not path:
        return f"the path must be {PATH_RULE}"
    if path.startswith("/") or "\\" in path or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return f"the path must be {PATH_RULE}"
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        return f"the path must be {PATH_RULE}"
    try:
        size = len(f"{tenant}/{path}".encode())
    except UnicodeEncodeError:
        return "the path must be valid Unicode text"
    if size > MAX_KEY_BYTES:
        return f"the path is too long: <tenant>/<path> must be at most {MAX_KEY_BYTES} bytes of UTF-8"
    return None
