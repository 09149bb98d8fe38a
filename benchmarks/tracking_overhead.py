"""Cost of tracking: one MNIST epoch with every writer on vs the no-op base writer, in one process.

    .venv/bin/python -m benchmarks.tracking_overhead [--repeats 3] [--dataset fashion_mnist]

"On" is what a dashboard run uses minus the console: run store + TensorBoard +
W&B offline. Each variant runs `--repeats` times, alternating, and the fastest
of each is compared, because the machine is shared and noise only adds time.
The data set is read once and handed to every run, so the comparison times the
training loop and its logging, not gzip. Compilation is timed by the engine and
left out of the ratio (the writers do nothing while XLA compiles).

Prints one line per run, a summary, and `tracking_overhead_ratio=X.XX` last.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# W&B must never wait on the network here, whatever the caller's environment says.
os.environ["WANDB_MODE"] = "offline"
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_DISABLE_GIT", "true")

from runstore import run_store  # noqa: E402
from runstore.run_folder import RunFolder
from runwriters.base import (  # noqa: E402
    MetricWriter,
    NullWriter,
    Tracking,  # noqa: E402
)
from runwriters.build import build_writer  # noqa: E402
from settings.config import config_to_dict, parse_config  # noqa: E402
from training import data as data_mod  # noqa: E402
from training.runs.in_memory import train  # noqa: E402
from training.tasks import mnist  # noqa: E402


def _cached_loader(dataset: str, data_dir: str | None):
    """Load the data once; every run gets the same arrays (the loop, not gzip, is being timed)."""
    arrays = data_mod.load_dataset(dataset, data_dir)
    return lambda *args, **kwargs: arrays


class _Timed:
    """Wraps one backend and adds the seconds spent in its calls to `totals[name]` (diagnosis only)."""

    def __init__(self, inner: MetricWriter, totals: dict[str, float]):
        self._inner, self._totals, self._name = inner, totals, type(inner).__name__

    def __getattr__(self, method: str):
        fn = getattr(self._inner, method)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._totals[self._name] = self._totals.get(self._name, 0.0) + time.perf_counter() - t0

        return timed


def run_once(cfg, tracked: bool, root: Path) -> dict[str, float]:
    """One epoch; returns wall seconds of training, compile seconds, and writer setup/close seconds."""
    setup = close = 0.0
    if tracked:
        t0 = time.perf_counter()
        run_dir = run_store.new_run_dir(root, "mnist", "bench")
        RunFolder(run_dir).write_config("mnist", config_to_dict(cfg))
        RunFolder(run_dir).start_status(total_steps=0)
        writer, _ = build_writer(
            run_dir, config_to_dict(cfg), tracking=Tracking("offline", tensorboard=True, console=False)
        )
        totals: dict[str, float] = {}
        writer.writers = [_Timed(w, totals) for w in writer.writers]
        writer.write_hparams(config_to_dict(cfg))
        setup = time.perf_counter() - t0
    else:
        writer = NullWriter()
        totals = {}
    if tracked:
        totals.clear()  # count only calls made by the training loop, not setup
    t0, c0 = time.perf_counter(), time.process_time()
    (result,) = train(mnist.MnistTask, cfg, writer)  # closes the writers at the end (inside the timing)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    in_loop = dict(totals) if tracked else {}
    out = {
        "wall": wall,
        "cpu": cpu,
        "compile": float(result.extra["compile_seconds"]),
        "setup": setup,
        "close": close,
        "steps": result.steps,
    }
    out["in_writers"] = sum(in_loop.values())
    out["detail"] = " ".join(f"{k}={v:.3f}s" for k, v in in_loop.items())
    return out


def main(argv: list[str] | None = None) -> float:
    """Run the comparison and return the overhead ratio (tracked / untracked, compile excluded)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="fashion_mnist")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--batch-size", default="32")
    p.add_argument("--log-every", default=None, help="steps per chunk (default: the config's)")
    p.add_argument("--train-limit", default=None, help="fewer examples for a quick check (default: all 60k)")
    p.add_argument("--repeats", type=int, default=4)
    args = p.parse_args(argv)

    raw = {"dataset": args.dataset, "batch_size": args.batch_size, "epochs": 1, "data_dir": args.data_dir}
    if args.log_every:
        raw["log_every"] = args.log_every
    if args.train_limit:
        raw["train_limit"] = args.train_limit
    cfg = parse_config("mnist", raw)
    mnist.load_dataset = _cached_loader(args.dataset, args.data_dir)  # the harness feeds cached arrays

    results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="jaxdash-bench-") as tmp:
        for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR"):
            os.environ.setdefault(var, tmp)
        run_once(cfg, False, Path(tmp))  # warm-up: first JAX dispatches, allocator, imports
        for i in range(args.repeats):
            for tracked in (False, True) if i % 2 == 0 else (True, False):
                r = run_once(cfg, tracked, Path(tmp))
                results[tracked].append(r)
                print(
                    f"run {i} {'tracked  ' if tracked else 'untracked'} wall={r['wall']:.3f}s compile={r['compile']:.3f}s "
                    f"setup={r['setup']:.3f}s close={r['close']:.3f}s steps={r['steps']} {r['detail']}",
                    flush=True,
                )

    def best(tracked: bool) -> dict[str, float]:
        return min(results[tracked], key=lambda r: r["wall"] - r["compile"])

    off, on = best(False), best(True)
    loop_off, loop_on = off["wall"] - off["compile"], on["wall"] - on["compile"]
    ratio = loop_on / loop_off
    print(f"chunks of {cfg.log_every} steps, {on['steps']} steps, batch {cfg.batch_size}, {cfg.dataset}")
    print(f"untracked_seconds={off['wall']:.3f} (loop {loop_off:.3f} + compile {off['compile']:.3f})")
    print(
        f"tracked_seconds={on['wall']:.3f} (loop {loop_on:.3f} + compile {on['compile']:.3f}); "
        f"writer setup {on['setup']:.3f}s and close {on['close']:.3f}s once per run, not in the ratio"
    )
    # The A/B difference is at the mercy of other load on a shared machine; the time spent inside
    # the writers' calls is not, so print it as a cross-check (wandb-core's own CPU is not in it).
    in_writers = min(r["in_writers"] for r in results[True])
    print(
        f"writer_calls_in_loop_seconds={in_writers:.3f} ({100 * in_writers / loop_off:.1f}% of the untracked loop, best run)"
    )
    cpu_off, cpu_on = min(r["cpu"] for r in results[False]), min(r["cpu"] for r in results[True])
    print(
        f"trainer_cpu_seconds untracked={cpu_off:.3f} tracked={cpu_on:.3f} (ratio {cpu_on / cpu_off:.2f}; wandb-core not included)"
    )
    print(f"tracking_overhead_ratio={ratio:.2f}")
    return ratio


if __name__ == "__main__":
    main(sys.argv[1:])
