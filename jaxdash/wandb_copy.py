"""The W&B copy of a client run, as W&B itself would have written it (in the writer process, jaxdash/sink.py).

The W&B writer is built for `python -m training`'s runs: every row carries `global_step`, losses and
accuracies get min/max summaries, and the end adds `run/state` to the summary. A W&B script switched
to jaxdash expects its own W&B run instead, so here: rows are logged with the script's own keys at
the script's own steps, the script's `define_metric` calls are made on the copy, its summary (strings
and {"min": ..} dicts too) is set after the last row, and the end is the script's exit code alone.
The script's `alert`, `save` and `log_artifact` are made on the copy too (`call`), from the files our
run folder already holds (files/, artifacts/logged/), so W&B's offline run keeps them as W&B's own would.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from runwriters.wandb.one_hop import one_hop
from runwriters.wandb.rows import StepRows
from runwriters.wandb.run import env_timeout

log = logging.getLogger("jaxdash")


class ScriptRows(StepRows):
    """Rows as the script logged them: no `global_step` key, no summary kinds of our own."""

    prepared = False
    step_key = "_step"  # the script's step is W&B's own (a script may log a `global_step` of its own)

    def prepare(self) -> None:
        """Undo our writer's own `epoch` definition (plotted against `global_step`, which W&B's step sync
        would add to the script's rows): once, before the script's definitions and rows."""
        if not self.prepared and self.run is not None:
            self.prepared = True
            self.run.define_metric("epoch", overwrite=True)

    def flush(self) -> None:
        """Log the buffered rows in step order, after `prepare`."""
        self.prepare()
        super().flush()

    def log(self, step: int, data: Mapping[str, Any]) -> None:
        """Log `data` into step's row, which stays open until a later step is logged (as W&B's `step=`)."""
        if self.open_step is not None and step < self.open_step:
            self.run.log(dict(data), step=self.open_step, commit=False)
            return
        self.run.log(dict(data), step=step, commit=False)
        self.open_step = step


def wandb_writers(writer: Any) -> list[Any]:
    """The W&B writers among a MultiWriter's writers."""
    return [w for w in getattr(writer, "writers", []) if hasattr(w, "wait_ready") and hasattr(w, "_rows")]


def adapt(writer: Any) -> None:
    """Make each W&B writer log the script's rows (right after it is built, before any row)."""
    for w in wandb_writers(writer):
        old, new = w._rows, ScriptRows()
        w._rows = new
        new.run = new.run or old.run  # `wandb.init` may have returned meanwhile
        new.held = old.held


def _ready(w: Any) -> bool:
    return bool(w.active) and w.wait_ready(env_timeout("JAXDASH_WANDB_INIT_TIMEOUT", 15.0) * 2 + 5)


def define_metric(writer: Any, name: str, options: Mapping[str, Any]) -> None:
    """The script's `define_metric` on the copy (before its rows: they wait for the run anyway)."""
    for w in wandb_writers(writer):
        if not _ready(w):
            continue
        if isinstance(w._rows, ScriptRows):
            w._rows.prepare()
        kwargs = {k: options[k] for k in ("step_metric", "step_sync", "hidden") if k in options}
        if options.get("summary"):
            kwargs["summary"] = ",".join(options["summary"])
        try:
            w.run.define_metric(name, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the W&B copy is best-effort
            log.warning("jaxdash: define_metric(%r) did not reach W&B (%s: %s)", name, type(exc).__name__, exc)


def _alert(run: Any, title: str, text: str, level: str) -> None:
    import wandb

    run.alert(title=title, text=text, level=wandb.AlertLevel(level))


def _save(run: Any, paths: list[str], base: str, policy: str) -> None:
    for path in paths:
        run.save(path, base_path=base, policy=policy)


def _log_artifact(run: Any, doc: Mapping[str, Any], files: list[tuple[str, str]], aliases: list[str]) -> None:
    import wandb

    art = wandb.Artifact(doc["name"], type=doc["type"], description=doc.get("description"),
                         metadata=dict(doc.get("metadata") or {}))  # fmt: skip
    for path, name in files:
        art.add_file(path, name=name)
    run.log_artifact(art, aliases=aliases or None)


# The script's run calls the copy repeats: (its arguments, from our run folder's copy of what they name).
CALLS = {"alert": _alert, "save": _save, "log_artifact": _log_artifact}


def call(writer: Any, name: str, args: tuple) -> None:
    """The script's `name` call (CALLS) on each W&B copy, once its run exists; a failure only warns."""
    for w in wandb_writers(writer):
        if not _ready(w):
            continue
        try:
            CALLS[name](w.run, *args)
        except Exception as exc:  # noqa: BLE001 - the W&B copy is best-effort
            log.warning("jaxdash: %s did not reach the W&B copy (%s: %s)", name, type(exc).__name__, exc)


def output(writer: Any, chunks: list[tuple[str, str, float]]) -> None:
    """The script's console output as W&B's own output records (what `console="wrap"` writes: one raw record a
    chunk, its stream and time), from which wandb-core also writes the copy's files/output.log."""
    for w in wandb_writers(writer):
        if not _ready(w):
            continue
        try:
            with one_hop(w.run):  # the chunks reach wandb-core in one hop
                _publish_output(w.run._interface, chunks)
        except Exception as exc:  # noqa: BLE001 - the W&B copy is best-effort
            log.warning("jaxdash: console output did not reach the W&B copy (%s: %s)", type(exc).__name__, exc)
            return


def _publish_output(interface: Any, chunks: list[tuple[str, str, float]]) -> None:
    from wandb.proto import wandb_internal_pb2 as pb

    kinds = pb.OutputRawRecord.OutputType
    for name, text, at in chunks:
        if not hasattr(interface, "_publish_output_raw"):  # another wandb: its public call, stamped now
            interface.publish_output_raw(name, text)
            continue
        record = pb.OutputRawRecord(output_type=kinds.STDERR if name == "stderr" else kinds.STDOUT, line=text)
        record.timestamp.FromNanoseconds(int(at * 1e9))  # when the script wrote it, not when it got here
        interface._publish_output_raw(record)


def log_rows(writer: Any) -> None:
    """Log each W&B copy's buffered rows now (its `flush` logs them at most every FLUSH_SECS), once its run exists."""
    for w in wandb_writers(writer):
        if w.active and w.wait_ready(0):
            try:
                w._rows.flush()
            except Exception as exc:  # noqa: BLE001 - the W&B copy is best-effort
                log.warning("jaxdash: rows did not reach the W&B copy (%s: %s)", type(exc).__name__, exc)


def close(writer: Any, summary: tuple[Mapping[str, Any], list[str]] | None, state: str) -> None:
    """End each W&B copy: media and rows, the last row committed, the script's summary (less the flat
    keys of nested rows, which W&B's summary holds nested), then finish."""
    from runwriters.wandb.run import EXIT_CODES

    for w in wandb_writers(writer):
        if not w.active or w._closed:
            continue
        w._closed = True  # its own close returns at once
        if not _ready(w):
            log.warning("jaxdash: W&B init did not finish; this run's W&B copy is incomplete")
            continue
        try:
            w._log_media()
            w._rows.flush()
            w.write_hparams({})
            if w._rows.open_step is not None:
                w.run.log({}, commit=True)  # the open row is written before the summary that follows it
            if summary:
                _set_summary(w.run.summary, *summary)
        except Exception as exc:  # noqa: BLE001 - the W&B copy is best-effort
            log.warning("jaxdash: the W&B copy's end failed (%s: %s)", type(exc).__name__, exc)
        finally:
            w._finish(state if state in EXIT_CODES else "failed")


def _set_summary(target: Any, values: Mapping[str, Any], nested: list[str]) -> None:
    """`values` as W&B's own summary records hold them: a key logged as a nested dict ("a.b") as the path
    ("a", "b") (W&B's summary of {"a": {"b": ..}}), in place of the literal key its flat rows gave it."""
    from wandb.sdk.interface.summary_record import SummaryItem, SummaryRecord

    record, paths = SummaryRecord(), set(nested)
    for key, value in values.items():
        item = SummaryItem()
        item.key = tuple(key.split(".")) if key in paths else (key,)
        item.value = value
        record.update.append(item)
    for key in paths & values.keys():
        item = SummaryItem()
        item.key = (key,)
        record.remove.append(item)
    target._update(record)
