"""The page's refresh timings live in one table (dashboard/refresh_timings.py), in one unit.

A timing literal anywhere else in the page's code (a module constant in seconds or ms, or a JS
`const ..._MS = 3000` inside a component's script) could drift from the rule it is meant to equal."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from dashboard import refresh_timings
from dashboard.panels import inplace_chart, line_spec, refresh_trigger, stream_assets
from dashboard.server import push_route, push_watch

DASHBOARD = Path(__file__).resolve().parent.parent / "dashboard"
TIMING_NAME = re.compile(r"^[A-Z_]*(_S|_MS|_EVERY)$")
JS_TIMING = re.compile(r"const [^;]*\b[A-Z_]*_MS\s*=\s*\d")
# Timings of processes and files, not of a page's refresh: they stay beside the code they pace.
NOT_REFRESH = {
    "processes/warm_workers.py": {"REPLACE_DELAY_S", "SETTLE_S"},
    "processes/page_queue.py": {"DISPATCH_S", "PAGE_WAIT_S"},
    "processes/tensorboard_child.py": {"POLL_S"},
    "reading/run_lister.py": {"BIG_S", "GAP_S"},  # a big root's background list: how big, how often
    "reading/runs_page.py": {"QUICK_UPDATE_S"},  # an index update quick enough to wait for
    "server/push_route.py": {"MAX_GAP_MS"},  # the largest stream gap a query may name: a bound, not a timing
    "views/sweep.py": {"REFUSED_SHOWN_S"},
}


def _timing_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            names = [t.id for t in node.targets if isinstance(t, ast.Name) and TIMING_NAME.match(t.id)]
            if names and isinstance(node.value.value, int | float):
                found += names
    return found


def test_no_page_module_defines_a_refresh_timing_of_its_own() -> None:
    offenders = []
    for path in sorted(DASHBOARD.rglob("*.py")):
        rel = path.relative_to(DASHBOARD).as_posix()
        if rel == "refresh_timings.py" or "/vendor/" in rel:
            continue
        own = set(_timing_literals(path)) - NOT_REFRESH.get(rel, set())
        offenders += [f"{rel}: {name}" for name in sorted(own)]
        offenders += [f"{rel}: JS {m.group(0)}" for m in JS_TIMING.finditer(path.read_text())]
    assert not offenders, "timings outside dashboard/refresh_timings.py:\n" + "\n".join(offenders)


def test_the_scripts_the_browser_runs_carry_the_tables_values() -> None:
    js = inplace_chart.LOADER + stream_assets.FOLLOWER
    assert inplace_chart._urls()["max_gap_ms"] == refresh_timings.ms("inplace_max_gap")  # each chart element's data
    assert "max_gap_ms" in (inplace_chart.GRID_STATIC / "inplace_chart.js").read_text()  # what the chart's draw reads
    feed = line_spec.feed("run", 0, {"loss": 0})
    assert feed["gap_ms"] == refresh_timings.ms("feed_gap")  # feed.js's gap
    assert feed["reopen_ms"] == refresh_timings.ms("push_reopen") and feed["stream"] == push_route.route()
    assert push_watch.TICK_S * 1000 == refresh_timings.ms("push_tick")
    assert push_watch.NUMBERS_S * 1000 == refresh_timings.ms("push_numbers")
    assert push_route.KEEPALIVE_S * 1000 == refresh_timings.ms("push_keepalive")
    assert push_route.EXIT_CHECK_S * 1000 == refresh_timings.ms("push_exit_check")
    assert not re.search(r"__[A-Z_]+__", js), "a placeholder was left in a component's script"
    assert refresh_trigger.GAP_MS == refresh_timings.ms("live_rerun") == 1000 * refresh_timings.seconds("live_rerun")
    for gone in ("poll", "steady_poll", "lost_rerun", "numbers", "runs_watch_poll"):  # the stream took their job
        assert gone not in refresh_timings.TIMINGS_MS
