"""Tests for components/series.py and components/figures.py (pure: no browser, no JAX)."""

from __future__ import annotations

import base64
import math
import struct
import zlib

import numpy as np
import plotly.graph_objects as go
import pytest

from components.chart_look import CurveLook, Frame
from components.figures import (
    accuracy_figure,
    confusion_matrix_figure,
    curves_figure,
    fit_figure,
    image_grid_figure,
    progress_text,
    zoom_range,
)
from components.series import downsample_minmax, ema_smooth


def tb_ema(values: list[float], w: float) -> list[float]:
    """Reference: TensorBoard's classicSmoothing, transcribed literally."""
    last, n, out = 0.0, 0, []
    for v in values:
        if not math.isfinite(v):
            out.append(v)
            continue
        last = last * w + (1 - w) * v
        n += 1
        out.append(last / (1 - w**n))
    return out


def decode_gray_png(uri: str) -> np.ndarray:
    """Just enough PNG decoding for png_data_uri's output (8-bit gray, filter 0)."""
    png = base64.b64decode(uri.removeprefix("data:image/png;base64,"))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", png[16:24])
    pos, idat = 8, b""
    while pos < len(png):
        (n,), tag = struct.unpack(">I", png[pos : pos + 4]), png[pos + 4 : pos + 8]
        idat += png[pos + 8 : pos + 8 + n] if tag == b"IDAT" else b""
        pos += 12 + n
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w + 1)
    assert not rows[:, 0].any()
    return rows[:, 1:]


# --- downsample_minmax -------------------------------------------------------


def test_downsample_keeps_spikes_endpoints_and_budget() -> None:
    n = 100_003
    x = np.arange(n, dtype=float)
    y = np.sin(x / 500.0)
    y[31_337] = 50.0  # one-step spike up
    y[77_777] = -40.0  # and down
    dx, dy = downsample_minmax(x, y, max_points=2000)
    assert len(dx) <= 2000
    assert dx[0] == 0 and dx[-1] == n - 1
    assert 31_337 in dx and 77_777 in dx
    assert dy.max() == 50.0 and dy.min() == -40.0
    assert np.all(np.diff(dx) > 0)  # x order, no duplicates
    np.testing.assert_array_equal(y[dx.astype(int)], dy)  # real points, not interpolated


def test_downsample_deterministic_and_idempotent() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(size=10_000)
    x = np.arange(y.size, dtype=float)
    a = downsample_minmax(x, y, 500)
    b = downsample_minmax(x, y, 500)
    np.testing.assert_array_equal(a[0], b[0])
    again = downsample_minmax(*a, 500)
    np.testing.assert_array_equal(again[0], a[0])


def test_downsample_short_series_unchanged() -> None:
    x, y = np.arange(10.0), np.arange(10.0) ** 2
    dx, dy = downsample_minmax(x, y, 2000)
    np.testing.assert_array_equal(dx, x)
    np.testing.assert_array_equal(dy, y)


def test_downsample_nan_safe() -> None:
    y = np.linspace(0, 1, 5000)
    y[1000:2000] = np.nan  # e.g. a diverged stretch
    y[3000] = 9.0
    x = np.arange(y.size, dtype=float)
    dx, dy = downsample_minmax(x, y, 400)
    assert len(dx) <= 400
    assert np.nanmax(dy) == 9.0 and dx[0] == 0 and dx[-1] == 4999
    assert np.isnan(dy).any()  # the gap survives so the chart shows it
    assert np.nanmin(dy) == 0.0


def test_downsample_unsorted_x_and_bad_args() -> None:
    x = np.arange(5000.0)[::-1].copy()
    dx, _ = downsample_minmax(x, x.copy(), 100)
    assert np.all(np.diff(dx) > 0) and dx[0] == 0 and dx[-1] == 4999
    with pytest.raises(ValueError):
        downsample_minmax(np.arange(3.0), np.arange(4.0))
    with pytest.raises(ValueError):
        downsample_minmax(np.arange(10.0), np.arange(10.0), max_points=3)


# --- ema_smooth --------------------------------------------------------------


def test_ema_matches_hand_computed_debiased() -> None:
    # w=0.5: last = 0.5, 1.25, 2.125; debias 1-0.5^n = 0.5, 0.75, 0.875
    out = ema_smooth(np.array([1.0, 2.0, 3.0]), 0.5)
    np.testing.assert_allclose(out, [1.0, 1.25 / 0.75, 2.125 / 0.875])
    y = np.random.default_rng(1).normal(size=300)
    np.testing.assert_allclose(ema_smooth(y, 0.9), tb_ema(y.tolist(), 0.9))


def test_ema_weight_zero_is_identity_and_constant_untouched() -> None:
    y = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    np.testing.assert_array_equal(ema_smooth(y, 0.0), y)
    c = np.full(50, 0.1)
    np.testing.assert_array_equal(ema_smooth(c, 0.99), c)


def test_ema_skips_nonfinite_like_tensorboard() -> None:
    y = np.array([1.0, np.nan, 3.0, np.inf, 5.0])
    out = ema_smooth(y, 0.6)
    assert np.isnan(out[1]) and out[3] == np.inf  # passed through, not averaged in
    np.testing.assert_allclose(out[[0, 2, 4]], tb_ema([1.0, 3.0, 5.0], 0.6))


def test_ema_weight_clamped() -> None:
    out = ema_smooth(np.array([1.0, 2.0]), 1.0)
    assert np.all(np.isfinite(out)) and out[0] == pytest.approx(1.0)


# --- figures -----------------------------------------------------------------


def test_curves_figure_traces_and_smoothing() -> None:
    x = np.arange(50_000, dtype=float)
    series = {"run-a": (x, np.exp(-x / 1e4)), "run-b": (x, np.exp(-x / 2e4))}
    fig = curves_figure(series, Frame("Loss", "loss"), CurveLook(max_points=1000))
    assert isinstance(fig, go.Figure)
    assert [t.name for t in fig.data] == ["run-a", "run-b"]
    assert all(len(t.x) <= 1000 for t in fig.data)
    assert fig.layout.uirevision and fig.layout.template.layout.to_plotly_json()  # template applied
    assert fig.layout.legend.orientation == "h"

    fig = curves_figure(series, Frame("Loss", "loss"), CurveLook(smoothing=0.9, log_y=True))
    assert len(fig.data) == 4
    raw, smooth = fig.data[0], fig.data[1]
    assert raw.line.color == smooth.line.color and raw.opacity < 1 and raw.showlegend is False
    assert smooth.line.width > raw.line.width
    assert fig.layout.yaxis.type == "log"


def test_curves_figure_nonfinite_become_gaps() -> None:
    fig = curves_figure({"r": (np.arange(3.0), np.array([1.0, np.inf, 2.0]))}, Frame("t", "y"))
    y = np.asarray(fig.data[0].y, dtype=float)
    assert np.isnan(y[1]) and y[2] == 2.0


@pytest.mark.parametrize("series", [{}, {"r": (np.array([]), np.array([]))}])
def test_curves_figure_empty_has_annotation(series: dict) -> None:
    fig = curves_figure(series, Frame("Loss", "loss"))
    assert len(fig.data) == 0
    assert "no data yet" in fig.layout.annotations[0].text


def test_accuracy_figure_percent_axis_zoomed_to_the_data() -> None:
    fig = accuracy_figure(
        {"train/acc": (np.arange(5.0), np.linspace(0.83, 0.88, 5)), "test/acc": (np.array([4.0]), np.array([0.86]))}
    )
    assert fig.layout.yaxis.tickformat == ".1%"  # a narrow axis shows tenths of a percent
    lo, hi = fig.layout.yaxis.range
    assert 0.8 < lo < 0.83 and 0.88 < hi < 0.9  # the 83-88% that matters fills the chart
    assert [t.name for t in fig.data] == ["train/acc", "test/acc"]
    assert fig.data[1].mode == "lines+markers"  # a sparse eval series shows its points
    wide = accuracy_figure({"a": (np.arange(3.0), np.array([0.0, 0.5, 1.0]))})
    assert tuple(wide.layout.yaxis.range) == (0.0, 1.0) and wide.layout.yaxis.tickformat == ".0%"  # never past 0-100%
    fixed = accuracy_figure({"a": (np.arange(3.0), np.array([0.2, 0.3, 0.4]))}, y_range=(0.0, 1.0))
    assert tuple(fixed.layout.yaxis.range) == (0.0, 1.0)
    assert zoom_range({"a": (np.arange(2.0), np.array([np.nan, np.inf]))}) is None


def test_fit_figure_population_and_downsampled_scatter() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 100_000)
    y = 2 * x + 0.5 + rng.normal(0, 0.1, x.size)
    ends = np.array([1.0, -1.0])  # unsorted on purpose: curves are drawn left to right
    curves = {"a": (ends, 0 * ends), "b": (ends, ends + 0.2), "c": (ends, 1.9 * ends + 0.45)}
    fig = fit_figure((x, y), curves, (ends, 2 * ends + 0.5))
    data, true, *lines = fig.data
    assert len(data.x) <= 2000 and data.mode == "markers"
    again = fit_figure((x, y), curves, (ends, 2 * ends + 0.5))
    np.testing.assert_array_equal(again.data[0].x, data.x)  # deterministic thinning
    assert true.line.dash == "dash" and true.name == "true" and list(true.x) == [-1.0, 1.0]
    assert [ln.name for ln in lines] == ["a", "b", "c"]
    assert len({ln.line.color for ln in lines}) == 3
    np.testing.assert_allclose(lines[2].y, 1.9 * np.asarray(lines[2].x) + 0.45)
    xr, yr = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert xr[0] <= x.min() and xr[1] >= x.max() and yr[0] <= y.min() and yr[1] >= y.max()
    # ranges are fixed by the data and the true curve, not by the model's curves, so a curve slides
    far = fit_figure((x, y), {"far": (ends, ends + 50.0)}, (ends, 2 * ends + 0.5))
    assert far.layout.yaxis.range == fig.layout.yaxis.range and len(far.data) == 3


def test_fit_figure_draws_any_curve_and_waits_for_data() -> None:
    gx = np.linspace(-2 * np.pi, 2 * np.pi, 200)
    fig = fit_figure((gx, np.sin(gx)), {"model": (gx, 0.9 * np.sin(gx))}, (gx, np.sin(gx)))
    assert len(fig.data[2].x) == 200 and fig.data[2].mode == "lines"  # a sine, not only a line
    assert fig.layout.yaxis.range[0] < -1 and fig.layout.yaxis.range[1] > 1
    assert len(fit_figure((gx, gx), {}).data) == 1  # data only: no true curve known, no model curve yet
    waiting = fit_figure(None, {}, frame=Frame("Fit", empty_text="compiling…"))
    assert len(waiting.data) == 0 and waiting.layout.annotations[0].text == "compiling…"
    with pytest.raises(ValueError):
        fit_figure((gx, gx), {"bad": (gx, gx[:3])})


def test_fit_figure_big_population_shares_one_legend_entry() -> None:
    x = np.linspace(0, 1, 20)
    fig = fit_figure((x, x), {f"m{i}": (x, x + i) for i in range(32)}, (x, x))
    assert len(fig.data) == 34 and sum(bool(t.showlegend) for t in fig.data[2:]) == 1


def test_confusion_matrix_figure() -> None:
    cm = np.array([[5, 1, 0], [2, 7, 1], [0, 0, 9]])
    fig = confusion_matrix_figure(cm.tolist(), ["cat", "dog", "eel"])
    hm = fig.data[0]
    np.testing.assert_array_equal(np.asarray(hm.z), cm)
    np.testing.assert_array_equal(np.asarray(hm.text), cm)
    assert list(hm.x) == list(hm.y) == ["cat", "dog", "eel"]
    assert fig.layout.xaxis.title.text == "predicted" and fig.layout.yaxis.title.text == "true"
    assert fig.layout.yaxis.autorange == "reversed"
    norm = confusion_matrix_figure(cm, ["cat", "dog", "eel"], normalize=True)
    np.testing.assert_allclose(np.asarray(norm.data[0].z).sum(axis=1), 1.0)
    with pytest.raises(ValueError):
        confusion_matrix_figure(cm, ["a", "b"])


def test_image_grid_figure_titles_and_colors() -> None:
    imgs = np.arange(10 * 28 * 28, dtype=np.uint8).reshape(10, 28, 28)
    labels = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    preds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 0]
    names = [str(i) for i in range(10)]
    fig = image_grid_figure(imgs, labels, preds, names, cols=4)
    assert len(fig.data) == 1 and fig.data[0].type == "image"
    ann = fig.layout.annotations
    assert [a.text for a in ann][:2] == ["0 (0)", "1 (1)"] and ann[9].text == "0 (9)"
    assert ann[9].font.color == "#d62728" and ann[0].font.color != "#d62728"
    mosaic = decode_gray_png(fig.data[0].source)
    assert mosaic.shape == (3 * 37, 4 * 30)  # 3 rows of (9 px title band + 28); 4 cols of (28 + 2 px gap)
    np.testing.assert_array_equal(mosaic[9:37, 0:28], imgs[0])
    np.testing.assert_array_equal(mosaic[37 + 9 : 74, 30:58], imgs[5])  # row 1, col 1
    assert tuple(fig.layout.yaxis.range) == (110.5, -0.5)  # reversed, fixed
    assert "no images" in image_grid_figure(np.zeros((0, 28, 28), np.uint8), [], [], names).layout.annotations[0].text


# --- progress_text -----------------------------------------------------------


def test_progress_text_running() -> None:
    s = {
        "state": "running",
        "epoch": 2,
        "total_epochs": 3,
        "step": 2345,
        "total_steps": 5625,
        "steps_per_sec": 1234.4,
        "compile_seconds": 1.234,
    }
    assert progress_text(s) == "epoch 2/3 · step 2,345/5,625 · 1,234 steps/s · ETA 2.7 s · compile 1.2 s"


def test_progress_text_long_eta_finished_and_empty() -> None:
    s = {"state": "running", "epoch": 0, "total_epochs": 0, "step": 100, "total_steps": 10_100, "steps_per_sec": 2.5}
    assert progress_text(s) == "step 100/10,100 · 2.5 steps/s · ETA 1 h 06 min"
    s = {"state": "finished", "step": 500, "total_steps": 500, "steps_per_sec": "nan", "wall_seconds": 75}
    assert progress_text(s) == "step 500/500 · took 1 min 15 s"
    assert progress_text({}) == "waiting for the first step…"


def test_progress_text_shows_the_phase_before_the_first_point() -> None:
    s = {"state": "running", "phase": "compiling", "step": 0, "total_steps": 5625, "epoch": 0, "total_epochs": 3}
    assert progress_text(s) == "compiling… · step 0/5,625"
    assert progress_text({**s, "phase": "loading data"}).startswith("loading data…")
    assert progress_text({**s, "phase": "training"}) == "step 0/5,625"
    assert "compiling" not in progress_text({**s, "state": "finished"})


def test_progress_eta_uses_the_end_to_end_rate_not_the_compute_rate() -> None:
    # 600 of 6,000 steps in 3 s after a 1 s compile: 300 steps/s overall, although each chunk
    # computes at 19,000 steps/s (the rest is logging). ETA = 5,400 / 300 = 18 s.
    s = {
        "state": "running",
        "step": 600,
        "total_steps": 6000,
        "steps_per_sec": 19000,
        "wall_seconds": 3.0,
        "compile_seconds": 1.0,
    }
    assert progress_text(s) == "step 600/6,000 · 300 steps/s (compute 19,000/s) · ETA 18 s · compile 1.0 s"


def test_population_members_never_share_a_colour() -> None:
    from components.colors import PALETTE, distinct_colors, run_color

    ids = [f"20261125-pop-m{i}" for i in range(60)]
    clash = next((a, b) for b in ids for a in ids if a < b and run_color(a) == run_color(b))
    colors = distinct_colors(list(clash))
    assert colors[clash[0]] == run_color(clash[0]) and colors[clash[1]] != colors[clash[0]]  # the first keeps its own
    many = distinct_colors(ids[: len(PALETTE)])
    assert len(set(many.values())) == len(PALETTE)  # up to the palette's size, all different
    assert distinct_colors(ids[:5]) == distinct_colors(ids[:5])  # the same on every page and reload


def test_population_members_colours_read_apart() -> None:
    """No two members of a population of up to ten get colours that read alike (CIELAB delta E under 30: e.g. two
    of the palette's pinks), in any of thirty populations."""
    import itertools
    import math

    from components.colors import distinct_colors
    from tests.colour_math import cielab

    for population in range(30):
        colors = distinct_colors([f"20261128-pop{population}-m{i}" for i in range(10)]).values()
        nearest = min(math.dist(cielab(a), cielab(b)) for a, b in itertools.combinations(colors, 2))
        assert nearest >= 30, (population, sorted(colors), round(nearest, 1))


def test_run_colours_read_on_the_light_and_the_dark_theme() -> None:
    from components.colors import PALETTE
    from tests.colour_math import contrast

    assert len(set(PALETTE)) == len(PALETTE) == 24
    for background in ("#ffffff", "#0e1117"):  # Streamlit's light and dark backgrounds
        faint = [c for c in PALETTE if contrast(c, background) < 3]
        assert not faint, f"run colours that {background} swallows: {faint}"
