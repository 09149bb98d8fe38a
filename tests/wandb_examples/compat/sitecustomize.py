"""Run W&B's example scripts as written on today's JAX and reproducibly: loaded at interpreter start (site) for
both sides of tests/test_wandb_examples.py, real wandb and jaxdash alike, through PYTHONPATH.

* EXAMPLES_RANDOM_SEED=N seeds Python's `random` (an example draws its "noise" from it unseeded, so two runs
  would log different numbers);
* EXAMPLES_JAX_ALIASES=1 makes the JAX MNIST example's 2019 imports resolve: `jax.experimental.optimizers`
  and `.stax` moved to `jax.example_libraries`, and `from jax.config import config` names what is now
  the `jax.config` object. Aliases only: the modules and the object are JAX's own, imported when asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import random
import sys
import types
from typing import Any

ALIASES = {
    "jax.experimental.optimizers": "jax.example_libraries.optimizers",
    "jax.experimental.stax": "jax.example_libraries.stax",
}


class _ConfigModule(types.ModuleType):
    """`jax.config` as the module `from jax.config import config` wants: `config` and every attribute of JAX's
    config object (so `jax.config.update(...)` still works once the import set this module on `jax`)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.config, name)


class _Aliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the moved JAX module names (ALIASES, "jax.config") and loads them as JAX's current ones."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name in ALIASES or name == "jax.config":
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        if spec.name == "jax.config":
            import jax

            module = _ConfigModule(spec.name)
            module.config = jax.config
            return module
        module = types.ModuleType(spec.name)
        module.__dict__.update(
            {k: v for k, v in vars(importlib.import_module(ALIASES[spec.name])).items() if not k.startswith("__")}
        )
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Everything was set in create_module."""


if os.environ.get("EXAMPLES_RANDOM_SEED"):
    random.seed(int(os.environ["EXAMPLES_RANDOM_SEED"]))
if os.environ.get("EXAMPLES_JAX_ALIASES") == "1":
    sys.meta_path.append(_Aliases())
