"""MultiWriter's rule: every call reaches each writer; the first is required, the others best-effort."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from runwriters.base import MemoryWriter, MetricWriter, MultiWriter


class Broken(MetricWriter):
    """An optional writer whose every call fails (a full disk, a dead W&B process)."""

    def write_scalars(self, step, scalars, progress=None):  # noqa: ANN001, D102
        raise OSError("disk full")

    def write_texts(self, step, texts):  # noqa: ANN001, D102
        raise OSError("disk full")

    def close(self, state="finished", message=None):  # noqa: ANN001, D102
        raise OSError("disk full")


def test_every_call_reaches_every_writer_and_a_broken_optional_one_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    kept, also = MemoryWriter(), MemoryWriter()
    multi = MultiWriter([kept, Broken(), also])
    with caplog.at_level(logging.WARNING):
        multi.write_hparams({"lr": 0.1})
        for step in range(3):
            multi.write_scalars(step, {"train/loss": 1.0 / (step + 1)})
        multi.write_scalar_rows(np.array([3, 4]), {"train/loss": np.array([0.2, 0.1])})
        multi.write_texts(4, {"notes": "hi"})
        multi.write_summary({"train/loss": 0.1})
        multi.close("finished", None)
    for writer in (kept, also):
        assert writer.hparams == {"lr": 0.1}
        assert writer.series("train/loss") == [(0, 1.0), (1, 0.5), (2, 1.0 / 3), (3, 0.2), (4, 0.1)]
        assert writer.texts == [(4, {"notes": "hi"})]
        assert writer.summary == {"train/loss": 0.1} and writer.closed == ("finished", None)
    warned = [r.getMessage() for r in caplog.records]
    assert sum("Broken.write_scalars failed" in m for m in warned) == 1, warned  # once, not per step
    assert any("Broken.write_texts failed" in m for m in warned) and any("Broken.close failed" in m for m in warned)


def test_a_failing_required_writer_ends_the_run_and_the_others_still_close() -> None:
    others = MemoryWriter()
    multi = MultiWriter([Broken(), others])
    with pytest.raises(OSError, match="disk full"):
        multi.write_scalars(0, {"train/loss": 1.0})
    assert others.scalars == []  # the required write failed first: nothing half-logged elsewhere
    with pytest.raises(OSError, match="disk full"):
        multi.close("failed", "disk full")
    assert others.closed == ("failed", "disk full")
