"""Compare what an implementation stored for a probe with what W&B itself stored: a list of readable differences.

W&B's observation (with a probe's `# expect:` overrides) is the expected one. jaxdash is checked twice,
its run folder (what the page shows) and the W&B copy its writer process wrote; trackio on the fields it
keeps (exit code, printed lines, config, history). Numbers compare with a relative tolerance of 1e-6
(an int logged is a float in JSON stores); NaN equals NaN; None equals "".
"""

from __future__ import annotations

import math
from typing import Any

from tests.wandb_conformance import observe, store_reader
from tests.wandb_conformance.running import Result

FIELDS = (
    "state", "project", "name", "run_id", "group", "job_type", "tags", "notes", "config", "summary", "history",
    "files", "artifacts", "alerts",
)  # fmt: skip
TRACKIO_FIELDS = ("config", "history")
MAX_LINES = 14  # differences shown per section


def out_lines(stdout: str) -> list[str]:
    """The lines a probe printed for comparison: those starting with "OUT "."""
    return [line for line in stdout.splitlines() if line.startswith("OUT ")]


def sides(result: Result) -> dict[str, list[dict[str, Any]]]:
    """Every place this implementation stored the probe's runs: {label: [observation per run]}."""
    if result.impl == "wandb":
        return {"wandb": observe.read_wandb_runs(result.tmp)}
    if result.impl == "jaxdash":
        return {
            "run store": store_reader.read_store_runs(result.tmp),
            "W&B copy": store_reader.read_copy_runs(result.tmp),
        }
    return {"trackio": store_reader.read_trackio_runs(result.tmp / "trackio")}


def expected(reference: Result) -> dict[str, Any]:
    """W&B's own outcome of the probe, with the probe's `# expect:` fields put in its place."""
    runs = observe.read_wandb_runs(reference.tmp)
    over = dict(reference.probe.expect)
    exit_code = over.pop("exit_code", reference.rc)
    if "history" in over:
        over["history"] = {int(k): v for k, v in over["history"].items()}
    for run in runs:
        run.update(over)
    return {"exit_code": exit_code, "out": out_lines(reference.stdout), "runs": runs}


def same(a: Any, b: Any) -> bool:
    """Equal as stored values: numbers within 1e-6 (bools as numbers), NaN == NaN, None == "", lists and dicts deep."""
    if a in (None, "") and b in (None, ""):
        return True
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        a, b = float(a), float(b)
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 90 else text[:87] + "..."


def _dict_diff(where: str, want: dict[str, Any], got: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(want) | set(got), key=str):
        if key not in got:
            out.append(f"{where}[{key!r}]: missing (W&B: {_short(want[key])})")
        elif key not in want:
            out.append(f"{where}[{key!r}]: extra {_short(got[key])} (W&B has none)")
        elif not same(want[key], got[key]):
            out.append(f"{where}[{key!r}]: {_short(got[key])} (W&B: {_short(want[key])})")
    return out


def _history_diff(want: dict[int, dict[str, Any]], got: dict[int, dict[str, Any]]) -> list[str]:
    out = []
    if sorted(want) != sorted(got):
        out.append(f"history steps: {_short(sorted(got))} (W&B: {_short(sorted(want))})")
    for step in sorted(set(want) & set(got)):
        out += _dict_diff(f"step {step}", want[step], got[step])
    for step in sorted(set(want) - set(got))[:3]:
        out.append(f"step {step}: missing (W&B: {_short(want[step])})")
    return out


def _compared(field: str, want: Any, probe_text: str) -> bool:
    """Fields W&B fills with a random or default value are compared only when the probe chose them."""
    if field == "project":
        return want not in (None, "", "uncategorized")
    if field == "name":
        return want not in (None, "")
    if field == "run_id":
        return bool(want) and str(want) in probe_text
    return True


def run_diff(want: dict[str, Any], got: dict[str, Any], fields: tuple[str, ...], probe_text: str) -> list[str]:
    """Differences between one expected run and one stored run."""
    out: list[str] = []
    for field in fields:
        w, g = want.get(field), got.get(field)
        if not _compared(field, w, probe_text):
            continue
        if field == "history":
            out += _history_diff(w or {}, g or {})
        elif field in ("config", "summary"):
            out += _dict_diff(field, w or {}, g or {})
        elif field in ("tags", "files"):
            if sorted(map(str, w or [])) != sorted(map(str, g or [])):
                out.append(f"{field}: {_short(g)} (W&B: {_short(w)})")
        elif not same(w, g):
            out.append(f"{field}: {_short(g)} (W&B: {_short(w)})")
    return out


def diff(want: dict[str, Any], result: Result) -> dict[str, list[str]]:
    """{side: differences} of one implementation's run of a probe against W&B's; empty lists where all match."""
    probe_text = result.probe.path.read_text() + " ".join(result.probe.env.values())
    top = []
    if want["exit_code"] != result.rc:
        top.append(f"exit code: {result.rc} (W&B: {want['exit_code']}); stderr: {result.tail(3)!r}")
    if want["out"] != out_lines(result.stdout):
        top.append(f"printed: {_short(out_lines(result.stdout))} (W&B: {_short(want['out'])})")
    fields = TRACKIO_FIELDS if result.impl == "trackio" else FIELDS
    found: dict[str, list[str]] = {}
    for label, runs in sides(result).items():
        lines = list(top)
        if len(runs) != len(want["runs"]):
            lines.append(f"runs: {len(runs)} (W&B: {len(want['runs'])})")
        for i, (w, g) in enumerate(zip(want["runs"], runs, strict=False)):
            if label == "W&B copy" and w.get("state") == "stopped" and g.get("state") in ("finished", "failed"):
                w = {**w, "state": g["state"]}  # W&B's offline file has no "stopped": an exit record is the nearest
            prefix = f"run {i}: " if len(want["runs"]) > 1 else ""
            lines += [prefix + line for line in run_diff(w, g, fields, probe_text)]
        found[label] = lines
    return found


def render(found: dict[str, list[str]]) -> str:
    """The differences as text, MAX_LINES per side."""
    parts = []
    for label, lines in found.items():
        if lines:
            more = f"\n    ... and {len(lines) - MAX_LINES} more" if len(lines) > MAX_LINES else ""
            parts.append(f"[{label}]\n    " + "\n    ".join(lines[:MAX_LINES]) + more)
    return "\n".join(parts)


def one_line(found: dict[str, list[str]]) -> str:
    """The first difference of each side that has one, for a summary table."""
    return "; ".join(f"{label}: {lines[0]}" for label, lines in found.items() if lines)
