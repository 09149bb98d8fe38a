"""The MNIST task's settings without its model code (no JAX, no Flax): what the page reads to draw its form.

training/tasks/mnist.py holds the Flax model and re-exports `MnistConfig`; `SETTINGS` is what the
registry (settings.registry) lists under "mnist", naming that Task class by spec so the page never
imports it. The memory check the form runs on Start (`training_bytes`) is plain arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from settings.datasets import DATASET_SIZES
from settings.fields import setting, with_default
from settings.task import EpochsConfig, TaskSettings


@dataclass(frozen=True)
class MnistConfig(EpochsConfig):
    """Flax MLP classifier on MNIST or Fashion-MNIST (the Flax/Optax seed's defaults)."""

    ckpt_every: int = with_default(EpochsConfig, "ckpt_every", 0)  # epoch ends + every 30 s: cheap and enough
    dataset: str = setting("mnist", "Dataset", "MNIST digits or Fashion-MNIST clothes.", choices=tuple(DATASET_SIZES))
    data_dir: str | None = setting(
        None,
        "Data directory",
        "Folder with the dataset's IDX files; empty = the default locations, then a download.",
        advanced=True,
    )
    hidden: tuple[int, ...] = setting(
        (128, 128), "Hidden layers", "Comma-separated layer sizes, e.g. 128,128.", min=1, max=65_536
    )
    train_limit: int | None = setting(
        None, "Train examples", "Use only the first N; empty = all.", min=1, advanced=True
    )
    test_limit: int | None = setting(None, "Test examples", "Use only the first N; empty = all.", min=1, advanced=True)

    def validate(self) -> dict[str, str]:
        """Rules across fields: the batch must fit the training set and split over the devices."""
        errors: dict[str, str] = {}
        if not self.hidden:
            errors["hidden"] = "Hidden layers must list one or more layer sizes, e.g. 128,128."
        elif (need := training_bytes(self)) > (have := available_memory()):
            errors["hidden"] = (
                f"Hidden layers {','.join(map(str, self.hidden))} need about {need / 2**30:.1f} GiB "
                f"for params, gradients and Adam's moments, more than the {have / 2**30:.1f} GiB "
                "free; use smaller layers."
            )
        if self.batch_size > self.train_size:
            errors["batch_size"] = (
                f"Batch size must not exceed the {self.train_size} training examples (got {self.batch_size})."
            )
        elif self.devices > 0 and self.batch_size % self.devices:
            errors["batch_size"] = (
                f"Batch size must be a multiple of Devices ({self.devices}) so every device gets "
                f"an equal share (got {self.batch_size})."
            )
        return errors

    @property
    def train_size(self) -> int:
        """Number of training examples used."""
        full = DATASET_SIZES[self.dataset][0]
        return min(full, self.train_limit) if self.train_limit else full


def training_bytes(cfg: MnistConfig) -> int:
    """Rough memory a run needs: float32 params x4 (params, gradients, two Adam moments) plus activations."""
    sizes = [28 * 28, *cfg.hidden, 10]
    params = sum(a * b + b for a, b in zip(sizes, sizes[1:], strict=False))
    return 4 * (4 * params + 3 * cfg.batch_size * sum(sizes))


def available_memory() -> int:
    """Bytes of memory free for a new run on this host."""
    import psutil

    return int(psutil.virtual_memory().available)


SETTINGS = TaskSettings(
    name="mnist",
    title="MNIST / Fashion-MNIST",
    Config=MnistConfig,
    panels=("loss", "accuracy"),
    task="training.tasks.mnist:MnistTask",
)
