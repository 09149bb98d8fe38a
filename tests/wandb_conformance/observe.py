"""What a probe's run stored, in one comparable shape, read from W&B's offline files, our run folder or trackio.

An observation is a dict: exit_code, state, project, name, run_id, group, job_type, tags, notes, config,
summary (scalars and strings), history ({step: {key: value}}, media included) and out (the script's
stdout lines starting with "OUT "). Media are reduced to what every store keeps: images (count,
captions), histogram (bins, total count), table (ncols, nrows), figure (plotly, matplotlib, wandb.plot).

W&B's offline run (real, and the copy jaxdash's writer process wrote in the run folder's wandb/) is read
here with `wandb leet inspect --json`, one JSON record a line; our run folder in store_reader.py.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from tests import wandb_leet


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
            out[key] = as_number(value)
    out.update({p: _media(m) for p, m in media.items()})
    return out


def _charts(history: dict[int, dict[str, Any]], config: dict[str, Any]) -> None:
    """A wandb.plot chart (table "<key>_table" plus config "_wandb.visualize.<key>"): also a figure under <key>."""
    charts = {k[len("_wandb.visualize.") :] for k in config if k.startswith("_wandb.visualize.")}
    for row in history.values():
        for key in charts:
            if f"{key}_table" in row:
                row[key] = {"_type": "figure"}


INTERNAL_ARTIFACTS = ("run_table", "wandb-history", "code", "job", "wandb-run-config")


def _user_file(entry: dict[str, Any]) -> bool:
    """A file the script saved (`wandb.save`), not one W&B writes itself (requirements, media, code)."""
    path = str(entry.get("path", ""))
    return entry.get("type") != "WANDB" and not path.startswith(("media/", "code/", "artifact/"))


NON_FINITE = {"NaN": float("nan"), "nan": float("nan"), "Infinity": float("inf"), "inf": float("inf")}
NON_FINITE.update({"-Infinity": float("-inf"), "-inf": float("-inf")})


def as_number(value: Any) -> Any:
    """NaN and infinities written as strings (JSON has no literal for them) read as floats."""
    return NON_FINITE.get(value, value) if isinstance(value, str) else value


def empty(exit_code: int | None = None) -> dict[str, Any]:
    """An observation with nothing stored."""
    return {
        "exit_code": exit_code, "state": None, "project": None, "name": None, "run_id": None, "group": None,
        "job_type": None, "tags": [], "notes": None, "config": {}, "summary": {}, "history": {},
        "files": [], "artifacts": [], "alerts": [],
    }  # fmt: skip


def read_wandb_file(path: Path) -> dict[str, Any]:
    """One W&B offline run (a .wandb file) through `wandb leet inspect --json` (read once per file)."""
    return copy.deepcopy(_read_wandb_file(path, path.stat().st_size))


@functools.lru_cache(maxsize=1024)
def _read_wandb_file(path: Path, size: int) -> dict[str, Any]:
    proc = wandb_leet.inspect(path, "--json")
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
        elif kind == "files":
            obs["files"] += [f["path"] for f in body.get("files", []) if _user_file(f)]
        elif kind == "artifact" and body.get("type") not in INTERNAL_ARTIFACTS:
            paths = sorted(c.get("path") for c in body.get("manifest", {}).get("contents", []))
            obs["artifacts"].append({"name": body.get("name"), "type": body.get("type"), "files": paths})
        elif kind == "alert":
            obs["alerts"].append({k: body.get(k) for k in ("title", "text", "level")})
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


def flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts (not media) as W&B's dotted keys: {"train": {"acc": 1}} -> {"train.acc": 1}; W&B writes a
    summary either way (logged nested dicts arrive flat, `summary[k] = {...}` nested), and they are the same."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and "_type" not in value and value:
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = as_number(value)
    return out


def summary_values(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary's values under dotted keys, media left out (they are compared per step in the history)."""
    return {k: v for k, v in flat(summary).items() if not (isinstance(v, dict) and "_type" in v)}
