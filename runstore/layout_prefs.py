"""The panel layout a user chose, per project: pinned panels and collapsed sections.

One small JSON file under the runs root (LAYOUT_FILE): {"projects": {project: {"pinned": [...],
"collapsed": [...]}}}. Written atomically (runstore.atomic); read by the page on every rerun. A damaged
file is never fatal: `load` returns an empty layout and a one-line message naming the file, and the next
save replaces it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from runstore import small_json
from runstore.atomic import atomic_write_json

LAYOUT_FILE = "dashboard_layout.json"


@dataclasses.dataclass(frozen=True)
class Layout:
    """One project's choices: panel keys pinned on top, section names collapsed (both in the user's order)."""

    pinned: tuple[str, ...] = ()
    collapsed: tuple[str, ...] = ()
    opened: tuple[str, ...] = ()  # large sections (closed by default) the user opened


def path(root: Path) -> Path:
    """The layout file of a runs root."""
    return Path(root) / LAYOUT_FILE


def _read(root: Path) -> tuple[dict, str | None]:
    """The whole document and a problem (None when fine or missing)."""
    file = path(root)
    try:
        doc = small_json.load(file)  # never through a link, never a FIFO; size, entries and depth bounded
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, RecursionError) as exc:
        why = str(exc) if isinstance(exc, small_json.TooLarge) else f"not readable ({type(exc).__name__})"
        return {}, f"{file}: {why}; the panel layout starts empty. Delete or fix it."
    if not isinstance(doc, dict) or not isinstance(doc.get("projects", {}), dict):
        return {}, f'{file}: expected {{"projects": {{...}}}}; the panel layout starts empty. Delete or fix it.'
    return doc, None


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def load(root: Path, project: str) -> tuple[Layout, str | None]:
    """The project's layout and a one-line problem when the file is damaged (then an empty layout)."""
    doc, problem = _read(root)
    entry = doc.get("projects", {}).get(project) if doc else None
    if entry is None:
        return Layout(), problem
    if not isinstance(entry, dict):
        return Layout(), f"{path(root)}: project {project!r} is not an object; its panel layout starts empty."
    pinned, collapsed, opened = (_strings(entry.get(k)) for k in ("pinned", "collapsed", "opened"))
    return Layout(pinned, collapsed, opened), problem


def save(root: Path, project: str, layout: Layout) -> None:
    """Store one project's layout, keeping the others (a damaged file is replaced)."""
    doc, _ = _read(root)
    projects = dict(doc.get("projects", {})) if doc else {}
    projects[project] = dataclasses.asdict(layout)
    atomic_write_json(path(root), {"projects": projects})
