"""Live's run picker: while no run is picked it follows the newest run; a run the user picks stays picked.

The picker's widget key holds the run it was drawn showing, so a new default is a new widget. Streamlit keeps
the replaced widget's callback, and a rerun the browser asked for while that page run ran (the run watcher's
or the panel's fragment, fired when the new run writes; queued behind it) still carries its value: these
tests send such a rerun, as the browser does, and check that it pins nothing (in Chromium, when a new run's
first record comes a second after its `init`: ?run= set to the previous default, the new run never shown;
tests/test_live_new_runs.py). Run folders are written by hand (tests/apptest_pages.py).
"""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.testing.v1 import AppTest

from tests.apptest_pages import app, fake_run


def _picker(at: AppTest) -> tuple[str, str]:
    """(the picker's widget key, the run id it shows)."""
    (box,) = [s for s in at.selectbox if (s.key or "").startswith("pick_run_")]
    return box.key, box.value


def _newer_run(root: Path, name: str) -> Path:
    """A finished run created after every run under `root` (the run list sorts by creation time)."""
    time.sleep(0.01)  # creation times differ (the clock's resolution), not a wait for an event
    return fake_run(root, name=name)


def _rerun_with(at: AppTest, *replaced: object) -> None:
    """Rerun as the browser does right after a page run replaced widgets: their last values sent along."""
    states = WidgetStates()
    states.widgets.extend(replaced)  # type: ignore[arg-type]
    states.widgets.extend(at._tree.get_widget_states().widgets)
    at._run(widget_state=states)
    assert not at.exception, [e.value for e in at.exception]


def test_a_replaced_pickers_value_does_not_pin_the_previous_run(root: Path) -> None:
    first = fake_run(root, name="first")
    at = app("views/live.py")
    key, shown = _picker(at)
    assert shown == first.name and "run" not in at.query_params  # following the newest run
    replaced = at.selectbox(key=key)._widget_state
    second = _newer_run(root, "second")
    at.run()  # the run watcher's rerun: the newest run is the default, a new widget shows it
    assert _picker(at)[1] == second.name
    _rerun_with(at, replaced)
    assert "run" not in at.query_params, f"?run={at.query_params.get('run')} pinned with nothing picked"
    at.run()
    assert _picker(at)[1] == second.name
    third = _newer_run(root, "third")
    at.run()
    assert _picker(at)[1] == third.name  # still following the newest run


def test_a_run_picked_stays_picked_when_a_newer_run_starts(root: Path) -> None:
    older = fake_run(root, name="older")
    _newer_run(root, "newer")
    at = app("views/live.py")
    key, _ = _picker(at)
    at.selectbox(key=key).set_value(older.name).run()
    assert at.query_params["run"] == older.name and _picker(at)[1] == older.name
    _newer_run(root, "newest")
    at.run()
    assert _picker(at)[1] == older.name and at.query_params["run"] == older.name
