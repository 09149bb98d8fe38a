"""A sweep is an Optuna study: its storage, sampler, pruner, and the settings every worker reads back.

The study keeps, as user attributes, the task, the fixed settings, the space, the method, the
metric, the pruner and the trial budget (its direction is Optuna's own), so
`python -m training worker --sweep NAME --storage URL` needs nothing else. Default storage: SQLite
next to the runs, `<runs root>/sweeps.db`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import time
import warnings
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy.exc

from runstore import private_files, safe_files
from runstore.env_numbers import env_number_or_default
from settings.fields import ConfigError
from settings.sweep import server
from settings.sweep.flags import DIRECTIONS, METHODS
from settings.sweep.journal import HeartbeatJournalStorage
from settings.sweep.space import Param, from_specs, grid_size, to_specs

# A worker beats each trial's heartbeat this often; a RUNNING trial silent for GRACE_S is failed and
# re-queued. $JAXDASH_SWEEP_GRACE_S shortens it (tests; fast networks).
GRACE_S = int(env_number_or_default("JAXDASH_SWEEP_GRACE_S", 20, integer=True, minimum=1))
HEARTBEAT_S = max(1, GRACE_S // 4)
MAX_RETRY = 2  # a trial whose worker died is re-queued at most this many times

optuna.logging.set_verbosity(optuna.logging.WARNING)  # one JSON line per run on stdout, not Optuna's chatter
# Optuna's RDB storage reads any OperationalError of a trials query as "too many variables", logs the
# error with its SQL and retries slower; when the database server went away that retry fails too, and the
# worker's own one line says so (test_sweep_postgres.py): the SQL dump before it is noise.
logging.getLogger("optuna.storages._rdb.storage").addFilter(
    lambda record: not record.getMessage().startswith("Caught an error from sqlalchemy")
)
# Heartbeats with ask/tell are what we need for populations; Optuna flags both as experimental.
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")


def default_url(root: Path) -> str:
    """`sqlite:///<runs root>/sweeps.db`."""
    return f"sqlite:///{Path(root).resolve() / 'sweeps.db'}"


def storage_file(url: str) -> str | None:
    """The file a `sqlite:///PATH` or `journal:PATH` storage lives in; None for a database server's URL."""
    for prefix in ("sqlite:///", "journal:"):
        if url.startswith(prefix):
            return url.removeprefix(prefix)
    return None


def checked_file(url: str) -> str | None:
    """The file of a `sqlite:///` or `journal:` storage, once it and the files written beside it (SQLite's
    -journal/-wal/-shm, the journal's .lock and the workers' .claim-lock) are no symbolic links: a storage
    named on the command line, or a sweeps.db planted as a link, never writes into another program's file.

    Raises:
      ConfigError: {"storage": one line naming the link and the fix}.
    """
    path = storage_file(url)
    if path is None:
        return None
    try:
        safe_files.check_sqlite(path)
        for suffix in (".lock", ".claim-lock"):
            safe_files.check_writable(path + suffix)
    except safe_files.UnsafePath as exc:
        raise ConfigError({"storage": str(exc)}) from None
    return path


def _create_private(path: str) -> None:
    """A new sweeps.db or journal made 0600 before Optuna writes a study into it (a shared filesystem's
    other users read nothing); an existing one, or one in a missing folder, is left to Optuna."""
    with contextlib.suppress(OSError):
        private_files.create_private(path)


def storage(url: str) -> optuna.storages.BaseStorage:
    """An RDB storage (sqlite:///, postgresql://, mysql://) with heartbeats, or `journal:PATH`.

    A server's storage is made once per process (`server.cached`); its errors name the URL with the
    password hidden.

    Both fail a trial whose worker stopped beating and re-queue it (RetryHeartbeatStaleTrialCallback):
    RDB storages with Optuna's own heartbeats, the journal with ours (`journal.HeartbeatJournalStorage`).
    A file storage is checked first (`checked_file`: no links).
    """
    path = checked_file(url)
    if path and path != ":memory:":
        _create_private(path)
    if url.startswith("journal:"):
        backend = optuna.storages.journal.JournalFileBackend(
            path, lock_obj=optuna.storages.journal.JournalFileOpenLock(path)
        )
        return HeartbeatJournalStorage(
            backend, HEARTBEAT_S, GRACE_S, optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)
        )
    if "://" not in url:
        raise ConfigError(
            {
                "storage": f"{url!r} is not a storage URL; use sqlite:///path.db, postgresql://USER:PASSWORD@HOST/DB or journal:/path/file"
            }
        )
    return server.cached(url, lambda: _rdb(url))


def _rdb(url: str, attempts: int = 8) -> optuna.storages.RDBStorage:
    """Optuna's RDB storage; a schema another process is creating at this moment is waited for, not an error."""
    for attempt in range(attempts):
        try:
            return optuna.storages.RDBStorage(
                url,
                engine_kwargs=server.engine_kwargs(url),
                heartbeat_interval=HEARTBEAT_S,
                grace_period=GRACE_S,
                heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY),
            )
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError) as exc:
            if attempt + 1 < attempts and _creating_schema(exc):
                time.sleep(0.1 * (attempt + 1))  # the page, the CLI and workers may open a new sweeps.db at once
                continue
            raise ConfigError({"storage": server.open_error(url, exc)}) from None
        except (sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError, RuntimeError) as exc:
            raise ConfigError({"storage": server.open_error(url, exc)}) from None
    raise AssertionError("unreachable")


def _creating_schema(exc: Exception) -> bool:
    """Optuna's create_all or its alembic version row racing another process's (SQLite and PostgreSQL)."""
    text = str(exc).lower()
    return "already exists" in text or "alembic_version" in text or "duplicate key" in text


def existing(url: str) -> None:
    """A worker reads a sweep's storage: a SQLite file that is not there is a typo, not a new database."""
    path = storage_file(url)
    if url.startswith("sqlite:///") and not Path(path).is_file():
        raise ConfigError({"storage": f"no sweeps database at {path}; give the sweep's --storage"})


class AskGridSampler(optuna.samplers.GridSampler):
    """GridSampler for ask/tell workers: the grid's end is the worker's budget, not `study.stop()`.

    Optuna's GridSampler stops the study from `after_trial`, which only works inside `optimize`.
    """

    def after_trial(self, study: optuna.Study, trial: Any, state: Any, values: Any) -> None:
        """Nothing: the worker loop ends at the trial budget (the grid's size)."""


def sampler(method: str, space: dict[str, Any], seed: int | None = None) -> optuna.samplers.BaseSampler:
    """GridSampler over the listed values, RandomSampler, or TPESampler."""
    if method == "grid":
        grid = {n: list(d.choices) for n, d in space.items()}
        return AskGridSampler(grid, seed=seed)
    if method == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


@dataclasses.dataclass(frozen=True)
class Objective:
    """What a sweep's trials are judged by: a metric's key ("auto": test/loss, else train/loss), its
    direction, and the pruner ("median", "none" or "threshold:VALUE") that may stop a trial early."""

    metric: str = "auto"
    direction: str = "minimize"
    pruner: str = "median"

    def check(self) -> None:
        """Raises ConfigError naming the flag when the direction or the pruner cannot be read."""
        if self.direction not in DIRECTIONS:
            raise ConfigError({"sweep_direction": f"is one of {', '.join(DIRECTIONS)} (got {self.direction!r})"})
        make_pruner(self.pruner, self.direction)


def make_pruner(spec: str, direction: str) -> optuna.pruners.BasePruner:
    """Optuna's pruner for `spec`: "median" (MedianPruner after 3 trials), "none", or "threshold:VALUE"."""
    kind, _, value = spec.partition(":")
    if kind == "median" and not value:
        return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0)
    if kind == "none" and not value:
        return optuna.pruners.NopPruner()
    try:
        bound = float(value) if kind == "threshold" else None
    except ValueError:
        bound = None
    if bound is None:
        raise ConfigError({"sweep_pruner": f"is median, none or threshold:VALUE, e.g. threshold:0.5 (got {spec!r})"})
    side = "upper" if direction == "minimize" else "lower"  # past the bound on the losing side
    return optuna.pruners.ThresholdPruner(**{side: bound})


def direction_of(study: optuna.Study) -> str:
    """The study's direction as Optuna keeps it: "minimize" or "maximize"."""
    return study.direction.name.lower()


@dataclasses.dataclass(frozen=True)
class StudySpec:
    """What a new study holds for its workers: the task, its settings, the search and how trials are judged.

    base: the settings every trial shares; space: the fields searched (`parse_space`); method: a name of
    METHODS; trials: how many (None: the grid's size, else 20); tensorboard: whether trials write event files.
    """

    task: str
    base: dict[str, Any]
    space: dict[str, Param]
    method: str
    trials: int | None = None
    objective: Objective = Objective()
    tensorboard: bool = True


def create(name: str, url: str, spec: StudySpec) -> optuna.Study:
    """A new study holding everything a worker needs (`spec`); its name must be new in this storage."""
    method, space, objective = spec.method, spec.space, spec.objective
    if method not in METHODS:
        raise ConfigError({"sweep_method": f"is one of {', '.join(METHODS)} (got {method!r})"})
    objective.check()
    n = grid_size(space) if method == "grid" and spec.trials is None else (spec.trials or 20)
    st = storage(url)
    try:
        study = optuna.create_study(study_name=name, storage=st, direction=objective.direction, load_if_exists=False)
    except optuna.exceptions.DuplicatedStudyError:
        raise ConfigError(
            {"sweep": f"a study named {name!r} already exists in {server.shown(url)}; pick another name"}
        ) from None
    attrs = {"task": spec.task, "base": spec.base, "space": to_specs(space), "method": method, "trials": n}
    attrs.update(metric=objective.metric, pruner=objective.pruner, tensorboard=spec.tensorboard)
    for key, value in attrs.items():
        study.set_user_attr(key, value)
    if method == "grid":
        enqueue_grid(study, space)
    return load(name, url, st)


def enqueue_grid(study: optuna.Study, space: dict[str, Param]) -> None:
    """Queue every grid point, those that share a program (differ only in lr/seed) next to each other.

    Workers ask trials in this order, so a worker claiming K trials gets one program's K members.
    """
    from settings.population import VARIED

    names = list(space)
    points = itertools.product(*(space[n].values or () for n in names))
    order = sorted(points, key=lambda p: [str(v) for n, v in zip(names, p, strict=True) if n not in VARIED])
    for point in order:
        study.enqueue_trial(dict(zip(names, point, strict=True)))


def load(name: str, url: str, st: optuna.storages.BaseStorage | None = None) -> optuna.Study:
    """The study `name` with its own sampler and pruner (a study made without one: MedianPruner)."""
    st = st or storage(url)
    try:
        plain = optuna.load_study(study_name=name, storage=st)
    except KeyError:
        raise ConfigError({"sweep": f"no study named {name!r} in {server.shown(url)}"}) from None
    attrs = plain.user_attrs
    if "space" not in attrs:
        raise ConfigError(
            {"sweep": f"study {name!r} in {server.shown(url)} was not made by a jaxdash sweep (no space)"}
        )
    return optuna.load_study(
        study_name=name,
        storage=st,
        sampler=sampler(attrs["method"], from_specs(attrs["space"])),
        pruner=make_pruner(attrs.get("pruner", "median"), direction_of(plain)),
    )


def space_of(study: optuna.Study) -> dict[str, Any]:
    """The study's distributions by field."""
    return from_specs(study.user_attrs["space"])
