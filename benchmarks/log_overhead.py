"""What logging every step costs a per-step jitted JAX loop: none vs wandb vs tensorboardX vs jaxdash.

    .venv/bin/python -m benchmarks.log_overhead [--epochs 2] [--limit 60000]

The seed's Flax MNIST loop (MLP 784-128-128-10, Adam 1e-3, batch 32, the jitted `train_step`
gathering its batch from device arrays) on Fashion-MNIST, run four times in one process with the
same data and seed, each logging the step's loss a different way:
  none        nothing logged (the reference); `none again` the same loop once more a round (the control: the
              ratio two identical loops read here, the resolution of every other ratio);
  wandb       `wandb.log({"loss": loss})` every step (offline): a device array, so W&B waits for it;
  tensorboardX `writer.add_scalar("loss", float(loss), step)` every step (float() waits too);
  jaxdash     `run.log({"loss": loss})` every step: queued, read once computed, written every 0.05 s;
  jaxdash store  the same with TensorBoard and W&B off (the run store alone: what the writer process costs).
Prints steps/s of each (steady epochs: the first epoch compiles), its ratio to none, and the median
over rounds of its ratio to none in the same round (this VM's speed drifts +-30% between rounds);
and how long its end took (`finish()`: an offline W&B copy written in the script's pauses catches up there);
then the CPU a step each took, by thread and process (`Cpu`), which that drift moves far less.
The jaxdash row's loop starts once its writer process has opened its writers, as the wandb row's starts
after `wandb.init`, which returns once W&B's service runs. A client run keeps its console and samples its system metrics (W&B's defaults; the line after the rows says
which the jaxdash rows had). Goal (issue #52): jaxdash >= 0.98 with both on (W&B itself: ~0.40x).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import psutil  # noqa: E402
from flax.training import train_state  # noqa: E402

from training.data import load_dataset  # noqa: E402
from training.tasks.mnist import MLP  # noqa: E402

BATCH = 32
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


class Cpu:
    """CPU seconds so far: this thread's (the loop's), this process's and its live descendants' (the
    writer process, wandb-core), read at the start and end of the steady epochs. Unlike steps/s,
    these do not move when the VM's speed drifts between rounds."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.thread, self.process, self.children = time.thread_time(), time.process_time(), self._children()

    def _children(self) -> float:
        total = 0.0
        for child in self.me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                times = child.cpu_times()
                total += times.user + times.system
        return total

    def since(self, start: Cpu, steps: int) -> tuple[float, float, float]:
        """Microseconds a step since `start`: (the loop's thread, the process's other threads, other processes)."""
        thread, process = self.thread - start.thread, self.process - start.process
        per_step = 1e6 / max(steps, 1)
        return thread * per_step, (process - thread) * per_step, (self.children - start.children) * per_step


def run_loop(
    fresh: Callable, train_step: Callable, n: int, epochs: int, log: Callable[[int, jax.Array], None]
) -> tuple[float, tuple[float, float, float]]:
    """Steps/s over the steady epochs (all but the first) of the loop calling `log(step, loss)` every step,
    and the CPU microseconds a step (`Cpu.since`) they took."""
    state, key, steps = fresh(), jax.random.key(1), n // BATCH
    times, cpu_from = [], None
    for _ in range(epochs):
        key, sub = jax.random.split(key)
        perms = jax.random.permutation(sub, n)[: steps * BATCH].reshape(steps, BATCH)
        jax.block_until_ready(perms)
        cpu_from = cpu_from or (Cpu() if times else None)  # from the second epoch: the first compiles
        t0 = time.perf_counter()
        for i in range(steps):
            state, loss = train_step(state, perms[i])
            log(len(times) * steps + i, loss)
        jax.block_until_ready(state)  # sync point: the epoch's last step
        times.append(time.perf_counter() - t0)
    steady = times[1:] or times
    cpu = Cpu().since(cpu_from or Cpu(), steps * len(steady))
    return steps * len(steady) / sum(steady), cpu


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
        "none": (lambda: lambda step, loss: None, lambda: None),
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
    """Run the four loops and print steps/s and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2, help="epochs per loop (the first is not counted)")
    p.add_argument("--limit", type=int, default=60_000, help="training examples used")
    p.add_argument("--repeats", type=int, default=2, help="interleaved rounds; each loop's best round counts")
    p.add_argument(
        "--rows",
        default="none,wandb,tensorboardX,jaxdash,jaxdash store",
        help="comma-separated rows to run (none is always run; 'none again' runs it twice a round, the control whose "
        "ratio shows how far apart two identical loops read on this machine); leaving wandb out keeps its W&B "
        "service, alive for the rest of the process, from slowing the rows after it",
    )
    args = p.parse_args()
    os.environ.setdefault("WANDB_SILENT", "true")
    train_x, train_y, _, _ = load_dataset("fashion_mnist")
    x, y = train_x[: args.limit], train_y[: args.limit]
    fresh, train_step = make_step(x.reshape(len(x), -1).astype(np.float32) / 255.0, y)
    rates: dict[str, float] = {}
    rounds: dict[str, list[float]] = {}
    cpus: dict[str, list[tuple[float, float, float]]] = {}
    ends: dict[str, list[float]] = {}  # seconds each row's end (finish, close) took
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):  # interleaved rounds, best of each: drift hits every loop alike
            wanted = {"none", *args.rows.split(",")}
            for name, (start, end) in loggers(Path(tmp)).items():
                if name not in wanted:
                    continue
                log = start()
                rate, cpu = run_loop(fresh, train_step, len(x), args.epochs, log)
                rounds.setdefault(name, []).append(rate)
                cpus.setdefault(name, []).append(cpu)
                rates[name] = max(rounds[name])
                ended_at = time.perf_counter()
                end()
                ends.setdefault(name, []).append(time.perf_counter() - ended_at)
            import jaxdash

            scan_none = max(rates.get("scan", 0.0), run_scan_loop(fresh, train_step, len(x), args.epochs, None))
            run = jaxdash.init(project="log-overhead-scan", runs_root=Path(tmp) / "runs", wandb="offline")
            scan_ours = run_scan_loop(fresh, train_step, len(x), args.epochs, run.log_chunk)
            run.finish()
            rates["scan"], rates["scan+chunk"] = scan_none, max(rates.get("scan+chunk", 0.0), scan_ours)
    scan_none, scan_ours = rates.pop("scan"), rates.pop("scan+chunk")
    print(
        f"Fashion-MNIST {len(x):,} examples, batch {BATCH}, {args.epochs} epochs, steady epochs, best of {args.repeats} interleaved rounds; load {os.getloadavg()[0]:.2f}"
    )
    print("  (best round's steps/s and its ratio to none's best; then the median over rounds of the ratio to")
    print("   none in the same round, which a drift of this VM's speed between rounds does not move)")
    for name, rate in rates.items():
        each = " ".join(f"{r:.0f}" for r in rounds[name])
        paired = statistics.median(r / n for r, n in zip(rounds[name], rounds["none"], strict=True))
        end = statistics.median(ends[name])
        print(
            f"  {name:13s} {rate:8.1f} steps/s   {rate / rates['none']:.3f}x   median paired {paired:.3f}x   "
            f"end {end:5.2f} s   (rounds: {each})"
        )
    if WATCHES:
        print(f"  (the jaxdash rows' runs kept, besides their rows: {', '.join(sorted(WATCHES))})")
    print_cpu(cpus)
    print(f"In jit: lax.scan of {SCAN} steps per call, run.log_chunk of its losses once per call:")
    print(f"  scan, no logging {scan_none:8.1f} steps/s")
    print(f"  scan + log_chunk {scan_ours:8.1f} steps/s   {scan_ours / scan_none:.3f}x of scan alone")


def print_cpu(cpus: dict[str, list[tuple[float, float, float]]]) -> None:
    """Each row's CPU microseconds a step (median over rounds) by where it was spent."""
    print("CPU a step, us (steady epochs, median over rounds): the loop's thread; the process's other threads")
    print("  (XLA's pool spins while it waits, so it takes whatever a core leaves free);")
    print("  other processes (jaxdash's writer process and its wandb-core at idle priority, wandb's own service)")
    med = {name: [statistics.median(c[i] for c in rows) for i in range(3)] for name, rows in cpus.items()}
    for name, (thread, others, children) in med.items():
        print(
            f"  {name:13s} loop's thread {thread:6.1f}   other threads {others:6.1f}   other processes {children:6.1f}"
        )


if __name__ == "__main__":
    main()
