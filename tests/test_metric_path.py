"""The path of a metric in docs/architecture.md matches the code: at most 10 files from `run.log` to the pixel,
none twice, every name it gives defined where it says (read with ast, nothing imported)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOREIGN = ("jax", "Plotly", "lax", "Task")  # names of other libraries, or the user's task
STEP = re.compile(r"^(\d+)\. `([\w/]+\.(?:py|js))`: (.*)$")
JS_FILE = re.compile(r"`((?:[\w]+/)*[\w]+\.js)`")  # a browser file the path names, e.g. `static/chart/feed.js`
JS_ROOTS = ("", "dashboard/panels/")  # where such a path starts: the repository or the panels' folder


def _section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("The path of a metric, from a script's `run.log`")
    end = text.find("\n## ", start)  # the section runs to the next heading
    return text[start : end if end >= 0 else len(text)]


def _steps() -> list[tuple[int, str, str]]:
    """(number, file, text) of each numbered step; a step's text runs on over its indented lines."""
    steps: list[tuple[int, str, str]] = []
    for line in _section().splitlines():
        found = STEP.match(line)
        if found:
            steps.append((int(found[1]), found[2], found[3]))
        elif steps and line.startswith(" "):
            number, path, text = steps[-1]
            steps[-1] = (number, path, text + " " + line.strip())
    return steps


def _js_defined(source: str) -> set[str]:
    """A JavaScript file's functions, classes and `Class.method` for the methods of its classes (two-space
    indented `class`, four-space indented methods: the layout of dashboard/panels/static/)."""
    names = set(re.findall(r"\bfunction (\w+)\(", source)) | set(re.findall(r"\bclass (\w+)", source))
    cls = None
    for line in source.splitlines():
        found = re.match(r"^\s*class (\w+)", line)
        if found:
            cls = found[1]
        elif cls and (method := re.match(r"^    (?:async )?(\w+)\([^)]*\) \{", line)):
            names.add(f"{cls}.{method[1]}")
    return names


def _defined(path: Path) -> set[str]:
    """Names a module defines or imports, `Class.method` for its classes' functions and properties, and the
    functions of the JavaScript it holds; for a JavaScript file, `_js_defined`."""
    source = path.read_text()
    if path.suffix == ".js":
        return _js_defined(source)
    tree = ast.parse(source, str(path))
    names = set(re.findall(r"\bfunction (\w+)\(", source))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{f.name}" for f in node.body if isinstance(f, ast.FunctionDef)}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def _named_js() -> tuple[list[Path], list[str]]:
    """The JavaScript files the path names (found, and the names of those not found)."""
    found, missing = [], []
    for name in sorted(set(JS_FILE.findall(_section()))):
        paths = [ROOT / start / name for start in JS_ROOTS if (ROOT / start / name).is_file()]
        (found.extend(paths[:1]) if paths else missing.append(name))
    return found, missing


def _module_names() -> dict[str, set[Path]]:
    """Each module's last name (`atomic`, `rows_out`) -> its files."""
    out: dict[str, set[Path]] = {}
    for pkg in ("jaxdash", "training", "runstore", "dashboard", "components"):
        for path in (ROOT / pkg).rglob("*.py"):
            out.setdefault(path.stem, set()).add(path)
    return out


def test_the_path_walks_the_client_to_the_pixel_in_ten_files_or_fewer() -> None:
    steps = _steps()
    assert [n for n, _, _ in steps] == list(range(1, len(steps) + 1)), steps
    files = [path for _, path, _ in steps]
    assert 2 <= len(files) <= 10, files
    assert len(set(files)) == len(files), f"a file comes twice: {files}"
    assert files[0] == "jaxdash/client.py" and "run.log" in _section()
    missing = [f for f in files if not (ROOT / f).is_file()] + _named_js()[1]
    assert not missing, f"no such file: {missing}"


def test_every_name_on_the_path_is_in_the_code() -> None:
    """Each `Name`, `Class.method` or `module.name` of a step is defined in its file, another step's, or that module."""
    steps = _steps()
    step_files = [ROOT / path for _, path, _ in steps] + _named_js()[0]
    known = set().union(*(_defined(p) for p in step_files))
    modules = _module_names()
    bad = []
    for number, path, text in steps:
        for name in re.findall(r"`([A-Za-z_][\w.]*)`", text):
            head, _, rest = name.partition(".")
            if head in FOREIGN or name.endswith((".jsonl", ".json", ".py", ".js")):
                continue
            if name in known or (not rest and head in modules):
                continue
            if rest and any(rest in _defined(p) for p in modules.get(head, ())):
                continue  # module.name, e.g. atomic.column_lines
            bad.append(f"step {number} ({path}): `{name}`")
    assert not bad, "names the code does not have:\n" + "\n".join(bad)
