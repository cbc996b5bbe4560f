"""Every regular expression we ship or run locally is linear in its input, found and attacked
automatically (issues 29 and 31: the quadratic patterns found from outside were none of the shapes
an earlier test listed).

The audit (tests/support/regex_audit.py) reads the syntax tree of every module of ``winnow``,
``winnow_local`` and ``functions``, collects each pattern (module constants, ``re.compile`` anywhere,
literal patterns passed to ``re.search`` and friends), builds runs of each character the pattern names
and of each pair (after the literal a match starts with, before a tail that fails it) and compares the
time of each method the code calls, and of ``search``, at ``n`` and ``4 n`` characters. Linear work
grows about 4x; the patterns this replaced grew 13x to 66x, and their calls took 50 ms to 1.2 s at
``4 n`` where linear ones take well under a millisecond. Times are the CPU time of the child that runs
the pattern, which the machine's load does not inflate. Each pattern runs in a forked child under a
CPU limit, so an exponential pattern fails the test instead of hanging it (a regex holds the GIL;
tests/support/cpu_limit.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.cpu_limit import call_within_cpu
from tests.support.regex_audit import DynamicSite, FoundPattern, Growth, Site, collect, super_linear
from winnow_local import apigw

# Patterns built at run time from values a static reading cannot know: each site, and every pattern
# it builds. A new such site fails test_every_pattern_built_at_run_time_is_named_here until named.
DYNAMIC: dict[DynamicSite, Callable[[], list[re.Pattern[Any]]]] = {
    DynamicSite("winnow_local.apigw", "_route_pattern"): lambda: [p for _, _, p in apigw._COMPILED_ROUTES],
    # winnow eval's "answer": a pattern the user writes in their own questions file and runs on their own
    # machine against passages of at most a chunk's length; nothing of ours to audit (docs/eval.md).
    DynamicSite("winnow_local.evaluation.questions", "_pattern"): list,
}

# Far above the few seconds of CPU a quadratic pattern needs to be flagged at these sizes.
CPU_SECONDS = 120

PATTERNS, DYNAMIC_SITES = collect()
for _site, _build in DYNAMIC.items():
    for _pattern in _build():
        PATTERNS.append(FoundPattern(_pattern, [Site(_site.module, 0)], {"match", "search"}))

# The patterns issues 13, 29 and 31 found quadratic (and one this audit found), as they were, with the
# methods their code called: the audit must flag each one, or it could not fail.
ONCE_QUADRATIC = {
    "tables._PIPE_DELIMITER": (r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$", {"match"}),
    "text._DEBIAN_ENTRY": (r"[a-z0-9][a-z0-9+.-]* \([^()\s]+\)(?: +[-+0-9a-zA-Z./]+)+ *;", {"match"}),
    "text._MAN_HEADER": (r"([\w.:+\[-]+)\((\d\w{0,8})\)", {"finditer"}),
    "rst._ROLE": (r":[\w:+.-]+:`([^`<]*?)(?:\s*<[^>]*>)?`", {"sub"}),
    "rst._LINK": (r"`([^`<]+?)\s*<[^>]*>`_{1,2}", {"sub"}),
    "cleaning._TRAILING_MARKS": (r"\s*[¶§\U0001f517]+\s*$", {"sub"}),
    "citations._MARKER": (r"\s*\[(\s*\d{1,4}(?:\s*[,;]\s*\d{1,4})*\s*)\]", {"sub"}),
    "citations._SPACE_BEFORE_PUNCT": (r"[ \t]+([.,;:!?])", {"sub"}),
    "apigw route split": (r"(\{[^}]+\})", {"split"}),
    "text._INFO_NODE": (r"File: [^,\n]*, +Node: ([^,\n]+)", {"match"}),  # found by this audit
    "html._META_CHARSET (issue 13)": (r"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", {"search"}),
}


def _audit(found: FoundPattern) -> Growth | str | None:
    """The audit's verdict, from a forked child stopped past its CPU limit."""
    outcome = call_within_cpu(CPU_SECONDS, super_linear, found)
    if not outcome.finished:
        return f"did not finish within {CPU_SECONDS} s of CPU (exponential?)"
    if outcome.error:
        return f"the audit failed: {outcome.error}"
    verdict: Growth | None = outcome.value
    return verdict


def _describe(growth: Growth | str) -> str:
    if isinstance(growth, str):
        return growth
    return (
        f"{growth.method} on {growth.label}: {growth.small * 1000:.1f} ms at n, "
        f"{growth.large * 1000:.1f} ms at 4 n ({growth.ratio:.0f}x)"
    )


def test_the_audit_finds_the_patterns_of_every_part_we_ship_or_run() -> None:
    # Given the package, the local tools and the handlers
    # When their patterns are collected
    where = {(found.pattern.pattern, site.module) for found in PATTERNS for site in found.sites}
    modules = {module for _, module in where}
    # Then the parsers, the answers and the local tools are all there
    assert {
        "winnow.parsing.rst",
        "winnow.parsing.text",
        "winnow.answer.citations",
        "winnow_local.cli.filters",
    } <= modules
    # and so are literal patterns passed to re.* inside functions, and the methods called on them
    assert (r"\w+", "winnow.parsing.cleaning") in where  # re.findall(r"\w+", ...)
    assert (r"[,;]", "winnow.answer.citations") in where  # re.split(r"[,;]", ...)
    pipe_split = next(found for found in PATTERNS if found.pattern.pattern == r"(?<!\\)\|")
    assert pipe_split.methods == {"split"}  # _PIPE_SPLIT.split(...) in parsing/tables.py


def test_every_pattern_built_at_run_time_is_named_here() -> None:
    # Given the patterns no static reading can evaluate (built from a variable)
    found = {site for site, _line in DYNAMIC_SITES}
    # Then each such site is named in DYNAMIC with the patterns it builds, so it is audited too
    assert found == set(DYNAMIC), f"name these sites and their patterns in DYNAMIC: {found - set(DYNAMIC)}"


@pytest.mark.parametrize("found", PATTERNS, ids=[found.name for found in PATTERNS])
def test_every_pattern_runs_in_linear_time_on_runs_of_the_characters_it_names(found: FoundPattern) -> None:
    # Given a pattern of the package or the local tools, and runs of the characters it names
    # When each method the code calls on it (and search) runs on n and 4 n characters
    verdict = _audit(found)
    # Then none grows clearly faster than the input
    assert verdict is None, f"{found.name} is super-linear: {_describe(verdict)}"


@pytest.mark.parametrize("name", list(ONCE_QUADRATIC))
def test_the_audit_flags_each_pattern_that_was_once_quadratic(name: str) -> None:
    # Given a pattern as it was before issues 29 and 31 made it linear
    source, methods = ONCE_QUADRATIC[name]
    found = FoundPattern(re.compile(source), [Site(name, 0)], set(methods))
    # When it is audited
    verdict = _audit(found)
    # Then the audit finds an input on which it grows at least quadratically
    assert isinstance(verdict, Growth), f"{name}: {verdict}"
    assert verdict.ratio > 8
