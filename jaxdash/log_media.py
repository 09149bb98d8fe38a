"""Media in `run.log`: what counts as a medium, and handing each to the writers when logged.

Called from `client.Run._checked` (off the per-step path: a call holding only numbers never gets
here): `is_media(value)` picks the values, `write_media(writer, step, media)` writes them on the
caller's thread (media are rare, and an image must be on the host anyway) through the writer
interface, so the run store (the page), TensorBoard and the W&B copy each get them:

* Image, a list of Images (one key, captions kept), a matplotlib figure that plotly cannot convert:
  `write_images` (every step: artifacts/images/<key>/<step>_<i>.png, runstore.media_store);
* Histogram: `write_histograms` (its bins); plotly figures, `wandb.Plotly`, matplotlib figures:
  `write_figures` (artifacts/figures/<key>/<step>.json);
* Table: `write_tables`; `wandb.plot.*`: `write_charts` (the run store: its figure under <key> and its table
  under <key>_table, as W&B; the W&B copy: W&B's own chart);
* Html, Audio, Video, Object3D, Molecule: a file in the run folder (artifacts/media/<key>/), one notice;
* a string (W&B keeps it as it is in its history): `write_texts` (TensorBoard's text, the W&B copy's row,
  artifacts/texts.json's latest) and every step's in artifacts/texts/<key>.jsonl (runstore.media_store).
"""

from __future__ import annotations

from typing import Any

from jaxdash.data_types import Histogram, Image, Plotly, _File, is_matplotlib, notice
from jaxdash.plot import CustomChart
from jaxdash.table import Table
from runstore import media_store
from runstore.run_folder import MEDIA, artifacts_rel
from runstore.safe_files import UnsafePath
from runwriters.base import Bins, Chart, Images

__all__ = ["Image", "Table", "is_media", "write_media"]

_TYPES = (Image, Table, Histogram, Plotly, CustomChart, _File)


def is_media(value: Any) -> bool:
    """A medium W&B takes in `log`: a data type, a list of Images, a plotly or matplotlib figure, a string."""
    if isinstance(value, (str, *_TYPES)) or hasattr(value, "to_plotly_json"):
        return True
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(v, Image) for v in value)
    return is_matplotlib(value)


def _images(value: Image | list[Image]) -> Images | None:
    many = [value] if isinstance(value, Image) else list(value)
    kept = [v for v in many if v.pixels is not None]
    if not kept:
        return None
    return Images([v.pixels for v in kept], [v.caption for v in kept], listed=not isinstance(value, Image))


def _sorted(media: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The media by the writer call that takes them."""
    out: dict[str, dict[str, Any]] = {"images": {}, "histograms": {}, "tables": {}, "figures": {}, "files": {},
                                      "texts": {}, "charts": {}}  # fmt: skip
    for key, value in media.items():
        if isinstance(value, str):
            out["texts"][key] = value
            continue
        if is_matplotlib(value) and not isinstance(value, _TYPES):
            value = Plotly(value)  # W&B: a figure plotly can draw becomes a plotly chart, else an image
        if isinstance(value, Plotly):
            value = value.fallback if value.figure is None else value.figure
        if isinstance(value, (Image, list, tuple)):
            found = _images(value)
            if found is not None:
                out["images"][key] = found
        elif isinstance(value, Histogram):
            if value.bins:
                out["histograms"][key] = Bins(value.histogram, value.bins)
        elif isinstance(value, Table):
            out["tables"][key] = value.to_store()
        elif isinstance(value, CustomChart):
            out["charts"][key] = Chart(value.spec_name, value.fields, value.string_fields, value.table.to_store(),
                                       value.figure, value.split_table)  # fmt: skip
        elif isinstance(value, _File):
            out["files"][key] = value
        elif isinstance(value, dict):
            out["figures"][key] = value
        elif value is not None:
            out["figures"][key] = value.to_plotly_json()
    return out


def write_media(writer: Any, step: int, media: dict[str, Any]) -> None:
    """Hand each medium to the writers' general methods (images, histograms, tables, figures); files to the run folder.

    A medium that cannot be written (a full disk, a figure plotly cannot encode) is dropped with one
    notice naming its key: as in W&B, logging media never stops the script.
    """
    found = _sorted(media)
    calls = [("write_images", "images"), ("write_histograms", "histograms"), ("write_tables", "tables"),
             ("write_figures", "figures"), ("write_texts", "texts"), ("write_charts", "charts")]  # fmt: skip
    for method, kind in calls:
        if found[kind]:
            _guarded(lambda m=method, k=kind: getattr(writer, m)(step, found[k]), sorted(found[kind]))
    if found["files"]:
        _guarded(lambda: _write_files(writer, step, found["files"]), sorted(found["files"]))
    if found["texts"] and (run_dir := _run_dir(writer)) is not None:
        texts = found["texts"]
        _guarded(lambda: [media_store.append_text(run_dir, k, step, v) for k, v in texts.items()], sorted(texts))


def _guarded(call: Any, keys: list[str]) -> None:
    try:
        call()
    except UnsafePath as exc:  # a link or FIFO planted on a tag's way (runstore.nofollow): the other tags were written
        notice(f"log: {exc.filename}", f"not stored: {exc.strerror}")
    except Exception as exc:  # noqa: BLE001 - a medium never stops the run; the scalars go on
        notice(f"log({', '.join(keys)})", f"not stored ({type(exc).__name__}: {exc})")


def _run_dir(writer: Any) -> Any:
    """The run folder of the run store writer (the MultiWriter's first, required writer)."""
    first = getattr(writer, "writers", [writer])[0] if getattr(writer, "writers", None) else writer
    return getattr(first, "run_dir", None)


def _write_files(writer: Any, step: int, files: dict[str, _File]) -> None:
    run_dir = _run_dir(writer)
    for key, value in files.items():
        kind = type(value).__name__
        if value.data is None or run_dir is None:
            continue
        media_store.write_media_file(run_dir, key, step, value.suffix, value.data)  # UnsafePath: one notice (_guarded)
        where = f"{artifacts_rel(MEDIA, media_store.tag_file(key))}/"
        notice(f"wandb.{kind}", f"kept as a file in the run folder ({where}); TensorBoard and the W&B copy lack it")
