"""TensorBoard's scalar events built as bytes (`runwriters.tb_files.scalar_records`): byte for byte the records
protobuf serializes and `SyncEventWriter.add_event` frames, edge steps, values and tags included."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest
from tensorboardX.proto import event_pb2
from tensorboardX.proto.summary_pb2 import Summary

from runstore import run_folder
from runwriters.tb_files import SyncEventWriter, scalar_records
from runwriters.tensorboard import TensorBoardWriter

F32 = np.finfo(np.float32)
EDGE_STEPS = [0, 1, 127, 128, 16383, 16384, 2**40, 2**63 - 1, -1, -(2**63)]
EDGE_COLUMNS = {  # each column one value a step; 1e39 and 3.4028236e38 overflow float32 to inf, as protobuf's cast
    "train/loss": [0.0, -0.0, 1e39, -1e39, float("nan"), float(F32.max), float(F32.min), 3.4028236e38, 1.5, -2.0],
    "t" * 130: [float(F32.tiny), float(F32.smallest_subnormal), 2.0**-150, 1e-46, 0.1, 1 / 3, 2.0**24 + 1, 7, 8, 9],
    "ünï/☃ 损失": np.linspace(-1e30, 1e30, 10, dtype=np.float32),
}


def _records(path) -> list[bytes]:
    """An event file's TFRecords, each with its framing (length, crc of length, payload, crc of payload)."""
    data, out, i = path.read_bytes(), [], 0
    while i < len(data):
        end = i + 16 + struct.unpack_from("<Q", data, i)[0]
        out.append(data[i:end])
        i = end
    return out


def _assert_same_events(written: list[bytes], expected: list[bytes]) -> None:
    """Byte for byte, except a NaN value's payload bits: there the event equals apart from being NaN too."""
    assert len(written) == len(expected)
    for ours, theirs in zip(written, expected, strict=True):
        want = event_pb2.Event.FromString(theirs[12:-4])
        if np.isnan(want.summary.value[0].simple_value):
            got = event_pb2.Event.FromString(ours[12:-4])
            assert np.isnan(got.summary.value[0].simple_value)
            got.summary.value[0].simple_value = want.summary.value[0].simple_value = 0.0
            assert got == want
        else:
            assert ours == theirs, (want, event_pb2.Event.FromString(ours[12:-4]))


def _protobuf_file(path, events) -> list[bytes]:
    """The records of `events` serialized by protobuf and framed by `SyncEventWriter.add_event`."""
    writer = SyncEventWriter(str(path))
    for wall_time, step, tag, value in events:
        summary = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
        writer.add_event(event_pb2.Event(wall_time=wall_time, step=step, summary=summary))
    writer.close()
    return _records(next(path.iterdir()))[1:]  # after the file_version event


@pytest.mark.parametrize("wall_time", [1.7e9 + 0.123456, 0.0, -0.0])
def test_scalar_records_are_protobufs_own_events_framed_as_add_event_frames_them(tmp_path, wall_time):
    ours = SyncEventWriter(str(tmp_path / "ours"))
    ours.write_records(scalar_records(EDGE_STEPS, EDGE_COLUMNS, wall_time))
    ours.close()
    events = [(wall_time, s, t, float(c[i])) for i, s in enumerate(EDGE_STEPS) for t, c in EDGE_COLUMNS.items()]
    expected = _protobuf_file(tmp_path / "protobuf", events)
    assert len(expected) == 30 and max(len(r) for r in expected) > 128 + 16, "2-byte varint lengths covered"
    _assert_same_events(_records(next((tmp_path / "ours").iterdir()))[1:], expected)


def test_a_block_of_rows_is_protobufs_events_at_one_wall_time_negative_steps_and_cleaned_tags_included(tmp_path):
    w = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD, run_name="r")
    before = time.time()
    w.write_scalar_rows(np.array([-3, 0, 5]), {"a b": [1.0, np.nan, 1e39], "sys/rss_mb": [1, 2, 3], "ünï": [4, 5, 6]})
    after = time.time()
    w.close()
    written = _records(next(w.logdir.iterdir()))[1:7]  # after the file_version event, before the session end
    wall_time = event_pb2.Event.FromString(written[0][12:-4]).wall_time
    assert before <= wall_time <= after
    rows = {-3: (1.0, 4.0), 0: (np.nan, 5.0), 5: (1e39, 6.0)}
    events = [(wall_time, s, t, v) for s, row in rows.items() for t, v in zip(("a_b", "ünï"), row, strict=True)]
    _assert_same_events(written, _protobuf_file(tmp_path / "protobuf", events))
