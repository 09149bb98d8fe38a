// The line chart of Live and Run detail: one uPlot chart per element, its points appended in place.
//
// A spec (dashboard/panels/line_spec.py) names the series and holds their points (downsampled) and the
// cursor its feed starts from; feed.js brings the rows written after it, which are appended to the series'
// typed arrays and drawn with one setData, the chart never rebuilt for them. Many series; hover shows every
// series' value at that x (the nearest point each has); drag zooms, a double click resets; the legend
// hides a series on click. A curve of at most spec.sparse_points points shows them as markers too, decided at
// each draw (past it, the draw that appends is a plain line). Controls (controls.js) and colours (theme.js)
// apply per chart. A spec may choose its log y default (y_log_default: the browser's saved choice wins) and its
// line shape (line_shape "vh": steps, a value holding from the point before). A series of mode "marks" (events
// such as a population member's copies) is points only, never smoothed, its hover its own texts at its x. The
// legend has one entry per curve: a raw line behind a smoothed one and a member's marks (series "of" it) share
// their curve's entry (its value reads "0.12 (raw 0.15) · <the mark's text>"; a click hides them all).
// window.__jaxdashLine.mount(parentElement, data) is what the component's loader calls; for tests and probes
// the element (.jaxdash-line) holds `__chart` (`data`: what is drawn, `settings`, `scales`) and `__timing`.
(function () {
  const ns = (window.__jaxdashLine = window.__jaxdashLine || {});
  const {theme, controls, feed, series: S} = ns;
  const FIT_DATA = "points", MARKS = "marks", CONTROL_ROW = 30;
  // Line shapes: "vh" goes vertical at the point before, then level (a value holding since the row before).
  const SHAPES = {vh: () => Object.assign(uPlot.paths.stepped({align: -1}), {shape: "vh"})};

  function fmt(percent) {
    return (u, v) => (v === null || v === undefined ? "--" : percent ? (100 * v).toFixed(2) + "%" : Number(v.toPrecision(5)).toString());
  }

  class LineChart {
    constructor(el) {
      this.el = el;
      this.title = el.appendChild(document.createElement("div"));
      this.title.className = "jaxdash-line-title";
      this.bar = null;
      this.plot = el.appendChild(document.createElement("div"));
      this.empty = el.appendChild(document.createElement("div"));
      this.empty.className = "jaxdash-line-empty";
      this.u = null; this.shape = ""; this.zoomed = false; this.stopFeed = null; this.xkeys = {};
      new ResizeObserver(() => this.u && this.u.setSize(this.size())).observe(el);
      theme.watch(() => { this.shape = ""; this.draw(); });
    }

    size() {
      return {width: Math.max(120, this.el.clientWidth), height: Math.max(120, (this.spec.height || 360) - CONTROL_ROW - 56)};
    }

    setSpec(spec) {  // a new spec: the series start over from its points, its feed from its cursor
      this.spec = spec;
      this.title.textContent = spec.title || "";
      this.lines = spec.series.map((s) => ({
        ...s, step: new S.Column(s.x), wall: new S.Column(s.wall || []), y: new S.Column(s.y),
      }));
      const name = spec.metric || spec.key;
      if (!this.bar || this.barName !== name) {
        if (this.bar) this.bar.el.remove();
        this.bar = controls.toolbar(name, {timeSeries: spec.kind !== "fit"}, () => { this.shape = ""; this.draw(); });
        this.barName = name;
        this.el.insertBefore(this.bar.el, this.plot);
      }
      this.bar.setXKeys(spec.xkeys || []);
      this.bar.setDefaults({logY: !!spec.y_log_default});
      if (this.stopFeed) this.stopFeed();
      const f = spec.feed;
      this.stopFeed = f ? feed.subscribe(this.el, {stream: f.stream, run: f.run, tags: f.asked, offset: f.offset,
        gapMs: f.gap_ms, reopenMs: f.reopen_ms}, (rows) => this.append(rows)) : null;
      this.draw();
    }

    append(rows) {  // a feed's rows onto the series: true if anything was drawn
      const f = this.spec.feed;
      let grew = false;
      for (const [tag, i] of Object.entries(f.tags || {})) {
        const xs = rows.x[tag] || [], line = this.lines[i];
        if (!xs.length || !line) continue;
        line.step.push(xs); line.y.push(rows.y[tag]); line.wall.push((rows.wall || {})[tag] || xs.map(() => NaN));
        grew = true;
      }
      const fit = f.line && this.lines[f.line.series], w = (rows.y[f.line && f.line.w] || []), b = (rows.y[f.line && f.line.b] || []);
      if (fit && w.length && b.length) {  // y = w x + b from the newest record holding both
        const ww = w[w.length - 1], bb = b[b.length - 1];
        fit.y.replace(f.line.x.map((x) => ww * x + bb));
        grew = true;
      }
      if (grew) this.draw();
      return grew;
    }

    xOf(line, s) {  // the x values of `line` under settings `s`
      const step = line.step.view();
      if (s.x === "relative") return line.wall.view();
      if (s.x === "wall") return line.wall.view().map((w) => (line.t0 || 0) + w);
      if (s.x !== "step" && this.spec.kind !== "fit") {
        const key = this.xkeys[(line.run || "") + "\u0000" + s.x];
        if (!key) { this.fetchXKey(line.run, s.x); return new Float64Array(step.length).fill(NaN); }
        return S.atSteps(key.x, key.y, step);
      }
      return step;
    }

    async fetchXKey(run, tag) {  // a logged scalar as the x axis: its whole (downsampled) series, once
      const id = (run || "") + "\u0000" + tag, url = (this.spec.series_urls || {})[run];
      if (!url || this.xkeys[id] || this.pending === id) return;
      this.pending = id;
      try {
        const r = await fetch(url + "&tag=" + encodeURIComponent(tag), {cache: "no-store"});
        const got = r.ok ? await r.json() : null;
        if (got) { this.xkeys[id] = {x: got.x[tag] || [], y: got.y[tag] || []}; this.draw(); }
      } finally { this.pending = null; }
    }

    columns(s) {  // [xs, ...ys] to draw, and the uPlot series they are (raw faint ones behind smoothed)
      const pairs = [], specs = [], n = this.lines.length, smooth = s.smooth !== "none" && this.spec.kind !== "fit";
      this.drawn = [];
      this.lines.forEach((line, i) => {
        const x = this.xOf(line, s), raw = Array.from(line.y.view()), color = line.color || theme.color(i, n);
        if (line.mode === MARKS) {  // events on the curves: drawn where they happened, as they are (never smoothed)
          const texts = new Map(Array.from(x, (v, k) => [v, (line.texts || [])[k]]));
          pairs.push([x, raw]);
          specs.push({label: line.name, stroke: color, width: 0, points: true, marks: true, texts, of: line.of});
          this.drawn.push({name: line.name, mode: MARKS, x: Array.from(x), y: Array.from(raw, (v) => (Number.isFinite(v) ? v : null)), raw: null});
          return;
        }
        const y = smooth ? controls.smooth(raw, s) : raw;
        if (smooth) {
          pairs.push([x, raw]);
          specs.push({label: line.name + " (raw)", stroke: theme.faint(color, 0.25), width: 1, raw: true, owner: specs.length + 1});
        }
        pairs.push([x, y]);
        specs.push({label: line.name, stroke: color, width: line.mode === FIT_DATA ? 0 : line.width || 2,
          dash: line.dash ? [6, 4] : undefined, points: line.mode === FIT_DATA, full: line.label,
          sparse: this.spec.kind !== "fit" && line.step.view().length <= (this.spec.sparse_points || 0)});
        this.drawn.push({name: line.name, mode: line.mode || "lines", x: Array.from(x), y: Array.from(y, (v) => (Number.isFinite(v) ? v : null)), raw: smooth ? raw : null});
      });
      specs.forEach((p) => {  // a member's marks share its legend entry (their own only if it is not drawn)
        const k = p.of === undefined ? -1 : specs.findIndex((q) => !q.raw && !q.marks && q.label === p.of);
        if (k >= 0) p.owner = k;
      });
      return {data: S.align(pairs), specs};
    }

    yRange(s, data) {  // a fixed y range (ignore outliers, an accuracy axis zoomed to the data), else uPlot's
      if (s.outliers) return controls.outlierRange(data.slice(1), s.logY);
      const r = this.spec.y_range;
      if (!r || s.logY) return null;
      let lo = r[0], hi = r[1];
      for (const col of data.slice(1)) for (const v of col) if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      if (lo < r[0] || hi > r[1]) {  // appended points outside: widen by a margin, within the clamp
        const pad = 0.1 * (hi - lo), c = this.spec.clamp || [-Infinity, Infinity];
        lo = Math.max(c[0], lo < r[0] ? lo - pad : r[0]); hi = Math.min(c[1], hi > r[1] ? hi + pad : r[1]);
      }
      return [lo, hi];
    }

    options(s, specs, range) {
      const t = theme.current(), pct = !!this.spec.percent;
      const axis = (label) => ({stroke: t.axis, label, labelFont: "12px sans-serif", font: "11px sans-serif",
        grid: {stroke: t.grid, width: 1}, ticks: {stroke: t.grid, width: 1}});
      const yAxis = {...axis(this.spec.y_title || ""), size: valuesWidth, values: (u, v) => v.map(tick)};
      if (pct) yAxis.values = (u, v) => v.map((x) => (100 * x).toFixed(range && range[1] - range[0] < 0.1 ? 1 : 0) + "%");
      const fixedX = this.spec.x_range, shape = SHAPES[this.spec.line_shape];
      return {
        ...this.size(),
        scales: {
          x: {time: s.x === "wall", ...(fixedX && s.x === "step" ? {range: () => fixedX} : {})},
          y: {distr: s.logY ? 3 : 1, ...(range ? {range: () => range} : {})},
        },
        axes: [axis(s.x === "step" ? this.spec.x_title || "step" : s.x === "wall" ? "" : s.x === "relative" ? "seconds" : s.x), yAxis],
        series: [{label: s.x, value: s.x === "wall" ? undefined : fmt(false)}, ...specs.map((p) => ({
          label: p.label, stroke: p.stroke, width: p.width, dash: p.dash, spanGaps: true,
          value: p.marks ? (u, v, si, i) => markText(this.texts[si - 1], u, v, i) : this.legendValue(specs, fmt(pct)), show: true,
          points: p.marks ? {show: true, size: 11, fill: p.stroke, stroke: t.background, width: 1.5, paths: diamonds}
            : p.points ? {show: true, size: 5, fill: p.stroke, stroke: p.stroke} : {show: (u, si) => this.sparse[si - 1]},
          paths: p.points ? () => null : shape ? shape() : undefined,
        }))],
        cursor: {drag: {x: true, y: false}, dataIdx: (u, si, i) => (specs[si - 1] && specs[si - 1].marks ? i : nearest(u, si, i))},
        legend: {show: true, live: true},
        hooks: {
          setScale: [(u, key) => { if (key === "x") this.zoomed = isZoomed(u); }],
          setSeries: [(u, si, opts) => shareShow(u, specs, si, opts)],
        },
      };
    }

    legendValue(specs, plain) {  // a legend entry's value, with those of the series sharing it (raw line, marks)
      return (u, v, si, i) => {
        let text = plain(u, v);
        specs.forEach((p, k) => {
          if (p.owner !== si - 1) return;
          if (p.raw) text += i === null || u.data[k + 1][i] === null ? "" : ` (raw ${plain(u, u.data[k + 1][i])})`;
          else if (p.marks) {
            const j = u.cursor.idx, mark = j === null || j === undefined ? "" : markText(this.texts[k], u, u.data[k + 1][j], j);
            if (mark) text += " · " + mark;
          }
        });
        return text;
      };
    }

    draw() {
      if (!this.spec) return;
      const t0 = performance.now(), s = this.bar.settings();
      const {data, specs} = this.columns(s);
      const has = data[0].length > 0;
      this.empty.textContent = has ? "" : this.spec.empty || "no data yet";
      this.empty.style.display = has ? "none" : "";
      if (s.logY) for (const col of data.slice(1)) for (let i = 0; i < col.length; i++) if (col[i] !== null && col[i] <= 0) col[i] = null;
      const range = this.yRange(s, data);
      this.sparse = specs.map((p) => !!p.sparse);  // read by each series' points.show as this draw paints
      this.texts = specs.map((p) => p.texts || null);  // and each mark's hover
      const shape = JSON.stringify([specs.map((p) => [p.label, p.stroke, p.width, p.points]), s, range, theme.current().dark]);
      if (!this.u || shape !== this.shape) {  // a new set of series or settings: a new uPlot; else the points only
        if (this.u) this.u.destroy();
        this.plot.replaceChildren();
        this.u = new uPlot(this.options(s, specs, range), data, this.plot);
        const rows = this.u.root.querySelectorAll(".u-legend .u-series");  // row 0 is the x axis's
        specs.forEach((p, k) => { if (p.owner !== undefined && rows[k + 1]) rows[k + 1].style.display = "none"; });
        this.shape = shape; this.zoomed = false;
      } else {
        this.u.setData(data, !this.zoomed);
      }
      this.data = data; this.dark = theme.current().dark;
      this.el.__timing = {drawn: performance.now(), took: performance.now() - t0};
    }
  }

  function shareShow(u, specs, si, opts) {  // a legend click hides or shows the series sharing that entry too
    if (!opts || opts.show === undefined) return;
    specs.forEach((p, k) => { if (p.owner === si - 1 && u.series[k + 1].show !== opts.show) u.setSeries(k + 1, {show: opts.show}); });
  }

  function isZoomed(u) {
    const x = u.data[0];
    return x.length > 1 && (u.scales.x.min > x[0] || u.scales.x.max < x[x.length - 1]);
  }

  function tick(v) {  // a y tick: plain, or as a power of ten far from 1 (a log axis spans many decades)
    if (v === null || v === undefined) return "";
    const a = Math.abs(v);
    return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(Number(v.toExponential(0)) === v ? 0 : 1) : Number(v.toPrecision(4)).toLocaleString("en-US");
  }

  function valuesWidth(u, values) {  // the y axis as wide as its longest tick label (a log axis of a blown-up loss)
    const longest = Math.max(0, ...(values || []).map((v) => String(v === null || v === undefined ? "" : v).length));
    return Math.max(50, Math.ceil(14 + 6.5 * longest));
  }

  function diamonds(u, si, i0, i1) {  // a mark's shape: a diamond, unlike the round points of a short curve
    const s = u.series[si], xs = u.data[0], ys = u.data[si], r = (s.points.size / 2) * devicePixelRatio;
    const path = new Path2D();
    for (let i = i0; i <= i1; i++) {
      if (ys[i] === null || ys[i] === undefined) continue;
      const x = u.valToPos(xs[i], "x", true), y = u.valToPos(ys[i], s.scale, true);
      path.moveTo(x, y - r); path.lineTo(x + r, y); path.lineTo(x, y + r); path.lineTo(x - r, y); path.closePath();
    }
    return {stroke: path, fill: path};
  }

  function markText(texts, u, v, i) {  // a mark's hover: its own text at its x, nothing between marks
    return v === null || v === undefined || i === null || !texts ? "" : texts.get(u.data[0][i]) || "";
  }

  function nearest(u, si, i) {  // hover: each series' nearest point to the cursor's x (series logged at other steps)
    const ys = u.data[si];
    if (si === 0 || ys[i] !== null) return i;
    for (let d = 1; d < ys.length; d++) {
      if (i - d >= 0 && ys[i - d] !== null) return i - d;
      if (i + d < ys.length && ys[i + d] !== null) return i + d;
    }
    return i;
  }

  function mount(parent, data) {  // the component's data: {spec: JSON text, lazy}; the same spec again draws nothing
    let el = parent.querySelector(".jaxdash-line");
    if (!el) {
      el = parent.appendChild(document.createElement("div"));
      el.className = "jaxdash-line";
    }
    el.__next = data;
    if (document.hidden) return whenShown(() => show(el));  // a tab nobody sees draws nothing until shown
    if (data.lazy && !el.__seen) {  // drawn once it is (nearly) in view
      el.style.minHeight = (JSON.parse(data.spec).height || 360) + "px";
      if (!el.__seeing) {
        el.__seeing = new IntersectionObserver((entries) => {
          if (!entries.some((e) => e.isIntersecting)) return;
          el.__seeing.disconnect(); el.__seen = true; el.style.minHeight = ""; show(el);
        }, {rootMargin: "200px 0px"});
        el.__seeing.observe(el);
      }
      return;
    }
    show(el);
  }

  function show(el) {  // draw the newest spec the element got
    const data = el.__next;
    if (!data || el.__specText === data.spec) return;
    el.__specText = data.spec;
    if (!el.__line) el.__line = new LineChart(el);
    el.__line.setSpec(JSON.parse(data.spec));
    el.__chart = chartView(el.__line);
  }

  let shown = null;
  function whenShown(fn) {
    if (!shown) {
      shown = new Set();
      document.addEventListener("visibilitychange", () => {
        if (document.hidden) return;
        const todo = shown; shown = new Set();
        for (const f of todo) f();
      });
    }
    shown.add(fn);
  }

  function chartView(c) {  // what tests and probes read: the drawn series, settings, scales, the feed's cursor
    return {
      get data() { return c.drawn; },
      get settings() { return c.bar.settings(); },
      get scales() { return c.u ? {x: {...c.u.scales.x}, y: {...c.u.scales.y}} : null; },
      get spec() { return c.spec; },
      get plot() { return c.u; },
      get dark() { return c.dark; },
    };
  }

  ns.LineChart = LineChart;
  ns.mount = mount;
})();
