"""The SB3 callback that drives a `Trainer` (progress, evaluations, expert iteration,
checkpoints, polite stops) and the logger values a rollout-start checkpoint carries over."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from agents.training.trainer import Trainer


def make_callback(trainer: Trainer):
    """The ``BaseCallback`` that runs ``trainer``'s periodic work inside ``model.learn``.

    Expert iteration and checkpoints happen at a rollout start (after the previous
    rollout's update: the one moment where the whole run is in the model, the env and the
    trainer), evaluations after any step that reaches their schedule; a stop request
    finishes the rollout and its update first.
    """
    from stable_baselines3.common.callbacks import BaseCallback

    class TrainerCallback(BaseCallback):
        """Progress bar, periodic evaluation, snapshots, checkpoints, polite stops."""

        def _on_training_start(self) -> None:
            if trainer.pending_log is not None:
                # resumed: hparams and warm-start figures are logged already; put back what
                # the last update recorded for the next dump
                restore_pending_log(self.logger, trainer.pending_log)
                trainer.pending_log = None
            if trainer.start_log == "run":
                log_run_start(self.logger, trainer)
            elif trainer.start_log == "stage":
                log_hparams(self.logger, trainer)
            trainer.start_log = None
            trainer.open_progress(self.num_timesteps)
            trainer.freeze_actor(trainer.rollouts_done < trainer.warmup_rollouts)

        def _on_rollout_start(self) -> None:
            # SB3 calls this after the previous rollout's update: the one moment where the
            # whole run is in the model, the env and the trainer (no half-filled buffer)
            if trainer.due_for_expert(self.num_timesteps) and not trainer.stop_requested:
                trainer.expert_iteration(self.num_timesteps, self.logger)
            if trainer.stop_requested or trainer.due_for_checkpoint(self.num_timesteps):
                trainer.checkpoint(self.num_timesteps)
                if trainer.stop_requested:
                    trainer.stopped_at_checkpoint = self.num_timesteps

        def _on_rollout_end(self) -> None:
            trainer.rollouts_done += 1
            if trainer.staged:  # written with this rollout's dump
                self.logger.record("train/stage", trainer.stage + 1)
            trainer.freeze_actor(trainer.rollouts_done <= trainer.warmup_rollouts)

        def _on_step(self) -> bool:
            trainer.advance_progress(self.num_timesteps)
            if trainer.due_for_eval(self.num_timesteps):
                trainer.evaluate(self.num_timesteps, self.logger)
            # a stop request finishes the rollout and its update first, so the checkpoint
            # is taken at a rollout start (and resuming it is the same run)
            return trainer.stopped_at_checkpoint is None

        def _on_training_end(self) -> None:
            trainer.freeze_actor(False)
            trainer.close_progress()

    return TrainerCallback()


def log_run_start(logger, trainer: Trainer) -> None:
    """Record a new run's hyperparameters (TensorBoard's hparams; those of its first
    stage) and its imitation figures (``imitation/*``) in an SB3 logger."""
    log_hparams(logger, trainer)
    for key, value in trainer.imitation_stats.items():
        logger.record(f"imitation/{key}", value)


def log_hparams(logger, trainer: Trainer) -> None:
    """Record the running stage's hyperparameters (TensorBoard's hparams) in an SB3
    logger; in a run with stages, with the stage's number and name (``stage``,
    ``stage_name``) and without the stage list."""
    from stable_baselines3.common.logger import HParam

    config = trainer.config.to_dict()
    config.pop("stages")  # a stage's config has none; the run's are in config.yaml
    if trainer.staged:
        config.update(stage=trainer.stage + 1, stage_name=trainer.stage_names[trainer.stage])
    hparams = {k: (v if isinstance(v, (int, float, str, bool)) else json.dumps(v))
               for k, v in config.items()}
    logger.record(
        "hparams",
        HParam(hparams, {"eval/score": 0.0, "rollout/ep_rew_mean": 0.0}),
        exclude=("stdout", "log", "json", "csv"),
    )


def pending_log_values(logger) -> dict[str, list]:
    """The numbers an SB3 logger holds for its next dump: ``{key: [value, count, excluded]}``.

    (SB3 records the update's losses after the rollout's dump, so they wait in the logger
    across a rollout-start checkpoint.)
    """
    pending = {}
    for key, value in logger.name_to_value.items():
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            excluded = logger.name_to_excluded.get(key)
            pending[key] = [float(value), int(logger.name_to_count.get(key, 0)),
                            None if excluded is None else list(excluded)]
    return pending


def restore_pending_log(logger, pending: dict[str, list]) -> None:
    """Put `pending_log_values` back into an SB3 logger."""
    for key, (value, count, excluded) in pending.items():
        logger.name_to_value[key] = value
        logger.name_to_count[key] = count
        logger.name_to_excluded[key] = None if excluded is None else tuple(excluded)
