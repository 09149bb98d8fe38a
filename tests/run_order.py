"""The order the suite's files run in: the longest first, so the last files any worker runs are short ones.

scripts/test.sh runs pytest-xdist with `--dist loadfile --no-loadscope-reorder`: each worker takes the next
whole file in collection order when it is almost out of work (a file's module fixtures are built once, on
one worker). Ordered longest first, that is longest-processing-time-first scheduling: a long file never
starts last while the other workers sit idle. LONGEST_FIRST comes from a whole-suite run's per-file wall
times (`--durations=0`, summed per file), longest first; files not named keep their collection order after
these. A new long file belongs in the list: a file left out only costs balance at the end, never a result.
"""

from __future__ import annotations

import pytest

LONGEST_FIRST = [
    "test_wandb_conformance.py",
    "test_live_browser.py",
    "test_client.py",
    "test_multihost_resume.py",
    "test_scale_browser.py",
    "test_tracking_e2e.py",
    "test_client_wandb_contract.py",
    "test_sweep_postgres.py",
    "test_safety_damaged.py",
    "test_review_wandb.py",
    "test_multihost.py",
    "test_live_feed.py",
    "test_pbt_page.py",
    "test_checkpoint.py",
    "test_wandb_data_types.py",
    "test_wandb_examples.py",
    "test_client_examples.py",
    "test_dashboard_apptest.py",
    "test_example_task.py",
    "test_sweeps.py",
    "test_sweep_workers.py",
    "test_population.py",
    "test_multihost_engine.py",
    "test_mirrored_runs.py",
    "test_live_new_runs.py",
    "test_queue.py",
    "test_safety_resume.py",
    "test_compare_browser.py",
    "test_safety_serve.py",
    "test_first_run.py",
    "test_mnist.py",
    "test_live_refresh.py",
    "test_bad_input.py",
    "test_sweep_browser.py",
    "test_safety_hostile_server.py",
    "test_logdir_browser.py",
    "test_live_kinds.py",
    "test_dashboard_views.py",
    "test_run_detail_wandb.py",
    "test_run_ids_pages.py",
    "test_population_form.py",
    "test_many_keys.py",
    "test_sweep_states.py",
]


def longest_first(items: list[pytest.Item]) -> None:
    """Sort `items` in place: LONGEST_FIRST's files in its order, then the rest; tests within a file keep theirs."""
    rank = {f"tests/{name}": i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
