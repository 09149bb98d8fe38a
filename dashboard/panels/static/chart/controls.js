// A line chart's controls: smoothing (TensorBoard's debiased EMA, or a window mean), log y, the x axis
// (step, wall time, relative time or any logged scalar, as W&B's picker) and ignore outliers (the y range
// from the 5th-95th percentile, padded, as TensorBoard's). Settings persist per browser (localStorage),
// keyed by the chart's metric, so a loss chart on Live and on Run detail share them. A chart may set its own log y
// default (setDefaults), which holds until the user ticks or unticks log y on a chart of that metric.
// Exposes window.__jaxdashLine.controls.
(function () {
  const ns = (window.__jaxdashLine = window.__jaxdashLine || {});
  const PREFIX = "jaxdash.chart.";
  const DEFAULTS = {smooth: "none", weight: 0.6, window: 10, logY: false, x: "step", outliers: false};
  const X_LABELS = {step: "step", wall: "wall time", relative: "relative time"};

  function ema(y, weight) {  // TensorBoard's "classic" smoothing: debiased, non-finite values passed through
    const w = Math.min(Math.max(Number.isFinite(weight) ? weight : 0, 0), 0.999), out = Array.from(y);
    if (w === 0 || !y.length || y.every((v) => v === y[0])) return out;  // constant: no rounding wiggles
    let last = 0, n = 0;
    for (let i = 0; i < y.length; i++) {
      const v = y[i];
      if (v === null || !Number.isFinite(v)) continue;
      last = last * w + (1 - w) * v; n += 1;
      out[i] = last / (1 - Math.pow(w, n));
    }
    return out;
  }

  function windowMean(y, size) {  // the mean of the last `size` finite values at each point (W&B's running average)
    const k = Math.max(1, Math.round(size)), out = Array.from(y), held = [];
    let sum = 0;
    for (let i = 0; i < y.length; i++) {
      const v = y[i];
      if (v === null || !Number.isFinite(v)) continue;
      held.push(v); sum += v;
      if (held.length > k) sum -= held.shift();
      out[i] = sum / held.length;
    }
    return out;
  }

  function smooth(y, s) {
    if (s.smooth === "ema") return ema(y, s.weight);
    if (s.smooth === "mean") return windowMean(y, s.window);
    return y;
  }

  function quantile(sorted, q) {
    const p = (sorted.length - 1) * q, i = Math.floor(p), f = p - i;
    return i + 1 < sorted.length ? sorted[i] + f * (sorted[i + 1] - sorted[i]) : sorted[i];
  }

  function outlierRange(columns, logY) {  // [lo, hi] from the 5th-95th percentile of every value, padded; or null
    const v = [];
    for (const col of columns) for (const y of col) if (y !== null && Number.isFinite(y) && (!logY || y > 0)) v.push(y);
    if (v.length < 5) return null;
    v.sort((a, b) => a - b);
    const lo = quantile(v, 0.05), hi = quantile(v, 0.95);
    if (logY) return [lo / Math.pow(hi / lo, 0.1), hi * Math.pow(hi / lo, 0.1)];
    const pad = 0.1 * (hi - lo || Math.abs(hi) || 1);
    return [lo - pad, hi + pad];
  }

  function stored(name) {  // the settings saved for `name` ({} if none)
    try { return JSON.parse(localStorage.getItem(PREFIX + name) || "{}") || {}; } catch (e) { return {}; }
  }

  function load(name) {
    try { return Object.assign({}, DEFAULTS, JSON.parse(localStorage.getItem(PREFIX + name) || "{}")); }
    catch (e) { return Object.assign({}, DEFAULTS); }
  }

  function save(name, s) {
    try { localStorage.setItem(PREFIX + name, JSON.stringify(s)); } catch (e) { /* private mode: kept for the page */ }
  }

  function field(label, input) {
    const wrap = document.createElement("label");
    wrap.className = "jaxdash-control";
    wrap.append(label, input);
    return wrap;
  }

  function select(cls, options, value) {
    const el = document.createElement("select");
    el.className = cls;
    for (const [v, text] of options) el.add(new Option(text, v, false, v === value));
    return el;
  }

  function number(cls, value, min, max, step) {
    const el = document.createElement("input");
    Object.assign(el, {type: "number", className: cls, value, min, max, step});
    return el;
  }

  function check(cls, on) {
    const el = document.createElement("input");
    Object.assign(el, {type: "checkbox", className: cls, checked: on});
    return el;
  }

  // The toolbar: returns {el, settings(), setXKeys(keys)}; onChange(settings) after every change (saved first).
  // opts: timeSeries (smoothing and the x axis offered), stepLabel (the name of the chart's own x, "step" else).
  function toolbar(name, opts, onChange) {
    let s = load(name), logChosen = "logY" in stored(name);
    if (!opts.timeSeries) s = Object.assign({}, s, {smooth: "none", x: "step"});
    const el = document.createElement("div");
    el.className = "jaxdash-chart-controls";
    const kind = select("jaxdash-smooth", [["none", "no smoothing"], ["ema", "EMA"], ["mean", "window mean"]], s.smooth);
    const weight = number("jaxdash-weight", s.weight, 0, 0.999, 0.05);
    const size = number("jaxdash-window", s.window, 1, 1000, 1);
    const log = check("jaxdash-logy", s.logY);
    const outliers = check("jaxdash-outliers", s.outliers);
    const xs = select("jaxdash-x", [], s.x);
    const showing = () => {
      weight.style.display = kind.value === "ema" ? "" : "none";
      size.style.display = kind.value === "mean" ? "" : "none";
    };
    const changed = (ev) => {
      s = {smooth: kind.value, weight: Number(weight.value), window: Number(size.value), logY: log.checked,
        x: xs.value || "step", outliers: outliers.checked};
      showing();
      if (ev && ev.target === log) logChosen = true;
      const kept = Object.assign({}, s);
      if (!logChosen) delete kept.logY;  // the chart's default stays in charge until the user picks
      if (opts.timeSeries) save(name, kept);
      onChange(s);
    };
    for (const input of [kind, weight, size, log, outliers, xs]) input.addEventListener("change", changed);
    if (opts.timeSeries) {
      el.append(field("smoothing ", kind), weight, size, field("x ", xs));
    }
    el.append(field(log, " log y"), field(outliers, " ignore outliers"));
    showing();
    function setXKeys(keys) {  // step, the times, then the run's logged scalars
      const want = s.x;
      xs.replaceChildren();
      for (const k of ["step", "wall", "relative", ...keys]) {
        const label = k === "step" && opts.stepLabel ? opts.stepLabel : X_LABELS[k] || k;  // a grid's own x key
        xs.add(new Option(label, k, false, k === want));
      }
      if (xs.value !== want) xs.value = "step";
    }
    function setDefaults(d) {  // the chart's log y default, unless the user picked one for this metric
      if (logChosen || !opts.timeSeries || s.logY === d.logY) return;
      s = Object.assign({}, s, {logY: d.logY});
      log.checked = d.logY;
    }
    setXKeys([]);
    return {el, settings: () => Object.assign({}, s, {x: xs.value || "step"}), setXKeys, setDefaults};
  }

  ns.controls = {ema, windowMean, smooth, outlierRange, load, save, toolbar, DEFAULTS};
})();
