"""Data parallelism: 8 (forced host) devices give the 1-device loss curve; bad device counts fail clearly.

The test process has one CPU device; the 8-device run happens in a subprocess started with
XLA_FLAGS=--xla_force_host_platform_device_count=8 (it must be set before JAX starts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from settings.config import ConfigError, parse_config
from training.engine.sharding import resolve_devices

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, sys
import jax
from tests.test_data import write_idx_dataset
from pathlib import Path
from training.runs.in_memory import train
from training.tasks.mnist import MnistConfig, MnistTask
from runwriters.base import MemoryWriter

folder = Path(sys.argv[1])
write_idx_dataset(folder, n_train=700, n_test=150, seed=3)
out = {"device_count": jax.device_count()}
for devices in (8, 1):
    w = MemoryWriter()
    (r,) = train(MnistTask, MnistConfig(data_dir=str(folder), batch_size=32, log_every=1, epochs=1, devices=devices), w)
    out[devices] = {"loss": [d["train/loss"] for _, d in w.scalars], "final": r.final, "devices": r.extra["devices"]}
print("RESULT " + json.dumps(out))
"""


def test_eight_devices_match_one_device(tmp_path):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "idx")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    out = json.loads(line.removeprefix("RESULT "))
    eight, one = out["8"], out["1"]
    assert out["device_count"] == 8 and eight["devices"] == 8 and one["devices"] == 1
    assert len(eight["loss"]) == len(one["loss"]) == 22  # step 0, then one record per step: the whole first epoch
    # The 8 devices sum their per-device gradients in a different order: equal within float rounding.
    np.testing.assert_allclose(eight["loss"], one["loss"], rtol=1e-4)
    assert eight["final"]["test/acc"] == pytest.approx(one["final"]["test/acc"], abs=1 / 150)


def test_batch_must_split_evenly_over_devices():
    with pytest.raises(ConfigError) as err:
        parse_config("mnist", {"devices": 8, "batch_size": 100})
    assert "multiple of Devices (8)" in err.value.errors["batch_size"]
    with pytest.raises(ConfigError) as err:
        parse_config("mnist", {"devices": -1})
    assert "devices" in err.value.errors
    assert parse_config("mnist", {"devices": 4, "batch_size": 64}).devices == 4
    assert parse_config("mnist").devices == 0  # default: every local device


def test_resolve_devices_on_this_host():
    assert len(resolve_devices(0, 32)) == len(resolve_devices(1, 7)) == 1  # the test process has one CPU device
    with pytest.raises(ConfigError) as err:
        resolve_devices(2, 32)
    assert "--devices 0" in err.value.errors["devices"]
