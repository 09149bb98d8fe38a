"""The run directory: the only contract between a training process and the page.

Layout of `<root>/<run_id>/`:

    config.json      {"run_id", "name", "task", "config": {...}, "created", "command"}
                     (+ "group", "member" for a member of a population)
    status.json      lifecycle + progress, replaced atomically (see `write_status`)
    metrics.jsonl    one JSON object per logged step: {"step", "wall", "ts", "<tag>": value, ...}
    artifacts/       data_sample.json (regression), classification.json + misclassified.npz (MNIST),
                     final_metrics.json
    tb/              tensorboardX event files
    wandb/           wandb run files
    ckpt/            checkpoints
    stop             its presence asks the training process to stop after the current chunk

States: running -> finished | failed | diverged | stopped. A reader that finds
"running" while the process is gone reports "crashed" (see `read_status`).
No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_ROOT = Path(os.environ.get("JAXDASH_RUNS", "runs"))
TERMINAL_STATES = ("finished", "failed", "diverged", "stopped", "crashed")
_STATUS_LOCK = threading.Lock()
_SLUG = re.compile(r"[^a-z0-9_-]+")


def runs_root(root: str | os.PathLike | None = None) -> Path:
    """The runs root: the argument, else $JAXDASH_RUNS, else ./runs."""
    return Path(root) if root is not None else Path(os.environ.get("JAXDASH_RUNS", "runs"))


def slugify(name: str, max_len: int = 40) -> str:
    """A run name reduced to [a-z0-9_-]: it can never contain '/' or '..'."""
    s = _SLUG.sub("-", name.strip().lower()).strip("-_")
    return s[:max_len].strip("-_")


def new_run_dir(root: str | os.PathLike | None, task: str, name: str | None = None) -> Path:
    """Create a fresh, uniquely named run directory inside `root` and return it."""
    base = runs_root(root).resolve()
    base.mkdir(parents=True, exist_ok=True)
    slug = slugify(name or "") or task
    for _ in range(100):
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{secrets.token_hex(2)}"
        path = (base / run_id).resolve()
        if path.parent != base:  # defence in depth; slugify already forbids separators
            raise ValueError(f"run name {name!r} would leave the runs root")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError("could not allocate a unique run id")


def atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON so a reader sees the old or the new file, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w") as f:
        json.dump(_jsonable(data), f, indent=1, allow_nan=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _jsonable(x: Any) -> Any:
    """NaN/inf become strings so the files stay strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy scalars
        return _jsonable(x.item())
    return x


def read_json(path: Path, default: Any = None) -> Any:
    """Parsed JSON, or `default` if missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def write_config(
    run_dir: Path, task: str, config: Mapping[str, Any], name: str | None = None, command: list[str] | None = None, **extra: Any
) -> None:
    """Write config.json once, at the start of the run.

    `extra` adds top-level fields, e.g. a population member's {"group": <group id>, "member": <index>}.
    """
    atomic_write_json(
        run_dir / "config.json",
        {"run_id": run_dir.name, "name": name or run_dir.name, "task": task, "config": dict(config), "created": time.time(), "command": command, **extra},
    )


def write_status(run_dir: Path, **fields: Any) -> dict[str, Any]:
    """Merge `fields` into status.json (atomic replace) and return the new status.

    Fields used: state, pid, host, started, ended, message, step, total_steps, epoch,
    total_epochs, wall_seconds, compile_seconds, steps_per_sec, final (dict), wandb
    (dict: mode, url, sync_command, dir), updated.
    """
    path = run_dir / "status.json"
    with _STATUS_LOCK:  # writers' background threads update it too: no lost read-modify-write
        status = read_json(path, {}) or {}
        status.update(fields)
        status["updated"] = time.time()
        atomic_write_json(path, status)
    return status


def start_status(run_dir: Path, total_steps: int, **extra: Any) -> dict[str, Any]:
    """Mark the run as running in this process."""
    return write_status(
        run_dir, state="running", pid=os.getpid(), host=socket.gethostname(), started=time.time(),
        ended=None, message=None, step=0, total_steps=total_steps, **extra,
    )


def pid_alive(pid: int | None) -> bool:
    """True if `pid` is a live (non-zombie) process on this host."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def read_status(run_dir: Path) -> dict[str, Any]:
    """status.json with a "running" run whose process is gone reported as "crashed"."""
    status = read_json(Path(run_dir) / "status.json", {}) or {}
    if status.get("state") == "running" and status.get("host", socket.gethostname()) == socket.gethostname():
        if not pid_alive(status.get("pid")):
            status["state"] = "crashed"
            status.setdefault("message", None)
            status["message"] = status["message"] or "The training process exited without finishing (killed or crashed)."
    return status


def append_metrics(run_dir: Path, records: list[Mapping[str, Any]]) -> None:
    """Append records to metrics.jsonl and fsync, so a kill loses at most this chunk."""
    if not records:
        return
    lines = "".join(json.dumps(_jsonable(r), allow_nan=False) + "\n" for r in records)
    with open(Path(run_dir) / "metrics.jsonl", "a") as f:
        f.write(lines)
        f.flush()
        os.fsync(f.fileno())


def read_metrics(run_dir: Path, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Records from byte `offset` on, and the new offset (for incremental polling).

    A trailing partial line (a write in progress) is left for the next call.
    """
    path = Path(run_dir) / "metrics.jsonl"
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1
    records = []
    for line in data[:end].splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records, offset + end


def request_stop(run_dir: Path) -> None:
    """Ask the run to stop cleanly after its current chunk."""
    (Path(run_dir) / "stop").touch()


def stop_requested(run_dir: Path) -> bool:
    return (Path(run_dir) / "stop").exists()


@dataclass
class RunInfo:
    """A run as listed by the dashboard."""

    run_id: str
    path: Path
    name: str
    task: str
    config: dict[str, Any]
    status: dict[str, Any]
    created: float


def list_runs(root: str | os.PathLike | None = None) -> list[RunInfo]:
    """All runs under root, newest first; directories without config.json are skipped."""
    base = runs_root(root)
    if not base.is_dir():
        return []
    out = []
    for d in base.iterdir():
        cfg = read_json(d / "config.json") if d.is_dir() else None
        if not cfg:
            continue
        out.append(RunInfo(d.name, d, cfg.get("name", d.name), cfg.get("task", "?"), cfg.get("config", {}), read_status(d), cfg.get("created", 0.0)))
    return sorted(out, key=lambda r: r.created, reverse=True)


def iter_run_dirs(root: str | os.PathLike | None = None) -> Iterator[Path]:
    base = runs_root(root)
    return (d for d in base.iterdir() if (d / "config.json").exists()) if base.is_dir() else iter(())


def delete_run(run_dir: Path, root: str | os.PathLike | None = None) -> None:
    """Remove a run directory; refuses anything outside the runs root or still running."""
    base = runs_root(root).resolve()
    path = Path(run_dir).resolve()
    if path.parent != base:
        raise ValueError(f"{path} is not a run inside {base}")
    if read_status(path).get("state") == "running":
        raise RuntimeError("stop the run before deleting it")
    shutil.rmtree(path)
