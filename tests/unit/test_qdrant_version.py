"""The Qdrant server version check reads ``major.minor`` with string code (a pattern searched over a
server's answer was quadratic in a run of digits: the regex audit found it)."""

from __future__ import annotations

import pytest

from winnow.adapters.qdrant_store import _major_minor, require_tenant_idf
from winnow.errors import ConfigurationError


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.19.0", (1, 19)),
        ("1.19.0-dev", (1, 19)),
        ("2.0", (2, 0)),
        (" 1.20.3 ", (1, 20)),
        ("1.19rc1", (1, 19)),
        ("v1.19.0", (0, 0)),
        ("1", (0, 0)),
        ("", (0, 0)),
        ("1." + "9" * 100_000, (1, int("9" * 38))),  # read from the first 40 characters only
    ],
)
def test_major_minor_of_a_server_version(version: str, expected: tuple[int, int]) -> None:
    assert _major_minor(version) == expected


def test_a_server_older_than_per_tenant_idf_is_refused_and_a_newer_one_kept() -> None:
    require_tenant_idf("1.19.0")
    require_tenant_idf("1.21.1")
    for old in ("1.18.2", "garbage", "0.99"):
        with pytest.raises(ConfigurationError, match=r"Qdrant 1\.19 or newer"):
            require_tenant_idf(old)
