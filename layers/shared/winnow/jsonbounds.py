"""How deep a JSON text nests, measured before any parser runs: ``json.loads`` recurses once per level,
so a few kilobytes of brackets can exhaust the interpreter's stack. Every reader of untrusted JSON (request
bodies, sidecars) checks this bound first."""

from __future__ import annotations

import re
from itertools import accumulate

# A JSON string, possessive so it never backtracks, and ending at the end of the text when unterminated:
# it matches at every quote, so ``sub`` scans each character once.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside JSON strings, in time linear in ``len(text)``: a bound
    on how deep a left-to-right parser can get (it stops where the running count would go negative)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets)), default=0))
