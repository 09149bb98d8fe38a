#!/usr/bin/env bash
# Set up (first time), lint (ruff), and run the whole test suite, slow and browser tests included.
# Extra arguments go to pytest, e.g. ./scripts/test.sh -m "not slow and not browser".
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "lint: ruff check and ruff format --check"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
export WANDB_MODE=offline WANDB_SILENT=true
# Python may cache compiled modules (__pycache__, and pytest's rewritten test modules): where the environment
# forbids it, every one of the suite's ~700 Python processes compiled our modules again (~0.06 CPU s each).
unset PYTHONDONTWRITEBYTECODE
# NumPy's OpenBLAS starts a thread per core in every process that imports it, and they spin: `import numpy` cost
# 0.15 CPU s here, 0.07 with one thread (`import jax` 0.84-0.92 -> 0.66-0.71, `import wandb` 0.62 -> 0.49), in each
# of the suite's ~700 Python processes. Nothing here multiplies matrices with NumPy (JAX has its own).
export OPENBLAS_NUM_THREADS=1
# -n 3: three pytest-xdist workers (each with its own Streamlit server and Chromium): on a 2-core machine the third
# keeps the cores busy while a browser test waits on the page (11:07 against 12:54 with -n 2 in clean-clone runs).
# --dist loadfile --no-loadscope-reorder: a worker takes the next whole file when it runs out, in the order of
# tests/run_order.py (the longest files first), so no worker starts a long file while the others finish.
# Pass -n 0 to run serially. --durations=25: the slowest 25, where the suite's time goes.
exec .venv/bin/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=25 "$@"
