"""A script resuming into a run folder where links and FIFOs were planted writes nothing outside it, never hangs,
and logs the rest; a rejected value never removes an accepted one (#50 items 3 and 8). Real subprocess scripts
(`jaxdash.init(id=..., resume="allow")`), read back through the run store and a listing of the outside folder."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from runstore import media_store, run_folder, run_store
from runstore.run_folder import RunFolder
from runstore.safe_files import UnsafePath, is_regular
from runwriters.base import Table
from runwriters.store import RunStoreWriter
from tests.client_scripts import rows, run

RUN_ID = "planted"
# Every call that writes into the run folder: scalars, media of each kind (one image tag left unplanted), a
# saved file, an artifact, an alert, a summary; "DONE" once the script is past `finish`.
SCRIPT = f"""
import numpy as np, plotly.graph_objects as go
import jaxdash as wandb
run = wandb.init(id="{RUN_ID}", resume="allow", wandb="disabled", tensorboard=True)
for i in range(5):
    run.log({{"loss": 1.0 / (i + 1)}})
pixels = np.zeros((4, 4, 3), np.uint8)
run.log({{"pic": wandb.Image(pixels), "ok_pic": wandb.Image(pixels), "page": wandb.Html("<p>hi</p>"),
         "note": "some text", "h": wandb.Histogram(np.arange(10.0)), "tbl": wandb.Table(columns=["a"], data=[[1]]),
         "fig": go.Figure(), "loss": 0.1}})
open("model.txt", "w").write("weights")
run.save("model.txt")
art = wandb.Artifact("data", "dataset")
art.add_file("model.txt")
run.log_artifact(art)
run.alert("title", "text")
run.summary["best"] = 1.0
run.finish()
print("DONE")
"""
# Where the script writes, relative to the run folder: folders (a link there is a linked folder) and files.
rf = run_folder
FOLDERS = [rf.FILES, rf.artifacts_rel(rf.LOGGED), rf.artifacts_rel(rf.IMAGES, media_store.tag_file("pic")),
           rf.artifacts_rel(rf.MEDIA, media_store.tag_file("page")), rf.artifacts_rel(rf.TABLES),
           rf.artifacts_rel(rf.FIGURES, media_store.tag_file("fig")), rf.TENSORBOARD]  # fmt: skip
FILES = [rf.ALERTS, rf.SUMMARY, rf.STATUS, rf.artifacts_rel(rf.TEXTS_LATEST), rf.artifacts_rel(rf.TEXTS, "note.jsonl"),
         rf.artifacts_rel(rf.HISTOGRAMS, "h.jsonl")]  # fmt: skip
LINKED_DIRS = [rf.artifacts_rel(kind) for kind in (rf.LOGGED, rf.IMAGES, rf.MEDIA, rf.TABLES)]


def listing(folder: Path) -> dict[str, bytes | None]:
    """Everything under `folder` (links not followed): path -> bytes (None for a folder, the target for a link)."""
    out: dict[str, bytes | None] = {}
    for base, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = Path(base) / name
            rel = str(path.relative_to(folder))
            out[rel] = os.readlink(path).encode() if path.is_symlink() else None if path.is_dir() else path.read_bytes()
    return out


def planted_run(tmp_path: Path) -> tuple[Path, Path]:
    """(the runs root, the outside folder): a run folder with its config, and an outside folder with a file."""
    root, outside = tmp_path / "runs", tmp_path / "outside"
    run_dir = root / RUN_ID
    run_dir.mkdir(parents=True)
    RunFolder(run_dir).write_config("script", {"lr": 0.1})
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me\n")
    return root, outside


def plant(run_dir: Path, rel: str, what: str, outside: Path) -> None:
    """A link to a folder or a file outside, or a FIFO, at run_dir/rel."""
    path = run_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if what == "fifo":
        os.mkfifo(path)
    elif what == "folder":
        target = outside / rel.replace("/", "_")
        target.mkdir()
        path.symlink_to(target)
    else:
        path.symlink_to(outside / "precious.txt")


def run_planted(tmp_path: Path, root: Path, timeout: float = 60) -> tuple[str, float]:
    """The script run to its end within `timeout` s (a hang fails the test): its stderr, and the seconds it took."""
    start = time.monotonic()
    out, _ = run(tmp_path, SCRIPT, timeout=timeout)
    took = time.monotonic() - start
    assert out.returncode == 0 and "DONE" in out.stdout, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    return out.stderr, took


def the_rest_is_logged(run_dir: Path) -> None:
    """What no plant stood in the way of: the unplanted image tag, status.json and summary.json, as regular files."""
    assert len(media_store.image_steps(run_dir)["ok_pic"]) == 1
    assert RunFolder(run_dir).status()["state"] == "finished"
    assert is_regular(run_dir / run_folder.SUMMARY) and run_store.read_json(run_dir / run_folder.SUMMARY)["best"] == 1.0


def test_links_planted_at_every_path_are_never_written_through_and_the_rest_is_logged(tmp_path: Path) -> None:
    root, outside = planted_run(tmp_path)
    for rel in FOLDERS:
        plant(root / RUN_ID, rel, "folder", outside)
    for rel in FILES:
        plant(root / RUN_ID, rel, "file", outside)
    before = listing(outside)
    err, _ = run_planted(tmp_path, root)
    assert listing(outside) == before  # nothing created, written or removed outside the run folder
    run_dir = root / RUN_ID
    assert [r["loss"] for r in rows(run_dir)] == [1.0, 0.5, 1 / 3, 0.25, 0.2, 0.1]
    the_rest_is_logged(run_dir)
    for rel in [rf.FILES, *LINKED_DIRS, rf.TENSORBOARD, rf.ALERTS, "note.jsonl", "h.jsonl"]:
        lines = [line for line in err.splitlines() if rel in line and "is a symbolic link" in line]
        assert lines and "remove the link" in lines[0], (rel, err[-3000:])


def test_fifos_planted_at_every_path_never_hang_the_script(tmp_path: Path) -> None:
    """A FIFO opened for writing blocks until a reader comes: metrics.jsonl and alerts.jsonl hung the script for
    ever. Here each is refused in one line, and the script ends without waiting for a write that cannot land."""
    root, outside = planted_run(tmp_path)
    for rel in [run_folder.RECORDS, *FOLDERS, *FILES]:
        plant(root / RUN_ID, rel, "fifo", outside)
    err, took = run_planted(tmp_path, root, timeout=60)
    assert took < 25  # a refused metrics.jsonl is not retried for $JAXDASH_WRITE_RETRY_S (30 s) at close
    the_rest_is_logged(root / RUN_ID)
    for rel in [run_folder.RECORDS, run_folder.ALERTS, "note.jsonl", "h.jsonl"]:
        assert any(rel in line and "not a regular file" in line for line in err.splitlines()), (rel, err[-3000:])
    for rel in [rf.FILES, *LINKED_DIRS]:
        assert any(rel in line and "is not a folder" in line for line in err.splitlines()), (rel, err[-3000:])


def test_a_linked_metrics_file_is_refused_in_one_line_and_its_target_keeps_its_bytes(tmp_path: Path) -> None:
    root, outside = planted_run(tmp_path)
    plant(root / RUN_ID, run_folder.RECORDS, "file", outside)
    before = listing(outside)
    err, took = run_planted(tmp_path, root)
    assert listing(outside) == before and took < 25
    the_rest_is_logged(root / RUN_ID)
    (line,) = [line for line in err.splitlines() if "metrics.jsonl: is a symbolic link" in line]
    assert "remove the link" in line


def test_the_engines_store_writer_refuses_a_linked_artifacts_folder_and_keeps_its_scalars(tmp_path: Path) -> None:
    """The training engine's run store writer: each media write through a linked artifacts/ raises one UnsafePath
    naming it (the engine reports it), nothing is made outside, and metrics.jsonl gets every scalar."""
    run_dir, outside = tmp_path / "run", tmp_path / "outside"
    run_dir.mkdir()
    outside.mkdir()
    (run_dir / run_folder.ARTIFACTS).symlink_to(outside)
    writer = RunStoreWriter(run_dir)
    writer.write_scalars(1, {"loss": 0.5})
    calls = [lambda: writer.write_tables(1, {"fit/data": Table(["x"], [[1.0]])}),
             lambda: writer.write_texts(1, {"note": "hi"}),
             lambda: writer.write_figures(1, {"fig": {"data": []}}),
             lambda: writer.write_histograms(1, {"h": [1.0, 2.0]}),
             lambda: media_store.write_image_step(run_dir, "pic", 1, [b"png"])]  # fmt: skip
    for call in calls:
        with pytest.raises(UnsafePath, match=f"{run_dir / run_folder.ARTIFACTS}: is a symbolic link"):
            call()
    writer.close()
    assert list(outside.iterdir()) == []
    assert [r["loss"] for r in RunFolder(run_dir).records()[0]] == [0.5]


def test_a_rejected_value_never_removes_an_accepted_one_of_the_same_step(tmp_path: Path) -> None:
    """`log({"x": 10**400}, step=s)` after `log({"x": 2.0}, step=s)` deleted x at step s (the whole row when x
    was its only key): the step keeps 2.0, with one warning."""
    out, root = run(
        tmp_path,
        """
        import numpy as np
        import jaxdash as wandb
        run = wandb.init(project="rejected", wandb="disabled", tensorboard=False)
        run.log({"x": 2.0}, step=3)
        run.log({"x": 10**400}, step=3)
        run.log({"x": 1.0, "y": 2.0}, step=4)
        run.log({"y": 10**400, "x": 1.5}, step=4)
        run.log({"z": 1.5}, step=5)
        run.log({"z": np.array([None, None], dtype=object)}, step=5)  # no metric: dropped
        run.log({"w": 1.0}, step=6)
        run.finish()
        """,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = run_store.run_folders(root)
    assert rows(run_dir) == [{"step": 3, "x": 2.0}, {"step": 4, "x": 1.5, "y": 2.0}, {"step": 5, "z": 1.5},
                             {"step": 6, "w": 1.0}]  # fmt: skip
    assert "x: int value cannot be stored" in out.stderr and "keeps its earlier value" in out.stderr


def test_notes_saved_to_tensorboard_never_leave_the_run_folder(tmp_path: Path) -> None:
    """The page writes a run's notes into the TensorBoard logdir status.json names (removing older .notes files
    there): a logdir outside the run folder, or reached through a link in it, is refused and left as it was."""
    from dashboard.processes import notes_sinks
    from runstore import run_notes

    run_dir, outside = tmp_path / "run", tmp_path / "outside"
    (run_dir / run_folder.TENSORBOARD).mkdir(parents=True)
    outside.mkdir()
    (outside / "old.notes").write_text("someone else's file")
    (run_dir / run_folder.TENSORBOARD / "linked").symlink_to(outside)
    before = listing(outside)
    notes = run_notes.RunNotes("name", [], "hello", 0.0)
    for logdir in (str(outside), "tb/linked", "../outside"):
        said = notes_sinks.write_tensorboard(run_dir, notes, {"tensorboard": {"logdir": logdir}})
        assert said.startswith("not written:") and ("leads out of" in said or "symbolic link" in said), said
    assert listing(outside) == before
    assert notes_sinks.write_tensorboard(run_dir, notes, {"tensorboard": {"logdir": "tb"}}).startswith("written")
