"""What logging every step costs a per-step jitted JAX loop: none vs wandb vs tensorboardX vs jaxdash.

    .venv/bin/python -m benchmarks.log_overhead [--rounds 80] [--limit 60000] [--rows ...]

The seed's Flax MNIST loop (MLP 784-128-128-10, Adam 1e-3, batch 32, the jitted `train_step`
gathering its batch from device arrays) on Fashion-MNIST, logging the step's loss each way:
  wandb       `wandb.log({"loss": loss})` every step (offline): a device array, so W&B waits for it;
  tensorboardX `writer.add_scalar("loss", float(loss), step)` every step (float() waits too);
  jaxdash     `run.log({"loss": loss})` every step (TensorBoard and an offline W&B copy too, the console kept
              and system metrics sampled: W&B's defaults);
  jaxdash store  the same with TensorBoard and W&B off (the run store alone);
  none again  a logger that does nothing (the control: the resolution of every other ratio).
Each row is one loop (the same state and step count going on) and a new run a round, after WARM_S of untimed
epochs: a round times an epoch with no run, then starts a run (its writers open; one untimed epoch logging
lets their start settle), times an epoch logging every step and one logging nothing with the run still open,
and ends the run (untimed; the processes it started are waited for). Each logged epoch is compared with the
no-run epochs on either side of it (`benchmarks.paired_ratios`: this VM's speed drifts by seconds, up to 70%):
the median over rounds, with its bootstrap 95% interval, is the ratio the goal reads (80 rounds by default: with
30 this VM's interval spans ~3%, wider than the 2% the goal allows); beside it what logging
adds to the open idle run, what the open run costs idle, and the unpaired fastest quarters; then the logged
epochs' steps/s, how long a run's end took (`finish()`: an offline W&B copy written in the script's pauses
catches up there), and the CPU a step, by thread and process (`benchmarks.log_cpu`), with no run and logging.
Goal (issue #52): jaxdash >= 0.98 (W&B itself: ~0.40x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax.training import train_state  # noqa: E402

from benchmarks.log_cpu import Cpu, child_pids, print_cpu, wait_gone  # noqa: E402
from benchmarks.paired_ratios import describe  # noqa: E402
from training.data import load_dataset  # noqa: E402
from training.tasks.mnist import MLP  # noqa: E402

BATCH = 32
WARM_S = 5.0  # untimed epochs before a row's rounds (a slow spell of this VM's at a row's start fell on its first
# no-run epochs alone)
WATCHES: set[str] = set()  # what the jaxdash rows' runs watched besides their rows (console, system metrics)


def make_step(x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable]:
    """(a fresh train state maker, the seed's jitted train_step) over device copies of the data."""
    images, labels = jnp.asarray(x), jnp.asarray(y)
    model = MLP((128, 128))

    def fresh() -> train_state.TrainState:
        params = model.init(jax.random.key(0), jnp.ones((1, 784)))["params"]
        return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))

    @jax.jit
    def train_step(state, idxs):  # noqa: ANN001, ANN202 - the tutorial's own step
        def loss_fn(params):  # noqa: ANN001, ANN202
            logits = state.apply_fn({"params": params}, images[idxs])
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels[idxs]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    return fresh, train_step


class Loop:
    """The training loop, epoch by epoch, its state and step count going on across epochs."""

    def __init__(self, fresh: Callable, train_step: Callable, n: int) -> None:
        self.state, self.train_step, self.n = fresh(), train_step, n
        self.key, self.steps, self.step = jax.random.key(1), n // BATCH, 0

    def epoch(self, log: Callable[[int, jax.Array], None]) -> tuple[float, tuple[float, float, float]]:
        """One epoch calling `log(step, loss)` every step: its seconds and its CPU microseconds a step (`Cpu.since`)."""
        self.key, sub = jax.random.split(self.key)
        perms = jax.random.permutation(sub, self.n)[: self.steps * BATCH].reshape(self.steps, BATCH)
        jax.block_until_ready((perms, self.state))
        cpu_from, t0 = Cpu(), time.perf_counter()
        state, train_step, step = self.state, self.train_step, self.step
        for i in range(self.steps):
            state, loss = train_step(state, perms[i])
            log(step + i, loss)
        jax.block_until_ready(state)  # sync point: the epoch's last step
        seconds = time.perf_counter() - t0
        self.state, self.step = state, step + self.steps
        return seconds, Cpu().since(cpu_from, self.steps)


def warm_loop(epochs: int = 10) -> Loop:
    """The seed's loop over the whole of Fashion-MNIST, after `epochs` untimed epochs (it compiles, and the VM
    settles): what `benchmarks.loop_stalls` and `benchmarks.log_pieces` time."""
    x, y, _, _ = load_dataset("fashion_mnist")
    fresh, train_step = make_step(x.reshape(len(x), -1).astype(np.float32) / 255.0, y)
    loop = Loop(fresh, train_step, len(x))
    for _ in range(epochs):
        loop.epoch(_quiet)
    return loop


def _quiet(step: int, loss: jax.Array) -> None:
    """The unlogged epochs' log: nothing."""


def rounds_of(
    loop: Loop, start: Callable[[], Callable], end: Callable[[], None], rounds: int
) -> tuple[dict[str, list[Any]], list[float]]:
    """`rounds` rounds of three timed epochs: one with no run (`closed`), then, in a run started for the round and
    after one untimed epoch logging (its writers' start settles), one logging every step (`logged`) and one
    logging nothing with the run still open (`open`); then the run ends (untimed, and waited for until the
    processes it started are gone), and one more `closed` epoch after the last round, so every logged epoch
    has a closed one on each side (`benchmarks.paired_ratios`). Untimed first: WARM_S of epochs and a round
    (it compiles). Returns each kind's epochs, (seconds, cpu), and each end's seconds."""
    timed: dict[str, list[Any]] = {"closed": [], "logged": [], "open": []}
    ends = []
    warm_until = time.monotonic() + WARM_S
    while time.monotonic() < warm_until:
        loop.epoch(_quiet)
    for round_no in range(rounds + 1):
        closed = loop.epoch(_quiet)
        before = child_pids()
        log = start()
        loop.epoch(log)
        logged = loop.epoch(log)
        still_open = loop.epoch(_quiet)
        ended_at = time.perf_counter()
        end()
        wait_gone(child_pids() - before)
        if round_no:
            ends.append(time.perf_counter() - ended_at)
            for kind, epoch in (("closed", closed), ("logged", logged), ("open", still_open)):
                timed[kind].append(epoch)
    timed["closed"].append(loop.epoch(_quiet))
    return timed, ends


SCAN = 10  # steps per jitted call in the in-jit rows


def run_scan_loop(fresh: Callable, train_step: Callable, n: int, epochs: int, log_chunk: Callable | None) -> float:
    """Steps/s of the same steps scanned SCAN at a time in one jitted call, logging each chunk's losses once."""

    @jax.jit
    def chunk(state, idxs):  # noqa: ANN001, ANN202
        return jax.lax.scan(train_step.__wrapped__, state, idxs)

    state, key, steps = fresh(), jax.random.key(1), n // BATCH // SCAN * SCAN
    times = []
    for _ in range(epochs):
        key, sub = jax.random.split(key)
        perms = jax.random.permutation(sub, n)[: steps * BATCH].reshape(steps // SCAN, SCAN, BATCH)
        jax.block_until_ready(perms)
        t0 = time.perf_counter()
        for i in range(steps // SCAN):
            state, losses = chunk(state, perms[i])
            if log_chunk is not None:
                log_chunk({"loss": losses})
        jax.block_until_ready(state)
        times.append(time.perf_counter() - t0)
    steady = times[1:] or times
    return steps * len(steady) / sum(steady)


def loggers(root: Path) -> dict[str, tuple[Callable[[], Callable], Callable[[], None]]]:
    """name -> (start: returns the per-step log function, end)."""
    import jaxdash

    state: dict[str, object] = {}

    def start_wandb() -> Callable:
        import wandb

        state["w"] = wandb.init(project="log-overhead", dir=str(root), mode="offline", settings={"silent": True})
        return lambda step, loss: wandb.log({"loss": loss}, step=step)

    def start_tbx() -> Callable:
        from tensorboardX import SummaryWriter

        state["tb"] = writer = SummaryWriter(str(root / "tbx"))
        return lambda step, loss: writer.add_scalar("loss", float(loss), step)

    def start_ours() -> Callable:
        copy_mode, tensorboard = (
            os.environ.get("LOG_OVERHEAD_WANDB", "offline"),
            os.environ.get("LOG_OVERHEAD_TB", "1") == "1",
        )
        state["run"] = run = jaxdash.init(project="log-overhead", runs_root=root / "runs", wandb=copy_mode,
                                          tensorboard=tensorboard)  # fmt: skip
        WATCHES.update(type(w).__name__ for w in run._watches)  # ConsoleCapture, SystemWatch: W&B's defaults on
        writers_open(Path(run.dir), copy_mode != "disabled", tensorboard)
        return lambda step, loss: run.log({"loss": loss}, step=step)

    def start_store_only() -> Callable:
        state["store"] = run = jaxdash.init(project="log-overhead", runs_root=root / "runs", wandb="disabled",
                                            tensorboard=False)  # fmt: skip
        return lambda step, loss: run.log({"loss": loss}, step=step)

    return {
        "none again": (lambda: lambda step, loss: None, lambda: None),  # the control: what two identical loops read
        "wandb": (start_wandb, lambda: state["w"].finish()),
        "tensorboardX": (start_tbx, lambda: state["tb"].close()),
        "jaxdash": (start_ours, lambda: state["run"].finish()),
        "jaxdash store": (start_store_only, lambda: state["store"].finish()),
    }


def writers_open(run_dir: Path, wandb_copy: bool, tensorboard: bool, timeout: float = 60.0) -> None:
    """Wait until the run's writer process has opened those of TensorBoard and the W&B copy it writes (status.json
    names their folders): `wandb.init` returns only once its service runs, so the wandb row's loop never pays for W&B's
    start; `jaxdash.init` returns at once, and the writer process's start (~0.8 s of CPU, importing wandb and
    starting wandb-core) is not what a logged step costs."""
    from runstore.run_folder import RunFolder

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = RunFolder(run_dir).status()
        wandb_open = not wandb_copy or status.get("wandb", {}).get("dir")
        tb_open = not tensorboard or status.get("tensorboard", {}).get("logdir")
        if wandb_open and tb_open:
            return
        time.sleep(0.05)


def main() -> None:
    """Time each row's rounds, then the in-jit rows, and print the ratios and CPU."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--rounds",
        type=int,
        default=80,
        help="rounds of three timed epochs (no run; logging; the run open, not logging)",
    )
    p.add_argument("--limit", type=int, default=60_000, help="training examples used (an epoch: limit / 32 steps)")
    p.add_argument("--scan-epochs", type=int, default=3, help="epochs of the in-jit rows (the first is not counted)")
    p.add_argument(
        "--rows",
        default="none again,wandb,tensorboardX,jaxdash,jaxdash store",
        help="comma-separated rows to run; leaving wandb out keeps its W&B service, alive for the rest of the "
        "process, from slowing the rows after it",
    )
    args = p.parse_args()
    os.environ.setdefault("WANDB_SILENT", "true")
    train_x, train_y, _, _ = load_dataset("fashion_mnist")
    x, y = train_x[: args.limit], train_y[: args.limit]
    fresh, train_step = make_step(x.reshape(len(x), -1).astype(np.float32) / 255.0, y)
    results: dict[str, tuple[dict[str, list[Any]], list[float]]] = {}  # row -> (its epochs, its ends' seconds)
    with tempfile.TemporaryDirectory() as tmp:
        wanted = args.rows.split(",")
        for name, (start, end) in loggers(Path(tmp)).items():
            if name in wanted:
                results[name] = rounds_of(Loop(fresh, train_step, len(x)), start, end, args.rounds)
        scan_none, scan_ours = scan_rows(fresh, train_step, len(x), args.scan_epochs, Path(tmp))
    steps = len(x) // BATCH
    print(
        f"Fashion-MNIST {len(x):,} examples, batch {BATCH}, {steps} steps an epoch, {args.rounds} rounds a row of an "
        f"epoch with no run, then in a new run one logging every step and one not; load {os.getloadavg()[0]:.2f}"
    )
    print("  (no run vs logging every step, each logged epoch against the mean of the no-run epochs before and after")
    print("   it: the median over rounds [its bootstrap 95% interval]; the run open and idle vs logging; no run vs")
    print("   the open idle run; unpaired, each kind's fastest quarter; each run's end, `finish()`, median)")
    for name, (timed, ends) in results.items():
        print(
            f"  {name:13s} {describe(timed)}   logged {steps / statistics.median(t for t, _ in timed['logged']):7.1f}"
            f" steps/s   end {statistics.median(ends):5.2f} s"
        )
    if WATCHES:
        print(f"  (the jaxdash rows' runs kept, besides their rows: {', '.join(sorted(WATCHES))})")
    print_cpu({name: timed for name, (timed, _) in results.items()})
    print(f"In jit: lax.scan of {SCAN} steps per call, run.log_chunk of its losses once per call:")
    print(f"  scan, no logging {scan_none:8.1f} steps/s")
    print(f"  scan + log_chunk {scan_ours:8.1f} steps/s   {scan_ours / scan_none:.3f}x of scan alone")


def scan_rows(fresh: Callable, train_step: Callable, n: int, epochs: int, root: Path) -> tuple[float, float]:
    """Steps/s of the scanned loop logging nothing and logging each chunk with `run.log_chunk`, best of two."""
    import jaxdash

    rates = {"none": 0.0, "ours": 0.0}
    for _ in range(2):
        rates["none"] = max(rates["none"], run_scan_loop(fresh, train_step, n, epochs, None))
        run = jaxdash.init(project="log-overhead-scan", runs_root=root / "runs", wandb="offline")
        rates["ours"] = max(rates["ours"], run_scan_loop(fresh, train_step, n, epochs, run.log_chunk))
        run.finish()
    return rates["none"], rates["ours"]


if __name__ == "__main__":
    main()
