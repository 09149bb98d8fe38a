"""A logdir as TensorBoard's own HTTP API serves it, and as our mirror stored it, in one shape to compare.

`tensorboard_view` asks a running TensorBoard (`tensorboard --logdir X`, the Rust data server it starts by
default) for every run, and per run every plugin's tags and series: scalars (step, value, wall time),
images (step, each image's SHA-1), histograms (step, counts, edges), text (step, the text) and hparams
(the session group's values). Runs in a CLU/Keras split folder (`run/train`) are folded into their parent
with the split as a tag prefix, as the mirror (runstore/tb_logdir.py) shows them. `mirror_view` reads
the same shape from the mirror run folders under a runs root, through the readers the page uses.
`differences` lists, one line each, where the two disagree.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from runstore import media_store, run_folder, run_store, tb_logdir
from runstore.run_folder import RunFolder

View = dict[str, dict[str, dict[str, Any]]]  # run -> plugin -> tag (hparams: name) -> what TensorBoard shows
PLUGINS = ("scalars", "images", "histograms", "text", "hparams")
ALL_STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]


def _get(url: str, data: dict | None = None) -> Any:
    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        raw = r.read()
    return raw if not r.headers.get("Content-Type", "").startswith("application/json") else json.loads(raw)


def _q(**params: Any) -> str:
    return urllib.parse.urlencode(params)


def number(value: Any) -> Any:
    """A value as both sides can compare it: NaN and infinities (TensorBoard's JSON says "NaN") as strings."""
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def fold(run: str, root_name: str) -> tuple[str, str]:
    """TensorBoard's run name as the mirror's run and tag prefix: "exp/train" -> ("exp", "train/")."""
    head, _, last = run.rpartition("/")
    if last in tb_logdir.SPLITS and run != ".":
        return head or root_name, last + "/"
    return (root_name if run == "." else run), ""


def _tagged(prefix: str, tag: str) -> str:
    return tag if tag.startswith(prefix) else prefix + tag


def _plain(text_html: str) -> str:
    """Text plugin's HTML (markdown rendered, a [1]-shaped text in a one-cell table) as plain text: tags dropped,
    entities unescaped, white space runs as one space."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text_html)).split())


def _rendered(text: str) -> str:
    """A mirror's text as the text plugin shows it: its markdown rendered by TensorBoard's own renderer."""
    from tensorboard import plugin_util

    return _plain(plugin_util.markdown_to_safe_html(text))


def _series(url: str, plugin: str, run: str, tag: str) -> list[Any]:
    base = f"{url}data/plugin/{plugin}/"
    if plugin == "scalars":
        return [(s, number(v), w) for w, s, v in _get(base + "scalars?" + _q(run=run, tag=tag))]
    if plugin == "histograms":
        out = []
        for _, step, buckets in _get(base + "histograms?" + _q(run=run, tag=tag)):
            counts = [float(b[2]) for b in buckets]
            edges = [float(b[0]) for b in buckets] + [float(buckets[-1][1])] if buckets else []
            out.append((step, counts, edges))
        return out
    if plugin == "text":
        return [(e["step"], _plain(e["text"])) for e in _get(base + "text?" + _q(run=run, tag=tag))]
    raise ValueError(plugin)


def _images(url: str, run: str, tag: str, samples: int) -> list[tuple[int, list[str]]]:
    steps: dict[int, list[str]] = {}
    for sample in range(samples):
        for e in _get(f"{url}data/plugin/images/images?" + _q(run=run, tag=tag, sample=sample)):
            png = _get(f"{url}data/plugin/images/individualImage?{e['query']}")
            steps.setdefault(e["step"], []).append(hashlib.sha1(png).hexdigest())
    return sorted(steps.items())


def _hparams(url: str) -> dict[str, dict[str, Any]]:
    """{run: {hparam: value}} of the hparams plugin's session groups (one session a run)."""
    request = {"experimentName": "", "allowedStatuses": ALL_STATUSES, "startIndex": 0, "sliceSize": 10_000}
    answer = _get(f"{url}data/plugin/hparams/session_groups", request)
    out: dict[str, dict[str, Any]] = {}
    for group in answer.get("sessionGroups", []):
        for session in group.get("sessions", []) or [{"name": group["name"]}]:
            out[session["name"]] = {k: number(v) for k, v in group.get("hparams", {}).items()}
    return out


def tensorboard_view(url: str, root_name: str) -> View:
    """Every run's plugins' data as TensorBoard's HTTP API at `url` serves it, folded as the mirror folds runs."""
    view: View = {}
    for run in _get(url + "data/runs"):
        view.setdefault(fold(run, root_name)[0], {})
    for plugin in ("scalars", "histograms", "images", "text"):
        for run, tags in _get(f"{url}data/plugin/{plugin}/tags").items():
            name, prefix = fold(run, root_name)
            for tag in tags:
                if plugin == "images":
                    series: Any = _images(url, run, tag, tags[tag].get("samples", 1))
                else:
                    series = _series(url, plugin, run, tag)
                view.setdefault(name, {}).setdefault(plugin, {})[_tagged(prefix, tag)] = series
    for run, hparams in _hparams(url).items():
        if hparams:
            view.setdefault(fold(run, root_name)[0], {})["hparams"] = hparams
    return view


def mirror_view(runs_root: Path) -> View:
    """The same shape, read from the mirror run folders under `runs_root` (what the page draws)."""
    view: View = {}
    for mirror in sorted(p for p in tb_logdir.mirror_root(runs_root).iterdir() if p.is_dir()):
        config = run_store.read_json(mirror / run_folder.CONFIG) or {}
        run: dict[str, dict[str, Any]] = view.setdefault(str(config.get("name", mirror.name)), {})
        records, _ = RunFolder(mirror).records()
        for r in records:
            for tag, value in r.items():
                if tag not in tb_logdir.META:
                    run.setdefault("scalars", {}).setdefault(tag, []).append((r["step"], number(value), r["ts"]))
        for tag, steps in media_store.image_steps(mirror).items():
            hashes = [(s.step, [hashlib.sha1(p.read_bytes()).hexdigest() for p in s.paths]) for s in steps]
            run.setdefault("images", {})[tag] = hashes
        for tag, hist in media_store.histograms(mirror).items():
            run.setdefault("histograms", {})[tag] = [(s, c, e) for s, c, e in hist]
        for tag, texts in media_store.texts(mirror).items():
            run.setdefault("text", {})[tag] = [(s, _rendered(t)) for s, t in texts]
        names = config.get("hparams") or []
        if names:
            run["hparams"] = {k: number((config.get("config") or {}).get(k)) for k in names}
    return view


def differences(want: View, got: View) -> list[str]:
    """One line per run, plugin and tag where `got` (the mirror) differs from `want` (TensorBoard)."""
    out = []
    for run in sorted(set(want) | set(got)):
        if run not in got or run not in want:
            out.append(f"run {run!r}: {'missing in the mirror' if run not in got else 'not in TensorBoard'}")
            continue
        for plugin in PLUGINS:
            a, b = want[run].get(plugin, {}), got[run].get(plugin, {})
            for tag in sorted(set(a) | set(b)):
                if a.get(tag) != b.get(tag):
                    out.append(f"{run} {plugin} {tag!r}: TensorBoard {_short(a.get(tag))} mirror {_short(b.get(tag))}")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def wait_for_match(url: str, logs: Path, runs_root: Path, timeout_s: float = 60.0) -> tuple[View, list[str]]:
    """TensorBoard's view of `logs` once it equals the mirror's, or its last view and the differences after
    `timeout_s`. TensorBoard's first load may take a few reloads; the mirror is synced each time, as the page
    polls it (a sync waits for its reads a few seconds at most: a loaded machine may need another)."""
    deadline = time.monotonic() + timeout_s
    while True:
        tb_logdir.sync(logs, runs_root)
        want, got = tensorboard_view(url, logs.name), mirror_view(runs_root)
        diff = differences(want, got)
        if not diff or time.monotonic() > deadline:
            return want, diff
        time.sleep(0.5)


def matched_view(logs: Path, runs_root: Path) -> View:
    """TensorBoard's own server started on `logs`, its view once it equals the mirror's under `runs_root`;
    fails with one line per run, plugin and tag that still differs after wait_for_match's time."""
    from dashboard.processes.tensorboard_server import start_tensorboard

    tb = start_tensorboard(logs)
    try:
        want, diff = wait_for_match(tb.url, logs, runs_root)
    finally:
        tb.close()
    assert not diff, "\n".join(diff)
    return want
