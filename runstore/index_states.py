"""A run's state as the lists show it, in SQL over the run index (`runstore.run_index`).

"stalled" for a running run that makes no progress, as `runstore.processes.stalled_since` decides it: phase
training (or none) and status.json's "updated" older than STALL_S, or STOPPED_S when the index's last update
saw its process stopped (SIGSTOP); else the state status.json holds. Whether a run is stalled changes with the
clock alone, so the index keeps the times and the verdict is taken at a `now` the caller passes. Filters, the
filter's choices, the query language and the sort all read this one expression, so a run listed as stalled is
selected by "stalled" and not by "running". No JAX and no Streamlit here.
"""

from __future__ import annotations

import time
from typing import Any

from runstore.processes import STALL_S, STOPPED_S
from runstore.run_states import RUNNING, STALLED

# The index's columns a verdict reads (runstore.run_index writes them from status.json at each read of the run).
STALLED_SQL = (
    f"(runs.state = '{RUNNING}' AND (runs.phase IS NULL OR runs.phase = 'training') AND runs.updated IS NOT NULL"
    f" AND ? - runs.updated > (CASE WHEN runs.stopped THEN {STOPPED_S!r} ELSE {STALL_S!r} END))"
)


def at(now: float | None) -> float:
    """The time a verdict is taken at: `now`, or the clock's when None."""
    return time.time() if now is None else float(now)


def stalled(now: float) -> tuple[str, list[Any]]:
    """(SQL condition over `runs`, its parameters): the run is stalled at `now`."""
    return STALLED_SQL, [now]


def shown(now: float) -> tuple[str, list[Any]]:
    """(SQL expression over `runs`, its parameters): the run's state as a list shows it at `now`."""
    return f"(CASE WHEN {STALLED_SQL} THEN '{STALLED}' ELSE runs.state END)", [now]
