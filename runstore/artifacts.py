"""What a run's artifacts hold, for the pages: its live panels, tables and images. No Streamlit here.

A training process writes (runwriters/store.py):

* config.json "panels": the live panels its task asks for, a subset of PANELS;
* artifacts/tables/<tag with / as __>.json = {"tag", "step", "columns", "rows"}: the latest table of
  each tag, e.g. fit__data (x, y), fit__curve (x, y, y_true), test__confusion, test__predictions;
* artifacts/images/<tag>.png: the latest image of each tag (every step's images, with captions, are in
  artifacts/images/<tag>/: runstore.media_store, which also reads histograms and media files;
  runstore.run_files reads saved files, logged artifacts and alerts).

Every reader returns None (or an empty list) for a file that is missing, half-written or of another
shape, so a damaged artifact never breaks a page. Parsed tables are cached by file path, size and
modification time, so a refresh re-reads a table only when the run rewrote it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runstore import run_store, safe_files, tags
from runstore.run_folder import CONFIG, IMAGES, TABLES, RunFolder

PANELS = ("fit", "loss", "accuracy")  # the panel kinds the page draws (training.tasks.base.PANELS)


@dataclass(frozen=True)
class Table:
    """One artifacts/tables file: column names and rows, written at `step`."""

    step: int
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def column(self, name: str) -> np.ndarray | None:
        """A numeric column as a float array (non-numbers become NaN), or None if there is no such column."""
        if name not in self.columns:
            return None
        i = self.columns.index(name)
        return np.array([_float(r[i]) for r in self.rows], dtype=float)


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def table_path(run_dir: Path, tag: str) -> Path:
    """Where the latest table of `tag` is kept ("fit/curve" -> artifacts/tables/fit__curve.json)."""
    return RunFolder(run_dir).media_dir(TABLES) / f"{run_store.slugify(tag.replace('/', '__'), 80)}.json"


@functools.lru_cache(maxsize=256)
def _parse_table(path: str, mtime_ns: int, size: int) -> Table | None:
    doc = run_store.read_json(Path(path))
    if not isinstance(doc, dict):
        return None
    columns, rows = doc.get("columns"), doc.get("rows")
    if not isinstance(columns, list) or not isinstance(rows, list):
        return None
    if not all(isinstance(r, list) and len(r) == len(columns) for r in rows):
        return None
    step = doc.get("step") if isinstance(doc.get("step"), int) else 0
    return Table(step, tuple(str(c) for c in columns), tuple(tuple(r) for r in rows))


def read_table(run_dir: Path, tag: str) -> Table | None:
    """The latest table of `tag`, or None (missing, being replaced, or not a table)."""
    path = table_path(run_dir, tag)
    if not safe_files.inside(run_dir, path):
        return None  # artifacts/ or tables/ is a link out of the run folder
    try:
        st = path.lstat()
    except OSError:
        return None
    return _parse_table(str(path), st.st_mtime_ns, st.st_size)


def config_doc(run_dir: Path) -> dict[str, Any]:
    """config.json, validated by the run store; {} if missing or damaged."""
    try:
        doc = run_store.load_json_object(RunFolder(run_dir).config_path)
        return run_store.validate_config(doc, CONFIG) if doc is not None else {}
    except run_store.DamagedRunFile:
        return {}


def run_panels(run_dir: Path, launch: dict[str, Any] | None = None, metric_tags: set[str] | None = None) -> list[str]:
    """The live panels of a run: config.json "panels", else the page's launch.json, else what its files hold.

    Runs written before panels were recorded get "fit" when a fit table exists, "loss" and
    "accuracy" when those metrics do; "loss" when nothing is known yet.
    """
    for doc in (config_doc(run_dir), launch or {}):
        listed = doc.get("panels")
        if isinstance(listed, list) and listed:
            return [p for p in listed if p in PANELS]
    found = metric_tags or set()
    inferred = ["fit"] if table_path(run_dir, tags.FIT_DATA).exists() else []
    inferred += [p for p, tag in (("loss", tags.TRAIN_LOSS), ("accuracy", tags.TRAIN_ACC)) if tag in found]
    return inferred or ["loss"]


def fit(
    run_dir: Path,
) -> tuple[
    tuple[np.ndarray, np.ndarray] | None, tuple[np.ndarray, np.ndarray] | None, tuple[np.ndarray, np.ndarray] | None
]:
    """(data (x, y), model curve (x, y), true curve (x, y_true)); each None when not written (yet)."""
    data, curve = read_table(run_dir, tags.FIT_DATA), read_table(run_dir, tags.FIT_CURVE)
    points = _pair(data, "y")
    model = _pair(curve, "y")
    truth = _pair(curve, "y_true")
    return points, model, truth


def _pair(table: Table | None, y: str) -> tuple[np.ndarray, np.ndarray] | None:
    if table is None:
        return None
    xs, ys = table.column("x"), table.column(y)
    if xs is None or ys is None or xs.size == 0:
        return None
    return xs, ys


@dataclass(frozen=True)
class Classification:
    """A classifier's test report: the confusion matrix and sample predictions."""

    class_names: list[str]
    confusion: np.ndarray  # [C, C] counts, rows = true class
    images: np.ndarray  # [M, H, W] uint8
    labels: np.ndarray  # [M] class indices
    preds: np.ndarray  # [M] class indices


def classification(run_dir: Path) -> tuple[Classification | None, str | None]:
    """The test report from test__confusion and test__predictions; (None, why) when it cannot be read."""
    table = read_table(run_dir, tags.CONFUSION)
    if table is None:
        return None, None
    names = list(table.columns[1:])
    try:
        confusion = np.array([[int(v) for v in row[1:]] for row in table.rows], dtype=np.int64)
    except (TypeError, ValueError):
        return None, "test__confusion.json: counts that are not whole numbers"
    if confusion.shape != (len(names), len(names)):
        return None, f"test__confusion.json: {confusion.shape[0]} rows for {len(names)} classes"
    images, labels, preds = _predictions(run_dir, names)
    return Classification(names, confusion, images, labels, preds), None


def _predictions(run_dir: Path, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample images with label and prediction as class indices; empty arrays when unusable."""
    table = read_table(run_dir, tags.PREDICTIONS)
    empty = np.zeros((0, 1, 1), np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if table is None or not {"image", "label", "pred"} <= set(table.columns):
        return empty
    col = {c: table.columns.index(c) for c in ("image", "label", "pred")}
    index = {n: i for i, n in enumerate(names)}
    try:
        rows = [r for r in table.rows if r[col["label"]] in index and r[col["pred"]] in index]
        images = np.array([r[col["image"]] for r in rows], dtype=float)
    except (TypeError, ValueError):
        return empty
    if images.ndim != 3 or not rows:
        return empty
    labels = np.array([index[r[col["label"]]] for r in rows])
    preds = np.array([index[r[col["pred"]]] for r in rows])
    return np.clip(images, 0, 255).astype(np.uint8), labels, preds


def images(run_dir: Path) -> list[Path]:
    """The latest image of every tag (artifacts/images/*.png), by name."""
    folder = RunFolder(run_dir).media_dir(IMAGES)
    if not safe_files.inside(run_dir, folder):
        return []  # a link out of the run folder
    try:
        return sorted(p for p in folder.glob("*.png") if safe_files.is_regular(p))
    except OSError:
        return []
