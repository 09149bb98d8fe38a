"""The reference of benchmarks/scale.py: a bare Streamlit page, the least any Streamlit page costs.

  ?show=table  one st.dataframe of the rows pickled at $JAXDASH_REFERENCE_TABLE (the Runs page's table)
  ?show=chart  one st.plotly_chart of a 2,000-point line (what a page with one chart costs at least)

Served like the dashboard (same .streamlit/config.toml), opened in the same browser.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

st.set_page_config(layout="wide")
if st.query_params.get("show") == "table":
    table = pd.read_pickle(os.environ["JAXDASH_REFERENCE_TABLE"])
    st.dataframe(table, hide_index=True, on_select="rerun", selection_mode="multi-row")
else:
    x = np.arange(2000)
    st.plotly_chart(go.Figure(go.Scatter(x=x, y=1 / (1 + x / 100), mode="lines")), theme=None)
