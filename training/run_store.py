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

import contextlib
import errno
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
    text = json.dumps(_jsonable(data), indent=1, allow_nan=False)
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # never leave temp files behind
        if exc.errno == errno.ENOSPC and path.exists():
            _rewrite_in_place(path, text)  # a full disk: the old file's own blocks still fit the new text
            return
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def _rewrite_in_place(path: Path, text: str) -> None:
    """Overwrite a small file in place (not atomic; the fallback when a full disk refuses a temp file)."""
    try:
        with open(path, "r+") as f:
            f.write(text)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


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


# -- validation: every reader checks shape and types, so one damaged run can never break a page --------------

MAX_JSON_BYTES = 16 << 20  # config.json and status.json are a few KB; anything this big is not ours
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "Infinity": math.inf, "-Infinity": -math.inf}
_MAX_TIME = 1e11  # a unix time beyond year 5000 is damage, and datetime could not show it


class DamagedRunFile(ValueError):
    """A run file that exists but cannot be used; the message names the file and what is wrong."""


def _kind(v: Any) -> str:
    """How a value is described in a message, in JSON's words: 'yesterday', 5, null, true, a list."""
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, (int, float, str)):
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."
    return {dict: "an object", list: "a list"}.get(type(v), type(v).__name__)


def load_json_object(path: Path) -> dict[str, Any] | None:
    """A run file's JSON object; None if the file does not exist.

    Raises:
      DamagedRunFile: unreadable, too large, not JSON (e.g. truncated) or not a JSON object.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_JSON_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DamagedRunFile(f"{path.name}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > MAX_JSON_BYTES:
        raise DamagedRunFile(f"{path.name}: larger than {MAX_JSON_BYTES >> 20} MB, not a run file")
    if not raw.strip():
        raise DamagedRunFile(f"{path.name}: empty (truncated?)")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise DamagedRunFile(f"{path.name}: not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise DamagedRunFile(f"{path.name}: not valid JSON, truncated or corrupt ({str(exc)[:80]})") from None
    if not isinstance(data, dict):
        raise DamagedRunFile(f"{path.name}: must be a JSON object, got {_kind(data)}")
    return data


def _number(v: Any) -> float | int | None:
    """v as a number (the store writes non-finite floats as "nan"/"inf"), or None if it is not one."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and v in _NON_FINITE:
        return _NON_FINITE[v]
    return None


def _check(doc: dict[str, Any], fname: str, key: str, kind: str, required: bool = False) -> None:
    """Check (and normalize in place) doc[key] against `kind`; raise DamagedRunFile naming file and field."""
    if key not in doc:
        if required:
            raise DamagedRunFile(f"{fname}: {key!r} is missing")
        return
    if doc[key] is None and not required:
        return
    v = doc[key]
    ok = True
    if kind == "str":
        ok = isinstance(v, str)
    elif kind == "int":
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif kind in ("number", "finite", "time"):
        n = _number(v)
        ok = n is not None and (kind == "number" or math.isfinite(n)) and (kind != "time" or 0 <= n < _MAX_TIME)
        if ok:
            doc[key] = n
    elif kind == "object":
        ok = isinstance(v, dict)
    elif kind == "str list":
        ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
    elif kind == "int list":
        ok = isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    if not ok:
        what = {
            "str": "a string",
            "int": "an integer",
            "number": "a number",
            "finite": "a finite number",
            "time": "a unix time (seconds)",
            "object": "an object",
            "str list": "a list of strings",
            "int list": "a list of integers",
        }[kind]
        raise DamagedRunFile(f"{fname}: {key!r} must be {what}, got {_kind(v)}")


# Fields the dashboard computes with; other fields pass through unchecked (the engine may add more).
CONFIG_FIELDS = {
    "run_id": "str", "name": "str", "task": "str", "config": "object", "created": "time",
    "command": "str list", "group": "str", "member": "int",
}  # fmt: skip
CONFIG_VALUES = {"true_weight": "number", "true_bias": "number", "hidden": "int list"}
STATUS_FIELDS = {
    "state": "str", "pid": "int", "host": "str", "started": "time", "ended": "time", "updated": "time",
    "message": "str", "step": "finite", "total_steps": "finite", "epoch": "finite", "total_epochs": "finite",
    "wall_seconds": "number", "compile_seconds": "number", "steps_per_sec": "number", "final": "object",
    "wandb": "object", "group": "str", "member": "int", "resumed_from": "finite",
}  # fmt: skip
WANDB_FIELDS = ("mode", "requested_mode", "url", "sync_command", "dir", "error")


def validate_config(doc: dict[str, Any]) -> dict[str, Any]:
    """config.json checked for the fields readers use (numbers normalized); raises DamagedRunFile."""
    for key, kind in CONFIG_FIELDS.items():
        _check(doc, "config.json", key, kind, required=key in ("task", "config", "created"))
    for key, kind in CONFIG_VALUES.items():
        try:
            _check(doc["config"], "config.json", key, kind)
        except DamagedRunFile as exc:
            raise DamagedRunFile(str(exc).replace(f"{key!r}", f"'config.{key}'", 1)) from None
    return doc


def validate_status(doc: dict[str, Any]) -> dict[str, Any]:
    """status.json checked for the fields readers use (numbers normalized); raises DamagedRunFile."""
    for key, kind in STATUS_FIELDS.items():
        _check(doc, "status.json", key, kind)
    final = doc.get("final") or {}
    for tag, v in final.items():
        n = _number(v)
        if n is None:
            raise DamagedRunFile(f"status.json: 'final.{tag}' must be a number, got {_kind(v)}")
        final[tag] = n
    wandb = doc.get("wandb") or {}
    for key in WANDB_FIELDS:
        if wandb.get(key) is not None and not isinstance(wandb[key], str):
            raise DamagedRunFile(f"status.json: 'wandb.{key}' must be a string, got {_kind(wandb[key])}")
    return doc


def write_config(
    run_dir: Path,
    task: str,
    config: Mapping[str, Any],
    name: str | None = None,
    command: list[str] | None = None,
    **extra: Any,
) -> None:
    """Write config.json once, at the start of the run.

    `extra` adds top-level fields, e.g. a population member's {"group": <group id>, "member": <index>}.
    """
    atomic_write_json(
        run_dir / "config.json",
        {
            "run_id": run_dir.name,
            "name": name or run_dir.name,
            "task": task,
            "config": dict(config),
            "created": time.time(),
            "command": command,
            **extra,
        },
    )


def write_status(run_dir: Path, **fields: Any) -> dict[str, Any]:
    """Merge `fields` into status.json (atomic replace) and return the new status.

    Fields used: state, pid, host, started, ended, message, step, total_steps, epoch,
    total_epochs, wall_seconds, compile_seconds, steps_per_sec, final (dict), wandb
    (dict: mode, url, sync_command, dir), updated.
    """
    path = run_dir / "status.json"
    with _STATUS_LOCK:  # writers' background threads update it too: no lost read-modify-write
        status = read_json(path, {})
        status = status if isinstance(status, dict) else {}  # a damaged status.json is replaced, not merged
        status.update(fields)
        status["updated"] = time.time()
        atomic_write_json(path, status)
    return status


def start_status(run_dir: Path, total_steps: int, **extra: Any) -> dict[str, Any]:
    """Mark the run as running in this process."""
    return write_status(
        run_dir,
        state="running",
        pid=os.getpid(),
        host=socket.gethostname(),
        started=time.time(),
        ended=None,
        message=None,
        step=0,
        total_steps=total_steps,
        **extra,
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


START_SLACK_S = 5.0  # clock and bookkeeping slack between a process's start and the time a run records


def owns_process(status: Mapping[str, Any], run_dir: Path) -> bool:
    """True only if status["pid"] is verifiably this run's training process, alive on this host.

    Checked from what the run directory records now: the pid is alive (not a zombie) on this
    host ("host", when recorded); its command line runs `training`; it names the run directory
    or run id, or has a file inside the run directory open (a warm worker's process.log, event
    files); and it started no later than the run's recorded start ("started", or a page
    launch's "launched") plus a few seconds, so a pid reused by a newer process never matches.
    Anything that cannot be verified (another user's process, no /proc) is False.
    """
    pid, host = status.get("pid"), status.get("host")
    started = _number(status.get("started", status.get("launched")))
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 or pid == os.getpid():
        return False
    if host is not None and host != socket.gethostname():
        return False
    if started is None or not math.isfinite(started) or not pid_alive(pid):
        return False
    import psutil  # only here: the training process never needs it

    run_dir = Path(run_dir).resolve()
    try:
        proc = psutil.Process(pid)
        if proc.create_time() > started + START_SLACK_S:
            return False  # a newer process got the pid
        cmdline = proc.cmdline()
        if not any("training" in arg for arg in cmdline):
            return False
        if any(str(run_dir) in arg or run_dir.name in arg for arg in cmdline):
            return True
        return any(Path(f.path).is_relative_to(run_dir) for f in proc.open_files())
    except (psutil.Error, OSError, ValueError):
        return False


def read_status(run_dir: Path) -> dict[str, Any]:
    """status.json, validated; a "running" run whose process is gone is reported as "crashed".

    Missing: {}. Unreadable, truncated or of the wrong shape: {"state": "damaged", "message": <file: what>}.
    """
    try:
        status = load_json_object(Path(run_dir) / "status.json")
        status = validate_status(status) if status is not None else {}
    except DamagedRunFile as exc:
        return {"state": "damaged", "message": str(exc)}
    if status.get("state") == "running" and status.get("host", socket.gethostname()) == socket.gethostname():
        if not pid_alive(status.get("pid")):
            status["state"] = "crashed"
            status.setdefault("message", None)
            status["message"] = (
                status["message"] or "The training process exited without finishing (killed or crashed)."
            )
    return status


def append_metrics(run_dir: Path, records: list[Mapping[str, Any]]) -> None:
    """Append records to metrics.jsonl and fsync, so a kill loses at most this chunk."""
    if not records:
        return
    lines = "".join(json.dumps(_jsonable(r), allow_nan=False) + "\n" for r in records)
    path = Path(run_dir) / "metrics.jsonl"
    data = lines.encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:  # unbuffered: nothing is left in a buffer to land after a failure
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)  # never keep a half-written line
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        os.close(fd)


def read_metrics(run_dir: Path, offset: int = 0, max_bytes: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """Records from byte `offset` on, and the new offset (for incremental polling).

    A trailing partial line (a write in progress, or left by a crash) is left for the next call;
    lines that are not JSON objects are skipped. With `max_bytes`, reads about that much (whole
    lines), so a huge file can be consumed in bounded pieces.
    """
    path = Path(run_dir) / "metrics.jsonl"
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read() if max_bytes is None else f.read(max_bytes) + f.readline()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1
    records = []
    for line in data[:end].splitlines():
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records, offset + end


def request_stop(run_dir: Path) -> None:
    """Ask the run to stop cleanly after its current chunk."""
    (Path(run_dir) / "stop").touch()


def stop_requested(run_dir: Path) -> bool:
    return (Path(run_dir) / "stop").exists()


@dataclass
class RunInfo:
    """A run as listed by the dashboard. A damaged run has status {"state": "damaged", "message": ...}."""

    run_id: str
    path: Path
    name: str
    task: str
    config: dict[str, Any]
    status: dict[str, Any]
    created: float

    @property
    def damaged(self) -> bool:
        """True when the run's files could not be used (the status message says which and why)."""
        return self.status.get("state") == "damaged"


# Files only a training process writes: a folder holding one of them but no config.json is a damaged run.
RUN_FILES = ("status.json", "metrics.jsonl", "final_metrics.json", "artifacts", "ckpt", "tb", "wandb", "stop")


def damaged_run(d: Path, message: str, name: str | None = None, task: str = "?") -> RunInfo:
    """A listing entry for a run whose files are unusable: state "damaged" and a message naming the file."""
    try:
        created = d.stat().st_mtime
    except OSError:
        created = 0.0
    return RunInfo(d.name, d, name or d.name, task, {}, {"state": "damaged", "message": message}, created)


def read_run(d: Path) -> RunInfo | None:
    """The run in folder `d`, validated; None if `d` holds no run (or only a page launch, see dashboard.state)."""
    try:
        cfg = load_json_object(d / "config.json")
    except DamagedRunFile as exc:
        return damaged_run(d, str(exc))
    if cfg is None:
        if (d / "launch.json").exists():
            return None  # launched from the page, its process has not written config.json yet
        found = [f for f in RUN_FILES if (d / f).exists()]
        return damaged_run(d, f"config.json: missing (the folder has {', '.join(found)})") if found else None
    try:
        validate_config(cfg)
    except DamagedRunFile as exc:
        name = cfg.get("name") if isinstance(cfg.get("name"), str) else None
        return damaged_run(d, str(exc), name, cfg["task"] if isinstance(cfg.get("task"), str) else "?")
    status = read_status(d)
    return RunInfo(d.name, d, cfg.get("name") or d.name, cfg["task"], cfg["config"], status, cfg["created"])


def list_runs(root: str | os.PathLike | None = None) -> list[RunInfo]:
    """All runs under root, newest first; damaged ones included (state "damaged"), hidden folders skipped."""
    base = runs_root(root)
    try:
        entries = [d for d in base.iterdir() if not d.name.startswith(".") and d.is_dir()]
    except OSError:
        return []
    out = [run for run in map(read_run, entries) if run is not None]
    return sorted(out, key=lambda r: r.created, reverse=True)


def iter_run_dirs(root: str | os.PathLike | None = None) -> Iterator[Path]:
    base = runs_root(root)
    return (d for d in base.iterdir() if (d / "config.json").exists()) if base.is_dir() else iter(())


def delete_run(run_dir: Path, root: str | os.PathLike | None = None) -> None:
    """Remove a run directory; refuses a symlink, anything not directly inside the runs root, or a running run."""
    base = runs_root(root).resolve()
    path = Path(run_dir)
    if path.is_symlink() or not path.is_dir():
        raise ValueError(f"{path} is not a run directory (a link or not a folder); not deleted")
    if path.resolve().parent != base or path.name in ("", ".", ".."):
        raise ValueError(f"{path} is not a run inside {base}")
    if read_status(path).get("state") == "running":
        raise RuntimeError("stop the run before deleting it")
    shutil.rmtree(path.resolve())
