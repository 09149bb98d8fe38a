"""What `streamlit run` serves: the dashboard's pages (dashboard/app.py) plus HTTP routes that
Streamlit has no element for: a run's metrics as a streamed CSV download, a key's whole series (the
x-axis picker), and the tab's push stream (the runs' change signature, a run's new rows, its progress
line and tiles: server/push_route.py).

A download button holds its whole file in the server's memory (66 MB of CSV for a run of a
million records). GET <base>/api/runs/<run id>/metrics.csv instead sends the CSV as it is written,
one cached part (~4 MB of records) at a time (runstore/metrics/metric_csv.py): the server never holds
more than a part, however long the run. The pages link to it when this module is what is served
(`ROUTE_ON`); served as plain dashboard/app.py (AppTest, an old start command), they offer the
download button instead.

Every request passes the host check (DNS rebinding, server/host_check.py) and every response
carries headers that forbid other sites to frame it and pages to load images from other hosts
(server/frame_headers.py). The routes import no page module: a page module imported off a script
run declared its components unregistered (#36); the stream's numbers come from panels/run_numbers.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `streamlit run` puts dashboard/ on sys.path, not the repository root that holds the packages.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.routing import Route  # noqa: E402

from dashboard.server import (  # noqa: E402
    changes_route,
    csv_route,
    frame_headers,
    host_check,
    plotly_preload,
    push_route,
    rows_route,
    stale_temp,
)

stale_temp.remove_leftovers()  # plotly.js copies of servers before #36 that are gone
csv_route.ROUTE_ON = changes_route.ROUTE_ON = True  # the push stream comes with them
app = st.App(
    Path(__file__).parent / "app.py",
    routes=[
        Route(csv_route.route(), csv_route.serve),
        Route(rows_route.series_route(), rows_route.serve_series),
        Route(push_route.route(), push_route.serve),
        Route(plotly_preload.route(), plotly_preload.serve),
    ],
    middleware=[
        Middleware(frame_headers.FrameHeaders),  # outermost: every response, a refused one too, carries them
        Middleware(host_check.HostCheck),  # DNS rebinding: only our own Host and Origin, on every route
        Middleware(plotly_preload.PlotlyPreload),  # Live's and Run detail's HTML ask for plotly.js at once
    ],
)
