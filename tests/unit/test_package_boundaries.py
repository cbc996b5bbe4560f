"""Package boundaries, read from the source (every import, including those inside functions and under
TYPE_CHECKING): the shipped ``winnow`` package never reaches the handlers, the local tools or the test
doubles; ``ports`` depends on the models alone; search and ingest ask ``winnow.index`` which collection
to use, never reconcile; the search, answer and conversation cores never import the API's edge or models;
no two packages import each other, and no two modules either."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "winnow": ROOT / "layers" / "shared" / "winnow",
    "winnow_local": ROOT / "winnow_local",
    "winnow_fakes": ROOT / "winnow_fakes",
    "functions": ROOT / "functions",
}
OURS = (*SOURCES, "tests", "benchmarks", "training")


def _module_name(package: str, path: Path) -> str:
    parts = [package, *path.relative_to(SOURCES[package]).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every module name an ``import`` or ``from ... import`` names, relative imports resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            # ``from winnow_local.cli import demo`` imports the module winnow_local.cli.demo
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Module → the modules of ours it imports (names that are not modules, like classes, dropped)."""
    files = {
        _module_name(package, path): path
        for package, folder in SOURCES.items()
        for path in folder.rglob("*.py")
        if "__pycache__" not in path.parts
    }
    graph: dict[str, frozenset[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = _imports(tree, module, path.name == "__init__.py")
        graph[module] = frozenset(name for name in names if name in files and name != module)
    return graph


def _top(module: str) -> str:
    return module.split(".")[0]


def _package(module: str) -> str:
    """The unit the package graph is drawn between: a subpackage (``winnow_local.cli.main`` →
    ``winnow_local.cli``), else the module itself (``winnow.factory``, ``winnow_local.runtime``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_the_graph_sees_imports_inside_functions() -> None:
    # Given the CLI, which imports the HTTP server only when `winnow serve` runs
    # Then the graph has that edge: a check blind to lazy imports would pass anything
    assert "winnow_local.web.server" in import_graph()["winnow_local.cli.main"]


def test_the_shipped_package_imports_nothing_outside_itself() -> None:
    # Given every module of the layer's winnow package
    # Then none of them imports a handler, a local-only tool, a test double, a test or a benchmark
    leaks = {
        module: sorted(name for name in imported if _top(name) != "winnow")
        for module, imported in import_graph().items()
        if _top(module) == "winnow" and any(_top(name) != "winnow" for name in imported)
    }
    assert leaks == {}


@pytest.mark.parametrize("folder", ["local", "testing"])
def test_no_local_only_code_is_left_in_the_shipped_package(folder: str) -> None:
    assert not (SOURCES["winnow"] / folder).exists()
    assert not list(SOURCES["winnow"].glob("cli*.py"))
    assert not (SOURCES["winnow"] / "__main__.py").exists()


def test_the_embedded_defaults_adapters_live_with_the_local_tools() -> None:
    # Given the adapters the composition root finds through the winnow.embedded entry points
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    targets = {name: value.split(":")[0] for name, value in declared["winnow.embedded"].items()}
    # Then each is a module of the local tools, so the Lambda layer (the winnow package) has none
    graph = import_graph()
    assert {name: module for name, module in targets.items() if _top(module) != "winnow_local"} == {}
    assert all(module in graph for module in targets.values())


def test_ports_depend_on_the_models_alone() -> None:
    # The exceptions module is the models' sibling: both are leaves that import nothing of ours.
    graph = import_graph()
    assert graph["winnow.ports"] <= {"winnow.models", "winnow.errors"}
    assert graph["winnow.models"] == frozenset()
    assert graph["winnow.errors"] == frozenset()


def test_the_test_doubles_stand_alone() -> None:
    # The fakes speak HTTP to our real adapters; they must not lean on the code they stand in for.
    leaks = {
        module: sorted(imported)
        for module, imported in import_graph().items()
        if _top(module) == "winnow_fakes" and any(_top(name) != "winnow_fakes" for name in imported)
    }
    assert leaks == {}


def package_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        for name in imported:
            if _package(name) != _package(module):
                edges.setdefault(_package(module), set()).add(_package(name))
    return edges


def test_no_two_packages_import_each_other() -> None:
    # Given the graph between packages (winnow_local.cli, winnow_local.web, winnow.search, functions, ...)
    edges = package_edges()
    # Then it has no cycle
    assert _cycle(edges) is None


def test_no_module_cycle_lazy_imports_included() -> None:
    # Given every import of every module, those inside functions and under TYPE_CHECKING included
    edges = {module: set(imported) for module, imported in import_graph().items()}
    # Then no module reaches itself: each can be read (and imported) after the ones it names
    assert _cycle(edges) is None


@pytest.mark.parametrize("package", ["winnow.search", "winnow.ingest"])
def test_reads_and_writes_ask_the_index_not_reconcile(package: str) -> None:
    # Which collection serves reads and which take writes is winnow.index's answer; reconcile only
    # moves the pointer, so the request paths never import it
    reaching = {
        module: sorted(name for name in imported if _package(name) == "winnow.reconcile")
        for module, imported in import_graph().items()
        if _package(module) == package
    }
    assert {module: names for module, names in reaching.items() if names} == {}


def _reaching(package: str, forbidden: set[str]) -> dict[str, list[str]]:
    """The modules of ``package`` that import one of the ``forbidden`` packages, with what they import."""
    reaching = {
        module: sorted(name for name in imported if _package(name) in forbidden)
        for module, imported in import_graph().items()
        if _package(module) == package
    }
    return {module: names for module, names in reaching.items() if names}


def test_the_search_core_keeps_its_own_types() -> None:
    # The routes map the API's request models to the core's query (winnow.search.query); the core
    # never reads the HTTP edge, its models or the routes
    assert _reaching("winnow.search", {"winnow.api", "winnow.handlers"}) == {}


@pytest.mark.parametrize("package", ["winnow.answer", "winnow.conversations"])
def test_the_answer_and_conversation_services_keep_their_own_types(package: str) -> None:
    # The routes map /answer's request model to the core's question (winnow.answer.question) and pass
    # the conversation id on its own; the services never read the HTTP edge, its models or the routes
    assert _reaching(package, {"winnow.api", "winnow.handlers"}) == {}


def test_the_api_edge_builds_nothing() -> None:
    # The edge and its models are leaves for the routes: they never build services nor reach a route
    assert _reaching("winnow.api", {"winnow.factory", "winnow.handlers"}) == {}


def test_the_check_sees_an_import_it_forbids() -> None:
    # Given the routes, which do import the edge, then the check above would name them
    assert "winnow.handlers.search" in _reaching("winnow.handlers", {"winnow.api"})


def test_the_composition_root_wires_the_lifecycle_it_does_not_keep_it() -> None:
    # The factory builds the index lifecycle and the reconciler; the pointer cache, the transition
    # store and the rebuild's components live in winnow.index
    graph = import_graph()
    assert "winnow.index" in graph["winnow.factory"]
    assert {name for name in graph["winnow.factory"] if _package(name) == "winnow.reconcile"} <= {
        "winnow.reconcile.service"
    }


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None
