"""Run one probe script as a real subprocess for one implementation: real wandb, jaxdash or trackio.

A probe is a W&B script with the line `import wandb`. For jaxdash (trackio) that one line becomes
`import jaxdash as wandb` (`import trackio as wandb`), as the README tells a user to switch; the rest of
the text is unchanged. Each run gets its own folder: the script's working directory (work/), W&B's home
and WANDB_DIR (real wandb), the runs root (jaxdash) or TRACKIO_DIR (trackio).

Header lines a probe may carry (anywhere, as comments):
    # call: `wandb.init(dir=)`                  the W&B call it exercises (the README's table)
    # env: WANDB_NAME=fancy WANDB_TAGS=a,b    environment variables for the script
    # expect: {"state": "stopped"}            fields of W&B's own observation replaced by what the issue
                                              asks for (where W&B itself loses data, e.g. on SIGTERM)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROBES = Path(__file__).resolve().parent / "probes"
TIMEOUT_S = 90.0
IMPLS = ("wandb", "jaxdash", "trackio")


@dataclass
class Probe:
    """One probe script and its header directives."""

    name: str
    path: Path
    call: str = ""
    env: dict[str, str] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    """What a run of a probe left: exit code, output, and the folder it wrote in."""

    impl: str
    probe: Probe
    rc: int
    stdout: str
    stderr: str
    tmp: Path

    def tail(self, lines: int = 6) -> str:
        """The last lines of stderr, for a failure message."""
        return "\n".join(self.stderr.strip().splitlines()[-lines:])


def load_probe(path: Path) -> Probe:
    """A probe from its file; a malformed header line raises ValueError naming the file and line."""
    probe = Probe(path.stem, path)
    lines = path.read_text().splitlines()
    if "import wandb" not in lines:
        raise ValueError(f"{path}: a probe must hold the line `import wandb` (the one line a user switches)")
    for n, line in enumerate(lines, 1):
        if line.startswith("# call:"):
            probe.call = line[len("# call:") :].strip()
        elif line.startswith("# env:"):
            for pair in shlex.split(line[len("# env:") :]):
                key, sep, value = pair.partition("=")
                if not sep:
                    raise ValueError(f"{path}:{n}: `# env:` takes KEY=VALUE pairs, got {pair!r}")
                probe.env[key] = value
        elif line.startswith("# expect:"):
            try:
                probe.expect.update(json.loads(line[len("# expect:") :]))
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: `# expect:` must be one JSON object ({exc})") from None
    return probe


def all_probes() -> list[Probe]:
    """Every probe under probes/, by name."""
    return [load_probe(p) for p in sorted(PROBES.glob("*.py"))]


def python_for(impl: str) -> str:
    """The interpreter a probe runs under: the project's, or trackio's throwaway venv."""
    if impl == "trackio":
        return os.environ.get("TRACKIO_PYTHON", "/tmp/trackio-venv/bin/python")
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def probe_env(impl: str, probe: Probe, tmp: Path) -> dict[str, str]:
    """The environment a probe runs in: the test's, less its WANDB_/JAXDASH_/TRACKIO_ variables, with offline W&B
    homes, the runs root (jaxdash) or TRACKIO_DIR (trackio) under `tmp`, and the probe's `# env:`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "JAXDASH_", "TRACKIO_"))}
    env.pop("PYTHONPATH", None)
    home = tmp / "home"
    env.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_ERROR_REPORTING="false", PYTHONUNBUFFERED="1")
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        env[var] = str(home)
    env["MPLBACKEND"] = "Agg"
    env.setdefault("JAX_PLATFORMS", "cpu")
    if impl == "wandb":
        env["WANDB_DIR"] = str(tmp / "wandb")
    elif impl == "jaxdash":
        env["JAXDASH_RUNS"] = str(tmp / "runs")
        env["PYTHONPATH"] = os.environ.get("CONFORMANCE_JAXDASH_PATH", str(REPO))  # another checkout's jaxdash
        env["JAXDASH_WARM_WORKER"] = "0"
    else:
        env["TRACKIO_DIR"] = str(tmp / "trackio")
        env["HF_HOME"] = str(home / "hf")
    env.update(probe.env)
    return env


def run_probe(probe: Probe, impl: str, tmp: Path) -> Result:
    """Run `probe` under `impl` in `tmp` (created) and wait for it and the processes holding its output."""
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    (tmp / "home").mkdir(exist_ok=True)
    source = probe.path.read_text()
    if impl != "wandb":
        source = re.sub(r"^import wandb$", f"import {impl} as wandb", source, count=1, flags=re.MULTILINE)
    script = work / probe.path.name
    script.write_text(source)
    try:
        proc = subprocess.run(
            [python_for(impl), script.name],
            cwd=work,
            env=probe_env(impl, probe, tmp),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return Result(impl, probe, -999, out, f"timed out after {TIMEOUT_S:.0f} s", tmp)
    # killed by signal N: 128 + N, as a shell says
    rc = 128 - proc.returncode if proc.returncode < 0 else proc.returncode
    (tmp / "result.json").write_text(json.dumps({"rc": rc, "stdout": proc.stdout, "stderr": proc.stderr}))
    return Result(impl, probe, rc, proc.stdout, proc.stderr, tmp)


def load_result(probe: Probe, impl: str, tmp: Path) -> Result:
    """A run of `probe` kept in `tmp` (its result.json), to compare again without running it."""
    doc = json.loads((tmp / "result.json").read_text())
    return Result(impl, probe, doc["rc"], doc["stdout"], doc["stderr"], tmp)
