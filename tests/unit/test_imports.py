"""The package's import graph, read from the source: every import counts, at module level or inside a function."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
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


PURE_LAYERS = ("core", "figures", "config")  # no Hydra, no SDK, no files, no network: logic a test can call alone
FORBIDDEN_LIBRARIES = ("hydra", "omegaconf", "openai", "httpx", "httpx2", "diskcache", "redis", "jinja2", "tenacity")
EDGE_PACKAGES = ("io", "cache", "engine", "backends", "cli", "report", "batch", "devserver", "review")
EDGE_MODULES = ("run", "check", "aggregate", "audit")


def pure_modules(package: Path) -> list[str]:
    """Every module of the pure layers, found on disk, so a new module is checked without an edit here."""
    root = package.parent
    found = []
    for layer in PURE_LAYERS:
        for path in sorted((package / layer).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def forbidden_after_import(modules: list[str], src: Path) -> dict[str, list[str]]:
    """For each module, imported alone in a fresh interpreter from `src`: the forbidden modules it loaded."""
    probe = (
        "import importlib, json, sys\nimportlib.import_module(sys.argv[1])\nprint(json.dumps(sorted(sys.modules)))\n"
    )
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
            if name.split(".")[0] in FORBIDDEN_LIBRARIES or any(name == e or name.startswith(e + ".") for e in edge)
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
