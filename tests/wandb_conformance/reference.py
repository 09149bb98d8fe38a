"""W&B's own outcome of a probe: run with real wandb once, then kept on disk until the probe, wandb or the comparer change.

Real wandb is the oracle and deterministic for a probe's text, so its expected outcome (and whether W&B's
own run reads back as it) is cached under $CONFORMANCE_CACHE (default: <tmp>/wandb-conformance-cache),
keyed by the probe's text, its header, the installed wandb version and this package's source. This halves
a rerun of the suite. CONFORMANCE_CACHE=off runs real wandb every time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.wandb_conformance import compare, running

HERE = Path(__file__).resolve().parent


def _cache_dir() -> Path | None:
    where = os.environ.get("CONFORMANCE_CACHE", str(Path(tempfile.gettempdir()) / "wandb-conformance-cache"))
    return None if where == "off" else Path(where)


def _key(probe: running.Probe) -> str:
    digest = hashlib.sha256(probe.path.read_bytes())
    digest.update(json.dumps([probe.env, probe.expect, metadata.version("wandb")], sort_keys=True).encode())
    for module in sorted(HERE.glob("*.py")):
        digest.update(module.read_bytes())
    return f"{probe.name}-{digest.hexdigest()[:16]}"


def _load(path: Path) -> tuple[dict[str, Any], dict[str, list[str]]] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for run in doc["want"]["runs"]:
        run["history"] = {int(step): row for step, row in run["history"].items()}
    return doc["want"], doc["own"]


def reference(probe: running.Probe, tmp: Path) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(W&B's expected outcome of `probe`, the differences of W&B's own run from it: empty unless `# expect:`)."""
    cache = _cache_dir()
    path = cache / f"{_key(probe)}.json" if cache is not None else None
    if path is not None and (kept := _load(path)) is not None:
        return kept
    ref = running.run_probe(probe, "wandb", tmp)
    want = compare.expected(ref)
    own = compare.diff(want, ref)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp_file = path.with_suffix(f".{os.getpid()}.tmp")
        tmp_file.write_text(json.dumps({"want": want, "own": own}))
        tmp_file.replace(path)
    return want, own
