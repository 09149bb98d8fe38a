"""No small file grows the server: crafted tensors, text and JSON run files are refused by what they hold.

Each read runs in a child process that prints its peak RSS during the read (VmHWM, reset after the imports
through /proc/self/clear_refs) over its resident size before it, under an address-space limit (RLIMIT_AS) of
its virtual size plus 2 GB, so a read that would grow without bound fails fast instead of swapping. The bound
asserted is the issue's: one file of at most 16 MB costs the server at most 200 MB more; the runs beside it
are listed and mirrored as usual.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboardX import SummaryWriter

from runstore import media_store, run_folder, run_store, small_json, tb_logdir, tb_media, tb_tensors
from runstore.run_folder import RunFolder
from tests.test_safety_logdir import EVENTS, listed, points, record

REPO = Path(__file__).resolve().parent.parent
LIMIT = 200 * 2**20  # the bound: one file of at most 16 MB costs at most this much more

CHILD = """
import json, resource, sys, time
from pathlib import Path
from runstore import media_store, run_reads, run_store, tb_logdir
from runstore.run_folder import RunFolder
from tensorboard.backend.event_processing import event_file_loader  # imports before the baseline
from tensorboard.util import tensor_util

def sync_to_end(logs, runs):
    for _ in range(40):  # each sync reads on where the last stopped; the reads are waited for, not timed
        tb_logdir.sync(logs, runs)
        files = [f for m in tb_logdir._MIRRORS.values() for f in m.files.values()]
        for f in files:
            if f.future is not None:
                f.future.exception(timeout=300)
        if not any(f.future is not None or f.loader.reader.more for f in files):
            tb_logdir.sync(logs, runs)  # writes what the last reads found
            return

def kib(field):
    return int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith(field + ":")))

resource.setrlimit(resource.RLIMIT_AS, ((kib("VmSize") << 10) + 2 * 2**30, resource.RLIM_INFINITY))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM, ru_maxrss) starts again from what is resident now, not from the imports' peak
before, cpu = kib("VmRSS"), time.process_time()
args = [Path(a) for a in sys.argv[2:]]
out = eval(sys.argv[1])
print(json.dumps({"growth": (kib("VmHWM") - before) * 1024,
                  "cpu": time.process_time() - cpu, "out": out}, default=str))
"""


def measured(expr: str, *paths: Path) -> dict:
    """{"growth": peak RSS growth in bytes, "cpu": seconds, "out": expr's value} of `expr` run in a child process
    (`args` holds `paths`; `sync_to_end(logs, runs)` reads a logdir to its end)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, expr, *map(str, paths)], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _value(tag: str, plugin: str, dtype: int, dims: tuple[int, ...], **values: list) -> summary_pb2.Summary.Value:
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims])
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin))
    return summary_pb2.Summary.Value(
        tag=tag, metadata=meta, tensor=tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, **values)
    )


def _event_file(path: Path, values_per_step: list[list[summary_pb2.Summary.Value]]) -> int:
    """An event file of one event a step holding `values`; returns its size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(
        record(event_pb2.Event(wall_time=1.7e9, step=s, summary=summary_pb2.Summary(value=v)).SerializeToString())
        for s, v in enumerate(values_per_step)
    )
    path.write_bytes(data)
    return len(data)


def _good_media_run(logs: Path) -> None:
    """A tensorboardX run with scalars, a histogram and a text: what must still be mirrored beside a bomb."""
    import numpy as np

    writer = SummaryWriter(str(logs / "good"))
    for s in range(4):
        writer.add_scalar("loss", 1.0 / (s + 1), s)
        writer.add_histogram("w", np.arange(100.0) + s, s)
    writer.add_text("note", "fine", 3)
    writer.close()


def test_histogram_tensors_claiming_a_shape_their_one_value_fills_cost_almost_nothing(tmp_path: Path) -> None:
    """Each value holds one double and claims shape (333333, 3): 8 MB decoded, 24 MB as lists, 150 in 12 KB."""
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    bomb = [[_value("h", "histograms", types_pb2.DT_DOUBLE, (333_333, 3), double_val=[1.0])] for _ in range(150)]
    size = _event_file(logs / "bomb" / EVENTS, bomb)
    assert size < 16 * 2**10
    _good_media_run(logs)
    found = measured("sync_to_end(*args)", logs, runs)
    assert found["growth"] < LIMIT, f"{found['growth'] / 2**20:.0f} MB to read a {size:,}-byte event file"
    assert found["growth"] < 64 * 2**20  # nothing is decoded at all: far under the bound
    rows = listed(runs)
    assert points(runs, "good") == [0, 1, 2, 3] and not rows["good"].damaged
    good = media_store.histograms(rows["good"].path)
    assert [h[0] for h in good["w"]] == [0, 1, 2, 3] and sum(good["w"][0][1]) == 100  # a real one is kept
    assert media_store.histograms(rows["bomb"].path) == {}  # claims over what they hold are left out


def test_a_text_tensor_claiming_a_million_copies_is_cut_before_it_is_joined(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    text = [[_value("t", "text", types_pb2.DT_STRING, (1_000_000,), string_val=[b"x" * 1024])]]
    size = _event_file(logs / "bomb" / EVENTS, text)
    assert size < 4 * 2**10
    _good_media_run(logs)
    found = measured("sync_to_end(*args)", logs, runs)
    assert found["growth"] < LIMIT, f"{found['growth'] / 2**20:.0f} MB to read a {size:,}-byte event file"
    assert found["growth"] < 64 * 2**20
    rows = listed(runs)
    ((step, kept),) = media_store.texts(rows["bomb"].path)["t"]
    assert step == 0 and len(kept) == tb_media.MAX_TEXT and kept.startswith("x" * 1024 + "\nx")
    assert media_store.texts(rows["good"].path)["note/text_summary"] == [(3, "fine")]


def _tensor(dtype: int, dims: tuple[int, ...], **values: object) -> tensor_pb2.TensorProto:
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims])
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, **values)


@pytest.mark.parametrize(
    ("tensor", "size"),
    [
        (_tensor(types_pb2.DT_DOUBLE, (4, 3), double_val=[float(i) for i in range(12)]), 96),  # every value held
        (_tensor(types_pb2.DT_FLOAT, (2, 3), tensor_content=b"\0" * 24), 24),  # content of the claimed length
        (_tensor(types_pb2.DT_FLOAT, (8,), float_val=[0.5]), 32),  # a small broadcast (TensorFlow's constants)
        (_tensor(types_pb2.DT_DOUBLE, (333_333, 3), double_val=[1.0]), None),  # a broadcast of 8 MB from 20 bytes
        (_tensor(types_pb2.DT_STRING, (1_000_000,), string_val=[b"x" * 1024]), None),  # 1 GB of one string
        (_tensor(types_pb2.DT_FLOAT, (2, 3), tensor_content=b"\0" * 8), None),  # content shorter than its claim
        (_tensor(types_pb2.DT_DOUBLE, (3,), double_val=[1.0, 2.0]), None),  # neither one nor every value
        (_tensor(types_pb2.DT_DOUBLE, (2_000_000,), tensor_content=b"\0" * 16_000_000), None),  # over MAX_ELEMENTS
        (_tensor(types_pb2.DT_DOUBLE, (2**62, 2**62), double_val=[1.0]), None),  # a product past int64
    ],
)
def test_a_tensor_decodes_only_to_what_its_bytes_hold(tensor: tensor_pb2.TensorProto, size: int | None) -> None:
    assert tb_tensors.decoded_size(tensor) == size
    array = tb_tensors.to_array(tensor)
    assert (array is None) == (size is None)
    if array is not None:
        assert array.nbytes == size and list(array.shape) == [d.size for d in tensor.tensor_shape.dim]


def test_a_file_of_many_tensors_is_read_in_pieces_within_one_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every histogram is kept, read a few at a time: the first sync holds at most the budget, the next ones read on."""
    import numpy as np

    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = SummaryWriter(str(logs / "many"))
    for s in range(12):
        writer.add_histogram("w", np.arange(1000.0) * (s + 1), s, bins=30)
    writer.close()
    monkeypatch.setattr(tb_tensors, "READ_BUDGET", 8000)  # 2 or 3 histograms of 30 buckets (~2.6 KB each) a read
    tb_logdir.sync(logs, runs)
    mirror = listed(runs)["many"].path
    first = [h[0] for h in media_store.histograms(mirror).get("w", [])]
    assert 0 < len(first) < 12 and first == list(range(len(first)))
    for _ in range(20):
        if len(media_store.histograms(mirror).get("w", [])) == 12:
            break
        tb_logdir.sync(logs, runs)
    assert [h[0] for h in media_store.histograms(mirror)["w"]] == list(range(12))


def _run(root: Path, name: str, status: dict, **files: bytes) -> Path:
    d = root / name
    d.mkdir(parents=True)
    config = {"run_id": name, "name": name, "task": "regression", "config": {}, "created": 1.7e9}
    (d / run_folder.CONFIG).write_text(json.dumps(config))
    (d / run_folder.STATUS).write_text(json.dumps(status))
    for file, data in files.items():
        (d / file.replace("_", ".")).write_bytes(data)
    return d


def test_small_run_files_over_their_bounds_read_as_damaged_naming_file_and_bound(tmp_path: Path) -> None:
    """A 16 MB hosts.json of empty objects (5.6M hosts), a config of a million empty objects, a deep status:
    the run listing stays within the bound and each file is named with the bound it is over."""
    root = tmp_path / "runs"
    dead = {"state": "running", "pid": 2**22 + 12345, "host": socket.gethostname(), "started": 1.7e9}
    empties = b"{}," * (16 * 2**20 // 3 - 20)
    bombed = _run(root, "hosts_bomb", dead, hosts_json=b'{"processes": 2, "hosts": [' + empties + b"{}]}")
    big_config = b'{"task": "regression", "created": 1.7e9, "config": {"x": [' + empties[:-200] + b"{}]}}"
    _run(root, "config_bomb", {"state": "finished"}).joinpath(run_folder.CONFIG).write_bytes(big_config)
    deep = b'{"state": "finished", "final": ' + b'{"a":' * 1000 + b"1" + b"}" * 1001
    _run(root, "status_deep", {}).joinpath(run_folder.STATUS).write_bytes(deep)
    _run(root, "good", {"state": "finished", "step": 10})
    for d in root.iterdir():
        assert all(f.stat().st_size <= 16 * 2**20 for f in d.iterdir())
    expr = "[(r.name, r.status) for r in run_reads.list_runs(args[0])] + [RunFolder(args[1]).hosts()]"
    found = measured(expr, root, bombed)
    assert found["growth"] < LIMIT, f"{found['growth'] / 2**20:.0f} MB to list 4 runs"
    assert found["cpu"] < 10, f"{found['cpu']:.1f} s of CPU to list 4 runs"  # the 20-36 s
    *listing, (shown, why) = found["out"]
    status = dict(listing)
    assert status["good"]["state"] == "finished"
    assert status["hosts_bomb"]["state"] == "crashed"  # its own status is read; its hosts.json is not
    assert shown == [] and why.startswith("hosts.json: ") and "over the 4 MB limit" not in why
    assert "limit of this file" in why and "the hosts of this run are not shown" in why
    assert status["config_bomb"]["state"] == "damaged"
    assert status["config_bomb"]["message"].startswith("config.json: holds ")
    assert "over the limit of 1,000,000 for this file" in status["config_bomb"]["message"]
    assert status["status_deep"] == {"state": "damaged", "message": status["status_deep"]["message"]}
    assert status["status_deep"]["message"].startswith("status.json: nested 1,001 deep, over the limit of 32")


def test_bounds_are_checked_outside_strings_and_a_refusal_is_remembered(tmp_path: Path) -> None:
    path = tmp_path / run_folder.HOSTS
    inside = {"hosts": [{"message": '",:[{}]\\' * 200_000}]}  # separators and brackets only inside a string
    path.write_text(json.dumps(inside))
    assert small_json.load(path) == inside and RunFolder(tmp_path).hosts()[1] is None
    path.write_text(json.dumps({"hosts": [{}] * 60_000}))
    with pytest.raises(small_json.TooLarge, match="holds 120,002 entries, over the limit of 100,000"):
        small_json.load(path)
    os.chmod(path, 0)  # refused again without reading it: the first answer is remembered for this inode
    try:
        with pytest.raises((small_json.TooLarge, PermissionError)) as refused:
            small_json.load(path)
        if os.geteuid() != 0:
            assert refused.type is small_json.TooLarge
    finally:
        os.chmod(path, 0o644)
    assert run_store.read_json(path, "default") == "default"


def test_histogram_and_text_lines_are_read_from_a_bounded_tail(tmp_path: Path) -> None:
    """24 MB of terse histogram lines (12M numbers): the page reads the newest steps within READ_BYTES."""
    run = tmp_path / "run"
    folder = run / run_folder.ARTIFACTS / run_folder.HISTOGRAMS
    folder.mkdir(parents=True)
    counts = "[" + ",".join(["0"] * 60_000) + "]"
    line = '{"tag": "w", "step": %d, "counts": ' + counts + ', "edges": ' + counts[:-1] + ",0]}\n"
    steps = 24 * 2**20 // len(line % 0)
    with open(folder / "w.jsonl", "w") as f:
        f.writelines(line % s for s in range(steps))
    found = measured("[h[0] for h in media_store.histograms(args[0])['w']]", run)
    assert found["growth"] < LIMIT, f"{found['growth'] / 2**20:.0f} MB to read {steps} histogram steps"
    assert found["growth"] < 150 * 2**20  # READ_BYTES of the tersest lines, not the file
    kept = found["out"]
    assert kept and kept[-1] == steps - 1 and kept == list(range(steps - len(kept), steps))  # the newest, in order
    assert len(kept) * len(line % 0) <= media_store.READ_BYTES
