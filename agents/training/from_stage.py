"""A new staged run that starts where a stage of an earlier run ended
(``train.py --from-stage RUN/checkpoints/stage_N.zip``).

A staged run keeps the checkpoint it took at the end of each stage (``stage_N.zip``, with
``stage_N.best.zip``, its best.zip then; `stage_end_checkpoint`). A new config whose first
N stages are the same (every key but those a resume may change, and the names) needs none
of their work again: `check_stage_start` compares them, and `seed_run_dir` gives the new
run directory what a run stopped at that stage boundary would hold (the checkpoint as
``checkpoints/last.zip``, best.zip, the evaluation lines, the snapshots and TensorBoard
events up to that step). The run then resumes from there, so it is the run the new config
makes from scratch, step for step (the training is deterministic; tested), only shorter.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from agents.atomic import atomic_path
from agents.ppo.checkpoint import CheckpointError, read_metadata
from agents.training.config import TrainConfig, TrainConfigError, stage_label
from agents.training.run_state import RESUME_MAY_CHANGE, config_differences, read_run_state
from skyjo_env.core.errors import shorten

#: Config keys that may differ between the shared stages: those a resume may change, but
#: ``total_timesteps``, which is the stage's length.
MAY_DIFFER = RESUME_MAY_CHANGE - {"total_timesteps"}
#: The file in the new run directory that says where its first stages came from.
FROM_STAGE_RECORD = "from_stage.json"
_SNAPSHOT = re.compile(r"snapshot_(\d{1,15})\.zip")


def stage_end_checkpoint(run_dir: str | Path, number: int) -> Path:
    """Where a staged run keeps the checkpoint taken at the end of stage ``number`` (1 =
    the first): ``RUN_DIR/checkpoints/stage_N.zip``."""
    return Path(run_dir) / "checkpoints" / f"stage_{number}.zip"


def stage_end_best(checkpoint: Path) -> Path:
    """The best.zip kept beside a stage-end checkpoint: ``stage_N.best.zip``."""
    return checkpoint.with_name(f"{checkpoint.stem}.best.zip")


def copy_atomically(source: Path, destination: Path) -> None:
    """Copy ``source`` to ``destination`` through a temporary file renamed over it."""
    with atomic_path(destination) as temporary:
        shutil.copyfile(source, temporary)


@dataclass(frozen=True)
class StageStart:
    """A checked start of a new run at the end of an earlier run's stage.

    Attributes:
        checkpoint: The stage-end checkpoint.
        number: The stage it ends (1 = the first).
        name: That stage's name.
        timesteps: The checkpoint's step.
        source_dir: The earlier run's directory (the checkpoint's ``checkpoints/``'s parent).
    """

    checkpoint: Path
    number: int
    name: str
    timesteps: int
    source_dir: Path


def check_stage_start(checkpoint: str | Path, config: TrainConfig) -> StageStart:
    """Check that a run of ``config`` can start at ``checkpoint``: a checkpoint a staged
    run took at the end of one of its stages, whose stages up to that one are ``config``'s
    first stages (same names, same values of every key but `MAY_DIFFER`).

    Raises:
        CheckpointError: One line naming the checkpoint and the problem: unreadable or
            damaged, not from a staged run (or from one written before checkpoints
            recorded their run's stages), taken inside a stage, or a first stage of
            ``config`` that differs (naming the stage and up to three keys).
    """
    path = Path(checkpoint)
    where = f"--from-stage checkpoint {str(path)!r}"
    try:
        metadata = read_metadata(path)
    except CheckpointError as error:
        raise CheckpointError(f"--from-stage: {error}") from None
    stage, run = metadata.get("stage"), metadata.get("run_config")
    if not isinstance(stage, dict) or not isinstance(run, dict):
        raise CheckpointError(
            f"{where} records no run with stages (or was written before checkpoints recorded "
            "their run's stages); start from the end of a stage of a staged run, "
            "RUN_DIR/checkpoints/stage_N.zip")
    if not config.stages:
        raise CheckpointError(f"{where}: this config has no stages to continue with")
    try:
        earlier = TrainConfig.from_dict(run)
    except TrainConfigError as error:
        raise CheckpointError(f"{where}: its run's config no longer loads: {error}") from None
    number, first_step = stage.get("number"), stage.get("start")
    ours, theirs = config.stage_configs(), earlier.stage_configs()
    if (not all(isinstance(v, int) and not isinstance(v, bool) for v in (number, first_step))
            or not 1 <= number <= len(theirs) or first_step < 0):
        raise CheckpointError(f"{where} records stage {shorten(repr(stage), 80)}, which its "
                              f"run does not have")
    if number > len(ours):
        raise CheckpointError(f"{where} ends stage {number} of its run; this config has only "
                              f"{len(ours)} stages")
    for index in range(number):
        _check_same_stage(index, config, earlier, where)
    timesteps = int(metadata["timesteps"])
    end = first_step + theirs[number - 1].total_timesteps
    if timesteps < end:
        raise CheckpointError(
            f"{where} is at step {timesteps:,}, inside stage {number} (which ends at step "
            f"{end:,}); start from a stage's end, RUN_DIR/checkpoints/stage_N.zip")
    return StageStart(path, number, earlier.stage_names()[number - 1], timesteps,
                      path.resolve().parent.parent)


def _check_same_stage(index: int, config: TrainConfig, earlier: TrainConfig,
                      where: str) -> None:
    """Refuse a first stage of ``config`` that differs from the earlier run's."""
    label = stage_label(index, config.stages[index])
    ours_name, theirs_name = config.stage_names()[index], earlier.stage_names()[index]
    if ours_name != theirs_name:
        raise CheckpointError(f"{where}: {label} is named {ours_name!r} in this config and "
                              f"{theirs_name!r} in the run it continues")
    theirs = json.loads(json.dumps(earlier.stage_configs()[index].to_dict()))
    differing = config_differences(theirs, config.stage_configs()[index].to_dict(), MAY_DIFFER)
    if differing:
        raise CheckpointError(
            f"{where}: {label} differs from the run it continues: "
            f"{differing}; only the stages after it may change")


def seed_run_dir(start: StageStart, run_dir: str | Path) -> None:
    """Give the empty ``run_dir`` what the earlier run held at ``start``'s step, so that
    ``--resume`` continues from there: the checkpoint as ``checkpoints/last.zip``, its
    best.zip (``stage_N.best.zip``), the first evaluation lines (as many as the checkpoint
    records), the snapshots taken up to that step, the TensorBoard events (the resume
    drops those after it) and `FROM_STAGE_RECORD`.

    Raises:
        CheckpointError: ``run_dir`` holds files, the checkpoint's training state is
            damaged, or the earlier run's eval.jsonl has fewer lines than the checkpoint
            records, or its snapshots directory lacks a pool snapshot (one line naming it);
            all before anything is copied.
    """
    target = Path(run_dir)
    if target.exists() and any(target.iterdir()):
        raise CheckpointError(f"--run-dir {str(target)!r} is not empty: a run from "
                              "--from-stage starts in a new directory")
    source = start.source_dir
    state, _ = read_run_state(start.checkpoint)
    count = state.get("eval_lines") if isinstance(state, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise CheckpointError(
            f"--from-stage checkpoint {str(start.checkpoint)!r} has a damaged training state: "
            f"'eval_lines' is {shorten(repr(count), 40)}, not a count of evaluations")
    lines = _eval_lines(source / "eval.jsonl", count, start)
    _check_snapshots_kept(source / "snapshots", state.get("snapshots"), start)
    (target / "checkpoints").mkdir(parents=True, exist_ok=True)
    copy_atomically(start.checkpoint, target / "checkpoints" / "last.zip")
    if stage_end_best(start.checkpoint).is_file():
        copy_atomically(stage_end_best(start.checkpoint), target / "best.zip")
    (target / "eval.jsonl").write_text("".join(lines))
    _copy_snapshots(source / "snapshots", target / "snapshots", start.timesteps)
    if (source / "tb").is_dir():
        shutil.copytree(source / "tb", target / "tb")
    record = {"checkpoint": str(start.checkpoint.resolve()), "stage": start.number,
              "name": start.name, "timesteps": start.timesteps}
    (target / FROM_STAGE_RECORD).write_text(json.dumps(record, indent=2) + "\n")


def _eval_lines(eval_log: Path, count: int, start: StageStart) -> list[str]:
    """The first ``count`` lines of the earlier run's ``eval.jsonl``."""
    lines = eval_log.read_text().splitlines(keepends=True) if eval_log.is_file() else []
    if len(lines) < count:
        raise CheckpointError(
            f"--from-stage checkpoint {str(start.checkpoint)!r} records {count} evaluations, "
            f"but {eval_log} has {len(lines)} lines: the run's directory must be whole")
    return lines[:count]


def _check_snapshots_kept(folder: Path, names: object, start: StageStart) -> None:
    """Refuse, before anything is copied, an earlier run whose snapshots directory lacks
    a snapshot of the checkpoint's opponent pool (the resume would load it)."""
    for name in names if isinstance(names, list) else []:
        if not (isinstance(name, str) and (folder / f"{name}.zip").is_file()):
            raise CheckpointError(
                f"--from-stage checkpoint {str(start.checkpoint)!r} has snapshot "
                f"{shorten(repr(name), 60)} in its opponent pool, which {folder} lacks: the "
                "run's directory must be whole")


def _copy_snapshots(source: Path, target: Path, timesteps: int) -> None:
    """Copy the snapshots taken at or before ``timesteps`` (the only ones a checkpoint at
    that step can name)."""
    target.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        return
    for path in sorted(source.iterdir()):
        match = _SNAPSHOT.fullmatch(path.name)
        if match and int(match.group(1)) <= timesteps and path.is_file():
            shutil.copyfile(path, target / path.name)


def describe(start: StageStart) -> str:
    """One line for the log: where the run starts and what it takes from where."""
    return (f"starting at step {start.timesteps:,}, the end of stage {start.number} "
            f"({start.name!r}) of {start.source_dir}: stages 1 to {start.number} are that "
            f"run's ({start.checkpoint})")


__all__: list[str] = ["FROM_STAGE_RECORD", "MAY_DIFFER", "StageStart", "check_stage_start",
                      "copy_atomically", "describe", "seed_run_dir", "stage_end_best",
                      "stage_end_checkpoint"]
