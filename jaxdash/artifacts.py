"""`wandb.Artifact`, `run.log_artifact` / `use_artifact`, `wandb.save` and `wandb.alert` under `import jaxdash as wandb`.

Files are copied into the run folder (runstore.run_files: files/ for `save`,
artifacts/logged/<name>/v<N>/ for an artifact, alerts.jsonl for alerts), where Run detail lists them.
There is no W&B server here: `use_artifact` finds the newest logged version under the runs root and
`download()` gives its local folder; what has no meaning here (references, upload policies, the W&B
copy of an artifact) is accepted with one notice. Every destination stays inside the run folder.
"""

from __future__ import annotations

import enum
import glob as globlib
import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from jaxdash.data_types import notice
from runstore import run_files, run_store, safe_files


class AlertLevel(enum.StrEnum):
    """`wandb.AlertLevel`."""

    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


class Artifact:
    """`wandb.Artifact(name, type, description=None, metadata=None, ...)`: files and references to log."""

    def __init__(self, name: str, type: str, description: str | None = None, metadata: dict | None = None,  # noqa: A002
                 incremental: bool = False, use_as: str | None = None) -> None:  # fmt: skip
        self.name, self.type, self.description = str(name), str(type), description
        self.metadata = dict(metadata or {})
        self.version: str | None = None
        self.aliases: list[str] = []
        self._files: list[tuple[Path, str]] = []  # (source, name inside the artifact)
        self.references: list[dict[str, str]] = []
        self._path: Path | None = None  # the logged copy's folder

    def add_file(self, local_path: str, name: str | None = None, is_tmp: bool = False, **_: Any) -> Any:
        """Add one file (under `name`, default its file name); a missing file raises ValueError as wandb's."""
        path = Path(local_path)
        if not path.is_file():
            raise ValueError(f"Artifact.add_file: {local_path} is not a file")
        self._files.append((path, name or path.name))
        return None

    def add_dir(self, local_path: str, name: str | None = None, **_: Any) -> None:
        """Add every file under a folder (under `name/`, default the root)."""
        root = Path(local_path)
        if not root.is_dir():
            raise ValueError(f"Artifact.add_dir: {local_path} is not a folder")
        for base, _dirs, names in os.walk(root):
            for file in names:
                rel = os.path.relpath(os.path.join(base, file), root)
                self._files.append((Path(base) / file, f"{name}/{rel}" if name else rel))

    def add_reference(self, uri: str, name: str | None = None, checksum: bool = True, **_: Any) -> None:
        """Record a reference (a URI); nothing is fetched here (one notice)."""
        notice("Artifact.add_reference", "references are recorded in the manifest, not fetched")
        self.references.append({"uri": str(uri), "name": name or str(uri).rstrip("/").rsplit("/", 1)[-1]})

    def add(self, obj: Any, name: str) -> None:
        """`Artifact.add(table_or_medium, name)`: kept as a notice (no W&B media store here)."""
        notice("Artifact.add", f"{type(obj).__name__} {name!r} is not stored in the artifact here")

    def save(self) -> None:
        """Nothing to upload here."""

    def wait(self, timeout: int | None = None) -> Artifact:
        """Logged at once here."""
        return self

    def download(self, root: str | None = None, **_: Any) -> str:
        """The local folder of this artifact's files (where it was logged); raises ValueError if it never was."""
        if self._path is None or not self._path.is_dir():
            raise ValueError(f"artifact {self.name!r} has no local copy: log it with run.log_artifact first")
        return str(self._path)

    def get_entry(self, name: str) -> Path:
        """The local path of one file of the logged artifact."""
        return Path(self.download()) / name

    @property
    def files(self) -> list[str]:
        """Names of the files added."""
        return [n for _, n in self._files]


def _current(what: str) -> Any:
    from jaxdash import session

    run = session.current()
    if run is None:
        raise RuntimeError(f"jaxdash.{what}() before jaxdash.init()")
    return run


def log_artifact_to(run: Any, artifact_or_path: Artifact | str, name: str | None = None, type: str | None = None,  # noqa: A002
                 aliases: Sequence[str] | None = None, tags: Sequence[str] | None = None) -> Artifact:  # fmt: skip
    """Copy the artifact's files into artifacts/logged/<name>/v<N>/ of the run folder, with its manifest."""
    art = artifact_or_path
    if not isinstance(art, Artifact):
        path = Path(str(art))
        art = Artifact(name or path.name, type or "unspecified")
        art.add_dir(str(path)) if path.is_dir() else art.add_file(str(path))
    if not safe_files.plain_name(art.name):
        raise ValueError(f"Artifact name {art.name!r}: use letters, digits, '-', '_' and '.' only")
    version = run_files.next_version(run.dir, art.name)
    folder = run_files.artifact_dir(run.dir, art.name, version)
    stored = [rel for source, rel in art._files if run_files.copy_into(folder, source, rel) is not None]
    skipped = [rel for _, rel in art._files if rel not in stored]
    if skipped:
        notice(
            f"log_artifact({art.name})",
            f"{len(skipped)} file(s) not copied (a path out of the artifact): {skipped[:3]}",
        )
    art.version, art.aliases, art._path = f"v{version}", ["latest", *(aliases or [])], folder
    doc = {"name": art.name, "type": art.type, "version": art.version, "aliases": art.aliases,
           "description": art.description, "metadata": art.metadata, "files": stored, "references": art.references}  # fmt: skip
    run_files.write_json_inside(folder, "manifest.json", doc)
    notice("log_artifact", "artifacts are kept in the run folder (artifacts/logged/); the W&B copy does not get them")
    return art


def use_artifact_in(run: Any, artifact_or_name: Artifact | str, type: str | None = None,  # noqa: A002
                 aliases: Sequence[str] | None = None, use_as: str | None = None) -> Artifact:  # fmt: skip
    """The newest logged version of `name[:alias]` under the runs root (this run first); `download()` gives its folder."""
    if isinstance(artifact_or_name, Artifact):
        return artifact_or_name
    name, _, alias = str(artifact_or_name).rsplit("/", 1)[-1].partition(":")
    found = _find(run.dir, name, alias or "latest")
    art = Artifact(name, type or (found or {}).get("type", "unspecified"))
    if found is None:
        notice(f"use_artifact({artifact_or_name})", f"no logged artifact {name!r} in {Path(run.dir).parent}")
        return art
    art.version, art.aliases, art._path = found["version"], list(found.get("aliases", [])), Path(found["path"])
    art.metadata = dict(found.get("metadata") or {})
    return art


def log_artifact(artifact_or_path: Artifact | str, name: str | None = None, type: str | None = None,  # noqa: A002
                 aliases: Sequence[str] | None = None, tags: Sequence[str] | None = None) -> Artifact:  # fmt: skip
    """`wandb.log_artifact`: `log_artifact_to` the current run."""
    return log_artifact_to(_current("log_artifact"), artifact_or_path, name, type, aliases, tags)


def use_artifact(artifact_or_name: Artifact | str, type: str | None = None,  # noqa: A002
                 aliases: Sequence[str] | None = None, use_as: str | None = None) -> Artifact:  # fmt: skip
    """`wandb.use_artifact`: `use_artifact_in` the current run."""
    return use_artifact_in(_current("use_artifact"), artifact_or_name, type, aliases, use_as)


def _find(run_dir: Path, name: str, alias: str) -> dict[str, Any] | None:
    """The manifest of `name` at `alias` ("latest", "v3" or a logged alias), newest first, this run first."""
    runs = [Path(run_dir), *[p for p in run_store.run_folders(Path(run_dir).parent) if p != Path(run_dir)]]
    for folder in runs:
        found = [m for m in run_files.artifact_manifests(folder) if m.get("name") == name]
        found = [m for m in found if alias == "latest" or alias == m.get("version") or alias in m.get("aliases", [])]
        if found:
            return found[-1]
    return None


def save(glob_str: str | os.PathLike | None = None, base_path: str | os.PathLike | None = None,
         policy: str = "live", glob: bool = True) -> list[str]:  # fmt: skip
    """Copy the files matching `glob_str` into the run folder's files/, as W&B lays them out: relative to
    `base_path`, default the working folder for a relative glob, the glob's folder's parent for an absolute
    one. Returns the copies' paths. "live" and "end" copy now (one notice): nothing is uploaded here."""
    if glob_str is None:
        return []
    run = _current("save")
    text = os.fspath(glob_str)
    pattern = os.path.abspath(text)
    if base_path is not None:
        base = os.path.abspath(os.fspath(base_path))
    else:
        base = os.getcwd() if not os.path.isabs(text) else os.path.dirname(os.path.dirname(_fixed_part(pattern)))
    if os.path.commonpath([base, pattern]) != base:
        raise ValueError(f"wandb.save({text!r}): the glob may not walk above base_path {base}")
    matches = sorted(globlib.glob(pattern, recursive=True)) if glob else [pattern]
    copies = []
    for match in matches:
        rel = os.path.relpath(match, base)
        dest = run_files.copy_into(Path(run.dir) / "files", Path(match), rel)
        if dest is None:
            notice(f"save({match})", "not copied: not a regular file, or a link leads out of the run folder's files/")
        else:
            copies.append(str(dest))
    if policy != "now":
        notice("save", f"policy={policy!r}: the files are copied now, later changes are not followed")
    return copies


def _fixed_part(pattern: str) -> str:
    """The pattern up to its last folder without a wildcard, plus one name (so dirname gives that folder)."""
    parts = Path(pattern).parts
    for i, part in enumerate(parts):
        if globlib.has_magic(part):
            return str(Path(*parts[:i]) / "x")
    return pattern


_LAST_ALERT: dict[tuple[str, str], float] = {}


def alert(title: str, text: str, level: str | AlertLevel | None = None,
          wait_duration: int | float | timedelta | None = None) -> None:  # fmt: skip
    """Record an alert in the run folder (alerts.jsonl); the same title again within `wait_duration` s is dropped."""
    import time

    run = _current("alert")
    level = (level.value if isinstance(level, AlertLevel) else str(level or "INFO")).upper()
    wait = wait_duration.total_seconds() if isinstance(wait_duration, timedelta) else float(wait_duration or 0)
    key, now = (str(run.dir), str(title)), time.monotonic()
    if wait and now - _LAST_ALERT.get(key, -float("inf")) < wait:
        return
    _LAST_ALERT[key] = now
    step = getattr(run, "_step", None)
    run_files.append_alert(run.dir, title, text, level, int(step) if isinstance(step, int) and step >= 0 else None)
    notice("alert", "alerts are recorded in the run folder (alerts.jsonl) for the page; nothing is sent")
