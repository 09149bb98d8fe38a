"""Which W&B mode a run uses, the run id it keeps, and the `wandb.init` arguments W&B users expect.

Precedence, as W&B users expect it: an explicit `--wandb online|offline|disabled`, else
`$WANDB_MODE`, else "auto": online when wandb itself finds credentials for its configured host
(`WANDB_API_KEY`, `WANDB_IDENTITY_TOKEN_FILE`, the netrc entry `wandb login` wrote, or the key in
wandb's settings file), offline otherwise. Nothing here touches the network.

The W&B run id is random and kept in `<run_dir>/wandb_id`, so two runs in folders of the same name
never share a W&B run, and `resume` continues the same one, in the project, group and folder the
run started with (`wandb_settings.json`). A `WANDB_RUN_ID` names a new run (a population member
gets `<id>-m<k>`).
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runstore import atomic, run_folder

if TYPE_CHECKING:
    from runwriters.base import Tracking

log = logging.getLogger(__name__)

MODES = ("auto", "online", "offline", "disabled")  # the one list: the CLI, sweeps and the page check against it
_ALIASES = {"dryrun": "offline", "run": "online"}  # older values wandb still accepts for WANDB_MODE
ID_FILE = "wandb_id"
SETTINGS_FILE = "wandb_settings.json"  # the wandb.init settings a run started with, for its resume
_KEPT = ("dir", "project", "entity", "notes", "group", "job_type", "tags", "name")
DEFAULT_PROJECT = "jax-dashboard"


def wandb_host() -> str:
    """The W&B server wandb is configured for (`WANDB_BASE_URL`, `wandb login --host`, or its default)."""
    if os.environ.get("WANDB_BASE_URL"):  # read now: wandb's process-wide settings keep their first value
        return os.environ["WANDB_BASE_URL"].rstrip("/")
    try:
        from wandb.sdk import wandb_setup

        return str(wandb_setup.singleton().settings.base_url)  # env and wandb's settings files
    except Exception:  # noqa: BLE001 - private API moved: the public Settings read the environment
        import wandb

        return str(wandb.Settings().base_url)


def credentials_found() -> bool:
    """True when wandb would find credentials for its configured host; local lookups only, never a prompt."""
    host = wandb_host()
    try:
        from wandb.sdk.lib.wbauth import authenticate_session

        return authenticate_session(host=host, source="jaxdash", prompt=False, update_session=False) is not None
    except ImportError:  # an older or newer wandb without wbauth: its netrc lookup, or the env key
        try:
            from wandb.sdk.lib.wbauth import read_netrc_auth

            return bool(os.environ.get("WANDB_API_KEY") or read_netrc_auth(host=host))
        except Exception:  # noqa: BLE001 - no lookup available: only an explicit key counts
            return bool(os.environ.get("WANDB_API_KEY"))
    except Exception as exc:  # noqa: BLE001 - malformed credentials: wandb.init would fail online too
        log.warning("W&B credentials unusable (%s); logging offline.", exc)
        return False


def resolve_mode(mode: str | None) -> str:
    """online | offline | disabled from an explicit mode, else $WANDB_MODE, else credentials.

    "auto" and None both mean "not chosen": `$WANDB_MODE` then decides (the dashboard passes
    `--wandb auto`), and without it credentials do.

    Raises:
      ValueError: `mode` is not one of auto, online, offline, disabled.
    """
    mode = (mode or "auto").strip().lower()
    if mode not in MODES:
        raise ValueError(f"unknown W&B mode {mode!r}; use auto, online, offline or disabled")
    if mode != "auto":
        return mode
    env = os.environ.get("WANDB_MODE", "").strip().lower()
    env = _ALIASES.get(env, env)
    if env in MODES[1:]:
        return env
    if env and env != "auto":
        log.warning("Ignoring WANDB_MODE=%r (expected online, offline or disabled).", env)
    return "online" if credentials_found() else "offline"


def run_id(run_dir: Path, member: int | None = None, resume: bool = True) -> str:
    """The run's W&B id: a sweep agent's for a new run, else the one kept in `run_dir/wandb_id`, else a new one.

    Under `$WANDB_RUN_ID` a population member gets `<id>-m<k>`: K members are K W&B runs, never one.
    A resume keeps its own id whatever the environment says.
    """
    path = Path(run_dir) / ID_FILE
    agent = os.environ.get("WANDB_RUN_ID", "").strip()
    try:
        kept = "" if agent and not resume else path.read_text().strip()
    except OSError:
        kept = ""
    if kept:
        return kept
    if agent:
        new = agent if member is None else f"{agent}-m{member}"
    else:
        new = secrets.token_hex(4)  # 8 characters like wandb's own ids; 2^32 per project is plenty
    try:
        path.write_text(new + "\n")
    except OSError as exc:
        log.warning("Could not keep the W&B run id in %s (%s); a resume starts a new W&B run.", path, exc)
    return new


def _env_list(var: str) -> list[str]:
    return [t.strip() for t in os.environ.get(var, "").split(",") if t.strip()]


def init_kwargs(run_dir: Path, name: str | None, tracking: Tracking, resume: bool = False) -> dict[str, Any]:
    """`wandb.init` keywords: W&B's variables win over our defaults (project, dir, group, job type).

    `tracking` gives the group, the job type (also our one tag) and a population member's index (its
    own run id). `WANDB_TAGS` adds to our tags; `WANDB_ENTITY` and `WANDB_NOTES` are passed on as set. The
    settings a run started with are kept in `run_dir/wandb_settings.json`; a resume uses them
    whatever the environment says then, so both parts land in one W&B run.
    """
    if resume:
        kept = kept_settings(run_dir)
        if kept:
            _warn_if_environment_differs(kept)
            return {**kept, "id": run_id(run_dir, tracking.member)}
    env = os.environ.get
    tags = [tracking.job_type] if tracking.job_type else []
    kwargs = {
        "dir": str(Path(env("WANDB_DIR") or run_dir).resolve()),
        "project": env("WANDB_PROJECT") or DEFAULT_PROJECT,
        "entity": env("WANDB_ENTITY") or None,
        "notes": env("WANDB_NOTES") or None,
        "group": env("WANDB_RUN_GROUP") or tracking.group,
        "job_type": env("WANDB_JOB_TYPE") or tracking.job_type,
        "tags": list(dict.fromkeys([*tags, *_env_list("WANDB_TAGS")])),
        "name": name or Path(run_dir).name,
    }
    try:
        atomic.atomic_write_json(Path(run_dir) / SETTINGS_FILE, kwargs)
    except OSError as exc:
        log.warning("Could not keep the W&B settings in %s (%s); a resume reads the environment.", run_dir, exc)
    return {**kwargs, "id": run_id(run_dir, tracking.member, resume)}


def kept_settings(run_dir: Path) -> dict[str, Any]:
    """The `wandb.init` settings the run started with (empty for a run started before they were kept)."""
    kept = atomic.read_json(Path(run_dir) / SETTINGS_FILE)
    return {k: kept.get(k) for k in _KEPT} if isinstance(kept, dict) and kept.get("project") else {}


def _warn_if_environment_differs(kept: dict[str, Any]) -> None:
    for var, key in (("WANDB_PROJECT", "project"), ("WANDB_RUN_GROUP", "group"), ("WANDB_ENTITY", "entity")):
        value = os.environ.get(var)
        if value and value != kept.get(key):
            log.warning("%s=%s ignored: this run continues in its own W&B %s %r.", var, value, key, kept.get(key))


def wandb_root(run_dir: Path) -> Path:
    """The folder wandb writes this run's `wandb/` folder into: the kept `dir`, else `$WANDB_DIR` or the run."""
    kept = kept_settings(run_dir).get("dir")
    return Path(kept or os.environ.get("WANDB_DIR") or run_dir) / run_folder.WANDB


def run_folders(run_dir: Path, wandb_id: str) -> list[Path]:
    """This run's W&B folders (offline-run-* and run-*), oldest first: the `wandb sync` order."""
    root = wandb_root(run_dir)
    # wandb appends "-1", "-2" when two processes of one run start in the same second.
    found = {p for pat in (f"*run-*-{wandb_id}", f"*run-*-{wandb_id}-*") for p in root.glob(pat)}
    found = [p for p in found if p.is_dir() and not p.is_symlink()]
    return sorted(found, key=lambda p: p.name.split("-", 1)[1] if p.name.startswith("offline-") else p.name)
