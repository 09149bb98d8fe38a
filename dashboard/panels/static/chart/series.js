// A chart's data: each series' points in typed arrays grown geometrically (appends copy nothing already held),
// and the aligned columns uPlot draws (one x, every series' y at it). Exposes window.__jaxdashLine.series.
(function () {
  const ns = (window.__jaxdashLine = window.__jaxdashLine || {});

  class Column {  // a growing Float64Array: push copies the new values only, capacity doubles when full
    constructor(values) { this.buf = new Float64Array(Math.max(16, values.length * 2)); this.n = 0; this.push(values); }
    push(values) {
      if (this.n + values.length > this.buf.length) {
        const bigger = new Float64Array(Math.max(this.buf.length * 2, this.n + values.length));
        bigger.set(this.buf.subarray(0, this.n));
        this.buf = bigger;
      }
      for (let i = 0; i < values.length; i++) this.buf[this.n + i] = values[i] === null ? NaN : values[i];
      this.n += values.length;
    }
    replace(values) { this.n = 0; this.push(values); }
    view() { return this.buf.subarray(0, this.n); }
  }

  function nullable(v) { return Number.isFinite(v) ? v : null; }

  // The columns uPlot draws from per-series (x, y) pairs: [xs, ys0, ys1, ...]. Series sharing one x (a run's
  // curves logged together) keep it as is; others are merged on the union of their x values (gaps: null).
  function align(pairs) {
    if (!pairs.length) return [[]];
    const first = pairs[0][0];
    const same = pairs.every(([x]) => x.length === first.length && (x === first || x.every((v, i) => v === first[i])));
    if (same && ascending(first)) return [Array.from(first), ...pairs.map(([, y]) => Array.from(y, nullable))];
    const sorted = pairs.map(([x, y]) => sortPairs(x, y));
    const all = new Float64Array(sorted.reduce((n, [x]) => n + x.length, 0));
    let k = 0;
    for (const [x] of sorted) { all.set(x, k); k += x.length; }
    all.sort();
    const xs = [];
    for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) xs.push(all[i]);
    const cols = sorted.map(([x, y]) => {
      const out = new Array(xs.length).fill(null);
      let j = 0;
      for (let i = 0; i < x.length; i++) {
        while (xs[j] < x[i]) j++;
        out[j] = nullable(y[i]);
      }
      return out;
    });
    return [xs, ...cols];
  }

  function ascending(x) {
    for (let i = 1; i < x.length; i++) if (!(x[i] >= x[i - 1])) return false;
    return true;
  }

  function sortPairs(x, y) {  // finite x only, ascending (an x axis of a logged scalar may go back and forth)
    const idx = [];
    for (let i = 0; i < x.length; i++) if (Number.isFinite(x[i])) idx.push(i);
    if (!ascending(idx.map((i) => x[i]))) idx.sort((a, b) => x[a] - x[b]);
    return [Float64Array.from(idx, (i) => x[i]), Float64Array.from(idx, (i) => y[i])];
  }

  // y of a key logged at `steps` (ascending), looked up at each step of `at`: the value at that step or the last
  // one before it (a scalar x axis such as the learning rate); NaN before its first.
  function atSteps(steps, values, at) {
    const out = new Float64Array(at.length);
    let j = -1;
    const order = ascending(at);
    for (let i = 0; i < at.length; i++) {
      if (!order) j = -1;
      while (j + 1 < steps.length && steps[j + 1] <= at[i]) j++;
      out[i] = j >= 0 ? values[j] : NaN;
    }
    return out;
  }

  ns.series = {Column, align, atSteps};
})();
