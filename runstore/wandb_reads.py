"""What a W&B script's run keeps beyond its rows, read for the pages. No Streamlit here.

The client (jaxdash/client_files.py, jaxdash/session.py) writes, in the run folder (runstore/run_store.py):

* summary.json: the W&B summary, {key: number | string | {"min", "max", ...} | other JSON};
* config.json "wandb_group" (a W&B group: runs shown together, never a population), "job_type", "tags",
  "notes", "entity", and "define_metric": {name or glob: {"step_metric", "step_sync", "hidden",
  "summary": [ops], "goal"}};
* status.json "events": [{"time", "kind", "message", ...}], e.g. a "write_gap" on a full disk.

Every reader returns an empty value for a file that is missing, damaged or of another shape, and drops
entries of another shape, so a run written by hand or by an older client never breaks a page.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runstore.run_checks import DamagedRunFile, load_json_object
from runstore.run_folder import CONFIG, RunFolder

STEP = "step"


@dataclass(frozen=True)
class WandbMeta:
    """A client run's W&B fields from config.json (empty strings and tuples where it set none)."""

    group: str = ""
    job_type: str = ""
    tags: tuple[str, ...] = ()
    notes: str = ""
    entity: str = ""
    define_metric: dict[str, dict[str, Any]] = field(default_factory=dict)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _defs(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        return {}
    return {str(k): dict(v) for k, v in value.items() if isinstance(v, dict)}


def meta_of(doc: Mapping[str, Any]) -> WandbMeta:
    """The W&B fields of a parsed config.json."""
    tags = doc.get("tags") if isinstance(doc.get("tags"), list) else []
    return WandbMeta(
        group=_text(doc.get("wandb_group")),
        job_type=_text(doc.get("job_type")),
        tags=tuple(str(t) for t in tags),
        notes=_text(doc.get("notes")),
        entity=_text(doc.get("entity")),
        define_metric=_defs(doc.get("define_metric")),
    )


@functools.lru_cache(maxsize=4096)
def _meta(path: str, mtime_ns: int, size: int) -> WandbMeta:
    try:
        doc = load_json_object(Path(path))
    except DamagedRunFile:
        return WandbMeta()
    return meta_of(doc or {})


def wandb_meta(run_dir: Path) -> WandbMeta:
    """The run's W&B fields (config.json re-read only when it changed: one lstat a run for a table of many runs)."""
    path = os.path.join(run_dir, CONFIG)
    try:
        st = os.lstat(path)
    except OSError:
        return WandbMeta()
    return _meta(path, st.st_mtime_ns, st.st_size) if stat.S_ISREG(st.st_mode) else WandbMeta()


def read_summary(run_dir: Path) -> tuple[dict[str, Any], str | None]:
    """(summary.json as a dict, None), or ({}, a one-line message naming the file) when it is damaged;
    ({}, None) when the run has none."""
    try:
        doc = load_json_object(RunFolder(run_dir).summary_path)
    except DamagedRunFile as exc:
        return {}, f"{exc}; the summary is not shown (the run rewrites it at its end)."
    return {str(k): v for k, v in (doc or {}).items()}, None


def summary(run_dir: Path) -> dict[str, Any]:
    """summary.json as a dict ({} when missing or damaged)."""
    return read_summary(run_dir)[0]


def summary_text(value: Any) -> str:
    """A summary value as one line of text: "min 0.4 · max 2" for W&B's {op: value} dicts, "histogram of 40 values,
    -2 to 4" for a histogram."""
    if isinstance(value, dict) and value.get("_type") == "histogram":
        counts, edges = value.get("values"), value.get("bins")
        if isinstance(counts, list) and isinstance(edges, list) and len(edges) >= 2:
            with contextlib.suppress(TypeError, ValueError):
                total, low, high = int(sum(counts)), float(edges[0]), float(edges[-1])
                return f"histogram of {total} values, {low:.6g} to {high:.6g}"
    if isinstance(value, dict):
        return " · ".join(f"{k} {summary_text(v)}" for k, v in value.items())
    if isinstance(value, float):
        return format(value, ".6g")
    return str(value)


def events(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """status.json "events" of the right shape ({"time": number, "kind": str, "message": str}), oldest first."""
    raw = status.get("events") if isinstance(status.get("events"), list) else []
    out = []
    for e in raw:
        if isinstance(e, dict) and isinstance(e.get("kind"), str) and isinstance(e.get("time"), (int, float)):
            out.append({**e, "message": str(e.get("message") or "")})
    return out


def definition(defs: Mapping[str, Mapping[str, Any]], key: str) -> Mapping[str, Any]:
    """The definition `key` falls under, as W&B resolves it: its own name, else the last glob that matches."""
    if key in defs:
        return defs[key]
    globs = [d for name, d in defs.items() if "*" in name and fnmatch.fnmatchcase(key, name)]
    return globs[-1] if globs else {}


def chart_axes(defs: Mapping[str, Mapping[str, Any]], keys: Sequence[str]) -> dict[str, list[str]]:
    """{x key: the keys charted against it}, in `keys` order: "step" unless a definition names a step_metric
    the run logged; hidden keys left out (the step metrics themselves are charted against the step)."""
    present = set(keys)
    out: dict[str, list[str]] = {}
    for key in keys:
        d = definition(defs, key)
        if d.get("hidden"):
            continue
        x = d.get("step_metric")
        x = x if isinstance(x, str) and x in present and x != key else STEP
        out.setdefault(x, []).append(key)
    return dict(sorted(out.items(), key=lambda kv: kv[0] != STEP))
