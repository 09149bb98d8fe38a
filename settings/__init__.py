"""What the page and training both read before a run exists, with no JAX: the page imports only this.

- fields.py: typed settings with metadata (`setting`, `parse_config`, `ConfigError`); config.py: a task's
  config by name; task.py: the configs every task has and `TaskSettings`; registry.py: finding tasks by
  name or spec; regression.py, mnist.py: the built-in tasks' settings.
- population.py: a population's members; sweep/: a sweep's flags, search space and Optuna study (its
  storage, report, database server); datasets.py: where the datasets live on disk.
- queue/: the run queue (queue.db) every start waits in.

training/ builds on these (the engine, the tasks' models, the CLI); tests/test_layout.py keeps JAX,
Streamlit, the writers and training out of this package.
"""
