"""`wandb.Artifact` and `run.log_artifact` / `use_artifact` under `import jaxdash as wandb`.

An artifact's files are copied into the run folder (runstore.run_files: artifacts/logged/<name>/v<N>/
with its manifest), where Run detail lists them, and that copy is logged on the run's W&B copy as a
wandb.Artifact (the writer process, jaxdash.wandb_copy).
There is no W&B server here: `use_artifact` finds the newest logged version under the runs root and
`download()` gives its local folder; what has no meaning here (references, upload policies) is
accepted with one notice. Every destination stays inside the run folder.
`wandb.save` and `wandb.alert` are in jaxdash/files_alerts.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxdash.data_types import notice
from jaxdash.files_alerts import (  # noqa: F401 - re-exported
    AlertLevel,
    alert,
    alert_to,
    current_run,
    disabled,
    save,
    save_to,
    to_copy,
)
from runstore import run_files, run_store, safe_files
from runstore.safe_files import UnsafePath


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


def log_artifact_to(run: Any, artifact_or_path: Artifact | str, name: str | None = None, type: str | None = None,  # noqa: A002
                 aliases: Sequence[str] | None = None, tags: Sequence[str] | None = None) -> Artifact:  # fmt: skip
    """Copy the artifact's files into artifacts/logged/<name>/v<N>/ of the run folder, with its manifest."""
    art = artifact_or_path
    if disabled(run):
        return art if isinstance(art, Artifact) else Artifact(name or "artifact", type or "unspecified")
    if not isinstance(art, Artifact):
        path = Path(str(art))
        art = Artifact(name or path.name, type or "unspecified")
        art.add_dir(str(path)) if path.is_dir() else art.add_file(str(path))
    if not safe_files.plain_name(art.name):
        raise ValueError(f"Artifact name {art.name!r}: use letters, digits, '-', '_' and '.' only")
    version = run_files.next_version(run.dir, art.name)
    where = run_files.artifact_rel(art.name, version)
    try:
        stored = [rel for source, rel in art._files if run_files.copy_into(run.dir, source, f"{where}/{rel}")]
        skipped = [rel for _, rel in art._files if rel not in stored]
        if skipped:
            notice(f"log_artifact({art.name})", f"{len(skipped)} file(s) not copied (a path out of the artifact): "
                                                f"{skipped[:3]}")  # fmt: skip
        art.version, art.aliases = f"v{version}", ["latest", *(aliases or [])]
        doc = {"name": art.name, "type": art.type, "version": art.version, "aliases": art.aliases,
               "description": art.description, "metadata": art.metadata, "files": stored,
               "references": art.references}  # fmt: skip
        run_files.write_json_inside(run.dir, f"{where}/manifest.json", doc)
    except UnsafePath as exc:  # a link or a file planted on the way: one line naming it, the script goes on
        notice(f"log_artifact({art.name})", f"not kept in the run folder: {exc}")
        return art
    folder = art._path = run_files.artifact_dir(run.dir, art.name, version)
    to_copy(run, "log_artifact", doc, [(str(folder / rel), rel) for rel in stored], list(aliases or []))
    if art.references:
        notice("log_artifact", "references are kept in the manifest; the W&B copy gets the artifact's files only")
    return art


def use_artifact_in(run: Any, artifact_or_name: Artifact | str, type: str | None = None,  # noqa: A002
                 aliases: Sequence[str] | None = None, use_as: str | None = None) -> Artifact:  # fmt: skip
    """The newest logged version of `name[:alias]` under the runs root (this run first); `download()` gives its folder."""
    if isinstance(artifact_or_name, Artifact) or disabled(run):
        return (
            artifact_or_name if isinstance(artifact_or_name, Artifact) else Artifact(str(artifact_or_name), type or "")
        )
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
    return log_artifact_to(current_run("log_artifact"), artifact_or_path, name, type, aliases, tags)


def use_artifact(artifact_or_name: Artifact | str, type: str | None = None,  # noqa: A002
                 aliases: Sequence[str] | None = None, use_as: str | None = None) -> Artifact:  # fmt: skip
    """`wandb.use_artifact`: `use_artifact_in` the current run."""
    return use_artifact_in(current_run("use_artifact"), artifact_or_name, type, aliases, use_as)


def _find(run_dir: Path, name: str, alias: str) -> dict[str, Any] | None:
    """The manifest of `name` at `alias` ("latest", "v3" or a logged alias), newest first, this run first."""
    runs = [Path(run_dir), *[p for p in run_store.run_folders(Path(run_dir).parent) if p != Path(run_dir)]]
    for folder in runs:
        found = [m for m in run_files.artifact_manifests(folder) if m.get("name") == name]
        found = [m for m in found if alias == "latest" or alias == m.get("version") or alias in m.get("aliases", [])]
        if found:
            return found[-1]
    return None
