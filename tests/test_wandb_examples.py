"""W&B's own public example scripts (github.com/wandb/examples, vendored in tests/wandb_examples/) run with real
`import wandb` (offline) and with `import jaxdash as wandb`, each as a real subprocess, and store the same.

The scripts are W&B's, unchanged but for a header line naming their source; the jaxdash side switches only
the line `import wandb`, as the README tells a user to. What they need from outside, the same for both sides:
* command-line arguments where a script takes them (fewer epochs: the metrics example sleeps 0.25 s a step);
* tests/wandb_examples/compat/sitecustomize.py (on PYTHONPATH): seeds Python's `random` for the example that
  draws noise from it unseeded, and aliases the 2019 JAX imports of the JAX MNIST example to their current
  homes (`jax.example_libraries`; the `jax.config` object);
* the JAX MNIST example downloads MNIST unless its files are already in its data folder (/tmp/jax_example_data/,
  fixed in its datasets.py): there is no network in the tests, so small synthetic MNIST files (256 training and
  64 test images, seeded) are put there first, in MNIST's own idx format.

What W&B stored (read with `wandb leet inspect --json`) is compared with our run folder and with the W&B copy
our client wrote, as the conformance suite compares them (tests/wandb_conformance/): exit code, run state,
config, summary, and every history step with every key and value. W&B's own outcome is the oracle, a failure
included: the metrics example ends its steps with `wandb.log()`, which today's wandb refuses (TypeError).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.wandb_conformance import compare, observe, running, store_reader

HERE = Path(__file__).resolve().parent / "wandb_examples"
COMPAT = HERE / "compat"
TIMEOUT_S = 180.0
FIELDS = ("state", "config", "summary", "history")
MNIST_DIR = Path("/tmp/jax_example_data")  # the JAX example's datasets._DATA
MNIST_TRAIN, MNIST_TEST = 256, 64


@dataclass
class Example:
    """One vendored W&B example: its script (relative to wandb_examples/), arguments and environment."""

    name: str
    script: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


EXAMPLES = [
    Example("sqrt", "sqrt.py", ["2"]),
    Example(
        "metrics_at_different_steps",
        "metrics_at_different_steps.py",
        ["--max_epochs", "12", "--validate_every", "4"],
        {"EXAMPLES_RANDOM_SEED": "0"},
    ),
    Example("mpl", "mpl.py"),
    Example("jax_mnist", "jax_mnist/train.py", [], {"EXAMPLES_JAX_ALIASES": "1"}),
]


def _idx(path: Path, magic: int, data: np.ndarray) -> None:
    """An MNIST idx file (gzip, big-endian header) of `data`, written then renamed (parallel tests write the same)."""
    header = struct.pack(">II", magic, data.shape[0]) + b"".join(struct.pack(">I", d) for d in data.shape[1:])
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as fh:
        fh.write(header + data.astype(np.uint8).tobytes())
    tmp.replace(path)


def synthetic_mnist() -> None:
    """Small synthetic MNIST files where the JAX example looks first; skips if other MNIST files are there."""
    rng = np.random.default_rng(0)
    MNIST_DIR.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", MNIST_TRAIN), ("t10k", MNIST_TEST)):
        labels = rng.integers(0, 10, n)
        images = rng.integers(0, 64, (n, 28, 28)) + (labels[:, None, None] * 19)  # learnable: brightness ~ label
        for name, magic, data in ((f"{split}-images-idx3-ubyte.gz", 2051, images),
                                  (f"{split}-labels-idx1-ubyte.gz", 2049, labels)):  # fmt: skip
            path = MNIST_DIR / name
            if path.exists():
                with gzip.open(path, "rb") as fh:
                    if struct.unpack(">II", fh.read(8))[1] != n:
                        pytest.skip(f"{path} holds other MNIST data (the JAX example would train on all of it)")
            _idx(path, magic, data)


def run_example(example: Example, impl: str, tmp: Path) -> running.Result:
    """The example as a real subprocess under `impl` ("wandb" or "jaxdash") in `tmp`."""
    script = HERE / example.script
    work = tmp / "work"
    shutil.copytree(script.parent, work, ignore=shutil.ignore_patterns("__pycache__", "*.toml", "compat"))
    target = work / script.name
    if impl == "jaxdash":
        text = target.read_text()
        target.write_text(re.sub(r"^import wandb$", "import jaxdash as wandb", text, count=1, flags=re.MULTILINE))
    (tmp / "home").mkdir()
    probe = running.Probe(example.name, script, env=dict(example.env))
    env = running.probe_env(impl, probe, tmp)
    env["PYTHONPATH"] = os.pathsep.join([str(COMPAT), *filter(None, [env.get("PYTHONPATH")])])
    try:
        proc = subprocess.run([running.python_for(impl), script.name, *example.args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
    except subprocess.TimeoutExpired:
        return running.Result(impl, probe, -999, "", f"timed out after {TIMEOUT_S:.0f} s", tmp)
    return running.Result(impl, probe, proc.returncode, proc.stdout, proc.stderr, tmp)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_matches_wandb(example: Example, tmp_path: Path) -> None:
    """Every step, key and value W&B stored for the example is what our run folder and our W&B copy hold."""
    if example.name == "jax_mnist":
        synthetic_mnist()
    with ThreadPoolExecutor(2) as pool:
        theirs, ours = pool.map(lambda impl: run_example(example, impl, tmp_path / impl), ("wandb", "jaxdash"))
    want = observe.read_wandb_runs(theirs.tmp)
    assert len(want) == 1, f"W&B's own run of {example.name} stored {len(want)} runs:\n{theirs.tail(12)}"
    text = (HERE / example.script).read_text()
    found = {
        side: [f"exit code: {ours.rc} (W&B: {theirs.rc}); stderr: {ours.tail(2)!r}"] * (ours.rc != theirs.rc)
        + ([f"runs: {len(runs)} (W&B: 1)"] if len(runs) != 1 else compare.run_diff(want[0], runs[0], FIELDS, text))
        for side, runs in (
            ("run store", store_reader.read_store_runs(ours.tmp)),
            ("W&B copy", store_reader.read_copy_runs(ours.tmp)),
        )
    }
    if any(found.values()):
        pytest.fail(
            f"{example.name}: jaxdash differs from W&B ({ours.tmp})\n{compare.render(found)}\n"
            f"jaxdash stderr tail:\n{ours.tail(8)}",
            pytrace=False,
        )
