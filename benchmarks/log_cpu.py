"""CPU a step of `benchmarks.log_overhead`'s epochs, by where it was spent: the loop's thread, the process's other
threads, and other processes (jaxdash's writer process and its wandb-core, wandb's own service); and the wait
for a run's processes to end before the next epoch."""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any

import psutil


def children_cpu() -> float:
    """CPU seconds of this process's live descendants (a writer process, wandb-core)."""
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            times = child.cpu_times()
            total += times.user + times.system
    return total


class Cpu:
    """CPU seconds so far: this thread's (the loop's), this process's and its live descendants' (the
    writer process, wandb-core), read at the start and end of each timed epoch. Unlike steps/s,
    these move less when the VM's speed drifts."""

    def __init__(self) -> None:
        self.thread, self.process, self.children = time.thread_time(), time.process_time(), children_cpu()

    def since(self, start: Cpu, steps: int) -> tuple[float, float, float]:
        """Microseconds a step since `start`: (the loop's thread, the process's other threads, other processes)."""
        thread, process = self.thread - start.thread, self.process - start.process
        per_step = 1e6 / max(steps, 1)
        return thread * per_step, (process - thread) * per_step, (self.children - start.children) * per_step


def print_cpu(results: dict[str, dict[str, list[Any]]]) -> None:
    """Each row's CPU microseconds a step (median over epochs) by where it was spent: no run -> logging."""
    print("CPU a step, us (median over epochs, no run -> logging every step): the loop's thread;")
    print("  the process's other threads (XLA's pool spins while it waits, so it takes whatever a core leaves free);")
    print("  other processes (jaxdash's writer process and its wandb-core at idle priority, wandb's own service)")
    for name, timed in results.items():
        parts = []
        for i, where in enumerate(("loop's thread", "other threads", "other processes")):
            closed, logged = (statistics.median(cpu[i] for _, cpu in timed[w]) for w in ("closed", "logged"))
            parts.append(f"{where} {closed:6.1f} -> {logged:6.1f}")
        print(f"  {name:13s} " + "   ".join(parts))


def child_pids() -> set[int]:
    """The pids of this process's live descendants."""
    return {child.pid for child in psutil.Process().children(recursive=True)}


def wait_gone(pids: set[int], timeout: float = 10.0) -> None:
    """Wait until the processes `pids` (a run's writer process, its W&B service) have exited, so the next epoch
    with no run does not share the cores with a run's teardown (wandb's own service stays for the process: the
    wandb row's first round, untimed, waits out `timeout` once)."""
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = {pid for pid in pids if _running(pid)}
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # gone
        return False
