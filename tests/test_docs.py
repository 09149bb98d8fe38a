"""The documentation: the MkDocs site builds with --strict (every page, link and anchor valid), the README stays
short, no tracked file numbers the project's past work periods, and the environment-variable table in
docs/environment.md agrees with the variables the code reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200
# Where the project's code reads its variables: the packages, the scripts, the benchmarks and the tests' own.
CODE_DIRS = ("runstore", "training", "jaxdash", "dashboard", "components", "scripts", "benchmarks", "tests", ".ci")
CODE_SUFFIXES = (".py", ".sh", "")
# Made-up names the tests pass through code that forwards every JAXDASH_* variable (not variables anyone reads).
NOT_VARIABLES = {"JAXDASH_Y"}
# Wording that numbers the project's past work periods (the word session or sessions followed by a number, or an
# issue number followed by the word leftover).
HISTORY = re.compile(r"\bsessions? \d+\b|#\d+ leftover", re.IGNORECASE)
ENV_NAME = re.compile(r"\bJAXDASH_[A-Z0-9_]*[A-Z0-9]\b")


def _tracked_text_files() -> list[Path]:
    """Every file git tracks that reads as UTF-8 text (images and other binaries skipped)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for name in filter(None, names.decode().split("\0")):
        path = ROOT / name
        try:
            path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        files.append(path)
    return files


def _code_files() -> list[Path]:
    """The code files that may read an environment variable (this test excluded: it names variables itself)."""
    me = Path(__file__).resolve()
    return [
        p
        for p in _tracked_text_files()
        if p.relative_to(ROOT).parts[0] in CODE_DIRS and p.suffix in CODE_SUFFIXES and p.resolve() != me
    ]


def _env_table() -> list[tuple[str, list[str]]]:
    """(variable, [files it is read in]) for each row of docs/environment.md's table."""
    rows = []
    for line in (ROOT / "docs" / "environment.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| `") else []
        if len(cells) == 4:
            rows.append((cells[0].strip("`"), re.findall(r"`([^`]+)`", cells[3])))
    return rows


def _read_in(name: str, text: str) -> bool:
    """Whether `text` names the variable, literally or through an f-string such as "JAXDASH_{name.upper()}_MIRRORS"."""
    if re.search(rf"\b{re.escape(name)}\b", text):
        return True
    for template in re.findall(r"\b[A-Z][A-Z0-9_]*\{[^}]*\}[A-Z0-9_]*", text):
        pattern = "".join(
            "[A-Z0-9_]+" if part.startswith("{") else re.escape(part) for part in re.split(r"(\{[^}]*\})", template)
        )
        if re.fullmatch(pattern, name):
            return True
    return False


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """`mkdocs build --strict`: a broken link, a missing page or anchor, or a page left out of nav fails it."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # the theme's banner about its successor
    )
    assert done.returncode == 0, done.stderr[-4000:]
    pages = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("index.html")}
    assert {"index.html", "security/index.html", "environment/index.html", "guide/live/index.html"} <= pages


def test_the_readme_is_read_in_five_minutes() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move details into docs/"


def test_every_link_in_the_readme_leads_to_a_file() -> None:
    """The README is read on a code host, outside the site: its relative links must name real files."""
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    relative = [link for link in links if "://" not in link]
    assert len(relative) >= 10, relative
    missing = [link for link in relative if not (ROOT / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_no_tracked_file_numbers_past_work_periods() -> None:
    """Documents and comments describe what is; the history of figures and changes belongs to git."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path in _tracked_text_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not found, "history wording in tracked files:\n" + "\n".join(found)


def test_the_history_pattern_leaves_other_uses_of_the_word_alone() -> None:
    kept = ["pytest's session-scoped fixture", "a Streamlit session", "session state", "W&B's session 0x1f"]
    assert not any(HISTORY.search(s) for s in kept)


def test_every_variable_in_the_table_is_read_where_it_says() -> None:
    rows = _env_table()
    assert len(rows) >= 30, "docs/environment.md's table was not found"
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), "a variable has two rows"
    bad = []
    for name, files in rows:
        paths = [ROOT / f for f in files if (ROOT / f).is_file()]
        if not paths or not any(_read_in(name, p.read_text()) for p in paths):
            bad.append(f"{name}: not read in {files}")
    assert not bad, "docs/environment.md names variables the code does not read there:\n" + "\n".join(bad)


def test_every_jaxdash_variable_the_code_reads_is_in_the_table() -> None:
    documented = {name for name, _ in _env_table()}
    used: dict[str, str] = {}
    for path in _code_files():
        for name in ENV_NAME.findall(path.read_text(encoding="utf-8")):
            used.setdefault(name, str(path.relative_to(ROOT)))
    missing = sorted(f"{n} ({where})" for n, where in used.items() if n not in documented | NOT_VARIABLES)
    assert not missing, "variables missing from docs/environment.md's table:\n" + "\n".join(missing)
