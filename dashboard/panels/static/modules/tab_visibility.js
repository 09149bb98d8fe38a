// The tab visibility component's whole module (dashboard/panels/tab_visibility.py): reports the tab's
// document.visibilityState to the page only when it changes.
export default function (component) {
  const { setStateValue } = component;
  let last = true;  // the Python side's default: visible
  const report = () => {
    const visible = !document.hidden;
    if (visible !== last) { last = visible; setStateValue("visible", visible); }
  };
  document.addEventListener("visibilitychange", report);
  report();  // already hidden when mounted
  return () => document.removeEventListener("visibilitychange", report);
}
