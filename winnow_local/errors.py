"""The one error the local tools raise for a problem the user can fix."""

from __future__ import annotations


class CliError(Exception):
    """A problem the user can fix; shown as one line on stderr, exit status 1."""
