"""Run a sweep: an Optuna study over `TrainConfig` fields, each trial a training run.

Sweep directory layout::

    SWEEP_DIR/space.yaml           the space file, as given
    SWEEP_DIR/optuna.journal       the Optuna study (a JournalStorage file)
    SWEEP_DIR/trial_NNNN/          one training run per trial (config.yaml, tb/, eval.jsonl,
                                   checkpoints/, best.zip; see `agents.training.trainer`)
    SWEEP_DIR/summary.json         every trial, the best params, score and full config
                                   (rewritten after every trial)
    SWEEP_DIR/best_config.yaml     the best trial's config, for ``train.py --config``

How it runs. This process owns the study and its seeded sampler (``TPESampler(seed=...)``,
with the constant liar so parallel trials spread out): it asks for each trial's params,
hands the trial to a worker, and tells the study the outcome. With one worker the trial
runs in this process and ray is never imported. With ``workers > 1`` (or a Ray address)
each trial is a Ray task (one CPU) that trains in its own process and reaches the same
study through the journal file, so it can report its evaluation scores and ask the
pruner itself. This keeps sampling, counting, failures and Ctrl-C in one place, and a
worker is a plain function of a job description (Ray Tune would add its own trial
directories, result loggers and searcher wrappers around the same study). A cluster
(``ray_address``) needs the same checkout, environment and sweep directory (a shared
file system) on every node.

Pruning: after each periodic evaluation the trainer calls `PruningHook`, which reports the
score to the trial (``trial.report(score, timesteps)``) and asks ``trial.should_prune()``;
when the pruner says so, the trainer stops politely (it finishes the rollout, checkpoints,
stops) and the trial is recorded as pruned with its last score.

A sweep is reproducible given the same trial results: the sampler is seeded from the sweep
seed, and trial ``n`` trains with seed ``SeedSequence([sweep seed, n])`` (unless ``seed``
is swept). With parallel workers, which results are known at each ask depends on timing.

Resume (``run_sweep(..., resume=True)``, ``skyjo-sweep --resume``): the journal holds every
trial asked for; a stopped sweep's study is loaded from it, trials that were still running
are told failed and recorded as interrupted, and the sweep asks for new trials until the
total is reached (`_resumed_study`).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from agents.atomic import atomic_path
from agents.sweep.space import SweepSpace, dump_yaml
from agents.training.config import MAX_SEED, TrainConfig, TrainConfigError
from agents.training.run_dir import RunDirError, check_writable_dir
from skyjo_env.core.errors import one_line, shorten
from skyjo_env.core.safe_yaml import show_path

JOURNAL = "optuna.journal"
STUDY_NAME = "sweep"
SUMMARY = "summary.json"
BEST_CONFIG = "best_config.yaml"
#: Trial states as recorded (Optuna's COMPLETE, PRUNED, FAIL; interrupted trials are FAIL).
COMPLETE, PRUNED, FAILED, INTERRUPTED = "complete", "pruned", "failed", "interrupted"
#: The most characters of a trial's one-line error.
ERROR_CHARS = 300
#: The most characters of a sampled value in the summary table.
VALUE_CHARS = 60


class SweepError(ValueError):
    """A sweep that cannot start (bad trial or worker count, a used sweep directory)."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


@dataclass
class TrialRecord:
    """One trial as the summary lists it.

    Attributes:
        number: the Optuna trial number (its run dir is ``trial_{number:04d}``).
        state: complete, pruned, failed or interrupted (running while it trains).
        params: the sampled config values.
        seed: the run's master seed.
        run_dir: the run directory.
        score: the objective (complete), the last evaluation score (pruned), else None.
        timesteps: learner decisions trained (None when training did not finish).
        seconds: wall time of the trial.
        error: the one-line error of a failed or interrupted trial.
        evaluations: ``[[timesteps, score], ...]`` as reported to the pruner.
    """

    number: int
    state: str
    params: dict[str, Any]
    seed: int
    run_dir: str
    score: float | None = None
    timesteps: int | None = None
    seconds: float | None = None
    error: str | None = None
    evaluations: list[list[float]] = field(default_factory=list)


@dataclass
class SweepResult:
    """What `run_sweep` returns (and writes to summary.json)."""

    sweep_dir: Path
    trials: list[TrialRecord]
    best: TrialRecord | None
    best_config: dict[str, Any] | None
    interrupted: bool


class PruningHook:
    """`Trainer`'s ``on_evaluation`` for one Optuna trial.

    Reports every evaluation score at its step; once the trial's pruner says so (never at
    the last step, where there is nothing left to save), answers True, which asks the
    trainer for a polite stop.

    Args:
        trial: anything with Optuna's ``report(value, step)`` and ``should_prune()``.
        total_timesteps: the run's length.
    """

    def __init__(self, trial, total_timesteps: int):
        self.trial = trial
        self.total_timesteps = total_timesteps
        self.pruned_at: int | None = None
        self.last_score: float | None = None

    def __call__(self, timesteps: int, score: float) -> bool:
        self.trial.report(score, timesteps)
        self.last_score = score
        if (self.pruned_at is None and timesteps < self.total_timesteps
                and self.trial.should_prune()):
            self.pruned_at = timesteps
        return self.pruned_at is not None


def build_pruner(spec: dict[str, Any]) -> optuna.pruners.BasePruner:
    """The Optuna pruner of a space's ``pruner`` mapping (see `agents.sweep.space`)."""
    options = {key: value for key, value in spec.items() if key != "type"}
    if spec["type"] == "median":
        return optuna.pruners.MedianPruner(**options)
    if spec["type"] == "threshold":
        return optuna.pruners.ThresholdPruner(**options)
    return optuna.pruners.NopPruner()


def trial_seed(sweep_seed: int, number: int) -> int:
    """Master seed of trial ``number``: independent of the others, fixed by the sweep seed."""
    state = np.random.SeedSequence([sweep_seed, number]).generate_state(1, dtype=np.uint64)
    return int(state[0]) % (MAX_SEED + 1)


def execute_trial(trial, config_data: dict[str, Any], run_dir: str, metric: str) -> dict:
    """Train one trial's config in ``run_dir`` with pruning; never raises for a failed run.

    Args:
        trial: the Optuna trial (reported to, asked whether to prune).
        config_data: the trial's `TrainConfig` data.
        run_dir: its run directory.
        metric: ``best_score`` or ``final_score``.

    Returns:
        ``{"state", "score", "timesteps", "seconds", "error"}``.
    """
    from agents.training.trainer import train
    from agents.training.warm_start import WarmStartInterrupted

    started = time.perf_counter()
    outcome: dict[str, Any] = {"state": FAILED, "score": None, "timesteps": None, "error": None}
    try:
        config = TrainConfig.from_dict(config_data)
        hook = PruningHook(trial, config.total_timesteps)
        summary = train(config, run_dir, on_evaluation=hook)
    except (KeyboardInterrupt, WarmStartInterrupted):
        outcome.update(state=INTERRUPTED, error="interrupted before training finished")
    except Exception as error:  # a failed trial is recorded; the sweep goes on
        outcome["error"] = one_line(error, ERROR_CHARS)
    else:
        outcome["timesteps"] = summary["timesteps"]
        if hook.pruned_at is not None:
            outcome.update(state=PRUNED, score=hook.last_score)
        elif summary["interrupted"]:  # SIGTERM or Ctrl-C reached the trainer
            outcome.update(state=INTERRUPTED, error="stopped by a signal")
        else:
            outcome.update(state=COMPLETE, score=_objective(summary, Path(run_dir), metric))
    outcome["seconds"] = round(time.perf_counter() - started, 2)
    return outcome


def _objective(summary: dict[str, Any], run_dir: Path, metric: str) -> float:
    if metric == "best_score":
        return float(summary["best_score"])
    lines = (run_dir / "eval.jsonl").read_text().splitlines()
    return float(json.loads(lines[-1])["score"])


# ---------------------------------------------------------------- where trials run


@dataclass
class _Job:
    trial: Any
    record: TrialRecord
    config: dict[str, Any]


class _InProcess:
    """Runs each trial here, one at a time (ray is never imported)."""

    def __init__(self, metric: str):
        self.metric = metric
        self.queue: list[_Job] = []

    def has_room(self) -> bool:
        return not self.queue

    def running(self) -> int:
        return len(self.queue)

    def submit(self, job: _Job) -> None:
        self.queue.append(job)

    def wait_one(self) -> tuple[_Job, dict]:
        job = self.queue[0]
        outcome = execute_trial(job.trial, job.config, job.record.run_dir, self.metric)
        self.queue.pop(0)
        return job, outcome

    def cancel_all(self) -> list[_Job]:
        jobs, self.queue = self.queue, []
        return jobs

    def close(self) -> None:
        pass


def _trial_on_worker(job: dict[str, Any]) -> dict:
    """A Ray task: reach the study through the journal file and run the trial."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY_NAME, storage=_storage(Path(job["journal"])),
                              pruner=build_pruner(job["pruner"]))
    # Optuna has no public way to hand a running trial to another process; this is how
    # `Study.ask` itself builds the trial it returns
    trial = optuna.trial.Trial(study, job["trial_id"])
    return execute_trial(trial, job["config"], job["run_dir"], job["metric"])


class _OnRay:
    """Runs up to ``workers`` trials at a time as Ray tasks (one CPU each), through
    `agents.parallel.TaskPool`."""

    def __init__(self, workers: int, address: str | None, common: dict[str, Any]):
        import ray  # noqa: F401 - a missing extra surfaces as ImportError, as the CLI expects

        from agents.parallel import DistributedSetupError, TaskPool, ray_session

        self.common = common
        self._session = ExitStack()  # shuts Ray down in close() if it started it
        try:
            self.ray = self._session.enter_context(ray_session(workers, address))
        except DistributedSetupError as error:
            raise SweepError(str(error)) from None
        self.pool = TaskPool(self.ray, _trial_on_worker, workers, max_retries=0)

    def has_room(self) -> bool:
        return self.pool.has_room()

    def running(self) -> int:
        return len(self.pool)

    def submit(self, job: _Job) -> None:
        description = {**self.common, "trial_id": job.trial._trial_id, "config": job.config,
                       "run_dir": job.record.run_dir}
        self.pool.submit(job, description)

    def wait_one(self) -> tuple[_Job, dict]:
        job, ref = self.pool.wait_one()
        try:
            outcome = self.pool.result(ref)
        except Exception as error:  # the worker died (memory, a kill), or Ray lost it
            outcome = {"state": FAILED, "score": None, "timesteps": None, "seconds": None,
                       "error": one_line(error, ERROR_CHARS)}
        return job, outcome

    def cancel_all(self) -> list[_Job]:
        return self.pool.cancel_all()

    def close(self) -> None:
        self._session.close()


# ---------------------------------------------------------------- the sweep


def _storage(journal: Path):
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(journal)))


def run_sweep(
    space: SweepSpace,
    sweep_dir: str | Path,
    trials: int,
    workers: int = 1,
    seed: int = 0,
    ray_address: str | None = None,
    log: Callable[[str], None] = print,
    resume: bool = False,
) -> SweepResult:
    """Run ``trials`` trials of ``space``, ``workers`` at a time; write the summary.

    A trial that raises is recorded as failed with its one-line error and the sweep goes
    on. Ctrl-C (or a trial stopped by a signal) ends the sweep: running trials are
    recorded as interrupted, the summary of the others is written, and the result says
    ``interrupted``. ``resume`` continues such a sweep (`_resumed_study`).

    Args:
        space: the checked space (`agents.sweep.space.load_sweep_space`).
        sweep_dir: a new or empty directory (with ``resume``: the sweep's directory).
        trials: trials to run (>= 1); with ``resume``, in all, the earlier ones included.
        workers: trials at a time; above 1 they run on Ray.
        seed: the sampler's seed, and the root of the trials' seeds.
        ray_address: an existing Ray cluster to run on (then Ray even with one worker).
        log: where one line per finished trial goes.

    Raises:
        SweepError: bad ``trials``, ``workers`` or ``seed``; ``sweep_dir`` is a file, cannot
            be created or written, or holds a sweep; with ``resume``: no sweep there, one
            of another space file or seed, or a damaged summary or journal
            (`_resumed_study`). Nothing on disk is changed then.
    """
    for name, value, low in (("trials", trials, 1), ("workers", workers, 1), ("seed", seed, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise SweepError(f"{name}: got {value!r}, expected an integer >= {low}")
    sweep_dir = Path(sweep_dir)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if sweep_dir.exists() or not resume:  # a missing one is "no sweep" to --resume
        _check_sweep_dir(sweep_dir)
    if resume:
        study, records = _resumed_study(space, sweep_dir, seed, log)
    else:
        if (sweep_dir / JOURNAL).exists() or (sweep_dir / SUMMARY).exists():
            raise SweepError(f"sweep directory {show_path(sweep_dir)} already holds a sweep; "
                             "choose another --sweep-dir, or continue it with --resume")
        shutil.copyfile(space.path, sweep_dir / "space.yaml")
        study = optuna.create_study(
            study_name=STUDY_NAME, storage=_storage(sweep_dir / JOURNAL),
            direction=space.direction, pruner=build_pruner(space.pruner),
            sampler=optuna.samplers.TPESampler(seed=seed, constant_liar=True),
        )
        records = []
    distributions = {param.name: param.distribution() for param in space.params}
    if workers == 1 and ray_address is None:
        executor = _InProcess(space.metric)
    else:
        executor = _OnRay(workers, ray_address, {
            "journal": str(sweep_dir / JOURNAL), "pruner": space.pruner, "metric": space.metric,
        })
    asked, stopping = len(records), False
    try:
        while True:
            while asked < trials and not stopping and executor.has_room():
                asked += 1
                job = _new_trial(study, distributions, space, sweep_dir, seed)
                records.append(job.record)
                if job.record.state == FAILED:  # its sampled config is invalid
                    _tell(study, job, log)
                    _write_summary(sweep_dir, space, records, seed, trials, workers, False)
                else:
                    executor.submit(job)
            if not executor.running():
                break
            job, outcome = executor.wait_one()
            job.record.state = outcome["state"]
            job.record.score, job.record.error = outcome["score"], outcome["error"]
            job.record.timesteps, job.record.seconds = outcome["timesteps"], outcome["seconds"]
            _tell(study, job, log)
            stopping = stopping or job.record.state == INTERRUPTED
            _write_summary(sweep_dir, space, records, seed, trials, workers, stopping)
    except KeyboardInterrupt:
        stopping = True
        for job in executor.cancel_all():
            job.record.state, job.record.error = INTERRUPTED, "interrupted by Ctrl-C"
            _tell(study, job, log)
    finally:
        executor.close()
    return _write_summary(sweep_dir, space, records, seed, trials, workers, stopping)


def _check_sweep_dir(sweep_dir: Path) -> None:
    """Create ``sweep_dir`` if needed and check that it is a writable directory.

    Raises:
        SweepError: It (or a parent) is a file, or it cannot be created or written.
    """
    try:
        check_writable_dir(sweep_dir, "sweep directory", "--sweep-dir")
    except RunDirError as error:
        raise SweepError(str(error)) from None


def _resumed_study(space: SweepSpace, sweep_dir: Path, seed: int,
                   log: Callable[[str], None]) -> tuple[Any, list[TrialRecord]]:
    """The study of a stopped sweep and its trials so far, checked against this call.

    The journal is the truth: a trial it holds that the summary lacks (the sweep died
    between the two writes) is recorded from the journal, and a trial still running there
    (its process is gone) is told failed and recorded as interrupted; it is not rerun,
    new trials take new numbers. The sampler is seeded from ``seed`` and the number of
    trials so far, so it does not replay the first trials' random draws.

    Raises:
        SweepError: no sweep in ``sweep_dir``, one started with another space file or
            seed, a damaged summary (`_read_summary`) or journal (`_check_journal`), or a
            journal Optuna cannot load. Nothing on disk is changed then.
    """
    journal, summary_path = sweep_dir / JOURNAL, sweep_dir / SUMMARY
    if not journal.is_file():
        raise SweepError(f"--resume: sweep directory {show_path(sweep_dir)} holds no sweep "
                         f"({JOURNAL} is missing); start one without --resume")
    saved_space = sweep_dir / "space.yaml"
    if not saved_space.is_file() or saved_space.read_bytes() != Path(space.path).read_bytes():
        raise SweepError(f"--resume: {show_path(space.path)} is not the space file the sweep "
                         f"in {show_path(sweep_dir)} was started with; resume with --space "
                         f"{show_path(saved_space)}")
    summary = _read_summary(summary_path)
    if summary.get("seed", seed) != seed:
        raise SweepError(f"--resume: the sweep in {show_path(sweep_dir)} was started with "
                         f"--seed {summary['seed']}, not {seed}")
    _check_journal(journal)
    storage = _storage(journal)
    try:
        done = len(optuna.load_study(study_name=STUDY_NAME, storage=storage).trials)
    except Exception as error:  # Optuna's own errors on a journal of valid JSON lines
        raise SweepError(f"--resume: {show_path(journal)} does not hold a sweep Optuna can "
                         f"load ({one_line(error, 200)}); nothing was changed") from None
    sampler_seed = int(np.random.SeedSequence([seed, done, 1]).generate_state(1)[0])
    study = optuna.load_study(
        study_name=STUDY_NAME, storage=storage, pruner=build_pruner(space.pruner),
        sampler=optuna.samplers.TPESampler(seed=sampler_seed, constant_liar=True),
    )
    saved = {record["number"]: TrialRecord(**record) for record in summary.get("trials", [])}
    unfinished = (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)
    records = []
    for trial in study.get_trials(deepcopy=False):
        record = saved.get(trial.number)
        if record is None or (record.state == "running" and trial.state not in unfinished):
            record = _record_from_journal(space, trial, sweep_dir, seed)
        if trial.state in unfinished:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            record.state = INTERRUPTED
            record.error = "interrupted: the sweep stopped while it ran"
        records.append(record)
    log(f"resuming the sweep in {sweep_dir}: {len(records)} trials so far")
    return study, records


#: TrialRecord fields a summary's trial must have, and their types.
_RECORD_TYPES = {"number": int, "state": str, "params": dict, "seed": int, "run_dir": str}


def _read_summary(path: Path) -> dict[str, Any]:
    """The summary.json of a sweep to resume (``{}`` when there is none), checked.

    Raises:
        SweepError: it cannot be read, is not JSON, or does not hold a summary (a mapping
            with an int ``seed`` and ``trials`` records), in one line naming the file.
    """
    if not path.exists():
        return {}
    where = f"--resume: {show_path(path)}"
    advice = (f"move it away to resume from {JOURNAL} alone (trials' errors and step "
              "counts are then not listed)")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise SweepError(f"{where} is damaged ({one_line(error, 120)}); {advice}") from None
    problem = _summary_problem(summary)
    if problem is not None:
        raise SweepError(f"{where} is not a sweep summary ({problem}); {advice}")
    return summary


def _summary_problem(summary: Any) -> str | None:
    """What is wrong with a parsed summary.json, or None."""
    if not isinstance(summary, dict):
        return f"a {type(summary).__name__}, not a mapping"
    if "seed" in summary and (type(summary["seed"]) is not int):
        return "its seed is not an integer"
    trials = summary.get("trials", [])
    if not isinstance(trials, list):
        return "its trials are not a list"
    known = {f.name for f in fields(TrialRecord)}
    for index, record in enumerate(trials):
        if not isinstance(record, dict) or not set(record) <= known or any(
            type(record.get(key)) is not kind for key, kind in _RECORD_TYPES.items()
        ):
            return f"trial entry {index} is not a trial record"
    return None


def _check_journal(journal: Path) -> None:
    """Refuse an Optuna journal that is not whole: every line one JSON record, the last
    one ended. A sweep killed mid-write leaves its last record cut short; Optuna skips it
    when it reads, but would append the next record to the same line and so make the
    journal unreadable for good.

    Raises:
        SweepError: a line is not a JSON record, or the last one is cut short (the message
            says where to cut the file, after keeping a copy).
    """
    where = f"--resume: {show_path(journal)}"
    try:
        data = journal.read_bytes()
    except OSError as error:
        raise SweepError(f"{where} cannot be read: {error.strerror or error}") from None
    offset = 0
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            if not line.endswith(b"\n"):
                raise SweepError(
                    f"{where} ends with a record cut short (line {number}: the sweep stopped "
                    f"while writing it); keep a copy, then cut it off to resume: truncate -s "
                    f"{offset} {shorten(str(journal), 120)}")
            raise SweepError(f"{where} line {number} is not a journal record: the journal is "
                             "damaged and the sweep cannot be resumed; start a new one")
        offset += len(line)


def _record_from_journal(space: SweepSpace, trial, sweep_dir: Path, seed: int) -> TrialRecord:
    """The record of a journal trial the summary does not list."""
    state = {optuna.trial.TrialState.COMPLETE: COMPLETE,
             optuna.trial.TrialState.PRUNED: PRUNED}.get(trial.state, INTERRUPTED)
    params = _decoded_params(space, trial)
    return TrialRecord(number=trial.number, state=state, params=params,
                       seed=params.get("seed", trial_seed(seed, trial.number)),
                       run_dir=_trial_dir(sweep_dir, trial.number),
                       score=trial.value if state == COMPLETE else None)


def _decoded_params(space: SweepSpace, trial) -> dict[str, Any]:
    """A trial's sampled values as config values (the space's params it holds)."""
    return {param.name: param.decode(trial.params[param.name])
            for param in space.params if param.name in trial.params}


def _trial_dir(sweep_dir: Path, number: int) -> str:
    """The run directory of trial ``number``."""
    return str(sweep_dir / f"trial_{number:04d}")


def _new_trial(study, distributions, space: SweepSpace, sweep_dir: Path, seed: int) -> _Job:
    trial = study.ask(distributions)
    values = _decoded_params(space, trial)
    record = TrialRecord(number=trial.number, state="running", params=values,
                         seed=trial_seed(seed, trial.number),
                         run_dir=_trial_dir(sweep_dir, trial.number))
    try:
        config = space.trial_config(values, record.seed).to_dict()
    except TrainConfigError as error:
        record.state, record.error = FAILED, one_line(error, ERROR_CHARS)
        config = {}
    record.seed = config.get("seed", record.seed)
    return _Job(trial, record, config)


def _tell(study, job: _Job, log: Callable[[str], None]) -> None:
    record = job.record
    record.evaluations = [
        [step, value] for step, value in
        sorted(study.get_trials(deepcopy=False)[record.number].intermediate_values.items())
    ]
    if record.state == COMPLETE:
        study.tell(job.trial, record.score)
    elif record.state == PRUNED:
        study.tell(job.trial, state=optuna.trial.TrialState.PRUNED)
    else:
        study.tell(job.trial, state=optuna.trial.TrialState.FAIL)
    score = "" if record.score is None else f" score {record.score:.3f}"
    error = "" if record.error is None else f": {record.error}"
    log(f"trial {record.number} {record.state}{score} ({record.run_dir}){error}")


def best_trial(records: list[TrialRecord], direction: str) -> TrialRecord | None:
    """The complete trial with the best score (the first one on ties), or None."""
    complete = [r for r in records if r.state == COMPLETE and r.score is not None
                and math.isfinite(r.score)]
    if not complete:
        return None
    sign = 1 if direction == "maximize" else -1
    return max(complete, key=lambda r: (sign * r.score, -r.number))


def _write_summary(sweep_dir: Path, space: SweepSpace, records: list[TrialRecord], seed: int,
                   trials: int, workers: int, interrupted: bool) -> SweepResult:
    best = best_trial(records, space.direction)
    best_config = None
    if best is not None:
        # the trial's own config, with the base's progress setting (trials run without a bar)
        best_config = space.trial_config(best.params, best.seed).to_dict()
        best_config["progress"] = space.base["progress"]
        with atomic_path(sweep_dir / BEST_CONFIG) as temporary:
            temporary.write_text(dump_yaml(best_config))
    summary = {
        "space": str(space.path), "seed": seed, "trials_requested": trials, "workers": workers,
        "objective": {"metric": space.metric, "direction": space.direction},
        "pruner": space.pruner, "interrupted": interrupted,
        "trials": [asdict(record) for record in records],
        "best_trial": None if best is None else best.number,
        "best_score": None if best is None else best.score,
        "best_params": None if best is None else best.params,
        "best_config": best_config,
    }
    with atomic_path(sweep_dir / SUMMARY) as temporary:
        temporary.write_text(json.dumps(summary, indent=2) + "\n")
    return SweepResult(sweep_dir, records, best, best_config, interrupted)


def format_summary(result: SweepResult) -> str:
    """The summary table: trial, state, score, timesteps, params, run dir; then the best."""
    header = ("trial", "state", "score", "steps", "params", "run dir")
    rows = [header]
    for r in result.trials:
        params = ", ".join(f"{k}={_short(v)}" for k, v in r.params.items())
        rows.append((str(r.number), r.state, "-" if r.score is None else f"{r.score:.3f}",
                     "-" if r.timesteps is None else f"{r.timesteps:,}", params, r.run_dir))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True))
             + "  " + row[-1]
             for row in rows]
    lines += [f"trial {r.number} {r.state}: {r.error}" for r in result.trials if r.error]
    if result.best is None:
        lines.append("no trial completed: no best config")
    else:
        lines.append(f"best: trial {result.best.number} (score {result.best.score:.3f}); "
                     f"train it: python train.py --config {result.sweep_dir / BEST_CONFIG}")
    return "\n".join(lines)


def _short(value: Any) -> str:
    """A sampled value for the summary table, at most `VALUE_CHARS` characters."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return shorten(json.dumps(value) if isinstance(value, (list, dict)) else str(value),
                   VALUE_CHARS)
