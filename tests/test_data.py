"""Dataset loading: IDX parsing, search order, and downloads from a real local HTTP server."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from settings import datasets
from settings.datasets import FILES
from training import data
from training.data import load_dataset
from training.errors import DataUnavailable


def _idx_bytes(arr: np.ndarray, magic: int) -> bytes:
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def make_split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Learnable fake digits: class c lights rows 2c..2c+3, on top of dim noise."""
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
    for c in range(10):
        images[labels == c, 2 * c + 4 : 2 * c + 8, 4:24] = 220
    return images, labels


def write_idx_dataset(folder: Path, n_train: int = 300, n_test: int = 100, seed: int = 0) -> dict[str, str]:
    """Write the four IDX .gz files into `folder`; returns file name -> SHA-256 of its bytes."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = [*make_split(n_train, rng), *make_split(n_test, rng)]
    sums = {}
    for file, arr in zip(FILES, arrays, strict=True):
        blob = gzip.compress(_idx_bytes(arr, 0x0803 if arr.ndim == 3 else 0x0801), mtime=0)
        (folder / file).write_bytes(blob)
        sums[file] = hashlib.sha256(blob).hexdigest()
    return sums


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No env overrides, an empty user cache, and no Debian copy: only what a test sets up counts."""
    monkeypatch.delenv(datasets.ENV_DATA_DIR, raising=False)
    monkeypatch.delenv(data.mirrors_env_var("mnist"), raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(datasets, "DEBIAN_DIRS", {"fashion_mnist": tmp_path / "no-debian"})
    return tmp_path


@pytest.fixture
def server(tmp_path):
    """HTTP server on 127.0.0.1 serving good/ (valid files) and bad/ (same names, other bytes)."""
    root = tmp_path / "www"
    sums = write_idx_dataset(root / "good", seed=1)
    write_idx_dataset(root / "bad", seed=2)
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            requests.append(self.path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield {"good": f"{base}/good/", "bad": f"{base}/bad/", "sums": sums, "requests": requests, "root": root}
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def dead_url():
    """A URL on a port nobody listens on (connection refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def test_reads_idx_folder_with_validation(isolated):
    write_idx_dataset(isolated / "d", n_train=50, n_test=20)
    tx, ty, vx, vy = load_dataset("mnist", isolated / "d")
    assert tx.shape == (50, 28, 28) and tx.dtype == np.uint8 and ty.shape == (50,)
    assert vx.shape == (20, 28, 28) and vy.max() <= 9
    (isolated / "d" / FILES[1]).write_bytes(gzip.compress(_idx_bytes(np.zeros(49), 0x0801)))
    with pytest.raises(DataUnavailable, match="damaged"):
        load_dataset("mnist", isolated / "d")
    (isolated / "d" / FILES[0]).write_bytes(gzip.compress(b"\x00\x00\x08\x01" + bytes(20)))
    with pytest.raises(DataUnavailable, match="magic"):
        load_dataset("mnist", isolated / "d")


def test_a_folder_is_parsed_once_per_process_until_a_file_changes(isolated):
    write_idx_dataset(isolated / "d", n_train=50, n_test=20)
    first = load_dataset("mnist", isolated / "d")
    again = load_dataset("mnist", isolated / "d")
    assert all(a is b for a, b in zip(first, again, strict=True))  # a sweep worker's next trial parses nothing
    assert not any(a.flags.writeable for a in first)  # shared by the process's runs: nobody may change them
    write_idx_dataset(isolated / "d", n_train=30, n_test=20)
    assert load_dataset("mnist", isolated / "d")[0].shape == (30, 28, 28)


def test_search_order_data_dir_then_env_then_cache(isolated, monkeypatch):
    write_idx_dataset(isolated / "explicit", n_train=11)
    write_idx_dataset(isolated / "envroot" / "mnist", n_train=12)
    write_idx_dataset(datasets.cache_dir("mnist"), n_train=13)
    monkeypatch.setenv(datasets.ENV_DATA_DIR, str(isolated / "envroot"))
    assert len(load_dataset("mnist", isolated / "explicit")[0]) == 11
    assert len(load_dataset("mnist", isolated / "missing")[0]) == 12  # falls through to the env var's <name>/
    monkeypatch.delenv(datasets.ENV_DATA_DIR)
    assert len(load_dataset("mnist")[0]) == 13
    assert datasets.cache_dir("mnist") == isolated / "cache" / "jaxdash" / "mnist"


def test_download_verifies_and_caches(isolated, server):
    arrays = load_dataset("mnist", mirrors=[server["good"]], checksums=server["sums"])
    assert sorted(server["requests"]) == sorted(f"/good/{f}" for f in FILES)
    cached = datasets.cache_dir("mnist")
    assert sorted(p.name for p in cached.iterdir()) == sorted(FILES)  # no leftover temp files
    server["requests"].clear()
    again = load_dataset("mnist", mirrors=[server["good"]], checksums=server["sums"])
    assert server["requests"] == []  # second call is served from the cache
    for a, b in zip(arrays, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_checksum_mismatch_falls_back_to_next_mirror(isolated, server):
    load_dataset("mnist", mirrors=[server["bad"], server["good"]], checksums=server["sums"])
    assert [r for r in server["requests"] if r.startswith("/bad/")]
    for f in FILES:  # what landed is the good mirror's file, byte for byte
        assert (datasets.cache_dir("mnist") / f).read_bytes() == (server["root"] / "good" / f).read_bytes()


def test_checksum_mismatch_everywhere_is_an_error(isolated, server):
    target = isolated / "dl"
    with pytest.raises(DataUnavailable, match="checksum mismatch"):
        load_dataset("mnist", target, mirrors=[server["bad"]], checksums=server["sums"])
    assert not target.exists()  # nothing unverified is kept, not even the folder


def test_dead_mirror_falls_back(isolated, server, dead_url, monkeypatch):
    monkeypatch.setenv(data.mirrors_env_var("mnist"), f"{dead_url},{server['good']}")
    train_x = load_dataset("mnist", checksums=server["sums"], timeout=2)[0]
    assert train_x.shape == (300, 28, 28)


def test_all_dead_gives_one_actionable_message(isolated, dead_url):
    with pytest.raises(DataUnavailable) as err:
        load_dataset("mnist", isolated / "mine", mirrors=[dead_url], timeout=2)
    msg = str(err.value)
    assert "'mnist' is not available" in msg and str(isolated / "mine") in msg and dead_url in msg
    assert "--data-dir" in msg and datasets.ENV_DATA_DIR in msg and "apt-get" not in msg
    with pytest.raises(DataUnavailable, match="apt-get install dataset-fashion-mnist"):
        load_dataset("fashion_mnist", mirrors=[dead_url], timeout=2)


@pytest.mark.skipif(
    not datasets.DEBIAN_DIRS["fashion_mnist"].is_dir(), reason="Debian dataset-fashion-mnist not installed"
)
def test_debian_fashion_mnist_matches_upstream_contents():
    folder = datasets.DEBIAN_DIRS["fashion_mnist"]
    tx, ty, vx, vy = data.read_folder(folder)
    assert tx.shape == (60_000, 28, 28) and vx.shape == (10_000, 28, 28)
    assert np.bincount(ty).tolist() == [6000] * 10 and np.bincount(vy).tolist() == [1000] * 10
    # Debian recompressed the .gz files (their SHA-256 differs from upstream); the IDX payload is upstream's.
    with gzip.open(folder / FILES[3], "rb") as f:
        assert (
            hashlib.sha256(f.read()).hexdigest() == "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"
        )
