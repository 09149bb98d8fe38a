"""How many of the W&B conformance probes each implementation passes: real wandb, jaxdash, and trackio.

    python -m benchmarks.wandb_conformance              # wandb and jaxdash
    python -m benchmarks.wandb_conformance --trackio    # and trackio, from a throwaway venv
    python -m benchmarks.wandb_conformance -k config    # only probes whose name holds "config"
    python -m benchmarks.wandb_conformance --markdown   # and the README's table of calls

Each probe (tests/wandb_conformance/probes/) runs as a real subprocess with `import wandb` (offline) and
with `import <impl> as wandb`; an implementation passes a probe when what it stored matches what W&B
stored (tests/wandb_conformance/compare.py). jaxdash passes only when both its run folder and its W&B
copy match. W&B's outcome of a probe is cached (tests/wandb_conformance/reference.py; CONFORMANCE_CACHE=off
runs real wandb every time). trackio is installed into /tmp/trackio-venv (never a project dependency) and compared on
what it keeps: exit code, printed lines, config and history.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.wandb_conformance import compare, reference, running

TRACKIO_VENV = Path("/tmp/trackio-venv")


def ensure_trackio() -> bool:
    """trackio in its own venv (created once); False with a message if it cannot be installed."""
    python = TRACKIO_VENV / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", "import trackio"], capture_output=True).returncode == 0:
        return True
    try:
        subprocess.run([sys.executable, "-m", "venv", str(TRACKIO_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "trackio"], check=True, timeout=900)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"trackio: could not install into {TRACKIO_VENV} ({exc}); left out", file=sys.stderr)
        return False
    return True


def run_all(probes: list[running.Probe], impls: list[str], root: Path, workers: int = 2) -> Iterator[tuple]:
    """Every probe checked, yielded in order: (probe, {impl: {side: differences}}). Each run of a probe (real
    wandb's, cached, and each implementation's) is a task of one pool, `workers` subprocesses at a time."""
    with ThreadPoolExecutor(workers) as pool:
        tasks = [
            (p, pool.submit(reference.reference, p, root / p.name / "wandb"),
             {i: pool.submit(running.run_probe, p, i, root / p.name / i) for i in impls})
            for p in probes
        ]  # fmt: skip
        try:
            for probe, want_run, runs in tasks:
                want, own = want_run.result()
                yield probe, {"wandb": own, **{i: compare.diff(want, run.result()) for i, run in runs.items()}}
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def passed(found: dict[str, list[str]]) -> bool:
    """True when no side of this implementation differs from W&B."""
    return not any(found.values())


def markdown(results: list[tuple], every: list[str]) -> str:
    """The README's table: each call, its probe, and pass/fail per implementation with jaxdash's first difference."""
    lines = ["| call | probe | " + " | ".join(every) + " | jaxdash differs in |", "|---" * (len(every) + 3) + "|"]
    for probe, found in results:
        marks = " | ".join("yes" if passed(found[i]) else "no" for i in every)
        why = compare.one_line(found["jaxdash"]).replace("|", "\\|")[:160]
        lines.append(f"| {probe.call} | {probe.name} | {marks} | {why} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print a line per probe (pass/fail per implementation, jaxdash's first difference) and the pass counts."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trackio", action="store_true", help="also run the probes with trackio (throwaway venv)")
    ap.add_argument("-k", default="", help="only probes whose name contains this")
    ap.add_argument("--workers", type=int, default=2, help="probes run at a time (default 2)")
    ap.add_argument("--keep", action="store_true", help="keep the probes' folders (printed) for inspection")
    ap.add_argument("--markdown", action="store_true", help="also print the README's table of calls")
    ap.add_argument("--jaxdash-path", help="run jaxdash from this checkout (e.g. an older commit's `git archive`)")
    args = ap.parse_args(argv)
    if args.jaxdash_path:
        os.environ["CONFORMANCE_JAXDASH_PATH"] = str(Path(args.jaxdash_path).resolve())
    impls = ["jaxdash"] + (["trackio"] if args.trackio and ensure_trackio() else [])
    probes = [p for p in running.all_probes() if args.k in p.name]
    root = Path(tempfile.mkdtemp(prefix="wandb-conformance-"))
    t0 = time.monotonic()
    every = ["wandb", *impls]
    print(f"{'probe':30s} " + " ".join(f"{i:8s}" for i in every) + " first jaxdash difference", flush=True)
    results = []
    for probe, found in run_all(probes, impls, root, args.workers):
        results.append((probe, found))
        marks = " ".join(f"{'pass' if passed(found[i]) else 'FAIL':8s}" for i in every)
        print(f"{probe.name:30s} {marks} {compare.one_line(found['jaxdash'])[:220]}", flush=True)
    print(f"\n{len(probes)} probes in {time.monotonic() - t0:.0f} s")
    for impl in every:
        count = sum(passed(found[impl]) for _, found in results)
        print(f"{impl}: {count}/{len(probes)} pass")
    for side in ("run store", "W&B copy"):
        count = sum(not found["jaxdash"].get(side) for _, found in results)
        print(f"  jaxdash's {side} alone: {count}/{len(probes)} match W&B")
    if args.markdown:
        print("\n" + markdown(results, every))
    if args.keep:
        print(f"probe folders kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
