"""Metric tag names, defined once: the engine writes them, writers and the page read them."""

TRAIN = "train"  # prefix of per-step metrics a task's `step` returns, e.g. "train/loss"
TEST = "test"  # prefix of a task's `evaluate` metrics, e.g. "test/acc"
EPOCH = "epoch"  # prefix of epoch means, e.g. "epoch/train_loss"
SYS = "sys"  # prefix of system metrics (CPU, memory)
SYS_CPU = "sys/cpu_percent"
SYS_RSS = "sys/rss_mb"
SYS_ACCEL_MEM = "sys/accel_mem_mb"
SYS_THREADS = "sys/threads"  # a client script's thread count (W&B's proc.cpu.threads)
SYSTEM = (SYS_CPU, SYS_RSS, SYS_ACCEL_MEM)  # the engine's system metrics (a client's own "sys/..." are not these)
TRAIN_LOSS = "train/loss"
TRAIN_ACC = "train/acc"
TEST_LOSS = "test/loss"
TEST_ACC = "test/acc"
STEPS_PER_SEC = "perf/steps_per_sec"
PBT_LR = "pbt/lr"  # a PBT member's learning rate, logged every chunk

FIT_DATA = "fit/data"  # table: the data points a fit is drawn over (x, y)
FIT_CURVE = "fit/curve"  # table: the model's curve (x, y) and the true one (y_true) when known
FIT_IMAGE = "fit/plot"  # image of the two
CONFUSION = "test/confusion"  # table: confusion matrix, rows = true class
PREDICTIONS = "test/predictions"  # table: sample test images with label and prediction
CONFUSION_IMAGE = "test/confusion_matrix"
PREDICTIONS_IMAGE = "test/prediction_grid"
PR_CURVES = "test/pr"  # prefix of the per-class precision-recall curves, "test/pr/<class>"


def metric_tag(prefix: str, name: str) -> str:
    """`name` under `prefix` ("loss" -> "train/loss"); a name that already has a group keeps it."""
    return name if "/" in name else f"{prefix}/{name}"
