"""The charts of an AppTest page, however they are drawn.

The dashboard draws its line charts with its chart engine (dashboard/panels/line_chart.py: an st.components.v2
element whose JSON data holds the line spec under "spec") and its other figures as in-place plotly components
(dashboard/panels/inplace_chart.py: the figure under "spec"); with $JAXDASH_INPLACE_CHARTS=0 those are
st.plotly_chart elements. All come back here in page order as `Chart`s: the widget key, and `proto.spec` (the
spec's JSON) like an st.plotly_chart's; `figure` reads a line spec as the plotly figure it stands for.
"""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

import numpy as np
from streamlit.testing.v1 import AppTest

DTYPE_BYTES = {"f8": 8, "f4": 4, "i4": 4, "i2": 2, "i1": 1, "u1": 1, "u2": 2, "u4": 4, "i8": 8}


def charts(at: AppTest) -> list[SimpleNamespace]:
    """Every chart with a figure (not the New run page's plotly.js warm-up), in page order."""
    out = []
    for el in at.get("bidi_component") + at.get("plotly_chart"):
        spec = json.loads(el.proto.json or "{}").get("spec") if el.type == "bidi_component" else el.proto.spec
        if spec is not None:
            key = el.proto.id.split("-", 2)[-1] if el.type == "bidi_component" else el.key
            out.append(SimpleNamespace(key=key, proto=SimpleNamespace(spec=spec, id=el.proto.id)))
    return out


def figure(chart: SimpleNamespace) -> dict[str, Any]:
    """The chart's figure as a dict (data, layout); a line chart's spec (dashboard/panels/line_spec.py) read as
    the plotly figure it stands for: a trace per series (name, x, y, line colour and dash), title, y range."""
    spec = json.loads(chart.proto.spec)
    return as_figure(spec) if "series" in spec else spec


def as_figure(spec: dict[str, Any]) -> dict[str, Any]:
    """A line chart's spec as plotly's figure dict, so a test reads either kind of chart the same way."""
    data = []
    for s in spec["series"]:
        y = [float("nan") if v is None else v for v in s["y"]]
        mode = "markers" if s.get("mode") == "points" else "lines"
        line = {"color": s.get("color"), "dash": "dash" if s.get("dash") else None}
        data.append({"name": s["name"], "x": s["x"], "y": y, "mode": mode, "line": line, "type": "scatter"})
    yaxis = {"range": spec.get("y_range"), "title": {"text": spec.get("y_title")}}
    layout = {"title": {"text": spec.get("title")}, "yaxis": yaxis, "xaxis": {"range": spec.get("x_range")}}
    if not data:
        layout["annotations"] = [{"text": spec.get("empty", "no data yet")}]
    return {"data": data, "layout": layout, "spec": spec}


def trace_lengths(chart: SimpleNamespace) -> list[int]:
    """Number of points of each trace (plotly may send typed arrays as base64)."""
    out = []
    for trace in figure(chart)["data"]:
        x = trace.get("x", [])
        out.append(len(base64.b64decode(x["bdata"])) // DTYPE_BYTES[x["dtype"]] if isinstance(x, dict) else len(x))
    return out


def trace_values(chart: SimpleNamespace, axis: str) -> list[list[float]]:
    """Each trace's `axis` ("x" or "y") values (decoding plotly's base64 typed arrays)."""
    out = []
    for trace in figure(chart)["data"]:
        v = trace.get(axis, [])
        out.append(np.frombuffer(base64.b64decode(v["bdata"]), v["dtype"]).tolist() if isinstance(v, dict) else list(v))
    return out
