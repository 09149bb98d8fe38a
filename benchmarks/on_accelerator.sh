#!/usr/bin/env bash
# The engine's and the client's benchmarks on an accelerator machine (the README's GPU figures).
# Run from the repository root on a machine whose python3 has JAX with a GPU (or TPU) backend.
# A bare machine without the network gets the pure-Python packages it lacks as wheels in
# .gpu/whl and Fashion-MNIST in .gpu/data/fashion_mnist (the four IDX .gz files):
#   bash benchmarks/on_accelerator.sh [quick]
# Output: each benchmark's own report, prefixed by the device JAX sees. Each benchmark is bounded by
# `timeout`, so a slow one cannot take the others' time.
set -uo pipefail
PY=${PYTHON:-python3}
if [ -d .gpu/whl ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl
  export PYTHONPATH=/tmp/site
fi
[ -d .gpu/data ] && export JAXDASH_DATA_DIR=$PWD/.gpu/data
export WANDB_MODE=offline WANDB_SILENT=true PYTHONUNBUFFERED=1
# train_speed's parent holds JAX beside its CLI child: without a share each, the child's second
# run finds no GPU memory ("Failed to initialize BLASLT support").
export XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
$PY -c "import jax, flax, optax; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, jax.devices())"
if [ "${1:-}" = quick ]; then
  $PY -m benchmarks.train_speed --epochs 2 --no-variants
  exit
fi
timeout 200 $PY -m benchmarks.train_speed --epochs 3  # with its variants, the scan's unroll among them
for unroll in 1 8; do
  echo "== JAXDASH_SCAN_UNROLL=$unroll"
  JAXDASH_SCAN_UNROLL=$unroll timeout 90 $PY -m benchmarks.population_speed --per-member 1,4,16 --epochs 1
done
timeout 60 $PY -m benchmarks.step_costs
timeout 120 $PY -m benchmarks.population_speed --k 16 --epochs 1
timeout 90 $PY -m benchmarks.log_overhead --rounds 2 --scan-epochs 2
