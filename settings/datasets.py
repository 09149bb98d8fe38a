"""Where the MNIST and Fashion-MNIST files live on disk, and their sizes: what the page and training both ask.

The page shows whether a dataset is already here (and where a download would go) before a run starts; the
training process reads the same search order (training/data.py reads, downloads and verifies the files).
Search order (the first directory holding all four files wins):
  1. `data_dir` (cfg.data_dir / --data-dir), the folder itself or its `<name>/` subfolder;
  2. `$JAXDASH_DATA_DIR`, likewise;
  3. the user cache, `$XDG_CACHE_HOME/jaxdash/<name>` (default `~/.cache/jaxdash/<name>`);
  4. for fashion_mnist, Debian's `/usr/share/datasets/fashion-mnist` (`apt-get install dataset-fashion-mnist`).
A download goes into `data_dir`, else `$JAXDASH_DATA_DIR/<name>`, else the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
DATASET_SIZES: dict[str, tuple[int, int]] = {"mnist": (60_000, 10_000), "fashion_mnist": (60_000, 10_000)}
CLASS_NAMES: dict[str, tuple[str, ...]] = {
    "mnist": tuple(str(i) for i in range(10)),
    "fashion_mnist": (
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ),
}
DEBIAN_DIRS = {"fashion_mnist": Path("/usr/share/datasets/fashion-mnist")}
ENV_DATA_DIR = "JAXDASH_DATA_DIR"


def cache_dir(name: str) -> Path:
    """The per-user download cache of one dataset (XDG_CACHE_HOME respected)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "jaxdash" / name


def find_file(folder: Path, file: str) -> Path | None:
    """The .gz file, or its unpacked twin (people often gunzip them)."""
    for p in (folder / file, folder / file.removesuffix(".gz")):
        if p.is_file():
            return p
    return None


def complete(folder: Path) -> bool:
    """Whether `folder` holds all four files."""
    return all(find_file(folder, f) for f in FILES)


def candidates(name: str, data_dir: str | os.PathLike | None) -> list[Path]:
    """The folders searched for `name`, in order."""
    out: list[Path] = []
    for root in (data_dir, os.environ.get(ENV_DATA_DIR)):
        if root:
            out += [Path(root).expanduser(), Path(root).expanduser() / name]
    out.append(cache_dir(name))
    if name in DEBIAN_DIRS:
        out.append(DEBIAN_DIRS[name])
    return out


def find_local(name: str, data_dir: str | os.PathLike | None = None) -> Path | None:
    """The first folder in the search order that holds all four files of `name`, or None."""
    return next((p for p in candidates(name, data_dir) if complete(p)), None)


def download_target(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Where a download of `name` would be written."""
    if data_dir:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_DATA_DIR)
    return Path(env).expanduser() / name if env else cache_dir(name)
