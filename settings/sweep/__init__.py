"""A sweep as settings: its CLI flags, its search space, its Optuna study, the report the page reads."""
