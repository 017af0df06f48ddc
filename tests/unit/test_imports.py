"""The package's import graph, read from the source: every import counts, at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import judgebias

PACKAGE = Path(judgebias.__file__).parent


def module_name(path: Path) -> str:
    """The dotted name of a module file of the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each judgebias module and the judgebias modules it imports anywhere in its body (type-checking ones too)."""
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from judgebias import output` names a module; `from judgebias.x import f` names module x.
                targets |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
        graph[name] = {target for target in targets if target in files and target != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as the list of modules along it (first repeated at the end), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_package_has_no_import_cycle() -> None:
    """No judgebias module imports, directly or through others, a module that imports it back."""
    assert None is find_cycle(import_graph())


def test_the_cycle_finder_sees_an_import_made_inside_a_function() -> None:
    """A cycle closed by a function-level import is found, so the test above cannot pass by hiding imports."""
    assert ["a", "b", "a"] == find_cycle({"a": {"b"}, "b": {"a"}})


def test_the_graph_counts_function_level_imports() -> None:
    """The registry's lazy import of the live backend is an edge of the graph."""
    assert "judgebias.backends.openai" in import_graph()["judgebias.backends"]


def test_the_pure_core_imports_nothing_from_the_edge() -> None:
    """Verdicts, parsing, prompts, metrics, statistics and the summary import no backend, cache, file or Hydra code."""
    graph = import_graph()
    edge = {"judgebias.backends", "judgebias.cache", "judgebias.io.files", "judgebias.io.output", "judgebias.run"}
    core = [
        "judgebias.core.verdict",
        "judgebias.core.parsing",
        "judgebias.core.prompt",
        "judgebias.figures.metrics",
        "judgebias.figures.stats",
    ]
    reached = {name: _reachable(graph, name) for name in [*core, "judgebias.figures.summary"]}
    assert {name: set() for name in reached} == {name: found & edge for name, found in reached.items()}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for target in graph[stack.pop()]:
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen
