// An in-place chart (dashboard/panels/inplace_chart.py): a plotly figure redrawn with Plotly.react on the chart
// it already has, or a metric grid drawn by uPlot (line_grid.js). An ES module imported once a page by the
// component's loader, whose `draw(component)` draws each element's newest figure: plotly.js (the basic bundle,
// the full one for other trace types) and the grid's files load once a page, a hidden tab or a lazy chart out of
// view draws when shown, and a chart drawn moments ago waits (up to 8x its draw time, at most data.max_gap_ms).
const BASIC = new Set(["scatter", "bar", "pie"]);  // the trace types of plotly-basic.min.js
const DRAW_GAP = 8;  // after a draw of T ms, the next waits up to 8 T (at most data.max_gap_ms: refresh_timings.py)
function load(name, src) {  // once a page: the load the page's HTML started (server/plotly_preload.py), else one now
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  const add = () => new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = src; s.onload = ok; s.onerror = () => fail(new Error("could not load " + src));
    document.head.appendChild(s);
  });
  loads[name] = loads[name] ? loads[name].catch(add) : add();
  return loads[name];
}
function themed(fig, theme) {  // the figure in the page's theme: its template recoloured (its own colours win)
  const t = theme.current(), layout = fig.layout || {}, template = layout.template || {};
  const axis = (a) => ({...a, gridcolor: t.grid, linecolor: t.grid, zerolinecolor: t.grid, tickcolor: t.axis});
  const base = template.layout || {};
  const look = {...base, paper_bgcolor: t.background, plot_bgcolor: t.background,
    font: {...base.font, color: t.text}, xaxis: axis(base.xaxis), yaxis: axis(base.yaxis),
    legend: {...base.legend, bgcolor: "rgba(0,0,0,0)"},
    annotationdefaults: {...base.annotationdefaults, arrowcolor: t.axis}, shapedefaults: {line: {color: t.axis}}};
  // A trace whose meta asks for the page's colour (a histogram outline hiding the ones behind it) gets it; one whose
  // meta asks for a readable scale (parallel coordinates coloured by a value) gets the theme's.
  const data = (fig.data || []).map((tr) => {
    if (tr.meta && tr.meta.fill === "page") return {...tr, fillcolor: theme.faint(t.background, 0.85)};
    if (tr.meta && tr.meta.scale) return {...tr, line: {...tr.line, colorscale: theme.readableScale(t.dark, tr.meta.scale)}};
    return tr;
  });
  return {data, layout: {...layout, template: {...template, layout: look}}, dark: t.dark};
}
async function react(div, theme) {  // draw div.__fig (the figure) in the page's theme, with div.__plotConfig
  const {data, layout, dark} = themed(div.__fig, theme);
  await Plotly.react(div, data, layout, div.__plotConfig);
  div.__dark = dark;  // for tests and probes: the theme the chart was drawn in
}
function followTheme(div, theme) {  // Streamlit switches theme without a reload: the chart redraws in the new one
  if (div.__unwatch) return;
  div.__unwatch = theme.watch(() => {
    if (!div.isConnected) return void div.__unwatch();
    if (div.__fig && div._fullLayout) react(div, theme);
  });
}
function gridOf(fig) {  // a metric grid's description (components/compare_figures.metric_grid), else null
  const meta = (fig.layout || {}).meta;
  return meta && typeof meta === "object" && meta.grid ? meta.grid : null;
}
function script(src) {  // once a page per file, kept in order (shared with line_chart.py's loader)
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  return (loads[src] = loads[src] || new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = src; s.async = false; s.onload = ok; s.onerror = () => fail(new Error("could not load " + src));
    document.head.appendChild(s);
  }));
}
function sheet(href) {  // once a page per style sheet
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  return (loads[href] = loads[href] || new Promise((ok, fail) => {
    const link = document.createElement("link");
    link.rel = "stylesheet"; link.href = href; link.onload = ok;
    link.onerror = () => fail(new Error("could not load " + href));
    document.head.appendChild(link);
  }));
}
function loadGrid(urls) {  // uPlot, the style sheets, the chart's theme, controls and series, then static/line_grid.js
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  loads.gridStyle = loads.gridStyle || sheet(urls.uplot_css);
  const code = Promise.all(urls.grid_uses.map(script)).then(() => script(urls.grid));
  return Promise.all([load("uplot", urls.uplot), code, loads.gridStyle, sheet(urls.chart_css)]);
}
export async function draw(component) {
  const { data, parentElement } = component, received = performance.now();
  if (data.warmup) return void (await (data.warmup === "grid" ? loadGrid(data) : load("basic", data.basic)));
  let div = parentElement.querySelector(".jaxdash-chart");
  if (!div) {
    div = document.createElement("div");
    div.className = "jaxdash-chart";
    parentElement.appendChild(div);
    // plotly's `responsive` follows the window only: a column that narrows or widens (a run's
    // layout changing as it ends) would leave the chart clipped or short. Follow the div's width.
    let width = 0;
    new ResizeObserver(([entry]) => {
      const w = Math.round(entry.contentRect.width);
      if (w && w !== width && div.__grid) { width = w; div.__grid.resize(); }
      else if (w && w !== width && div._fullLayout) { width = w; Plotly.Plots.resize(div); } else if (w) width = w;
    }).observe(div);
  }
  if (div.__spec === data.spec && div.__config === data.config) return;  // the same figure: nothing to draw
  div.__spec = data.spec; div.__config = data.config;
  const fig = JSON.parse(data.spec);  // once: a comparison's figure is ~1 MB of JSON
  const layout = fig.layout || {}, grid = gridOf(fig);  // a metric grid: drawn by uPlot (line_grid.js)
  const library = grid ? loadGrid(data) : Promise.all([load("basic", data.basic), script(data.theme)]);
  if (!div.style.height) div.style.height = (layout.height || 450) + "px";  // its room
  if (document.hidden) {  // a tab nobody sees draws nothing; the newest figure draws when it is shown
    await (window.__jaxdashShown = window.__jaxdashShown || new Promise((ok) => {
      const shown = () => { if (!document.hidden) { document.removeEventListener("visibilitychange", shown); window.__jaxdashShown = null; ok(); } };
      document.addEventListener("visibilitychange", shown);
    }));
    if (div.__spec !== data.spec) return;  // a newer figure came meanwhile: it draws
  }
  const gap = (div.__nextDraw || 0) - performance.now();
  if (gap > 0) {  // drawn moments ago: the figures that come meanwhile make one draw
    await new Promise((ok) => setTimeout(ok, gap));
    if (div.__spec !== data.spec) return;
  }
  div.style.height = (layout.height || 450) + "px";  // its room in the page, drawn or not yet
  if (data.lazy && !div.__inView) {  // drawn once it is (nearly) in view
    div.__inView = new Promise((ok) => {
      const seen = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) { seen.disconnect(); ok(); }
      }, {rootMargin: "200px 0px"});
      seen.observe(div);
    });
  }
  if (div.__inView) await div.__inView;
  if (div.__spec !== data.spec) return;  // a newer figure came while this one waited: it draws
  await library;
  if (div.__spec !== data.spec) return;
  if (!grid && (fig.data || []).some((t) => !BASIC.has(t.type || "scatter"))) await load("full", data.full);
  const t0 = performance.now();
  if (grid) {
    if (div._fullLayout) Plotly.purge(div);  // the same key held a plotly figure
    window.__jaxdashGrid.draw(div, fig, grid);
    div.style.height = "auto";  // the grid's own height (its room was held until it drew)
  } else {
    if (div.__grid) { div.__grid.destroy(); div.replaceChildren(); }  // the same key held a grid
    const theme = window.__jaxdashLine.theme;  // static/chart/theme.js: the colours the line charts use too
    div.__fig = fig; div.__plotConfig = Object.assign({responsive: true}, JSON.parse(data.config));
    await react(div, theme);
    followTheme(div, theme);
  }
  const took = performance.now() - t0;  // a chart spends at most 1/(1 + DRAW_GAP) of the time drawing
  div.__nextDraw = performance.now() + Math.min(data.max_gap_ms, DRAW_GAP * took);
  div.__timing = {received, drawn: performance.now(), took};  // for probes: ms since the page's navigation
}
