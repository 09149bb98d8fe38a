// Each chart page's <head> gets this script inline (dashboard/server/plotly_preload.py), its tag carrying the
// bundle's address in data-src: load plotly.js now and keep the promise for the chart component.
(function () {
  var src = document.currentScript.dataset.src;
  var loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  var s = document.createElement("script");
  loads.basic = new Promise(function (ok, fail) {
    s.onload = ok;
    s.onerror = function () { fail(new Error("could not load " + s.src)); };
  });
  loads.basic.catch(function () {});  // the chart component loads it again
  s.src = src; s.async = true; document.head.appendChild(s);
})();
