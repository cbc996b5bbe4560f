"""Find every regular expression in the code we ship and run, and time each on inputs built to make a
backtracking engine retry at every character.

Python's ``re`` backtracks: a pattern such as ``\\s*\\|?\\s*`` or ``[\\w+-]+\\(`` spends time
quadratic in a run of characters it accepts before failing. Such a run is easy to upload. Rather than
keep a list of known bad shapes, this reads every module's syntax tree, collects each pattern (module
constants, ``re.compile`` anywhere, and literal patterns passed to ``re.search`` and friends), derives
from the pattern's own parse tree the characters it names, builds long runs of each of them and of each
pair, after a few prefixes that get past the pattern's start, with a tail it cannot match, and measures
how the time of every method the code calls grows from ``n`` to ``4 n`` characters.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from re import _parser as sre_parse  # type: ignore[attr-defined]  # Python 3.11+: sre_parse
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = (ROOT / "layers" / "shared", ROOT)
PACKAGES = ("winnow", "winnow_local", "functions")

# The methods of a compiled pattern (and the functions of ``re`` that take a pattern first).
SCANNING = frozenset({"search", "findall", "finditer", "sub", "subn", "split"})
ANCHORED = frozenset({"match", "fullmatch"})
METHODS = SCANNING | ANCHORED

# Representatives of the classes a pattern may name (\d, \s, \w and their negations).
_CATEGORY_CHARS = {
    "CATEGORY_DIGIT": "1",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_SPACE": " \t",
    "CATEGORY_NOT_SPACE": "a",
    "CATEGORY_WORD": "a1_",
    "CATEGORY_NOT_WORD": " -",
    "CATEGORY_LINEBREAK": "\n",
    "CATEGORY_NOT_LINEBREAK": "a",
}
# Always tried besides the pattern's own characters: a letter, a digit, a space, a line break.
BASE_CHARS = "a1 \n"
# Appended to every run: a character no pattern here names, so the match must fail at the end.
FAILING_TAIL = "\x00"


@dataclass(frozen=True)
class Site:
    """Where a pattern is defined or used: ``module:line``."""

    module: str
    line: int


@dataclass
class FoundPattern:
    pattern: re.Pattern[Any]
    sites: list[Site] = field(default_factory=list)
    methods: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        site = self.sites[0]
        return f"{site.module}:{site.line} {self.pattern.pattern!r}"[:160]


@dataclass(frozen=True)
class DynamicSite:
    """A pattern built at run time from values no static reading can know (a fence's length, a route
    template): the test names each such site and the patterns it can build."""

    module: str
    function: str


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for base in SOURCE_ROOTS:
            folder = base / package
            if not (folder / "__init__.py").exists():
                continue
            for path in sorted(folder.rglob("*.py")):
                if path.name == "__main__.py":  # runs the command line when imported: must hold no pattern
                    assert "import re" not in path.read_text(encoding="utf-8"), f"move {path}'s patterns out"
                    continue
                relative = path.relative_to(base).with_suffix("")
                parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
                yield ".".join(parts), path
            break


class _Collector(ast.NodeVisitor):
    """Finds pattern literals and the methods called on named patterns in one module."""

    def __init__(self, module_name: str, namespace: dict[str, Any]) -> None:
        self.module_name = module_name
        self.namespace = namespace
        self.literal_calls: list[tuple[re.Pattern[Any], str, int]] = []
        self.dynamic: list[tuple[str, int]] = []  # (function, line) of patterns we cannot evaluate
        self.method_calls: list[tuple[str, str]] = []  # (name the pattern is bound to, method)
        self._function = "<module>"

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self._function = self._function, node.name
        self.generic_visit(node)
        self._function = outer

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "re":
                if func.attr in METHODS | {"compile"} and node.args:
                    self._literal(node, func.attr)
            elif func.attr in METHODS:
                bound = (
                    receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
                )
                if bound:
                    self.method_calls.append((bound, func.attr))
        self.generic_visit(node)

    def _literal(self, node: ast.Call, function: str) -> None:
        flags_node = node.args[1] if function == "compile" and len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "flags":
                flags_node = keyword.value
        try:
            source = eval(compile(ast.Expression(node.args[0]), self.module_name, "eval"), self.namespace)
            flags = eval(compile(ast.Expression(flags_node), "", "eval"), self.namespace) if flags_node else 0
            pattern = re.compile(source, flags)
        except Exception:  # a local variable or a call result: only the test's table can name it
            self.dynamic.append((self._function, node.lineno))
            return
        self.literal_calls.append((pattern, function, node.lineno))


def collect() -> tuple[list[FoundPattern], list[tuple[DynamicSite, int]]]:
    """Every pattern of the shipped package and the local tools, with the methods called on it."""
    by_key: dict[tuple[str | bytes, int], FoundPattern] = {}
    bound_names: dict[str, list[FoundPattern]] = {}
    method_calls: list[tuple[str, str]] = []
    dynamic: list[tuple[DynamicSite, int]] = []

    def found(pattern: re.Pattern[Any], site: Site) -> FoundPattern:
        entry = by_key.setdefault((pattern.pattern, pattern.flags), FoundPattern(pattern))
        entry.sites.append(site)
        return entry

    for module_name, path in modules():
        module = importlib.import_module(module_name)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and _defined_here(tree, name):
                bound_names.setdefault(name, []).append(found(value, Site(module_name, _line_of(tree, name))))
        collector = _Collector(module_name, vars(module))
        collector.visit(tree)
        for pattern, function, line in collector.literal_calls:
            entry = found(pattern, Site(module_name, line))
            if function != "compile":
                entry.methods.add(function)
        dynamic.extend((DynamicSite(module_name, function), line) for function, line in collector.dynamic)
        method_calls.extend(collector.method_calls)
    for bound, method in method_calls:
        for entry in bound_names.get(bound, []):
            entry.methods.add(method)
    patterns = list(by_key.values())
    for entry in patterns:
        if not entry.methods:  # passed around by value: every method could be called on it
            entry.methods = set(METHODS)
    return patterns, dynamic


def _defined_here(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for node in tree.body
    )


def _line_of(tree: ast.Module, name: str) -> int:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.lineno
    return 0


# --- adversarial inputs ---------------------------------------------------------------------------------
def named_characters(pattern: re.Pattern[Any]) -> tuple[str, list[str]]:
    """The characters a pattern mentions (literals, class members and ends of ranges, representatives
    of ``\\d \\s \\w``), and the literal text a match must start with, when there is one."""
    source = pattern.pattern.decode("latin-1") if isinstance(pattern.pattern, bytes) else pattern.pattern
    tree = sre_parse.parse(
        source, pattern.flags & ~re.UNICODE if isinstance(pattern.pattern, bytes) else pattern.flags
    )
    chars: dict[str, None] = dict.fromkeys(BASE_CHARS)
    _walk(tree, chars)
    return "".join(chars), _leading_literals(tree)


def _walk(items: Iterable[Any], chars: dict[str, None]) -> None:
    for op, value in items:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL"):
            chars[chr(value)] = None
        elif name == "RANGE":
            low, high = value
            chars.update(dict.fromkeys(chr(c) for c in {low, (low + high) // 2, high}))
        elif name == "CATEGORY":
            chars.update(dict.fromkeys(_CATEGORY_CHARS.get(str(value), "")))
        elif name == "IN":
            _walk(value, chars)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _walk(value[2], chars)
        elif name == "SUBPATTERN":
            _walk(value[3], chars)
        elif name == "ATOMIC_GROUP":
            _walk(value, chars)
        elif name == "BRANCH":
            for branch in value[1]:
                _walk(branch, chars)
        elif name in ("ASSERT", "ASSERT_NOT"):
            _walk(value[1], chars)
        elif name == "GROUPREF_EXISTS":
            _walk(value[1], chars)
            if value[2] is not None:
                _walk(value[2], chars)
    chars.pop(FAILING_TAIL, None)


def _leading_literals(tree: Any) -> list[str]:
    """Prefixes that get a match past its start: the leading literal run (``:``, ``# ``, ``|``), and
    for a leading branch or class the first literal of each alternative."""
    prefix = ""
    for op, value in tree:
        name = str(op)
        if name == "LITERAL":
            prefix += chr(value)
        elif name in ("AT", "ASSERT_NOT", "ASSERT") and not prefix:
            continue
        else:
            if name == "BRANCH" and not prefix:
                return [p for branch in value[1] for p in _leading_literals(branch)[:1] if p]
            if name == "SUBPATTERN" and not prefix:
                return _leading_literals(value[3])
            break
    return [prefix] if prefix else []


def adversarial_inputs(pattern: re.Pattern[Any]) -> Iterator[tuple[str, Callable[[int], str]]]:
    """(label, build(n)) for runs of each named character and of each pair, alone and after each
    prefix; and runs of each prefix, alone and followed by each character (``<meta`` repeated: every
    start of a match then scans to the end)."""
    chars, prefixes = named_characters(pattern)
    units = list(chars) + [a + b for a, b in itertools.permutations(chars, 2) if a < b]
    units += [prefix + tail for prefix in prefixes for tail in ["", *chars]]
    for prefix in ["", *prefixes]:
        for unit in units:
            yield (
                f"{prefix!r} + {unit!r} * n + tail",
                lambda n, unit=unit, prefix=prefix: prefix + unit * (n // len(unit)) + FAILING_TAIL,
            )


# --- timing ---------------------------------------------------------------------------------------------
SMALL = 1_500
LARGE = 4 * SMALL
# Below this at LARGE characters a call is linear whatever the ratio says (linear work on 6,000
# characters takes well under a millisecond; the patterns this replaced took 28 ms to 1.2 s).
FLOOR_SECONDS = 0.005
# Four times the input: linear work takes about 4x as long, quadratic 16x.
MAX_RATIO = 8.0
# Timings measured again before a pattern is called super-linear (``_confirmed``).
CONFIRMATIONS = 3


@dataclass(frozen=True)
class Growth:
    label: str
    method: str
    small: float
    large: float

    @property
    def ratio(self) -> float:
        return self.large / max(self.small, 1e-6)


def _call(pattern: re.Pattern[Any], method: str, text: Any) -> None:
    if method in ("sub", "subn"):
        getattr(pattern, method)(text[:0], text)
    elif method == "finditer":
        for _ in pattern.finditer(text):
            pass
    else:
        getattr(pattern, method)(text)


def _best_time(pattern: re.Pattern[Any], method: str, text: Any, runs: int) -> float:
    """The least CPU time of this thread over ``runs`` calls: other processes' load does not count."""
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        _call(pattern, method, text)
        best = min(best, time.thread_time() - start)
    return best


def _methods_to_time(methods: set[str]) -> list[str]:
    """One scanning method stands for all (they try the pattern at every position alike) and is timed
    even when the code only anchors the pattern today (the next caller may search with it), plus the
    anchored ones the code calls."""
    scanning = sorted(methods & SCANNING) or ["search"]
    return ["sub" if "sub" in scanning else scanning[0]] + [m for m in ("match", "fullmatch") if m in methods]


def super_linear(found: FoundPattern) -> Growth | None:
    """The first input on which a method of the pattern grows clearly faster than the input."""
    as_bytes = isinstance(found.pattern.pattern, bytes)
    for label, build in adversarial_inputs(found.pattern):
        small_text: Any = build(SMALL)
        large_text: Any = build(LARGE)
        if as_bytes:
            small_text = small_text.encode("utf-8")
            large_text = large_text.encode("utf-8")
        for method in _methods_to_time(found.methods):
            large = _best_time(found.pattern, method, large_text, 1)
            if large < FLOOR_SECONDS:
                continue
            large = min(large, _best_time(found.pattern, method, large_text, 2))
            small = _best_time(found.pattern, method, small_text, 3)
            growth = Growth(label, method, small, large)
            if large >= FLOOR_SECONDS and growth.ratio > MAX_RATIO:
                growth = _confirmed(found.pattern, growth, small_text, large_text)
                if growth.large >= FLOOR_SECONDS and growth.ratio > MAX_RATIO:
                    return growth
    return None


def _confirmed(pattern: re.Pattern[Any], first: Growth, small_text: Any, large_text: Any) -> Growth:
    """The growth measured again, both sizes in turn, best of each: a pause of the machine (a loaded CI
    runner) inflates one timing once, while a super-linear pattern is as slow every time."""
    small, large = first.small, first.large
    for _ in range(CONFIRMATIONS):
        small = min(small, _best_time(pattern, first.method, small_text, 3))
        large = min(large, _best_time(pattern, first.method, large_text, 1))
    return Growth(first.label, first.method, small, large)
