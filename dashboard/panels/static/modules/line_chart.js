// The line chart component's whole module (dashboard/panels/line_chart.py): loads uPlot, its style sheet and the
// chart's files once a page (promises on window, shared with the in-place chart's grid loader), then mounts the
// element's spec; a tab that is hidden draws when shown. Sent with every chart element on every rerun: kept small.
function once(name, make) { const l = (window.__jaxdashPlotly = window.__jaxdashPlotly || {}); return (l[name] = l[name] || make()); }
function tag(kind, url) {
  return new Promise((ok, fail) => {
    const el = document.createElement(kind);
    if (kind === "link") { el.rel = "stylesheet"; el.href = url; } else { el.src = url; el.async = false; }
    el.onload = ok; el.onerror = () => fail(new Error("could not load " + url));
    document.head.appendChild(el);
  });
}
function ready(u) {  // each file once a page, keyed by its address (the metric grid loads some of them too)
  return once("line", () => Promise.all([
    once("gridStyle", () => tag("link", u.uplot_css)), once(u.css, () => tag("link", u.css)),
    once("uplot", () => (window.uPlot ? Promise.resolve() : tag("script", u.uplot))).then(() => Promise.all(u.files.map((f) => once(f, () => tag("script", f))))),
  ]));
}
export default async function ({data, parentElement}) {
  await ready(data.urls);
  if (data.spec) window.__jaxdashLine.mount(parentElement, data);
}
