"""Saving a run's notes from the page: notes.json (runstore.run_notes), TensorBoard text and W&B online.

Each save is written as TensorBoard text (tag "notes", a small event file `*.notes` in the run's logdir from
status.json "tensorboard"."logdir") and, for a run logged to W&B online, sent to it as the run's tags and
notes (wandb.Api, on a background thread: the page never waits on the network). An offline W&B run cannot be
changed from here: W&B's offline files are written by the training process only, so the page says so. The
run folder's floor (runstore/) holds files only; the TensorBoard writer and the network live here.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

from runstore import nofollow, run_notes
from runstore.run_notes import RunNotes

WANDB_URL = re.compile(r"https?://[^/]+/(?P<entity>[^/]+)/(?P<project>[^/]+)/runs/(?P<id>[^/?#]+)")


def save(run_dir: Path, display_name: str, tags: list[str], notes: str, status: dict[str, Any]) -> RunNotes:
    """Write notes.json atomically, then TensorBoard text and W&B (each outcome in `sent`).

    W&B online is sent in a background thread; its outcome lands in notes.json when it is known.
    """
    run_dir = Path(run_dir)
    new = run_notes.make(display_name, tags, notes)
    new.sent["tensorboard"] = write_tensorboard(run_dir, new, status)
    new.sent["wandb"] = wandb_plan(status)
    run_notes.write(run_dir, new)
    if new.sent["wandb"].startswith("sending"):
        threading.Thread(target=_send_wandb, args=(run_dir, new, status), daemon=True).start()
    return new


def markdown(n: RunNotes) -> str:
    """The notes as one markdown text (what TensorBoard shows)."""
    parts = [f"**{n.display_name}**" if n.display_name else "", "tags: " + ", ".join(n.tags) if n.tags else ""]
    return "\n\n".join(p for p in [*parts, n.notes] if p) or "(no notes)"


def write_tensorboard(run_dir: Path, n: RunNotes, status: dict[str, Any]) -> str:
    """The notes as TensorBoard text "notes" in the run's logdir; returns what happened, in words."""
    logdir = ((status.get("tensorboard") or {}) if isinstance(status.get("tensorboard"), dict) else {}).get("logdir")
    if not logdir:
        return "not written: this run has no TensorBoard logdir in status.json"
    path = Path(logdir) if Path(logdir).is_absolute() else run_dir / logdir
    try:  # status.json may name any folder: only a real folder inside the run, reached without a link, is written
        with nofollow.folder(run_dir, nofollow.parts_of(run_dir, path), create=False):
            pass
    except FileNotFoundError:
        return f"not written: {path} does not exist"
    except OSError as exc:
        return f"not written: {exc}"
    try:
        from tensorboardX import SummaryWriter

        for old in nofollow.names(run_dir, path):  # one notes file: the latest save
            if old.endswith(".notes"):
                nofollow.remove(run_dir, path / old)
        writer = SummaryWriter(str(path), filename_suffix=".notes")
        writer.add_text("notes", markdown(n), global_step=int(n.updated or time.time()))
        writer.close()
    except Exception as exc:  # noqa: BLE001 - a note that TensorBoard misses never loses the save
        return f"not written: {type(exc).__name__}: {exc}"
    return f"written to {path}"


def wandb_plan(status: dict[str, Any]) -> str:
    """What a save does on W&B, in words, from status.json "wandb"."""
    info = status.get("wandb") if isinstance(status.get("wandb"), dict) else {}
    mode = info.get("mode")
    if mode == "online" and info.get("url") and WANDB_URL.match(info["url"]):
        return "sending to W&B…"
    if mode == "offline":
        return "not sent: the run was logged offline; set tags and notes in W&B after `wandb sync`"
    if mode == "online":
        return "not sent: W&B gave this run no URL"
    return "not sent: W&B was not used for this run"


def _send_wandb(run_dir: Path, n: RunNotes, status: dict[str, Any]) -> None:
    """Set the online W&B run's tags, notes and display name; record the outcome in notes.json."""
    m = WANDB_URL.match(status["wandb"]["url"])
    try:
        import wandb

        run = wandb.Api(timeout=20).run(f"{m['entity']}/{m['project']}/{m['id']}")
        run.tags = list(n.tags)
        run.notes = n.notes
        if n.display_name:
            run.name = n.display_name
        run.update()
        outcome = f"sent to W&B ({m['entity']}/{m['project']}/{m['id']})"
    except Exception as exc:  # noqa: BLE001 - the network or W&B said no: say so on the page
        outcome = f"not sent: {type(exc).__name__}: {exc}"[:300]
    run_notes.record_sent(run_dir, n.updated, "wandb", outcome)
