"""The layout's rules, read from the code's own imports (ast, no importing): who may import whom, no cycles.

runstore is the contract between training and the page: it imports neither of them, nor JAX nor
Streamlit. components are pure figure builders: no Streamlit. training never imports the page.
The page never imports JAX: checked by importing what `streamlit run` serves and drawing the New run page.
runstore owns the run folder: no module outside it names a run file (runstore.run_folder.RunFolder is the way in).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runstore import run_folder, run_store

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


# A run folder's file names (runstore.run_folder.NAMES and the files only a training process writes).
RUN_FILE_NAMES = frozenset(run_folder.NAMES) | frozenset(run_store.RUN_FILES)
# Modules other helpers are moving onto RunFolder in parallel (issue #38); each entry is a TODO to empty.
NOT_YET_MOVED = {}


def _path_part(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether a string constant is joined onto a path: `x / "ckpt"`, os.path.join(..., "ckpt"), joinpath."""
    parent = parents.get(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div):
        return True
    return isinstance(parent, ast.Call) and ast.unparse(parent.func).split(".")[-1] in ("join", "joinpath")


def run_file_names(path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of each run file a module names: a file name with a dot anywhere as a string of its own
    (a tuple of names, a default), a bare folder or flag name ("ckpt", "stop") where it is joined onto a path."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or node.value not in RUN_FILE_NAMES:
            continue
        if isinstance(parents.get(node), ast.JoinedStr):
            continue  # part of a message
        if "." in node.value or _path_part(node, parents):
            yield node.lineno, node.value


def run_file_offenders(paths: list[Path]) -> list[str]:
    """`file:line names "x"` for each run file named by a module outside runstore/ and not allow-listed."""
    bad = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        if rel.startswith("runstore/") or rel in NOT_YET_MOVED:
            continue
        bad += [f"{rel}:{line} names {name!r}" for line, name in run_file_names(path)]
    return bad


def test_only_runstore_names_a_run_file() -> None:
    """Every module outside runstore/ reaches a run's files through runstore (RunFolder), never by name."""
    bad = run_file_offenders(sorted(modules().values()))
    assert not bad, "use runstore.run_folder.RunFolder instead:\n" + "\n".join(bad)


def test_the_run_file_check_finds_a_named_file(tmp_path: Path) -> None:
    """The check sees each way of naming a run file (not a vacuous pass), and leaves messages alone."""
    module = tmp_path / "offender.py"
    module.write_text(
        "import os\n"
        "a = run_dir / 'metrics.jsonl'\n"
        "b = os.path.join(run_dir, 'ckpt')\n"
        "FILES = ('status.json',)\n"
        "c = d / 'stop'\n"
        "msg = f'{x}: no metrics.jsonl'\n"
        "mode = status.get('wandb')\n"
    )
    assert [line for line, _ in run_file_names(module)] == [2, 3, 4, 5]


HEAVY = ("jax", "flax", "optax")
# Imports what `streamlit run` serves, draws New run (both built-in tasks' forms, a rule of each checked on
# Start, the command a launch would run), then prints which modules of HEAVY the process holds.
PAGE_SCRIPT = """
import json, sys
from pathlib import Path
import dashboard.server_app
from dashboard.processes import launcher
from training.config import parse_config
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(str(Path(dashboard.server_app.__file__).with_name("app.py")), default_timeout=120)
at.run()
drawn = [at.number_input(key="regression_points").label]
at.number_input(key="regression_lr").set_value(0.0)
at.form_submit_button[0].click().run()
drawn += [e.value for e in at.error]
at.segmented_control(key="task").set_value("mnist").run()
at.number_input(key="mnist_batch_size").set_value(100_000)
at.form_submit_button[0].click().run()
drawn += [at.selectbox(key="mnist_dataset").label] + [e.value for e in at.error]
drawn += [str(e.value) for e in at.exception]
drawn.append(launcher.build_command("mnist", parse_config("mnist", {"hidden": "64"}), Path("x"), "n", "disabled")[3])
print(json.dumps({"drawn": drawn, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(%r))}))
"""


def test_the_page_never_imports_jax(tmp_path: Path) -> None:
    """The server app and the New run page (forms, checks, the launch command) import no jax, flax or optax."""
    env = {k: v for k, v in os.environ.items() if k != "JAXDASH_TASKS"}  # the built-in tasks only
    env.update(JAXDASH_RUNS=str(tmp_path), JAXDASH_WARM_WORKER="0", WANDB_MODE="disabled")
    script = PAGE_SCRIPT % (HEAVY,)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["drawn"] == [
        "Data points",
        "Learning rate must be > 0 (got 0).",
        "Dataset",
        "Batch size must not exceed the 60000 training examples (got 100000).",  # MnistConfig.validate
        "mnist",
    ], result["drawn"]
    assert result["heavy"] == [], f"the page imported {result['heavy']}"
    assert list(tmp_path.iterdir()) == []  # nothing launched


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
