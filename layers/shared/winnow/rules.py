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
