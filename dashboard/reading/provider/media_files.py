"""What media a run logged, for the media section: figures by step, images and tables.

The run store writes (runwriters/store.py):

* artifacts/figures/<tag>/<step>.json = {"tag", "step", "figure": plotly JSON}: the newest steps of each figure;
* artifacts/images/<tag>.png: the latest image of each tag;
* artifacts/tables/<tag>.json = {"tag", "step", "columns", "rows"}: the latest table of each tag.

The tables and images the page already draws in its own panels (a fit, a test report) are left out.
Every reader skips a file that is missing, half-written, a link or of another shape.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runstore import artifacts, media_store, run_store, safe_files, tags
from runstore.run_folder import FIGURES, TABLES, RunFolder

# Drawn by the page's own panels (dashboard/panels/panel_kinds.py, views/detail.py), so not listed here.
OWN_TABLES = {media_store.tag_file(t) for t in (tags.FIT_DATA, tags.FIT_CURVE, tags.CONFUSION, tags.PREDICTIONS)}
OWN_IMAGES = {media_store.tag_file(t) for t in (tags.FIT_IMAGE, tags.CONFUSION_IMAGE, tags.PREDICTIONS_IMAGE)}
PANEL_SCALARS = (tags.TRAIN_LOSS, tags.TEST_LOSS, tags.TRAIN_ACC, tags.TEST_ACC)  # the loss / accuracy panels


@dataclass(frozen=True)
class FigureSteps:
    """The steps one figure tag was logged at (oldest first) and where each is stored."""

    tag: str
    steps: tuple[int, ...]
    paths: tuple[Path, ...]


def _folder(run_dir: Path, name: str) -> Path | None:
    folder = RunFolder(run_dir).media_dir(name)
    return folder if safe_files.inside(run_dir, folder) and folder.is_dir() else None


def _listing(folder: Path, pattern: str) -> list[Path]:
    try:
        return sorted(p for p in folder.glob(pattern) if safe_files.is_regular(p))
    except OSError:
        return []


def figures(run_dir: Path) -> list[FigureSteps]:
    """Every logged figure tag with its steps, by tag."""
    root = _folder(run_dir, FIGURES)
    if root is None:
        return []
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        files = [p for p in _listing(folder, "*.json") if p.stem.isdigit()]
        if files:
            out.append(FigureSteps(folder.name.replace("__", "/"), tuple(int(p.stem) for p in files), tuple(files)))
    return out


@functools.lru_cache(maxsize=128)
def _parse_figure(path: str, mtime_ns: int, size: int) -> dict[str, Any] | None:
    doc = run_store.read_json(Path(path))
    fig = doc.get("figure") if isinstance(doc, dict) else None
    return fig if isinstance(fig, dict) and isinstance(fig.get("data", []), list) else None


def read_figure(path: Path) -> dict[str, Any] | None:
    """One stored figure (plotly JSON), or None when missing, being replaced or not a figure."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return _parse_figure(str(path), st.st_mtime_ns, st.st_size)


def images(run_dir: Path) -> list[Path]:
    """The latest image of every tag the page does not draw itself, by tag."""
    return [p for p in artifacts.images(run_dir) if p.stem not in OWN_IMAGES]


def tables(run_dir: Path) -> list[tuple[str, artifacts.Table]]:
    """(tag, table) of every readable table the page does not draw itself, by tag."""
    root = _folder(run_dir, TABLES)
    if root is None:
        return []
    out = []
    for path in _listing(root, "*.json"):
        if path.stem in OWN_TABLES:
            continue
        tag = path.stem.replace("__", "/")
        table = artifacts.read_table(run_dir, tag)
        if table is not None:
            out.append((tag, table))
    return out


def other_scalars(tag_names: set[str]) -> list[str]:
    """Scalar tags no loss / accuracy panel draws (e.g. a TensorBoard log's own names), sorted."""
    return sorted(t for t in tag_names if t not in PANEL_SCALARS and t not in ("step", "wall", "ts"))
