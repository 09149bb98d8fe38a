"""What a probe's run stored, in one comparable shape, read from W&B's offline files, our run folder or trackio.

An observation is a dict: exit_code, state, project, name, run_id, group, job_type, tags, notes, config,
summary (scalars and strings), history ({step: {key: value}}, media included) and out (the script's
stdout lines starting with "OUT "). Media are reduced to what every store keeps: images (count,
captions), histogram (bins, total count), table (ncols, nrows), figure (plotly, matplotlib, wandb.plot).

W&B's offline run (real, and the copy jaxdash's writer process wrote in the run folder's wandb/) is read
with `wandb leet inspect --json`, one JSON record a line; our run folder through runstore.
"""

from __future__ import annotations

import copy
import functools
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from runstore import run_notes, run_store
from tests.wandb_conformance.running import REPO

WANDB_CLI = REPO / ".venv" / "bin" / "wandb"
DROP = ("step", "wall", "ts")  # the run store's own fields of a metrics.jsonl record


def _media(d: dict[str, Any]) -> dict[str, Any]:
    """A W&B media value reduced to what every store keeps."""
    kind = d.get("_type")
    if kind == "image-file":
        return {"_type": "images", "count": 1, "captions": [d.get("caption")]}
    if kind == "images/separated":
        count = int(d.get("count", 0))
        return {"_type": "images", "count": count, "captions": list(d.get("captions") or [None] * count)}
    if kind == "histogram":
        return {"_type": "histogram", "bins": len(d.get("values", [])), "total": sum(d.get("values", []))}
    if kind in ("table-file", "partitioned-table", "joined-table"):
        return {"_type": "table", "ncols": d.get("ncols"), "nrows": d.get("nrows")}
    if kind == "plotly-file":
        return {"_type": "figure"}
    return {"_type": str(kind)}


def _fold(item: dict[str, Any]) -> dict[str, Any]:
    """W&B's flat record keys ("acc.top1", "img._type", "img.caption") with each medium folded back into one value."""
    prefixes = sorted((k[: -len("._type")] for k in item if k.endswith("._type")), key=len, reverse=True)
    out: dict[str, Any] = {}
    media: dict[str, dict[str, Any]] = {p: {} for p in prefixes}
    for key, value in item.items():
        owner = next((p for p in prefixes if key.startswith(p + ".")), None)
        if owner is not None:
            media[owner][key[len(owner) + 1 :]] = value
        elif not key.startswith("_"):
            out[key] = _number(value)
    out.update({p: _media(m) for p, m in media.items()})
    return out


def _charts(history: dict[int, dict[str, Any]], config: dict[str, Any]) -> None:
    """A wandb.plot chart (table "<key>_table" plus config "_wandb.visualize.<key>"): also a figure under <key>."""
    charts = {k[len("_wandb.visualize.") :] for k in config if k.startswith("_wandb.visualize.")}
    for row in history.values():
        for key in charts:
            if f"{key}_table" in row:
                row[key] = {"_type": "figure"}


NON_FINITE = {"NaN": float("nan"), "nan": float("nan"), "Infinity": float("inf"), "inf": float("inf")}
NON_FINITE.update({"-Infinity": float("-inf"), "-inf": float("-inf")})


def _number(value: Any) -> Any:
    """NaN and infinities written as strings (JSON has no literal for them) read as floats."""
    return NON_FINITE.get(value, value) if isinstance(value, str) else value


def empty(exit_code: int | None = None) -> dict[str, Any]:
    """An observation with nothing stored."""
    return {
        "exit_code": exit_code, "state": None, "project": None, "name": None, "run_id": None, "group": None,
        "job_type": None, "tags": [], "notes": None, "config": {}, "summary": {}, "history": {},
    }  # fmt: skip


def read_wandb_file(path: Path) -> dict[str, Any]:
    """One W&B offline run (a .wandb file) through `wandb leet inspect --json` (read once per file)."""
    return copy.deepcopy(_read_wandb_file(path, path.stat().st_size))


@functools.lru_cache(maxsize=1024)
def _read_wandb_file(path: Path, size: int) -> dict[str, Any]:
    proc = subprocess.run([str(WANDB_CLI), "leet", "inspect", "--json", str(path)], capture_output=True, text=True)
    obs = empty()
    config: dict[str, Any] = {}
    history: dict[int, dict[str, Any]] = {}
    summary: dict[str, Any] = {}
    for line in proc.stdout.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        kind, body = rec.get("type"), rec.get(rec.get("type"), {})
        if kind == "run":
            config.update(body.get("config", {}).get("update", {}))
            obs.update(project=body.get("project"), name=body.get("display_name"), run_id=body.get("run_id"))
            obs.update(group=body.get("run_group"), job_type=body.get("job_type"), notes=body.get("notes"))
            obs.update(tags=list(body.get("tags", [])), start=body.get("start_time", ""))
        elif kind == "config":
            config.update(body.get("update", {}))
            for key in body.get("remove", {}):
                config.pop(key, None)
        elif kind == "history":
            item = body.get("item", {})
            step = int(item.get("_step", body.get("step", {}).get("num", 0)))
            history.setdefault(step, {}).update(_fold(item))
        elif kind == "summary":
            summary.update(_fold(body.get("update", {})))
        elif kind == "exit":
            obs["exit_code"] = body.get("exit_code", 0)
    _charts(history, config)
    obs["config"] = {k: v for k, v in config.items() if not k.startswith("_wandb")}
    obs["summary"] = summary_values(summary)
    obs["history"] = history
    code = obs.pop("exit_code")
    obs["state"] = "crashed" if code is None else "finished" if code == 0 else "failed"
    return obs


def read_wandb_runs(folder: Path) -> list[dict[str, Any]]:
    """Every W&B offline run under `folder`, in the order they started."""
    runs = [read_wandb_file(p) for p in sorted(folder.rglob("*.wandb")) if p.is_file()]
    return sorted(runs, key=lambda r: r.pop("start", ""))


def _store_media(run_dir: Path, history: dict[int, dict[str, Any]]) -> None:
    """Images, histograms, tables and figures of every step, from the run folder's artifacts/."""
    art = run_dir / "artifacts"
    for doc_path in (art / "images").glob("*/*.json"):
        doc = run_store.read_json(doc_path, {}) or {}
        if isinstance(doc, dict) and "step" in doc:
            caps = doc.get("captions") or [None] * len(doc.get("files", []))
            value = {"_type": "images", "count": len(doc.get("files", [])), "captions": caps}
            history.setdefault(int(doc["step"]), {})[doc.get("tag", doc_path.parent.name)] = value
    for hist in (art / "histograms").glob("*.jsonl"):
        for line in hist.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            counts = rec.get("counts", [])
            value = {"_type": "histogram", "bins": len(counts), "total": sum(counts)}
            history.setdefault(int(rec.get("step", 0)), {})[rec.get("tag", hist.stem.replace("__", "/"))] = value
    for table in (art / "tables").glob("*.json"):
        doc = run_store.read_json(table, {}) or {}
        if isinstance(doc, dict) and "step" in doc:
            value = {"_type": "table", "ncols": len(doc.get("columns", [])), "nrows": len(doc.get("rows", []))}
            history.setdefault(int(doc["step"]), {})[doc.get("tag", table.stem.replace("__", "/"))] = value
    for fig in (art / "figures").glob("*/*.json"):
        if fig.stem.isdigit():
            history.setdefault(int(fig.stem), {})[fig.parent.name.replace("__", "/")] = {"_type": "figure"}


def flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts (not media) as W&B's dotted keys: {"train": {"acc": 1}} -> {"train.acc": 1}; W&B writes a
    summary either way (logged nested dicts arrive flat, `summary[k] = {...}` nested), and they are the same."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and "_type" not in value and value:
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = _number(value)
    return out


def summary_values(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary's values under dotted keys, media left out (they are compared per step in the history)."""
    return {k: v for k, v in flat(summary).items() if not (isinstance(v, dict) and "_type" in v)}


def _first(key: str, *docs: dict[str, Any]) -> Any:
    return next((d[key] for d in docs if isinstance(d, dict) and d.get(key) not in (None, "", [])), None)


def read_store_run(run_dir: Path) -> dict[str, Any]:
    """Our run folder, read through runstore: config.json, status.json, metrics.jsonl, artifacts/, notes.json."""
    cfg = run_store.read_json(run_dir / "config.json", {}) or {}
    status = run_store.read_status(run_dir)
    notes = run_notes.load(run_dir)
    page = {"tags": notes.tags, "notes": notes.notes, "name": notes.display_name}
    history: dict[int, dict[str, Any]] = {}
    for rec in run_store.read_metrics(run_dir)[0]:
        row = history.setdefault(int(rec.get("step", 0)), {})
        row.update({k: _number(v) for k, v in rec.items() if k not in DROP and not k.startswith("_")})
    _store_media(run_dir, history)
    summary = run_store.read_json(run_dir / "summary.json", None)
    if not isinstance(summary, dict):
        summary = status.get("summary") if isinstance(status.get("summary"), dict) else status.get("final") or {}
    obs = empty()
    obs.update(
        state=status.get("state"), project=cfg.get("project", cfg.get("task")), name=cfg.get("name"),
        run_id=run_dir.name, group=_first("wandb_group", cfg, status) or _first("group", cfg, status), job_type=_first("job_type", cfg, status),
        tags=list(_first("tags", cfg, status, page) or []), notes=_first("notes", cfg, status, page),
        config=cfg.get("config", {}), summary=summary_values(summary), history=history, created=cfg.get("created", 0),
    )  # fmt: skip
    return obs


def store_run_dirs(root: Path) -> list[Path]:
    """Our run folders under `root` (any depth: a probe may pass dir=), in the order they were created."""
    dirs = [p.parent for p in root.rglob("config.json") if (p.parent / "status.json").exists()]
    return [d for d in dirs if "wandb" not in d.relative_to(root).parts]


def read_store_runs(root: Path) -> list[dict[str, Any]]:
    """Every run folder under `root` read, oldest first."""
    runs = [read_store_run(d) for d in store_run_dirs(root)]
    return sorted(runs, key=lambda r: r.pop("created", 0) or 0)


def read_copy_runs(root: Path) -> list[dict[str, Any]]:
    """The W&B copies jaxdash wrote for each run folder (run folder order): inside it, or where its status says
    (status.json "wandb"."dir", e.g. under a script's `init(dir=)`)."""
    out = []
    for run_dir in sorted(store_run_dirs(root), key=_created):
        where = (run_store.read_status(run_dir).get("wandb") or {}).get("dir")
        copies = read_wandb_runs(run_dir) or (read_wandb_runs(Path(where)) if where and Path(where).is_dir() else [])
        out.append(copies[-1] if copies else {**empty(), "state": "missing (no .wandb file for the run folder)"})
    return out


def _created(run_dir: Path) -> float:
    return (run_store.read_json(run_dir / "config.json", {}) or {}).get("created", 0) or 0


def read_trackio_runs(folder: Path) -> list[dict[str, Any]]:
    """trackio's SQLite projects under `folder`: each run's config and history (trackio keeps no state or summary)."""
    runs = []
    for db in sorted(folder.rglob("*.db")):
        con = sqlite3.connect(db)
        try:
            names = [r[0] for r in con.execute("SELECT DISTINCT run_name FROM metrics")]
            configs = dict(con.execute("SELECT run_name, config FROM configs")) if _has(con, "configs") else {}
            for name in names:
                obs = {**empty(), "project": db.stem, "name": name, "state": "finished"}
                raw = json.loads(configs.get(name) or "{}")
                obs["config"] = {k: v for k, v in raw.items() if not k.startswith("_")}
                for step, metrics in con.execute("SELECT step, metrics FROM metrics WHERE run_name=?", (name,)):
                    obs["history"].setdefault(int(step), {}).update(json.loads(metrics))
                runs.append(obs)
        except sqlite3.Error:
            continue
        finally:
            con.close()
    return runs


def _has(con: sqlite3.Connection, table: str) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).fetchone() is not None
