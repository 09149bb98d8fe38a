"""MNIST and Fashion-MNIST as numpy arrays: read the IDX files found locally, or download and verify them.

Where the files are looked for and where a download goes is settings/datasets.py (the page asks it too).
Downloads are checked against the published SHA-256 of each .gz file. Local files are only
checked structurally (IDX magic numbers and sizes): Debian ships Fashion-MNIST recompressed, so
its .gz bytes differ from upstream although the decompressed contents are identical.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from settings import datasets
from settings.datasets import ENV_DATA_DIR, FILES, cache_dir, download_target, find_file
from training import data_cache
from training.errors import DataUnavailable

MIRRORS: dict[str, tuple[str, ...]] = {
    "mnist": (
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
    ),
    "fashion_mnist": (
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    ),
}
# SHA-256 of the upstream .gz files, as pinned by many independent loaders. MNIST's are those of
# the canonical files both mirrors serve. Fashion-MNIST's upstream publishes MD5s (8d4fb7e6...,
# 25c81989..., bef4ecab..., bb300cfd...); these SHA-256 are of those same files.
SHA256: dict[str, dict[str, str]] = {
    "mnist": {
        FILES[0]: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        FILES[1]: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        FILES[2]: "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        FILES[3]: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
    },
    "fashion_mnist": {
        FILES[0]: "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        FILES[1]: "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        FILES[2]: "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        FILES[3]: "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
    },
}
TIMEOUT_S = 15.0  # per socket operation: a dead mirror must not hang a run for minutes

Arrays = data_cache.Arrays  # (train_x, train_y, test_x, test_y)
PARSED = "parsed"  # cache_dir(PARSED): the parsed datasets (training/data_cache.py)


def mirrors_env_var(name: str) -> str:
    """Env var holding comma-separated mirror URLs that replace the built-in ones, e.g. JAXDASH_MNIST_MIRRORS."""
    return f"JAXDASH_{name.upper()}_MIRRORS"


def _fetch(url: str, dest: Path, sha256: str | None, timeout: float) -> None:
    """Stream `url` to a temp file beside `dest`, verify, then rename (readers never see a partial file)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while chunk := resp.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if sha256 and digest.hexdigest() != sha256:
            raise ValueError(f"checksum mismatch (sha256 {digest.hexdigest()[:12]}..., expected {sha256[:12]}...)")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def download(
    name: str, target: Path, mirrors: Sequence[str], checksums: Mapping[str, str] | None, timeout: float = TIMEOUT_S
) -> list[str]:
    """Download the missing files of `name` into `target`, trying each mirror in turn per file.

    Returns the list of failures (empty when every file is present afterwards).
    """
    errors: list[str] = []
    for file in FILES:
        if find_file(target, file):
            continue
        for base in mirrors:
            url = base.rstrip("/") + "/" + file
            try:
                _fetch(url, target / file, (checksums or {}).get(file), timeout)
                break
            except Exception as exc:  # noqa: BLE001 - any failure means: try the next mirror
                errors.append(f"{url}: {type(exc).__name__}: {exc}")
        else:
            return errors or [f"{file}: no mirror to download it from"]
    return []


def _read_idx(path: Path, magic: int, ndim: int) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 + 4 * ndim or int.from_bytes(raw[:4], "big") != magic:
        raise ValueError(f"{path}: not an IDX file with magic {magic:#010x}")
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    header = 4 + 4 * ndim
    if len(raw) != header + int(np.prod(dims)):
        raise ValueError(f"{path}: header says {dims} but payload holds {len(raw) - header} bytes")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


_PARSED: dict[tuple, Arrays] = {}  # the last dataset parsed in this process: a sweep worker reads it once


def read_folder(folder: Path) -> Arrays:
    """The four IDX files in `folder`, parsed once while they stay the same (read-only arrays): kept for this
    process, and on disk for the next (training/data_cache.py)."""
    paths = [find_file(folder, f) for f in FILES]
    if None in paths:
        return _parse_folder(folder)  # names the missing file
    stats = [os.stat(p) for p in paths]
    key = (str(Path(folder).resolve()), *((st.st_ino, st.st_size, st.st_mtime_ns) for st in stats))
    if key not in _PARSED:
        arrays = data_cache.load(cache_dir(PARSED), key)
        if arrays is None:
            arrays = _parse_folder(folder)
            data_cache.save(cache_dir(PARSED), key, arrays)
        for a in arrays:
            a.flags.writeable = False  # shared by every run of this process
        _PARSED.clear()
        _PARSED[key] = arrays
    return _PARSED[key]


def _parse_folder(folder: Path) -> Arrays:
    """Parse the four IDX files in `folder`, validating magic numbers, shapes and label range."""
    out = []
    for images_file, labels_file in ((FILES[0], FILES[1]), (FILES[2], FILES[3])):
        x = _read_idx(find_file(folder, images_file), 0x0803, 3)
        y = _read_idx(find_file(folder, labels_file), 0x0801, 1)
        if x.shape[1:] != (28, 28) or x.shape[0] != y.shape[0] or (y.size and y.max() > 9):
            raise ValueError(f"{folder}: images {x.shape} and labels {y.shape} do not form a 28x28, 10-class set")
        out += [x, y.astype(np.int32)]
    return tuple(out)  # type: ignore[return-value]


def _read_or_explain(folder: Path) -> Arrays:
    try:
        return read_folder(folder)
    except (OSError, EOFError, ValueError) as exc:  # truncated gzip, bad header, unreadable file
        raise DataUnavailable(f"{folder} holds damaged dataset files ({exc}); delete or replace them.") from exc


def load_dataset(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    mirrors: Sequence[str] | None = None,
    checksums: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> Arrays:
    """Load `name` ("mnist" or "fashion_mnist"), downloading it if no local copy is found.

    Args:
      name: dataset name.
      data_dir: a folder holding the four IDX .gz files (or its `<name>/` subfolder); downloads go here.
      mirrors: base URLs to download from (default: $JAXDASH_<NAME>_MIRRORS, else the public mirrors).
      checksums: file name -> SHA-256 of the .gz (default: the published ones; tests pass their own).
      timeout: seconds per network operation.

    Returns:
      (train_x uint8[N,28,28], train_y int32[N], test_x uint8[M,28,28], test_y int32[M]).

    Raises:
      DataUnavailable: no local copy and every mirror failed; the message says where it looked and the fix.
    """
    if name not in MIRRORS:
        raise DataUnavailable(f"Unknown dataset {name!r}; choose one of: {', '.join(MIRRORS)}.")
    looked = datasets.candidates(name, data_dir)
    for folder in looked:
        if datasets.complete(folder):
            return _read_or_explain(folder)
    env_mirrors = os.environ.get(mirrors_env_var(name))
    urls = list(mirrors) if mirrors is not None else env_mirrors.split(",") if env_mirrors else list(MIRRORS[name])
    sums = SHA256[name] if checksums is None else checksums
    target = download_target(name, data_dir)
    existed = target.exists()
    try:
        errors = download(name, target, [u for u in urls if u], sums, timeout)
    except OSError as exc:  # e.g. the target folder is not writable
        errors = [f"{target}: {exc}"]
    if not errors and datasets.complete(target):
        return _read_or_explain(target)
    if not existed and target.is_dir() and not any(target.iterdir()):
        target.rmdir()  # leave no empty cache folder behind a failed download
    fix = f"pass --data-dir DIR (a folder holding {', '.join(FILES)}) or set {ENV_DATA_DIR}=DIR"
    if name in datasets.DEBIAN_DIRS:
        fix += ", or run `sudo apt-get install dataset-fashion-mnist`"
    raise DataUnavailable(
        f"Dataset {name!r} is not available. Looked in: {', '.join(map(str, dict.fromkeys(looked)))}; "
        f"download into {target} failed ({'; '.join(errors) or 'no mirrors configured'}). To fix: {fix}."
    )
