"""The package's import graph, read from the source: every import counts, at module level or inside a function."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


# The packages from the bottom up (a top-level module such as run.py is a package of its own, "(root)" the
# package's __init__): a package imports only packages below it. docs/development.md lists the same order.
LAYERS = (
    "conf", "core", "process", "config", "figures", "io", "backends", "cache", "batch", "report", "engine",
    "review", "runs", "devserver", "aggregate", "compare", "check", "cli", "run", "api", "audit", "commands",
    "(root)",
)  # fmt: skip
DOCS = PACKAGE.parents[1] / "docs" / "development.md"


def package_of(module: str) -> str:
    """judgebias.figures.paired -> figures; judgebias.check -> check; judgebias -> (root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def package_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Each import between two packages, with the module imports behind it."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for source, targets in graph.items():
        for target in targets:
            pair = (package_of(source), package_of(target))
            if pair[0] != pair[1]:
                edges.setdefault(pair, []).append((source, target))
    return edges


def against_the_layers(graph: dict[str, set[str]], layers: tuple[str, ...]) -> list[str]:
    """Every import that runs up (or sideways) against the layer order, or from or to a package it does not name."""
    rank = {name: i for i, name in enumerate(layers)}
    problems = []
    for (source, target), imports in sorted(package_edges(graph).items()):
        if source not in rank or target not in rank:
            problems.append(f"{source} -> {target}: a package missing from the layer order")
        elif rank[target] >= rank[source]:
            problems.append(f"{source} -> {target} runs up the layers ({imports[0][0]} imports {imports[0][1]})")
    return problems


def test_every_import_between_packages_runs_down_the_layers() -> None:
    """No package imports a package above it; so no two packages import each other either."""
    assert [] == against_the_layers(import_graph(), LAYERS)
    packages = {package_of(name) for name in import_graph()}
    assert packages == set(LAYERS), packages ^ set(LAYERS)


def test_the_layer_check_fails_on_a_planted_upward_import() -> None:
    """io importing report (the summary writer once did) is found, named with the module import behind it."""
    graph = import_graph()
    graph["judgebias.io.files"] = graph["judgebias.io.files"] | {"judgebias.report.pages"}
    assert ["io -> report runs up the layers (judgebias.io.files imports judgebias.report.pages)"] == (
        against_the_layers(graph, LAYERS)
    )


def test_the_documented_layer_order_is_the_one_checked() -> None:
    """docs/development.md states the order this file checks, word for word."""
    documented = DOCS.read_text(encoding="utf-8").split("Layers, from the bottom up:", 1)[1].split(".", 1)[0]
    assert list(LAYERS) == [name.strip(" `\n") for name in documented.replace("\n", " ").split(",")]


@pytest.mark.parametrize("command", ["judgebias.check", "judgebias.aggregate", "judgebias.compare"])
def test_the_gate_the_sweep_table_and_compare_load_no_hydra(command: str) -> None:
    """The commands a CI job runs after the judging start without Hydra or OmegaConf (the sweep callback that
    needs them lives in cli/)."""
    loaded = forbidden_after_import([command], PACKAGE.parent, forbidden=("hydra", "omegaconf"), edge=())
    assert {} == loaded


PURE_LAYERS = ("core", "figures", "config")  # no Hydra, no SDK, no files, no network: logic a test can call alone
FORBIDDEN_LIBRARIES = ("hydra", "omegaconf", "openai", "httpx", "httpx2", "diskcache", "redis", "jinja2", "tenacity")
EDGE_PACKAGES = ("io", "cache", "engine", "backends", "cli", "report", "batch", "devserver", "review", "process")
EDGE_MODULES = ("run", "check", "aggregate", "audit", "compare", "runs")


def pure_modules(package: Path) -> list[str]:
    """Every module of the pure layers, found on disk, so a new module is checked without an edit here."""
    root = package.parent
    found = []
    for layer in PURE_LAYERS:
        for path in sorted((package / layer).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def forbidden_after_import(
    modules: list[str],
    src: Path,
    forbidden: tuple[str, ...] = FORBIDDEN_LIBRARIES,
    edge: tuple[str, ...] | None = None,
) -> dict[str, list[str]]:
    """For each module, imported alone in a fresh interpreter from `src`: the forbidden modules it loaded (libraries
    in `forbidden`, judgebias modules under `edge`: by default the I/O packages and commands)."""
    probe = (
        "import importlib, json, sys\nimportlib.import_module(sys.argv[1])\nprint(json.dumps(sorted(sys.modules)))\n"
    )
    if edge is None:
        edge = tuple(f"judgebias.{name}" for name in (*EDGE_PACKAGES, *EDGE_MODULES))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | {"PYTHONPATH": str(src)}
    found: dict[str, list[str]] = {}
    for module in modules:
        result = subprocess.run(
            [sys.executable, "-c", probe, module], env=env, capture_output=True, text=True, check=True
        )
        loaded = json.loads(result.stdout)
        bad = [
            name
            for name in loaded
            if name.split(".")[0] in forbidden or any(name == e or name.startswith(e + ".") for e in edge)
        ]
        if bad:
            found[module] = bad
    return found


def test_the_pure_layers_load_no_hydra_sdk_or_io_code() -> None:
    """Each module of core/, figures/ and config/, imported alone, loads no Hydra, SDK, store or I/O package."""
    modules = pure_modules(PACKAGE)
    assert len(modules) >= 15
    assert {} == forbidden_after_import(modules, PACKAGE.parent)


def test_the_purity_check_fails_on_a_planted_violation(tmp_path: Path) -> None:
    """A copy of the package with `import omegaconf` planted in one core module fails the check above."""
    copy = tmp_path / "src" / "judgebias"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    planted = copy / "core" / "tokens.py"
    planted.write_text(planted.read_text(encoding="utf-8") + "\nimport omegaconf  # planted\n", encoding="utf-8")
    found = forbidden_after_import(["judgebias.core.tokens", "judgebias.core.item"], copy.parent)
    assert ["judgebias.core.tokens"] == list(found)
    assert "omegaconf" in found["judgebias.core.tokens"]
