// The whole module of a component that follows the tab's push stream (dashboard/panels/stream_assets.py: the
// refresh trigger, the live numbers): loads stream.js and the component's own files (data.scripts, their
// addresses) once a page, a script tag each shared by every component on window, then hands the component to
// window[data.mount].mount.
function load(src) {
  const all = (window.__jaxdashScripts = window.__jaxdashScripts || {});
  return (all[src] = all[src] || new Promise((ok, fail) => {
    const el = document.createElement("script");
    el.src = src; el.async = false; el.onload = ok; el.onerror = () => fail(new Error("could not load " + src));
    document.head.appendChild(el);
  }));
}
export default function (component) {
  const {scripts, mount} = component.data;
  let stop = null, gone = false;
  Promise.all(scripts.map(load)).then(() => { if (!gone) stop = window[mount].mount(component); });
  return () => { gone = true; if (stop) stop(); };
}
