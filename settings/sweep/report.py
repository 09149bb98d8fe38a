"""What the sweep page shows, read from a storage: studies, their trials as rows, param importances.

No Streamlit here. A study whose storage cannot be read gives a one-line message, never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy.exc
from optuna.trial import TrialState

from settings.fields import ConfigError
from settings.sweep import server
from settings.sweep import study as studies

STORAGE_ENV = "JAXDASH_SWEEP_STORAGE"  # the page's storage when it is not the runs root's sweeps.db


def list_studies(url: str) -> list[dict[str, Any]]:
    """[{"name", "trials", "task", "method"}] of the jaxdash sweeps in `url`, newest first."""
    st = studies.storage(url)
    try:
        summaries = optuna.get_all_study_summaries(st, include_best_trial=False)
    except sqlalchemy.exc.SQLAlchemyError as exc:  # e.g. the server went away after it was opened
        raise ConfigError({"storage": server.open_error(url, exc)}) from None
    rows = []
    for s in summaries:
        if "space" in s.user_attrs:
            rows.append(
                {
                    "name": s.study_name,
                    "trials": s.n_trials,
                    "task": s.user_attrs.get("task"),
                    "method": s.user_attrs.get("method"),
                    "started": s.datetime_start,
                }
            )
    return sorted(rows, key=lambda r: r["started"] or 0, reverse=True)


def objective_of(study: optuna.Study) -> dict[str, str]:
    """{"metric", "direction", "pruner"}: what the study's trials are judged by. An "auto" metric is named by
    the keys its finished trials were judged by (test/loss, else train/loss), or both while none has finished."""
    attrs = study.user_attrs
    metric = attrs.get("metric", "auto")
    if metric == "auto":
        used = sorted(
            {t.user_attrs["objective"] for t in study.get_trials(deepcopy=False) if "objective" in t.user_attrs}
        )
        metric = ", ".join(used) if used else "test/loss, else train/loss"
    return {"metric": metric, "direction": studies.direction_of(study), "pruner": attrs.get("pruner", "median")}


def trial_rows(study: optuna.Study) -> list[dict[str, Any]]:
    """One row per trial: number, state, value, params, run id, program, retry of, end time (epoch s).

    A PRUNED trial's value is its last reported one (Optuna keeps it as the trial's value), at `last_step`;
    a FAIL trial's `run_state` says what its run did (failed, diverged, stopped by hand).
    """
    rows = []
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get("surplus"):
            continue  # asked past the budget by a racing worker, never trained
        end = t.datetime_complete.timestamp() if t.datetime_complete else None
        rows.append(
            {
                "trial": t.number,
                "state": t.state.name,
                "value": t.value if t.state in (TrialState.COMPLETE, TrialState.PRUNED) else None,
                "run_state": t.user_attrs.get("run_state"),
                "params": dict(t.params),
                "run_id": t.user_attrs.get("run_id"),
                "program": t.user_attrs.get("program"),
                "retry_of": t.system_attrs.get("failed_trial"),
                "last_step": max(t.intermediate_values, default=None),
                "end": end,
            }
        )
    return rows


def importances(study: optuna.Study) -> dict[str, float] | str:
    """optuna.importance's param importances, or why there are none yet (one line)."""
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    varied = {k for t in complete for k in t.params if len({str(u.params.get(k)) for u in complete}) > 1}
    if len(complete) < 2 or not varied:
        return "Importances need at least two finished trials that differ in a setting."
    try:
        return optuna.importance.get_param_importances(study)
    except (ValueError, RuntimeError) as exc:
        return f"Importances are not available: {exc}"


def default_storage(root: Path) -> str | None:
    """The storage the Sweeps page reads: $JAXDASH_SWEEP_STORAGE (a team's PostgreSQL URL) when set, else
    the runs root's `sweeps.db` URL when it exists."""
    if os.environ.get(STORAGE_ENV):
        return os.environ[STORAGE_ENV]
    return studies.default_url(root) if (Path(root) / "sweeps.db").is_file() else None
