"""Write the console scripts of pyproject.toml's [project.scripts] (`jaxdash`, `jaxdash-train`) into a bin folder.

    .venv/bin/python scripts/console_scripts.py .venv/bin

What `pip install` would write, without building or installing anything: scripts/setup.sh makes the checkout
importable with a .pth file, and this puts its commands on the venv's PATH. Each script runs the Python that
runs this file. Safe to run again: a script already as it should be is left alone.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TEMPLATE = """{shebang}
# A console script of jax-dashboard (pyproject.toml [project.scripts]), written by scripts/setup.sh.
import sys

from {module} import {function}

if __name__ == "__main__":
    sys.exit({function}())
"""


def shebang(python: str) -> str:
    """`#!python`, or pip's /bin/sh trampoline where the kernel would cut or split the path (spaces, length)."""
    if " " not in python and len(python) < 127:
        return f"#!{python}"
    return f"#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''"


def scripts(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """{command name: "module:function"} of [project.scripts]."""
    return dict(tomllib.loads(pyproject.read_text())["project"]["scripts"])


def write(bin_dir: Path, python: str = sys.executable) -> list[Path]:
    """Write (or leave, when unchanged) one script per entry; the paths written."""
    written = []
    for name, target in scripts().items():
        module, function = target.split(":")
        text = TEMPLATE.format(shebang=shebang(python), module=module, function=function)
        path = bin_dir / name
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
        path.chmod(0o755)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python scripts/console_scripts.py BIN_FOLDER (an existing folder, e.g. .venv/bin)")
    write(Path(sys.argv[1]))
