"""A hostile TensorBoard logdir (--logdir): crafted record lengths, FIFOs, links out, stalled reads, colliding names.

Each case is one run of the logdir next to good runs written by tensorboardX: the bad one becomes a
"damaged" row naming its file and why, nothing is allocated for a length a record only claims, and
every good run (before and after it in the walk) is mirrored with all its points. Crafted headers
carry a valid masked CRC (tensorboardX's own), so only the length check can refuse them.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter
from tensorboardX.record_writer import masked_crc32c

from runstore import run_store, safe_files, tb_logdir
from runstore.run_folder import RunFolder

EVENTS = "events.out.tfevents.1700000000.host"
SYNC_BOUND_S = 15.0  # a sync returns within the read limit (5 s) plus a busy 2-core machine's slack


def crafted(path: Path, claim: int, size: int = 4096) -> Path:
    """An event file whose first record header claims `claim` bytes (valid masked CRC), sparse up to `size`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = struct.pack("<Q", claim)
    with open(path, "wb") as f:
        f.write(header + struct.pack("<I", masked_crc32c(header)))
        f.truncate(size)  # a hole: no disk used, reads give zeros
    return path


def good_run(logs: Path, name: str, steps: int = 4) -> None:
    """A run written by tensorboardX: `steps` points of "loss"."""
    writer = SummaryWriter(str(logs / name))
    for s in range(steps):
        writer.add_scalar("loss", 1.0 / (s + 1), s)
    writer.close()


def sync_bounded(logs: Path, runs: Path) -> list[Path]:
    """tb_logdir.sync on a thread, failing (not hanging) if it does not return within SYNC_BOUND_S."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(_catch(tb_logdir.sync, logs, runs)), daemon=True)
    worker.start()
    worker.join(SYNC_BOUND_S)
    assert out, f"sync did not return within {SYNC_BOUND_S:.0f} s"
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def _catch(fn, *args):  # noqa: ANN001, ANN202 - the thread's result or its exception
    try:
        return fn(*args)
    except BaseException as exc:  # MemoryError included: the test reports it as a failure
        return exc


def listed(runs: Path) -> dict[str, run_store.RunInfo]:
    """The mirrors as the Runs page lists them, by run name."""
    from runstore import run_reads

    return {r.name: r for r in run_reads.list_runs(tb_logdir.mirror_root(runs), tb_logdir.status)}


def points(runs: Path, name: str) -> list[int]:
    return [r["step"] for r in RunFolder(listed(runs)[name].path).records()[0] if "loss" in r]


@pytest.mark.parametrize("claim", [1_900_000_000, 2**62])
def test_a_crafted_record_length_allocates_nothing_and_damages_its_run_alone(tmp_path: Path, claim: int) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    good_run(logs, "a_before")
    crafted(logs / "crafted" / EVENTS, claim, size=2**31)  # 2 GiB sparse: the claim fits in the file
    good_run(logs, "z_after", steps=6)
    tracemalloc.start()
    try:
        sync_bounded(logs, runs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"{peak / 2**20:.0f} MB allocated for a length the record only claims"
    rows = listed(runs)
    assert rows["crafted"].damaged
    message = rows["crafted"].status["message"]
    assert message.startswith(f"crafted/{EVENTS}: record at byte 0 claims {claim:,} bytes"), message
    assert points(runs, "a_before") == [0, 1, 2, 3] and points(runs, "z_after") == list(range(6))
    assert not rows["a_before"].damaged and not rows["z_after"].damaged


def test_a_crafted_length_after_good_records_keeps_those_points(tmp_path: Path) -> None:
    """Records before the bad header are kept; a torn last record is waited for, not called damage."""
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    good_run(logs, "mixed", steps=3)
    (event_file,) = (logs / "mixed").iterdir()
    good_bytes = event_file.read_bytes()
    header = struct.pack("<Q", 100)
    event_file.write_bytes(good_bytes + header + struct.pack("<I", masked_crc32c(header)) + b"x" * 10)
    sync_bounded(logs, runs)
    assert points(runs, "mixed") == [0, 1, 2] and not listed(runs)["mixed"].damaged  # 100 bytes not all there yet
    header = struct.pack("<Q", 2**40)
    event_file.write_bytes(good_bytes + header + struct.pack("<I", masked_crc32c(header)))
    tb_logdir._MIRRORS.clear()  # a server restart: the file is read from its start
    sync_bounded(logs, runs)
    row = listed(runs)["mixed"]
    assert points(runs, "mixed") == [0, 1, 2] and row.damaged
    assert f"record at byte {len(good_bytes):,} claims 1,099,511,627,776 bytes" in row.status["message"]


def record(data: bytes) -> bytes:
    """One TFRecord holding `data`, with valid masked CRCs."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


MEASURE = """
import json, resource, sys
from pathlib import Path
from runstore import tb_logdir
from tensorboard.backend.event_processing import event_file_loader  # imports before the baseline
from tensorboard.util import tensor_util
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tb_logdir.sync(Path(sys.argv[1]), Path(sys.argv[2]))
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024))
"""


def test_a_record_of_millions_of_tiny_fields_is_not_parsed(tmp_path: Path) -> None:
    """7 MiB of empty summary values parse into ~300 MB of protobuf objects: such a record is refused unparsed."""
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    values = b"\x0a\x00" * 3_500_000  # Summary.value (field 1), empty, 3.5 million times
    summary = b"\x2a" + _varint(len(values)) + values  # Event.summary (field 5)
    (logs / "fields").mkdir(parents=True)
    (logs / "fields" / EVENTS).write_bytes(record(summary))
    good_run(logs, "good")
    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(logs), str(runs)], capture_output=True, text=True, cwd=repo, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    growth = int(out.stdout.strip().splitlines()[-1])
    assert growth < 100 * 2**20, f"{growth / 2**20:.0f} MB to read a 7 MiB record"
    rows = listed(runs)
    assert "holds over 500,000 protobuf fields (not parsed)" in rows["fields"].status["message"]
    assert points(runs, "good") == [0, 1, 2, 3]


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def test_a_fifo_named_like_an_event_file_is_refused_without_blocking(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    good_run(logs, "good")
    (logs / "fifo").mkdir(parents=True)
    os.mkfifo(logs / "fifo" / EVENTS)
    good_run(logs, "later")
    try:
        sync_bounded(logs, runs)
    finally:
        _unblock(logs / "fifo" / EVENTS)
    rows = listed(runs)
    assert rows["fifo"].damaged and points(runs, "fifo") == []
    assert rows["fifo"].status["message"] == f"fifo/{EVENTS}: {safe_files.NOT_REGULAR}"
    assert points(runs, "good") == [0, 1, 2, 3] and points(runs, "later") == [0, 1, 2, 3]


def test_links_leaving_the_logdir_are_not_followed(tmp_path: Path) -> None:
    logs, runs, outside = tmp_path / "logs", tmp_path / "runs", tmp_path / "outside"
    good_run(outside, "secret", steps=9)  # never to be read through the logdir
    (secret,) = (outside / "secret").iterdir()
    good_run(logs, "good")
    (logs / "filelink").mkdir(parents=True)
    (logs / "filelink" / EVENTS).symlink_to(secret)
    (logs / "dirlink").symlink_to(outside / "secret", target_is_directory=True)
    (logs / "dangling").mkdir()
    (logs / "dangling" / EVENTS).symlink_to(logs / "nothing")
    (logs / "alias").mkdir()  # a link staying inside the logdir is read where it points
    (logs / "alias" / EVENTS).symlink_to(next((logs / "good").iterdir()))
    sync_bounded(logs, runs)
    rows = listed(runs)
    assert rows["filelink"].status["message"] == f"filelink/{EVENTS}: a link leaving the logdir (not followed)"
    assert rows["dirlink"].status["message"] == "dirlink: a link leaving the logdir (not followed)"
    assert rows["dangling"].status["message"] == f"dangling/{EVENTS}: No such file or directory"
    assert points(runs, "good") == [0, 1, 2, 3] and points(runs, "alias") == [0, 1, 2, 3]
    for name in ("filelink", "dirlink"):
        assert rows[name].damaged and points(runs, name) == []  # the 9 secret points are never read


def _unblock(fifo: Path) -> None:
    """Give a reader blocked on the FIFO (the code before the fix) its writer, so the test ends."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass  # no reader waiting: the fix never opened it


def test_a_stalled_read_costs_only_its_own_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that never answers (a hung network mount, simulated by blocking that one read) leaves the other runs
    mirrored; its run reads "no answer" until the read returns, then shows its points."""
    from runstore import tb_reads

    logs, runs = tmp_path / "logs", tmp_path / "runs"
    good_run(logs, "good")
    good_run(logs, "stalled", steps=2)
    release = threading.Event()
    original = tb_reads.read_new

    def read_new(loader, prefix):  # noqa: ANN001, ANN202
        if loader.reader.path.parent.name == "stalled":
            release.wait(60)
        return original(loader, prefix)

    monkeypatch.setattr(tb_reads, "read_new", read_new)
    monkeypatch.setattr(tb_reads, "READ_LIMIT_S", 2.0)  # the good run's read: milliseconds
    t0 = time.monotonic()
    sync_bounded(logs, runs)
    assert time.monotonic() - t0 < 8
    rows = listed(runs)
    assert points(runs, "good") == [0, 1, 2, 3] and not rows["good"].damaged
    assert "no answer within" in rows["stalled"].status["message"]
    release.set()
    for _ in range(100):
        tb_logdir.sync(logs, runs)
        if points(runs, "stalled") == [0, 1]:
            break
        time.sleep(0.05)
    assert points(runs, "stalled") == [0, 1] and not listed(runs)["stalled"].damaged
    assert not listed(runs)["good"].damaged  # its read ended long ago: no "no answer" for a finished read


COLLIDING = ["RunA", "runa", "exp.1", "exp-1", "a/b", "a__b", "x" * 80 + "-one", "x" * 80 + "-two", "UPPER/Case"]


def test_colliding_names_get_their_own_mirror_each_stable_across_restarts(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    for i, name in enumerate(COLLIDING):
        good_run(logs, name, steps=i + 1)  # a distinct number of points per run: a merge would show
    found = sync_bounded(logs, runs)
    assert len({p.name for p in found}) == len(COLLIDING)
    for i, name in enumerate(COLLIDING):
        assert points(runs, name) == list(range(i + 1)), name
    ids = {name: listed(runs)[name].run_id for name in COLLIDING}
    assert ids["runa"] == "runa" and ids["exp-1"] == "exp-1" and ids["a/b"] == "a__b"  # plain names keep theirs
    tb_logdir._MIRRORS.clear()
    assert [p.name for p in sync_bounded(logs, runs)] == [p.name for p in found]
    code = f"from runstore import tb_logdir; print(repr([tb_logdir.mirror_id(n) for n in {COLLIDING!r}]))"
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent
    )
    assert eval(other.stdout) == [ids[n] for n in COLLIDING]  # another process (a server restart): the same ids


def test_pages_show_colliding_runs_apart(runs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Runs table lists RunA and runa once each, and the Live page of RunA's own id draws its 2 points (not 7)."""
    from tests.apptest_pages import app
    from tests.chart_elements import charts, trace_lengths

    logs = tmp_path / "logs"
    good_run(logs, "RunA", steps=2)
    good_run(logs, "runa", steps=5)
    monkeypatch.setenv("JAXDASH_LOGDIR", str(logs))
    rows = app("views/runs.py").dataframe[0].value
    assert sorted(rows["name"]) == ["RunA", "runa"]
    run_id = tb_logdir.mirror_id("RunA")
    live = app("views/live.py", run=run_id)
    assert live.selectbox[0].value == run_id
    assert [trace_lengths(c) for c in charts(live) if "_scalar_loss" in c.key] == [[2]]
