"""Our side of a probe, in observe.py's shape: jaxdash's run folders (through runstore), their W&B copies, trackio.

The run folder: config.json (config, project as "task", W&B group as "wandb_group" or "group", job type,
tags, notes), status.json (state; "crashed" when the process is gone), metrics.jsonl (a record a step),
summary.json (else status.json "summary"/"final"), artifacts/ (images, histograms, tables and figures of
every step, strings logged under artifacts/texts/; logged artifacts under artifacts/logged/<name>/<version>/manifest.json), files/ (`save`),
alerts.jsonl, notes.json (the page's tags and notes). The W&B copy is the .wandb file inside the run folder,
or where status.json "wandb"."dir" says.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from runstore import media_store, run_folder, run_notes, run_store
from runstore.run_folder import RunFolder
from tests.wandb_conformance.observe import as_number, empty, read_wandb_runs, summary_values

DROP = ("step", "wall", "ts")  # the run store's own fields of a metrics.jsonl record
# The script's system metrics (sys/*, jaxdash/system_watch.py): W&B keeps its own in a stream of their own, not in
# the history compared here; tests/test_client_console.py compares the two.
SYSTEM = "sys/"


def _store_media(run_dir: Path, history: dict[int, dict[str, Any]]) -> None:
    """Images, histograms, tables and figures of every step, from the run folder's artifacts/."""
    art = run_dir / run_folder.ARTIFACTS
    for doc_path in (art / run_folder.IMAGES).glob("*/*.json"):
        doc = run_store.read_json(doc_path, {}) or {}
        if isinstance(doc, dict) and "step" in doc:
            caps = doc.get("captions") or [None] * len(doc.get("files", []))
            value = {"_type": "images", "count": len(doc.get("files", [])), "captions": caps}
            history.setdefault(int(doc["step"]), {})[doc.get("tag", doc_path.parent.name)] = value
    for hist in (art / run_folder.HISTOGRAMS).glob("*.jsonl"):
        for rec in media_store.json_lines(hist):
            counts = rec.get("counts", [])
            value = {"_type": "histogram", "bins": len(counts), "total": sum(counts)}
            history.setdefault(int(rec.get("step", 0)), {})[rec.get("tag", hist.stem.replace("__", "/"))] = value
    for table in (art / run_folder.TABLES).glob("*.json"):
        doc = run_store.read_json(table, {}) or {}
        if isinstance(doc, dict) and "step" in doc:
            value = {"_type": "table", "ncols": len(doc.get("columns", [])), "nrows": len(doc.get("rows", []))}
            history.setdefault(int(doc["step"]), {})[doc.get("tag", table.stem.replace("__", "/"))] = value
    for tag, lines in media_store.texts(run_dir).items():
        for step, text in lines:
            history.setdefault(step, {})[tag] = text
    for fig in (art / run_folder.FIGURES).glob("*/*.json"):
        if fig.stem.isdigit():
            history.setdefault(int(fig.stem), {})[fig.parent.name.replace("__", "/")] = {"_type": "figure"}


def _first(key: str, *docs: dict[str, Any]) -> Any:
    return next((d[key] for d in docs if isinstance(d, dict) and d.get(key) not in (None, "", [])), None)


def read_store_run(run_dir: Path) -> dict[str, Any]:
    """Our run folder, read through runstore: config.json, status.json, metrics.jsonl, artifacts/, notes.json."""
    cfg = run_store.read_json(run_dir / run_folder.CONFIG, {}) or {}
    status = RunFolder(run_dir).status()
    notes = run_notes.load(run_dir)
    page = {"tags": notes.tags, "notes": notes.notes, "name": notes.display_name}
    history: dict[int, dict[str, Any]] = {}
    for rec in RunFolder(run_dir).records()[0]:
        if all(k in DROP or k.startswith(SYSTEM) for k in rec):
            continue  # a system-metrics sample alone: no history row in W&B either
        row = history.setdefault(int(rec.get("step", 0)), {})
        row.update({k: as_number(v) for k, v in rec.items() if k not in DROP and not k.startswith(("_", SYSTEM))})
    _store_media(run_dir, history)
    saved = run_dir / run_folder.FILES
    files = sorted(str(p.relative_to(saved)) for p in saved.rglob("*") if p.is_file()) if saved.is_dir() else []
    artifacts = []
    for manifest in sorted((run_dir / run_folder.ARTIFACTS / run_folder.LOGGED).glob("*/*/manifest.json")):
        doc = run_store.read_json(manifest, {}) or {}
        artifacts.append({"name": doc.get("name"), "type": doc.get("type"), "files": sorted(doc.get("files", []))})
    alerts = []
    for line in media_store.json_lines(run_dir / run_folder.ALERTS):
        alerts.append({k: line.get(k) for k in ("title", "text", "level")})
    summary = run_store.read_json(run_dir / run_folder.SUMMARY, None)
    if not isinstance(summary, dict):
        summary = status.get("summary") if isinstance(status.get("summary"), dict) else status.get("final") or {}
    obs = empty()
    obs.update(
        state=status.get("state"), project=cfg.get("project", cfg.get("task")), name=cfg.get("name"),
        run_id=run_dir.name, group=_first("wandb_group", cfg, status) or _first("group", cfg, status), job_type=_first("job_type", cfg, status),
        tags=list(_first("tags", cfg, status, page) or []), notes=_first("notes", cfg, status, page),
        config=cfg.get("config", {}), summary=summary_values(summary), history=history, created=cfg.get("created", 0),
        files=files, artifacts=artifacts, alerts=alerts,
    )  # fmt: skip
    return obs


def store_run_dirs(root: Path) -> list[Path]:
    """Our run folders under `root` (any depth: a probe may pass dir=), in the order they were created."""
    dirs = [p.parent for p in root.rglob(run_folder.CONFIG) if (p.parent / run_folder.STATUS).exists()]
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
        where = (RunFolder(run_dir).status().get("wandb") or {}).get("dir")
        copies = read_wandb_runs(run_dir) or (read_wandb_runs(Path(where)) if where and Path(where).is_dir() else [])
        out.append(copies[-1] if copies else {**empty(), "state": "missing (no .wandb file for the run folder)"})
    return out


def _created(run_dir: Path) -> float:
    return (run_store.read_json(run_dir / run_folder.CONFIG, {}) or {}).get("created", 0) or 0


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
