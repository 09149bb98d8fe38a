"""The layout's rules, read from the code's own imports (ast, no importing): who may import whom, no cycles.

Every import counts, those inside functions included: a function-level import is still an arrow between the
modules, and one that closes a cycle only moves the failure from import time to the first call. Only imports
under `if TYPE_CHECKING:` are left out of every check here: they never run (annotations alone need them, and
with `from __future__ import annotations` nothing evaluates those), so they close no cycle and load nothing.

The packages stand on floors, each importing only those below it (FLOORS): runstore (the run folder, the
contract between training and the page), then runwriters (the run store, TensorBoard and W&B writers and
their wrappers, for the engine and the client alike), then settings (what the page and training both read
before a run exists: task settings and the task registry, populations, sweeps, datasets on disk, the run
queue), then training, then jaxdash (the namespace users import, which re-exports training's Task API), then
the page. runstore, runwriters, settings and components import no JAX and no Streamlit (FORBIDDEN);
components are pure figure builders. The page imports neither training nor jaxdash (their modules load JAX):
whatever it needs of them is in settings.
The page never imports JAX: checked by importing what `streamlit run` serves and drawing the New run page.
runstore.run_folder owns the run folder's names: no module, test or benchmark outside it spells one, artifacts/
sub-layout included (RunFolder and its constants are the way in; SPELLED_ON_PURPOSE lists the exceptions).
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

from runstore import run_folder

ROOT = Path(__file__).resolve().parent.parent
# Floor by floor, lowest first: a package imports only packages on lower floors (components, runwriters and
# settings, side by side, never import each other).
FLOORS = ("runstore", "runwriters", "components", "settings", "training", "jaxdash", "dashboard")
PACKAGES = FLOORS
FORBIDDEN = {
    "runstore": (
        "runwriters",
        "training",
        "dashboard",
        "components",
        "jaxdash",
        "jax",
        "flax",
        "optax",
        "streamlit",
        "tensorboardX",
        "wandb",
    ),  # runstore holds files only: no TensorBoard writer, no network client
    "runwriters": ("settings", "training", "dashboard", "components", "jaxdash", "jax", "flax", "optax", "streamlit"),
    "components": ("runwriters", "settings", "training", "dashboard", "jaxdash", "jax", "streamlit"),
    "settings": (
        "runwriters",
        "components",
        "training",
        "dashboard",
        "jaxdash",
        "jax",
        "flax",
        "optax",
        "streamlit",
        "tensorboardX",
        "wandb",
    ),  # the page imports it: no JAX, and nothing of training's
    "training": ("dashboard", "components", "jaxdash", "streamlit"),
    "jaxdash": ("dashboard", "streamlit"),
    "dashboard": ("training", "jaxdash", "jax", "flax", "optax"),  # the page's settings come from settings/
}


def modules() -> dict[str, Path]:
    """Every module of our packages by dotted name."""
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _running_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node that can run: function bodies included, `if TYPE_CHECKING:` blocks (never run) left out."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            yield from (n for orelse in child.orelse for n in (orelse, *_running_nodes(orelse)))
            continue
        yield child
        yield from _running_nodes(child)


def imports(path: Path) -> Iterator[tuple[str, int]]:
    """(imported module or `module.name`, line) of every import of the file that can run, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    for node in _running_nodes(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from ((f"{node.module}.{a.name}", node.lineno) for a in node.names)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def import_graph(mods: dict[str, Path]) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """(module -> the modules of ours it imports, (importer, imported) -> "file:line" of its first import)."""
    graph: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for name, path in mods.items():
        graph[name] = set()
        for imported, line in imports(path):
            target = imported if imported in mods else imported.rpartition(".")[0]
            if target in mods and target != name:
                graph[name].add(target)
                where.setdefault((name, target), f"{_rel(path)}:{line}")
    return graph, where


def cycles(graph: dict[str, set[str]], where: dict[tuple[str, str], str]) -> list[tuple[set[str], list[str]]]:
    """Each import cycle (a strongly connected set of modules) with its arrows as "a -> b (file:line)"."""
    out = []
    for component in _strongly_connected(graph):
        if len(component) > 1:
            arrows = [f"{a} -> {b} ({where[a, b]})" for a in sorted(component) for b in sorted(graph[a] & component)]
            out.append((component, arrows))
    return out


def upward_arrows(mods: dict[str, Path]) -> list[str]:
    """`file:line: a imports b` for each import of a package on the same or a higher floor than its own
    package (other than itself)."""
    bad = []
    for name, path in mods.items():
        floor = FLOORS.index(name.split(".")[0])
        for imported, line in imports(path):
            top = imported.split(".")[0]
            if top in FLOORS and top != FLOORS[floor] and FLOORS.index(top) >= floor:
                bad.append(f"{_rel(path)}:{line}: {name} imports {imported}")
    return bad


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_lower_package_never_imports_a_higher_one(package: str) -> None:
    bad = []
    for name, path in modules().items():
        if name.split(".")[0] != package:
            continue
        for imported, line in imports(path):
            if imported.split(".")[0] in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert not bad, "\n".join(bad)


def test_no_upward_arrow_between_packages() -> None:
    """Each package imports only packages on lower FLOORS, function-level imports included."""
    bad = upward_arrows(modules())
    assert not bad, f"{len(bad)} upward arrows (FLOORS, lowest first: {', '.join(FLOORS)}):\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or around a loop, function-level imports included."""
    graph, where = import_graph(modules())
    found = cycles(graph, where)
    assert not found, f"{len(found)} import cycles:\n" + "\n\n".join("\n".join(arrows) for _, arrows in found)


def test_the_import_checks_see_function_level_imports(tmp_path: Path) -> None:
    """An import inside a function closes a cycle and makes an upward arrow; one under TYPE_CHECKING does not."""
    (tmp_path / "low.py").write_text("def f():\n    from high import g\n    return g\n")
    (tmp_path / "high.py").write_text(
        "from typing import TYPE_CHECKING\nimport low\nif TYPE_CHECKING:\n    import other\n"
    )
    (tmp_path / "other.py").write_text("import high\n")
    mods = {name: tmp_path / f"{name}.py" for name in ("low", "high", "other")}
    assert list(imports(mods["low"])) == [("high.g", 2)]
    graph, where = import_graph(mods)
    assert graph == {"low": {"high"}, "high": {"low"}, "other": {"high"}}
    assert cycles(graph, where) == [
        ({"high", "low"}, [f"high -> low ({mods['high']}:2)", f"low -> high ({mods['low']}:2)"])
    ]


def test_only_entry_points_at_the_top_of_training_and_dashboard() -> None:
    top = {p: sorted(f.name for f in (ROOT / p).glob("*.py")) for p in ("training", "dashboard")}
    assert len(top["training"]) <= 8 and len(top["dashboard"]) <= 5, top


# Every name run_folder gives a file or folder of a run, its artifacts/ sub-layout included.
RUN_FILE_NAMES = frozenset(
    (*run_folder.NAMES, *run_folder.RUN_FILES, run_folder.FILES, run_folder.LOGGED, *run_folder.MEDIA_KINDS)
)
# A string starting with one of these is a path inside a run folder ("artifacts/images/x.png", f"ckpt/{step}").
PATH_PREFIXES = tuple(
    f"{name}/"
    for name in (run_folder.ARTIFACTS, run_folder.CHECKPOINTS, run_folder.FILES, run_folder.TENSORBOARD,
                 run_folder.METRICS_CACHE)
)  # fmt: skip
PATH_CALLS = ("join", "joinpath", "media_dir", "artifacts_rel")  # a name given to one of these is a place
# Files that spell a run-folder name on purpose, each with why. W&B writes a folder of the same name as ours
# (WANDB_DIR/wandb/, <its run>/files/) and the tests that read W&B's own files spell W&B's names.
SPELLED_ON_PURPOSE = {
    "tests/test_layout.py": "the check's own example of an offending module",
    "tests/test_writers_wandb.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_client_wandb_contract.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_wandb_fidelity.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_wandb_curves.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_wandb_data_types.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_review_wandb.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_wandb_conformance.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_wandb_resume_rows.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_wandb_leet.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/wandb_conformance/running.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "benchmarks/wandb_conformance.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_client_console.py": "W&B's own folders: WANDB_DIR/wandb/ and a W&B run's files/",
    "tests/test_logdir_media.py": "a TensorBoard logdir's own run folder named tb/nested",
    "tests/test_safety_client_links.py": "notes_sinks given the TensorBoard logdir 'tb/linked' as a user would",
}
# Files other tasks are editing at the same time; each entry is a TODO to empty (replace the names by
# runstore.run_folder's constants).
NOT_YET_MOVED: dict[str, str] = {}


def _path_part(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether a string is joined onto a path: `x / "ckpt"`, os.path.join(..., "ckpt"), joinpath, or given to
    RunFolder.media_dir / run_folder.artifacts_rel."""
    parent = parents.get(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div):
        return True
    return isinstance(parent, ast.Call) and ast.unparse(parent.func).split(".")[-1] in PATH_CALLS


def run_file_names(path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of each run-folder name a module spells: a file name with a dot as a string of its own (a
    tuple of names, a default), a bare folder or flag name ("ckpt", "stop", "images") where it is joined onto a
    path, and a path inside a run folder ("artifacts/images/x.png", an f-string starting "ckpt/")."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.JoinedStr):  # a message, unless the f-string starts as a run-folder path
            if parent.values[0] is node and node.value.startswith(PATH_PREFIXES):
                yield node.lineno, node.value
        elif node.value.startswith(PATH_PREFIXES):
            yield node.lineno, node.value
        elif node.value in RUN_FILE_NAMES and ("." in node.value or _path_part(node, parents)):
            yield node.lineno, node.value


def _checked_files() -> list[Path]:
    """Package modules, tests and benchmarks: everything but the floor module, which owns the names."""
    paths = [*modules().values(), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    return sorted(p for p in paths if p != ROOT / "runstore" / "run_folder.py")


def run_file_offenders(paths: list[Path]) -> list[str]:
    """`file:line names "x"` for each run-folder name spelled outside runstore/run_folder.py, not allow-listed."""
    bad = []
    for path in paths:
        rel = _rel(path)
        if rel in SPELLED_ON_PURPOSE or rel in NOT_YET_MOVED or rel == "runstore/run_folder.py":
            continue
        bad += [f"{rel}:{line} names {name!r}" for line, name in run_file_names(path)]
    return bad


def test_only_the_floor_names_a_run_file() -> None:
    """Every module, test and benchmark reaches a run's files through runstore.run_folder (RunFolder, its
    constants), never by spelling a name, artifacts/ sub-layout included."""
    bad = run_file_offenders(_checked_files())
    assert not bad, f"{len(bad)} run-folder names spelled; use runstore.run_folder's constants:\n" + "\n".join(bad)


def test_every_allow_listed_file_exists_and_says_why() -> None:
    """The allowlist names real files, each with a reason (a stale entry would hide a new offender)."""
    for rel, why in {**SPELLED_ON_PURPOSE, **NOT_YET_MOVED}.items():
        assert (ROOT / rel).is_file() and why.strip(), rel


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
        "e = RunFolder(d).artifacts / 'histograms'\n"
        "f = f'artifacts/images/{tag}.png'\n"
        "g = RunFolder(d).media_dir('tables')\n"
        "h = 'files/' + name\n"
        "kinds = {'images': 1}\n"
    )
    assert [line for line, _ in run_file_names(module)] == [2, 3, 4, 5, 8, 9, 10, 11]


HEAVY = ("jax", "flax", "optax")
# Imports what `streamlit run` serves, draws New run (both built-in tasks' forms, a rule of each checked on
# Start, the command a launch would run), then prints which modules of HEAVY, training and jaxdash it holds.
PAGE_SCRIPT = """
import json, sys
from pathlib import Path
import dashboard.server_app
from dashboard.processes import launcher
from settings.config import parse_config
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
print(json.dumps({"drawn": drawn, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(%r)),
                  "training": sorted(m for m in sys.modules if m.split(".")[0] in ("training", "jaxdash"))}))
"""


def test_the_page_never_imports_jax(tmp_path: Path) -> None:
    """The server app and the New run page (forms, checks, the launch command) import no jax, flax or optax, and
    no module of training or jaxdash (imports by name at run time included: the built-in tasks' settings)."""
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
    assert result["training"] == [], f"the page imported {result['training']} (its settings are in settings/)"
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


JS_IN_TEXT = ("export default", "createElement(", "addEventListener(", "=> {", "function (")


def test_the_browser_code_lives_in_js_files() -> None:
    """No module of the page holds JavaScript in a string: each component's module is a file under
    dashboard/panels/static/ (js_modules), and what differs between elements comes in their data."""
    found = []
    for path in sorted((ROOT / "dashboard").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {m!r}" for m in JS_IN_TEXT if m in node.value]
    assert not found, "JavaScript in a Python string:\n" + "\n".join(found)
