"""Whether the browser tab is visible: a hidden Live tab stops refreshing, and costs the run nothing.

A browser slows a hidden tab's timers but Streamlit's fragment timer still reruns the Live panel
there (on a 2-core machine, each rerun is server and browser time the training run loses). This
component reports the tab's `document.visibilityState` only when it changes: the page reruns, the
Live panel's timer is off while hidden, and when the tab is shown again it reruns and draws the
newest figures at once.
"""

from __future__ import annotations

import streamlit as st

from dashboard.panels import js_modules

VISIBILITY_JS = js_modules.module("tab_visibility.js")  # reports document.visibilityState when it changes

_visibility = st.components.v2.component("jaxdash_tab_visibility", js=VISIBILITY_JS, isolate_styles=False)


def tab_visible(key: str = "tab_visibility") -> bool:
    """True unless the browser reported this tab hidden (an app test, which has no browser: True)."""
    result = _visibility(key=key, default={"visible": True}, on_visible_change=lambda: None)
    return bool(getattr(result, "visible", True))
