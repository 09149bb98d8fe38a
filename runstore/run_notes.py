"""A run's display name, tags and notes, edited on the page: notes.json (`RunFolder.notes_path`).

notes.json is the page's own file (config.json belongs to the training process) and is replaced
atomically, so a reload or a second tab always reads the last save. Files only: the page's save also
writes TensorBoard text and sends W&B (dashboard/processes/notes_sinks.py). No Streamlit here.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from runstore import atomic
from runstore.run_folder import RunFolder

MAX_TAGS, MAX_TAG_LEN, MAX_NOTES = 32, 40, 20_000


@dataclass
class RunNotes:
    """What a user wrote about a run."""

    display_name: str = ""
    tags: list[str] = field(default_factory=list)
    notes: str = ""
    updated: float | None = None
    sent: dict[str, str] = field(default_factory=dict)  # sink -> what happened at the last save


def clean_tags(tags: list[str]) -> list[str]:
    """Trimmed, de-duplicated (first spelling kept), bounded tags; commas split one entry into several."""
    out: list[str] = []
    for t in tags:
        for part in str(t).split(","):
            part = part.strip()[:MAX_TAG_LEN]
            if part and part.lower() not in (o.lower() for o in out):
                out.append(part)
    return out[:MAX_TAGS]


def load(run_dir: Path) -> RunNotes:
    """notes.json of a run (empty notes when missing or damaged: it is never needed to show a run)."""
    doc = atomic.read_json(RunFolder(run_dir).notes_path, {})
    if not isinstance(doc, dict):
        return RunNotes()
    tags = doc.get("tags") if isinstance(doc.get("tags"), list) else []
    sent = doc.get("sent") if isinstance(doc.get("sent"), dict) else {}
    return RunNotes(
        display_name=str(doc.get("display_name") or "")[:200],
        tags=clean_tags([t for t in tags if isinstance(t, str)]),
        notes=str(doc.get("notes") or "")[:MAX_NOTES],
        updated=doc.get("updated") if isinstance(doc.get("updated"), (int, float)) else None,
        sent={str(k): str(v) for k, v in sent.items()},
    )


def make(display_name: str, tags: list[str], notes: str) -> RunNotes:
    """New notes, cleaned and bounded, dated now."""
    return RunNotes(display_name.strip()[:200], clean_tags(tags), notes[:MAX_NOTES], time.time())


def write(run_dir: Path, notes: RunNotes) -> None:
    """Replace notes.json by `notes` (atomic). Raises OSError naming the file."""
    atomic.atomic_write_json(RunFolder(run_dir).notes_path, asdict(notes))


def record_sent(run_dir: Path, updated: float | None, sink: str, outcome: str) -> None:
    """Record what happened at a sink (W&B) for the save dated `updated`; a newer save keeps its own outcome."""
    current = load(run_dir)
    if current.updated == updated:
        current.sent[sink] = outcome
        with contextlib.suppress(OSError):
            write(run_dir, current)


def seed(run_dir: Path, tags: list[str], notes: str) -> None:
    """A client run's `init(tags=, notes=)` as its first notes.json (only when it has none yet)."""
    path = RunFolder(run_dir).notes_path
    if not path.exists():
        sent = {"wandb": "set at the run's start (init tags and notes)"}
        atomic.atomic_write_json(path, asdict(RunNotes("", clean_tags(tags), notes[:MAX_NOTES], time.time(), sent)))
