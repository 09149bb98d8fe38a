"""The layout's rules, read from the code's own imports (ast, no importing): who may import whom, no cycles.

runstore is the contract between training and the page: it imports neither of them, nor JAX nor
Streamlit. components are pure figure builders: no Streamlit. training never imports the page.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runstore", "training", "dashboard", "components", "jaxdash")
FORBIDDEN = {
    "runstore": ("training", "dashboard", "components", "jaxdash", "jax", "flax", "optax", "streamlit"),
    "components": ("training", "dashboard", "jaxdash", "jax", "streamlit"),
    "training": ("dashboard", "components", "streamlit"),
    "jaxdash": ("dashboard", "streamlit"),
}


def modules() -> dict[str, Path]:
    """Every module of our packages by dotted name."""
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _import_time_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes that run when the module is imported: not function bodies, not `if TYPE_CHECKING:` blocks."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            continue
        yield child
        yield from _import_time_nodes(child)


def imports(path: Path, import_time_only: bool) -> Iterator[tuple[str, int]]:
    """(imported module or `module.name`, line) of the file's imports; those run at import time for cycles."""
    tree = ast.parse(path.read_text(), str(path))
    for node in _import_time_nodes(tree) if import_time_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from ((f"{node.module}.{a.name}", node.lineno) for a in node.names)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_lower_package_never_imports_a_higher_one(package: str) -> None:
    bad = []
    for name, path in modules().items():
        if name.split(".")[0] != package:
            continue
        for imported, line in imports(path, import_time_only=False):
            if imported.split(".")[0] in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps = set()
        for imported, _ in imports(path, import_time_only=True):
            target = imported if imported in mods else imported.rpartition(".")[0]
            if target in mods and target != name:
                deps.add(target)
        graph[name] = deps
    cycles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def test_only_entry_points_at_the_top_of_training_and_dashboard() -> None:
    top = {p: sorted(f.name for f in (ROOT / p).glob("*.py")) for p in ("training", "dashboard")}
    assert len(top["training"]) <= 8 and len(top["dashboard"]) <= 5, top


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the module graph is small, but recursion depth is not ours to spend)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                out.append(component)
    return out
