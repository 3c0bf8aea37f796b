"""The package's shape: no import circle, Prefect only in flows/tasks/deployments, nothing imports bench."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# where each shipped package lives in the checkout (pyproject's package-dir)
PACKAGE_DIRS = {
    "engram": ROOT / "engram",
    "engram.flows": ROOT / "flows",
    "engram.tasks": ROOT / "tasks",
    "engram.deployments": ROOT / "deployments",
}
PREFECT_ALLOWED = ("engram.flows", "engram.tasks", "engram.deployments")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if package == "engram" and parts and parts[0] in {"flows", "tasks", "deployments"}:
                continue
            found[name] = path
    return found


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every engram module a file imports, at any depth (function-level imports count too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:
                    out.add(sub)
                elif node.module in modules:
                    out.add(node.module)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, set(modules)) - {name} for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_circle() -> None:
    assert _cycles(_graph()) == []


def test_only_flows_tasks_and_deployments_import_prefect() -> None:
    offenders = []
    for name, path in _modules().items():
        if name.startswith(PREFECT_ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                if any(n == "prefect" or n.startswith("prefect.") for n in names):
                    offenders.append(name)
    assert offenders == []


def test_shipped_code_never_imports_bench_or_top_level_flows() -> None:
    offenders = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            mods = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(m.split(".")[0] in {"bench", "flows", "tasks", "deployments"} for m in mods):
                offenders.append(name)
    assert offenders == []


# The parts of engram stack one way (README, Layout): a part imports only parts at its level or below.
LEVEL = {
    "errors": 0, "settings": 0, "arrays": 0, "priority": 0, "decay": 0, "prefect_env": 0, "clock": 1, "config_table": 1, "text": 1, "store": 2, "embed": 3, "llm": 3,
    "archive": 3, "index": 3, "consolidate": 4, "erase": 4, "query": 4, "thoughtdb": 4, "tasks": 5, "flows": 6, "cli": 6, "mcp": 6, "demo": 6,
    "deployments": 7,
}


def test_parts_import_only_their_level_or_below() -> None:
    def part(module: str) -> str | None:
        pieces = module.split(".")
        return pieces[1] if len(pieces) > 1 else None

    upward = [
        (m, d) for m, deps in _graph().items() for d in deps
        if part(m) and part(d) and LEVEL[part(d)] > LEVEL[part(m)]
    ]
    assert upward == []


def test_query_and_consolidate_do_not_import_each_other() -> None:
    """Both stand on engram.index (the search index) and engram.decay; neither reaches into the other."""
    def part(module: str) -> str | None:
        pieces = module.split(".")
        return pieces[1] if len(pieces) > 1 else None

    across = [
        (m, d) for m, deps in _graph().items() for d in deps
        if {part(m), part(d)} == {"query", "consolidate"}
    ]
    assert across == []
