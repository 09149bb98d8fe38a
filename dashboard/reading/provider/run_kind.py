"""What a page may do with a run and how it draws it, decided here from what kind of run it is, so that no page
asks: a run of one of our tasks (the training CLI or the page), a member of a population, a client script's
run (`jaxdash.init`, with or without W&B), a TensorBoard logdir's run mirrored into a run folder, or a run
the page launched that has not written its config yet."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from runstore import artifacts, tb_logdir
from runstore.run_folder import RunFolder

ENGINE, MEMBER, CLIENT, TENSORBOARD, LAUNCHED = "engine", "member", "client", "tensorboard", "launched"


@dataclass(frozen=True)
class RunAbilities:
    """What a page may do with one run and which sections it draws for it. The flags that need no file are
    decided from where the run lives; `own_task` and `kind` read its config and launch file once, when asked.
    Pages decide by the flags; `kind` (ENGINE, MEMBER, CLIENT, TENSORBOARD or LAUNCHED) is for a caption."""

    run_dir: Path

    @property
    def stoppable(self) -> bool:
        """A process of ours reads its stop file (a TensorBoard log's writer is someone else's: no Stop)."""
        return not tb_logdir.is_mirror(self.run_dir)

    @property
    def charts_per_tag(self) -> bool:
        """Its scalar names are another writer's (a TensorBoard log's run): a chart per logged tag, and its
        histograms and texts beside its media, instead of the panels per key prefix a client script gets."""
        return tb_logdir.is_mirror(self.run_dir)

    @functools.cached_property
    def own_task(self) -> bool:
        """A run of one of our tasks (its config lists its panels, or the page launched it): the task's panels,
        compile time and process output apply to it, not to a client script's or a TensorBoard log's run."""
        return bool(self._config.get("panels")) or RunFolder(self.run_dir).has_launch()

    @property
    def keys_by_prefix(self) -> bool:
        """A user's loop (a client script): every scalar, histogram and text key in its prefix's section."""
        return not self.charts_per_tag and not self.own_task

    @functools.cached_property
    def kind(self) -> str:
        """What kind of run it is, for a caption."""
        if self.charts_per_tag:
            return TENSORBOARD
        doc = self._config
        if not doc:
            return LAUNCHED if self.own_task else CLIENT
        if doc.get("group") is not None and doc.get("member") is not None:
            return MEMBER
        return ENGINE if "task_spec" in doc or self.own_task else CLIENT

    @functools.cached_property
    def _config(self) -> dict:
        return artifacts.config_doc(self.run_dir)


def abilities(run_dir: Path) -> RunAbilities:
    """The abilities of the run in `run_dir` (nothing is read until a flag that needs a file is asked)."""
    return RunAbilities(Path(run_dir))


def own_task(run_dir: Path) -> bool:
    """Whether the run is one of our tasks' (`RunAbilities.own_task`)."""
    return abilities(run_dir).own_task
