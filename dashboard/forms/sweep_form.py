"""The New run page's sweep form: one text line per swept setting, started through the run queue.

No st.form: Enter in a field only keeps its value; the sweep starts on a click of "Start sweep".
The space is checked (settings.sweep.space) before anything is queued, and a problem shows as
one line naming the field.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass

import streamlit as st

from dashboard.panels import safe_text
from dashboard.reading import provider
from settings.fields import ConfigError
from settings.sweep.flags import DIRECTIONS, METHODS


@dataclass(frozen=True)
class SweepRequest:
    """What the sweep form asks for.

    specs: the swept settings, one a line (`lr=0.001,0.01`: settings.sweep.space's syntax).
    method: how trials are picked (settings.sweep.flags.METHODS); trials: how many (not for grid, which runs
    every point); parallel: trials at once; study: the Optuna study's name.
    fixed: `FIELD=VALUE` items every trial gets, space-separated.
    metric, direction: what the trials are judged by ("auto": test/loss, else train/loss).
    """

    specs: str
    method: str
    trials: int
    parallel: int
    study: str
    fixed: str = ""
    metric: str = "auto"
    direction: str = "minimize"


def sweep_argv(task: str, request: SweepRequest) -> list[str]:
    """The `python -m training` arguments of a sweep; ConfigError (one line per field) when the input is bad."""
    from settings.registry import task_settings
    from settings.sweep.space import parse_space

    method = request.method
    lines = [s.strip() for s in request.specs.splitlines() if s.strip()]
    parse_space(lines, task_settings(task).Config, method)  # raises, naming the field, before anything starts
    argv = [task, "--study", request.study, "--sweep-method", method, "--max-parallel", str(request.parallel)]
    argv += ["--quiet", "--runs-root", str(provider.runs_root())]
    metric = request.metric.strip() or "auto"
    if metric.startswith("-") or any(c.isspace() for c in metric):
        raise ConfigError({"objective": f"{metric!r}: write a metric's key, e.g. test/accuracy, or auto"})
    argv += ["--sweep-metric", metric, "--sweep-direction", request.direction]
    if method != "grid":
        argv += ["--trials", str(request.trials)]
    for line in lines:
        argv += ["--sweep", line]
    for item in shlex.split(request.fixed):
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigError({"fixed": f"{item!r}: write FIELD=VALUE, e.g. steps=200"})
        argv += [f"--{name.strip().replace('_', '-')}", value]
    return argv


def sweep_form(task: str) -> str | None:
    """Draw the form; on Start, queue the sweep and return its study name (None otherwise)."""
    # A toggle, not an expander: its state survives the reruns that Enter in a field causes.
    if not st.toggle("Sweep: many runs over a search space (Optuna)", key=f"sweep_on_{task}"):
        return None
    with st.container(border=True):
        st.caption(
            "One setting per line: `lr=0.001,0.01`, `lr=log:1e-4:1e-1:4`, `points=64:256:3`, "
            "`lr=loguniform(1e-4,1e-1)`, `optimizer=choice(sgd,adam)`. Trials that vary only lr and seed "
            "train together as one program."
        )
        specs = st.text_area("Swept settings", key=f"sweep_specs_{task}", placeholder="lr=0.001,0.01,0.1")
        fixed = st.text_input("Fixed settings", key=f"sweep_fixed_{task}", placeholder="steps=200 points=64")
        c = st.columns(4)
        method = c[0].selectbox("Method", METHODS, key=f"sweep_method_{task}")
        trials = c[1].number_input("Trials (random/tpe)", 1, 1000, 12, key=f"sweep_trials_{task}")
        parallel = c[2].number_input("At once", 1, 64, 2, key=f"sweep_parallel_{task}")
        study = c[3].text_input("Study name", key=f"sweep_study_{task}", placeholder="auto")
        o = st.columns([3, 1])
        metric = o[0].text_input(
            "Objective metric",
            "auto",
            key=f"sweep_metric_{task}",
            help="The key each trial is judged by, e.g. test/accuracy; auto: test/loss, else train/loss.",
        )
        direction = o[1].selectbox("Direction", DIRECTIONS, key=f"sweep_direction_{task}")
        if not st.button("Start sweep", key=f"sweep_start_{task}", type="primary"):
            return None
        name = study.strip() or f"{task}-{time.strftime('%Y%m%d-%H%M%S')}"
        try:
            asked = SweepRequest(specs, method, int(trials), int(parallel), name, fixed, metric, direction)
            argv = sweep_argv(task, asked)
        except ConfigError as exc:
            st.error(safe_text.md("; ".join(f"{k}: {v}" for k, v in exc.errors.items())), icon=":material/error:")
            return None
        from dashboard.processes import launcher, page_queue
        from settings.queue.store import Queue

        Queue(provider.runs_root()).submit(argv, label=f"sweep {name}")
        page_queue.dispatch(provider.runs_root(), launcher.start_now)  # on the warm worker when one is ready
        return name
