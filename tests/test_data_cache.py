"""Parsed datasets kept on disk (training/data_cache.py): read back instead of parsed, parsed again when a
file changes or the kept copy is damaged, and never required."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from settings import datasets
from training import data, data_cache


def _write_idx(path: Path, array: np.ndarray, magic: int) -> None:
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small MNIST-shaped dataset in its own folder; the cache under tmp_path, kept whatever the size."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(data_cache, "MIN_BYTES", 0)
    rng = np.random.default_rng(0)
    where = tmp_path / "set"
    where.mkdir()
    for images, labels, n in ((datasets.FILES[0], datasets.FILES[1], 50), (datasets.FILES[2], datasets.FILES[3], 20)):
        _write_idx(where / images, rng.integers(0, 256, (n, 28, 28)), 0x0803)
        _write_idx(where / labels, rng.integers(0, 10, n), 0x0801)
    data._PARSED.clear()
    return where


def _load(folder: Path) -> data.Arrays:
    data._PARSED.clear()  # as a new process would
    return data.read_folder(folder)


def _entries() -> list[Path]:
    return sorted(datasets.cache_dir(data.PARSED).iterdir())


def test_a_second_process_reads_the_kept_copy_not_the_files(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _load(folder)
    assert len(_entries()) == 1
    monkeypatch.setattr(data, "_parse_folder", lambda f: pytest.fail("parsed again"))
    kept = _load(folder)
    for a, b in zip(parsed, kept, strict=True):
        assert type(b) is np.ndarray and not b.flags.writeable and b.dtype == a.dtype
        np.testing.assert_array_equal(a, b)


def test_a_changed_file_is_parsed_again_and_replaces_the_old_copy(folder: Path) -> None:
    first = _load(folder)
    (old,) = _entries()
    labels = folder / datasets.FILES[1]
    _write_idx(labels, np.zeros(50), 0x0801)
    os.utime(labels, ns=(1, 1))  # another time than the first file's, whatever the clock's resolution
    second = _load(folder)
    assert second[1].sum() == 0 and first[1].sum() > 0
    (new,) = _entries()
    assert new != old


def test_a_damaged_copy_or_an_unwritable_cache_means_parsing_as_before(folder: Path) -> None:
    parsed = _load(folder)
    (entry,) = _entries()
    (entry / "train_x.npy").write_bytes(b"\x93NUMPY damaged")
    np.testing.assert_array_equal(_load(folder)[0], parsed[0])
    assert (entry / "train_x.npy").stat().st_size > 100  # the damaged entry was replaced
    shutil.rmtree(datasets.cache_dir(data.PARSED))
    datasets.cache_dir(data.PARSED).write_text("a file where the cache folder should be")
    np.testing.assert_array_equal(_load(folder)[2], parsed[2])
