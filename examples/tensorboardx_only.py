"""A plain tensorboardX script, untouched by jaxdash: `jaxdash --logdir tb_logs` shows it live.

    python examples/tensorboardx_only.py [--logdir tb_logs] [--steps 2000] [--sleep 0.01]

The dashboard reads its event files with TensorBoard's own reader, only the new events each time,
so the curves grow on the Live page while this runs.
"""

from __future__ import annotations

import argparse
import math
import time

from tensorboardX import SummaryWriter


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--logdir", default="tb_logs")
    p.add_argument("--name", default="sine-fit")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--sleep", type=float, default=0.01)
    args = p.parse_args()
    writer = SummaryWriter(f"{args.logdir}/{args.name}")
    for step in range(args.steps):
        loss = math.exp(-step / 400) + 0.05 * math.sin(step / 10)
        writer.add_scalar("train/loss", loss, step)
        if step % 100 == 0:
            writer.add_scalar("test/loss", loss * 1.1, step)
            writer.flush()
        time.sleep(args.sleep)
    writer.close()


if __name__ == "__main__":
    main()
