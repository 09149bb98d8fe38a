"""The run index at scale: build, incremental update and a query over a generated root of many runs.

    .venv/bin/python benchmarks/run_index.py [--runs 10000] [--root DIR] [--keep]

The generator writes small run folders the way the writers lay them out (config.json, status.json, a few
records, and for client runs summary.json and tags): sweeps, population members and client runs, with
plain writes (no fsync), so making 10,000 takes seconds. It prints the index build from scratch, an
update after one run writes, an update with nothing changed, queries over every run (goal: 0.5 s) and the
process's memory. Not run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runstore import index_reader, run_index  # noqa: E402
from runstore.run_folder import RunFolder

QUERIES = [
    'config.lr < 0.01 and summary.test/acc.max > 0.9 and tags contains "baseline"',
    'state in ("finished", "stopped") and config.batch_size >= 64',
    'not (kind = "client") or name contains "sweep-1"',
    "",
]


def _write(path: Path, doc: object) -> None:
    path.write_text(json.dumps(doc))


def make_root(root: Path, n: int, seed: int = 0) -> None:
    """`n` small runs under `root`: a third sweep trials, a third population members, a third client runs."""
    rng = random.Random(seed)
    now = time.time() - n
    for i in range(n):
        kind = ("sweep", "member", "client")[i % 3]
        d = root / f"20260101-000000-{kind}-{i:05d}"
        d.mkdir(parents=True)
        run = RunFolder(d)
        cfg = {"lr": 10 ** rng.uniform(-4, -1), "batch_size": rng.choice([32, 64, 128]),
               "optimizer": rng.choice(["adam", "sgd"]), "model": {"hidden": rng.choice([64, 128, 256])}}  # fmt: skip
        doc = {"run_id": d.name, "name": f"{kind}-{i}", "task": "mnist", "config": cfg, "created": now + i,
               "command": None}  # fmt: skip
        if kind == "member":
            doc |= {"group": f"pop-{i // 24}", "member": i % 8, "task_spec": "mnist"}
        elif kind == "sweep":
            doc["task_spec"] = "mnist"
        else:
            doc["tags"] = rng.sample(["baseline", "ablation", "long", "debug"], 2)
        _write(run.config_path, doc)
        _write(run.status_path, {"state": rng.choice(["finished", "finished", "stopped", "failed"]), "step": 100})
        accs = sorted(rng.uniform(0.5, 0.99) for _ in range(5))
        lines = [{"step": s * 20, "wall": s, "ts": now + i, "train/loss": 1 / (s + 1), "test/acc": a}
                 for s, a in enumerate(accs)]  # fmt: skip
        run.records_path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        if kind == "client":
            _write(run.summary_path, {"test/acc": accs[-1], "best": f"ckpt-{i % 5}"})


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB."""
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn, repeat: int = 3) -> tuple[float, object]:  # noqa: ANN001 - any callable
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    """Generate, index, update, query; print one line a measurement."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10_000)
    p.add_argument("--root", type=Path, default=None, help="where to generate (default: a temp folder)")
    p.add_argument("--keep", action="store_true", help="keep the generated root")
    args = p.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="run-index-bench-"))
    t = time.perf_counter()
    make_root(root, args.runs)
    print(f"generated {args.runs} runs in {time.perf_counter() - t:.1f} s under {root}")
    try:
        t = time.perf_counter()
        built = run_index.update(root)
        print(f"index build from scratch: {time.perf_counter() - t:.2f} s ({built.read} runs read; goal 60 s)")
        size = run_index.index_path(root).stat().st_size / 2**20
        print(f"index file: {size:.1f} MB")
        idle, same = _timed(lambda: run_index.update(root))
        print(f"update, nothing changed: {idle:.2f} s ({same.kept} folders checked, {same.read} read)")
        one = sorted(root.iterdir())[-1]
        RunFolder(one).append_records([{"step": 999, "wall": 0.0, "ts": time.time(), "test/acc": 0.999}])
        t = time.perf_counter()
        changed = run_index.update(root)
        took = time.perf_counter() - t
        seen = index_reader.matching_ids(root, "summary.test/acc.max > 0.998")
        print(
            f"update after one run wrote: {took:.2f} s ({changed.read} read; the new record queried: {one.name in seen})"
        )
        for q in QUERIES:
            took, found = _timed(lambda q=q: index_reader.search(root, q))
            ids_took, _ = _timed(lambda q=q: index_reader.matching_ids(root, q))
            print(f"query over {args.runs} runs: {took:.3f} s for {len(found)} runs as objects, {ids_took:.3f} s as ids"
                  f" (goal 0.5 s): {q or '(empty: every run)'}")  # fmt: skip
        current, peak = _rss_mb()
        print(f"process RSS: {current:.0f} MB now, {peak:.0f} MB peak")
    finally:
        if not args.keep and args.root is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
