// The in-place chart component's whole module (dashboard/panels/inplace_chart.py): import static/inplace_chart.js
// (once a page: the browser keeps a module) and draw. Sent with every chart element on every rerun: kept small.
export default async function (component) {
  return (await import(new URL(component.data.module, document.baseURI).href)).draw(component);  // the page's address
}
