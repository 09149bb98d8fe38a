"""Files a script keeps in its run folder, and its alerts: what Run detail lists. No Streamlit here.

Who writes what (the client, jaxdash/wandb_artifacts.py):

* files/<relative path>: `wandb.save(...)` copies, under the path relative to `base_path`;
* artifacts/logged/<name>/v<N>/: `run.log_artifact(...)`'s files, and its manifest.json
  {"name", "type", "version", "aliases", "description", "metadata", "files", "references"} written last;
* alerts.jsonl: one line an alert, {"title", "text", "level", "step", "ts"}.

Every write goes through `runstore.nofollow`: no "..", no folder on the way entered through a link, no link or
FIFO written through (a planted one is refused in one line). Readers skip links, damaged lines and other shapes.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runstore import nofollow, safe_files
from runstore.run_folder import ALERTS, ARTIFACTS, LOGGED, RunFolder

LOGGED_REL = (ARTIFACTS, LOGGED)  # artifacts/logged/, relative to the run folder


def safe_relative(rel: str) -> str | None:
    """`rel` as a clean relative posix path, or None when it is absolute, empty or climbs out ("..")."""
    parts = [p for p in PurePosixPath(str(rel).replace(os.sep, "/")).parts if p not in ("", ".")]
    if not parts or PurePosixPath(str(rel)).is_absolute() or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def copy_into(run_dir: Path, source: Path, rel: str) -> Path | None:
    """Copy the regular file `source` to run_dir/rel, each folder on the way made or entered without following a
    link (`runstore.nofollow`); None (nothing written) when rel is absolute or climbs out, or `source` is not a
    regular file.

    Raises:
      UnsafePath: a folder on the way is a link or not a folder (one line naming it and the fix).
    """
    clean = safe_relative(rel)
    if clean is None or not Path(source).is_file():
        return None
    with open(source, "rb") as src:
        return nofollow.replace(run_dir, clean, lambda out: shutil.copyfileobj(src, out), fsync=False)


def write_json_inside(run_dir: Path, rel: str, doc: Any) -> Path | None:
    """A JSON file at run_dir/rel (atomic, never through a link); None when rel leads out. Raises UnsafePath."""
    clean = safe_relative(rel)
    if clean is None:
        return None
    return nofollow.replace(run_dir, clean, json.dumps(doc, indent=1, default=str).encode(), fsync=False)


def artifact_rel(name: str, version: int) -> str:
    """Where version `version` of artifact `name` lives, relative to its run folder."""
    return "/".join((*LOGGED_REL, name, f"v{int(version)}"))


def artifact_dir(run_dir: Path, name: str, version: int) -> Path:
    """Where version `version` of artifact `name` lives in a run folder."""
    return Path(run_dir) / artifact_rel(name, version)


def next_version(run_dir: Path, name: str) -> int:
    """The first free version number of artifact `name` in this run (its folder listed without following a link)."""
    found = nofollow.names(run_dir, "/".join((*LOGGED_REL, name)))
    taken = [int(n[1:]) for n in found if n.startswith("v") and n[1:].isdigit()]
    return max(taken, default=-1) + 1


def artifact_manifests(run_dir: Path) -> list[dict[str, Any]]:
    """Every logged artifact's manifest in a run folder (each with its "path"), by name and version."""
    root = RunFolder(run_dir).logged
    if not safe_files.is_real_dir(root) or not safe_files.inside(run_dir, root):
        return []
    out = []
    for manifest in sorted(root.glob("*/v*/manifest.json")):
        if not safe_files.is_regular(manifest) or not safe_files.inside(run_dir, manifest):
            continue
        try:
            doc = json.loads(safe_files.read_regular(manifest, 1 << 20))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            out.append({**doc, "path": str(manifest.parent)})
    return sorted(out, key=lambda d: (str(d.get("name")), _version_number(d.get("version"))))


def _version_number(version: Any) -> int:
    text = str(version or "")[1:]
    return int(text) if text.isdigit() else -1


def saved_files(run_dir: Path) -> list[str]:
    """The relative paths under files/ (what `wandb.save` kept), sorted; links skipped."""
    root = RunFolder(run_dir).files
    if not safe_files.is_real_dir(root):
        return []
    out = []
    for base, _dirs, names in os.walk(root):  # os.walk does not follow links to folders
        out += [
            os.path.relpath(os.path.join(base, n), root) for n in names if safe_files.is_regular(os.path.join(base, n))
        ]
    return sorted(out)


def append_alert(run_dir: Path, title: str, text: str, level: str, step: int | None) -> None:
    """One line of alerts.jsonl (appended; never through a link, never blocking on a FIFO).

    Raises:
      UnsafePath: alerts.jsonl is a link, FIFO or other non-regular file (one line naming it and the fix).
    """
    line = {"title": str(title), "text": str(text), "level": str(level), "step": step, "ts": time.time()}
    nofollow.append(run_dir, ALERTS, (json.dumps(line) + "\n").encode())


def alerts(run_dir: Path) -> list[dict[str, Any]]:
    """The run's alerts, oldest first (a torn or damaged line skipped)."""
    try:
        text = safe_files.read_regular(RunFolder(run_dir).alerts_path, 4 << 20).decode("utf-8", "replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("title"), str):
            out.append(doc)
    return out


# -- readers for the page (Run detail's files, artifacts and alerts; the Runs table's alert count) ----------

SMALL_FILE = 8 << 20  # a file up to this size gets a download button (read when the page draws it)


@dataclass(frozen=True)
class FileEntry:
    """One file a run kept: its path relative to its folder (files/ or the artifact version), size and place."""

    name: str
    size: int
    path: Path


@dataclass(frozen=True)
class ArtifactEntry:
    """One logged artifact version: its manifest's name, type, version, aliases and description, its files."""

    name: str
    type: str
    version: str
    aliases: tuple[str, ...]
    description: str
    files: tuple[FileEntry, ...]
    references: tuple[str, ...]

    @property
    def size(self) -> int:
        """Bytes of its files together."""
        return sum(f.size for f in self.files)


def _entry(folder: Path, rel: str) -> FileEntry | None:
    path = Path(folder) / rel
    try:
        st = path.lstat()
    except OSError:
        return None
    regular = safe_files.is_regular(path) and safe_files.inside(folder, path)
    return FileEntry(rel, st.st_size, path) if regular else None


def saved_file_entries(run_dir: Path) -> list[FileEntry]:
    """What `wandb.save` kept under files/, with sizes, by path; links skipped."""
    root = RunFolder(run_dir).files
    return [e for e in (_entry(root, rel) for rel in saved_files(run_dir)) if e is not None]


def artifact_entries(run_dir: Path) -> list[ArtifactEntry]:
    """Every logged artifact version (artifacts/logged/<name>/v<N>/manifest.json) with its files' sizes."""
    out = []
    for doc in artifact_manifests(run_dir):
        folder = Path(doc["path"])
        listed = doc.get("files") if isinstance(doc.get("files"), list) else []
        names = [safe_relative(str(f)) for f in listed]
        files = tuple(e for e in (_entry(folder, n) for n in names if n) if e is not None)
        aliases = doc.get("aliases") if isinstance(doc.get("aliases"), list) else []
        refs = doc.get("references") if isinstance(doc.get("references"), list) else []
        out.append(
            ArtifactEntry(
                name=str(doc.get("name") or folder.parent.name),
                type=str(doc.get("type") or ""),
                version=str(doc.get("version") or folder.name),
                aliases=tuple(str(a) for a in aliases),
                description=str(doc.get("description") or ""),
                files=files,
                references=tuple(str(r.get("uri", r)) if isinstance(r, dict) else str(r) for r in refs),
            )
        )
    return out


def read_small(entry: FileEntry, limit: int = SMALL_FILE) -> bytes | None:
    """The bytes of a listed file when it is at most `limit` bytes, else (or when it is gone) None."""
    if entry.size > limit:
        return None
    try:
        data = safe_files.read_regular(entry.path, limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


@functools.lru_cache(maxsize=4096)
def _count_alerts(path: str, mtime_ns: int, size: int) -> int:
    return len(alerts(Path(path).parent))


def alert_count(run_dir: Path) -> int:
    """How many alerts a run raised (alerts.jsonl re-read only when it changed): the Runs table's badge.

    One lstat a run when nothing changed (a table of 2,000 runs calls this at every rerun)."""
    path = os.path.join(run_dir, ALERTS)
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return _count_alerts(path, st.st_mtime_ns, st.st_size) if stat.S_ISREG(st.st_mode) else 0
