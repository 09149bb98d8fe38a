"""A run's media for the pages: images by step, histograms and texts (each re-read only when its files changed),
tables, the fit and test report our tasks write, and the config's panels (runstore's readers underneath)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from runstore import artifacts, media_store, safe_files
from runstore.artifacts import Classification, Table
from runstore.media_store import ImageStep
from runstore.run_folder import HISTOGRAMS, IMAGES, TABLES, TEXTS, RunFolder, artifacts_rel

Hist = tuple[int, list[float], list[float]]  # (step, counts, edges) with len(edges) == len(counts) + 1


def tag_file(tag: str) -> str:
    """The file name a media tag is stored under (its "/" made "__"): how a page matches images to tags."""
    return media_store.tag_file(tag)


def _files_stamp(run_dir: Path, kind: str) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime, size) of every file of one media kind: what a cached read is keyed on."""
    root = RunFolder(run_dir).media_dir(kind)
    if not safe_files.is_real_dir(root):
        return ()
    out = []
    try:
        for p in sorted(root.glob("*.jsonl")):
            st_ = p.lstat()
            out.append((p.name, st_.st_mtime_ns, st_.st_size))
    except OSError:
        return ()
    return tuple(out)


def histograms_stamp(run_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """Changes whenever a histogram file of the run changes; () when it logged none."""
    return _files_stamp(run_dir, HISTOGRAMS)


def histograms(run_dir: Path) -> dict[str, list[Hist]]:
    """Every histogram tag's (step, counts, edges), oldest first, as stored (a page checks each before drawing)."""
    return media_store.histograms(Path(run_dir))


@functools.lru_cache(maxsize=32)
def _texts(run_dir: str, stamp: tuple) -> dict[str, list[tuple[int, str]]]:
    return media_store.texts(Path(run_dir))


def texts(run_dir: Path) -> dict[str, list[tuple[int, str]]]:
    """Every text key's (step, text), oldest first; re-read only when a text file changed."""
    stamp = _files_stamp(run_dir, TEXTS)
    return _texts(str(run_dir), stamp) if stamp else {}


def _image_steps_stamp(run_dir: Path) -> tuple[tuple[str, int], ...]:
    """(name, mtime) of every tag folder: a step written (files renamed in) or pruned changes its folder's mtime."""
    root = RunFolder(run_dir).media_dir(IMAGES)
    if not safe_files.is_real_dir(root):
        return ()
    try:
        return tuple(sorted((p.name, p.lstat().st_mtime_ns) for p in root.iterdir() if safe_files.is_real_dir(p)))
    except OSError:
        return ()


@functools.lru_cache(maxsize=32)
def _image_steps(run_dir: str, stamp: tuple) -> dict[str, list[ImageStep]]:
    return media_store.image_steps(Path(run_dir))


def image_steps(run_dir: Path) -> dict[str, list[ImageStep]]:
    """Every image key logged per step with its steps' files, re-read only when a tag folder changed (a live page
    reruns every few seconds, and a tag keeps up to media_store.KEEP_STEPS steps, a JSON file each)."""
    stamp = _image_steps_stamp(run_dir)
    return _image_steps(str(run_dir), stamp) if stamp else {}


def image_bytes(path: Path, limit: int) -> bytes | None:
    """The bytes of one stored image file, at most `limit` (None: missing, a link or not a regular file)."""
    return safe_files.read_regular(path, limit)


def read_table(run_dir: Path, tag: str) -> Table | None:
    """The latest table logged under `tag`, or None (missing, half-written or of another shape)."""
    return artifacts.read_table(run_dir, tag)


def table_stamp(run_dir: Path, tag: str) -> int:
    """The modification time of the table `tag` (0 while missing): what a chart of it depends on."""
    try:
        return artifacts.table_path(run_dir, tag).stat().st_mtime_ns
    except OSError:
        return 0


def fit(run_dir: Path) -> tuple[Any, Any, Any]:
    """A fit's data points, the model's curve and the true curve, each (x, y) or None (our regression task)."""
    return artifacts.fit(run_dir)


def classification(run_dir: Path) -> tuple[Classification | None, str | None]:
    """A classifier's test report (confusion matrix, predictions) and a problem reading it (our MNIST task)."""
    return artifacts.classification(run_dir)


def config_doc(run_dir: Path) -> dict[str, Any]:
    """The run's config document as the run store validated it; {} when missing or damaged."""
    return artifacts.config_doc(run_dir)


def run_panels(run_dir: Path, launch: dict[str, Any] | None = None, metric_tags: set[str] | None = None) -> list[str]:
    """The panel kinds the run's page draws: its config's "panels", the launch's, or those its tags allow."""
    return artifacts.run_panels(run_dir, launch, metric_tags)


def table_location(name: str) -> str:
    """Where a table file `name` lives inside a run folder, for a message naming it."""
    return artifacts_rel(TABLES, name)
