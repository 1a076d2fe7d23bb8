"""PPO self-play training (sb3-contrib MaskablePPO on the batched `SkyjoVecEnv`).

`train(config, run_dir)` is the whole job; `train.py` is a thin command line over it.

Run directory layout::

    RUN_DIR/config.yaml            the resolved config (what was actually run)
    RUN_DIR/tb/                    TensorBoard events (SB3 scalars, eval/*, hparams)
    RUN_DIR/checkpoints/last.zip   latest checkpoint (atomic), used by --resume
    RUN_DIR/checkpoints/stage_N.zip  with stages: the checkpoint at stage N's end (and
                                   stage_N.best.zip, best.zip then), for --from-stage
    RUN_DIR/best.zip               best checkpoint by evaluation score
    RUN_DIR/snapshots/*.zip        frozen learner snapshots in the opponent pool
    RUN_DIR/eval.jsonl             one line per evaluation
    RUN_DIR/expert/policy.zip      the policy the last expert-iteration search ran over

Reward (the env's, see `skyjo_env.vec_env.SkyjoVecEnv`): at each round end
``-(own round score - mean of the others') / 100``; at the game end ``+1/k`` to each of the
``k`` winners and ``-1/(P-k)`` to the others. The objective is winning whole games; the
round term is the dense signal that gets there. On top, training adds potential-based
shaping (`GridPotentialShaping`, weight ``shaping``): with ``Phi`` = minus the expected
value of the learner's own grid / 100 (face-down cards at the deck mean), each step earns
``gamma * Phi(next) - Phi(previous)`` (``Phi`` = 0 after the episode's end). Summed over an
episode this is a constant, so it leaves the best policy unchanged (Ng et al., 1999) while
crediting a good swap at once instead of at the round end. With ``win_bonus`` > 0 it also
adds that multiple of the game-end placement reward (`win_bonus_wrapper`).

Opponents: for each game and each opponent seat, one draw from ``opponent_mix``
(``random``, ``greedy``, ``ev``, ``self``), or with ``opponent_draw: table`` one draw for
all the opponent seats of a game; ``self`` picks a uniformly random frozen snapshot of the
learner for each seat, taken every time the evaluation score reaches a new best of at
least ``snapshot_min_score`` (with no snapshot yet, ``self`` falls back to the heuristics).

Expert iteration (``expert_interval`` > 0, `agents.training.expert`): at the start of a
rollout every ``expert_interval`` learner decisions, the search over the current policy
plays self-play games, and the actor is fitted to its moves (anchored to its own
probabilities, ``expert_anchor``), or with ``expert_soft_temperature`` to soft targets from
the search's action values (with ``expert_value_fit`` the critic to the games' outcomes
too) before PPO goes on. TensorBoard gets ``expert/agreement_before`` (how often the
policy already chose the searched move), ``expert/agreement_after`` (after the fit),
``expert/loss``, ``expert/value_loss`` (with ``expert_value_fit``),
``expert/decisions``, ``expert/fitted`` (the decisions fitted: the searched ones with soft
targets) and ``expert/seconds``; the evaluations' win rates show whether it helps.

Resume (``train.py --resume``) continues the very same run: checkpoints are taken at the
start of a rollout (after the previous rollout's update, see `Trainer.checkpoint`), and
``checkpoints/last.zip`` holds, beside the weights and the optimizer, everything the run
depends on (`agents.training.run_state`). A run killed at any moment and resumed writes
the same ``eval.jsonl`` and ends with the same weights as a run never stopped.

Stages (``stages:``, `TrainConfig.stage_configs`) run one after the other in the same run
directory, each to its own ``total_timesteps`` (the steps of that stage). At a stage's end
the run checkpoints and evaluates (as at the end of a run); the next stage builds a fresh
MaskablePPO with its own settings and optimizer, grows the previous stage's network into
its own when ``features`` or ``net_arch`` grew (`agents.ppo.checkpoint.widened_state`:
the same actions and values at first) and goes on with the same games, opponent pool,
step count, TensorBoard log and ``eval.jsonl``. Its learning rate falls from its
``learning_rate`` to its ``learning_rate_final`` over its own steps, and its evaluation,
checkpoint and expert-iteration schedules count from its start. Checkpoints, best.zip
and ``eval.jsonl`` lines record the stage (``stage`` in the metadata: number, name,
count, first step), TensorBoard gets ``train/stage`` (the stage's number) and each
stage's hyperparameters, and ``--resume`` continues inside any stage. The checkpoint at
each stage's end is kept (``checkpoints/stage_N.zip``): a new run whose first N stages are
the same continues from it (``train.py --from-stage``, `agents.training.from_stage`), as a
run resumed at that stage boundary.

The parts: `agents.training.start` checks a config once per start, `warm_start` starts
the network, `callbacks` drives the periodic work inside SB3's loop, `evaluator` scores
the learner, `expert_step` runs expert iteration, `run_state` saves and restores the run.
"""

from __future__ import annotations

import json
import math
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.ppo.architecture import policy_kwargs
from agents.ppo.checkpoint import (
    CheckpointError,
    checkpoint_metadata,
    read_metadata,
    save_checkpoint,
    widened_state,
)
from agents.training.callbacks import make_callback
from agents.training.config import TrainConfig
from agents.training.evaluator import EvaluationOpponents, evaluate_learner
from agents.training.expert_step import fit_policy, search_games
from agents.training.from_stage import copy_atomically, stage_end_best, stage_end_checkpoint
from agents.training.pool import OpponentPool, frozen_copy
from agents.training.ppo_update import trainer_ppo_class
from agents.training.run_dir import check_run_dir
from agents.training.run_state import export_run_state, restore_run, run_state_members
from agents.training.seeds import SEED_EVALUATION, derived_seed
from agents.training.shaping import shaping_wrapper, win_bonus_wrapper
from agents.training.start import TrainingStart, prepare_start
from agents.training.warm_start import (
    WarmStartInterrupted,
    imitation_warm_start,
    start_from_network,
    stops_raised_in_finalizers_kept_quiet,
)
from skyjo_env.encoding import ObservationLayout


def save_quietly(model, path: Path, metadata: dict, extra_members: dict | None = None) -> Path:
    """`save_checkpoint` without touching torch's global generator (it builds a network to
    check the file against), so where checkpoints fall never changes the run."""
    import torch

    with torch.random.fork_rng(devices=[]):
        return save_checkpoint(model, path, metadata, extra_members=extra_members)


class Trainer:
    """One training run in a run directory (see the module docstring).

    Args:
        start: The run's config with what checking it resolved (`prepare_start`).
        run_dir: its directory.
        on_evaluation: called as ``on_evaluation(timesteps, score)`` after each evaluation
            (``score``: the mean win rate against ``eval_opponents``); answering True
            before the last step asks for the polite stop a SIGTERM asks for (finish the
            rollout and its update, checkpoint, stop; the summary says ``interrupted``).
            Sweeps prune trials through it (`agents.sweep.runner.PruningHook`).
        log_lines: without a progress bar (``progress: false``), print what the bar
            would show above it anyway, a line each (evaluations, stages, expert steps,
            and a line per checkpoint with the speed), for a run whose output goes to a
            log file (``train.py --no-progress``).
    """

    def __init__(self, start: TrainingStart, run_dir: str | Path,
                 on_evaluation: Callable[[int, float], bool] | None = None,
                 log_lines: bool = False):
        #: the config of the whole run (with its ``stages``), as written to config.yaml
        self.run_config = start.config
        #: the config of each stage (one, the run's, without stages)
        self.stage_configs = start.config.stage_configs()
        self.stage_names = start.config.stage_names()
        #: the stage running (0 = the first) and the step it started at
        self.stage = 0
        self.stage_start = 0
        config = self.stage_configs[0]
        self.start = start
        #: the running stage's config
        self.config = config
        self.evaluation = start.evaluation
        self.rules = start.rules
        self.on_evaluation = on_evaluation
        self.run_dir = Path(run_dir)
        self.pool = OpponentPool(config, self.rules)
        self.best_score = -math.inf
        self.best_pool_score = -math.inf
        self.next_eval = config.eval_interval or config.total_timesteps
        self.next_checkpoint = config.checkpoint_interval
        self.next_expert = config.expert_interval
        self.expert_stats: dict[str, float] = {}
        self.stop_requested = False
        self.stopped_at_checkpoint: int | None = None
        self.last_eval_step: int | None = None
        self.eval_lines = 0
        self.rollouts_done = 0
        self.pending_log: dict[str, list] | None = None
        self._bar = None
        #: without a progress bar, print its lines anyway (evaluations, stages, expert
        #: steps, checkpoints), one per line, for a log file
        self.log_lines = log_lines
        self._started_at: tuple[float, int] | None = None
        #: what the next ``learn`` logs at its start: "run" (a new run's hyperparameters
        #: and imitation figures), "stage" (a new stage's hyperparameters) or None
        self.start_log: str | None = None
        self.model = None
        self.env = None
        self.vec_env = None
        self.monitor = None
        self.shaping = None
        self.imitation_stats: dict[str, float] = {}
        self.warmup_rollouts = 0
        self._in_warm_start = False
        #: the signal that stopped the warm start (its exception can be swallowed, e.g.
        #: when it lands inside numba's compiler: the warm start checks this between parts)
        self._warm_start_signal: str | None = None

    # paths
    @property
    def last_checkpoint(self) -> Path:
        """Path of the latest checkpoint."""
        return self.run_dir / "checkpoints" / "last.zip"

    @property
    def best_checkpoint(self) -> Path:
        """Path of the best checkpoint by evaluation score."""
        return self.run_dir / "best.zip"

    @property
    def eval_log(self) -> Path:
        """Path of the evaluation log (one JSON line per evaluation)."""
        return self.run_dir / "eval.jsonl"

    @property
    def staged(self) -> bool:
        """Whether the run's config has stages."""
        return bool(self.run_config.stages)

    @property
    def stage_end(self) -> int:
        """The step the running stage trains to (its start plus its ``total_timesteps``)."""
        return self.stage_start + self.config.total_timesteps

    @property
    def last_stage(self) -> bool:
        """Whether the running stage is the run's last."""
        return self.stage + 1 >= len(self.stage_configs)

    def stage_record(self) -> dict[str, Any]:
        """The running stage as checkpoints record it: ``{"number", "name", "of",
        "start"}`` (number 1 = the first stage; start: its first step)."""
        return {"number": self.stage + 1, "name": self.stage_names[self.stage],
                "of": len(self.stage_configs), "start": self.stage_start}

    def _next_multiple(self, timesteps: int, interval: int) -> int:
        """The first step after ``timesteps`` at a multiple of ``interval`` from the
        stage's start."""
        return self.stage_start + ((timesteps - self.stage_start) // interval + 1) * interval

    def _metadata(self, timesteps: int, **extra: Any) -> dict[str, Any]:
        if self.staged:
            extra["stage"] = self.stage_record()
            # the whole run's stages: what a --from-stage start compares a new config with
            extra["run_config"] = self.run_config.to_dict()
        return checkpoint_metadata(
            self.rules,
            timesteps,
            config=self.config.to_dict(),
            best_score=None if math.isinf(self.best_score) else self.best_score,
            best_pool_score=None if math.isinf(self.best_pool_score) else self.best_pool_score,
            snapshots=[agent.name for agent in self.pool.snapshots],
            **extra,
        )

    # construction
    def build_env(self):
        """The batched training env with the opponent pool."""
        from stable_baselines3.common.vec_env import VecMonitor

        from skyjo_env.vec_env import SkyjoVecEnv

        self.vec_env = SkyjoVecEnv(
            num_envs=self.config.n_envs, rules=self.rules, opponents=self.pool,
            seed=self.config.seed,
        )
        # VecMonitor sits below the shaping, so rollout/ep_rew_mean is the env's own reward
        env = self.monitor = VecMonitor(self.vec_env)
        if self.config.shaping > 0:
            env = self.shaping = shaping_wrapper(
                env, ObservationLayout(self.rules), self.config.gamma, self.config.shaping
            )
        if any(stage.win_bonus > 0 for stage in self.stage_configs):
            # above the monitor too: rollout/ep_rew_mean stays the env's own reward
            env = win_bonus_wrapper(env, lambda: self.config.win_bonus)
        self.env = env
        return self.env

    def build_model(self):
        """A fresh MaskablePPO for the env (`agents.training.ppo_update`: its update
        computes the policy's features once per rollout)."""
        config = self.config
        start, end = config.learning_rate, config.learning_rate_final
        # SB3's progress runs from 1 at the run's step 0 (a resume: at the step it resumes
        # from, with the stage's end as its total) to 0 at the stage's end; rescaled, the
        # rate falls from learning_rate to learning_rate_final over the stage's own steps
        # (the first stage's scale is exactly 1)
        scale = self.stage_end / config.total_timesteps
        # seed= goes through SB3's public set_random_seed: python, numpy and torch global
        # generators, the action space, and env.seed(seed) (the VecEnv's documented
        # seeding); a later stage's model must not reseed the games that go on
        return trainer_ppo_class()(
            "MlpPolicy",
            self.env,
            learning_rate=lambda remaining: end + (start - end) * (remaining * scale),
            n_steps=config.n_steps,
            batch_size=config.batch_size,
            n_epochs=config.n_epochs,
            gamma=config.gamma,
            gae_lambda=config.gae_lambda,
            clip_range=config.clip_range,
            ent_coef=config.ent_coef,
            vf_coef=config.vf_coef,
            max_grad_norm=config.max_grad_norm,
            policy_kwargs=policy_kwargs(config.policy_architecture(), self.rules),
            tensorboard_log=str(self.run_dir / "tb"),
            seed=config.seed if self.stage == 0 else None,
            device="cpu",
            verbose=0,
        )

    # warm starts: a saved network or imitation
    def start_from_network(self) -> None:
        """Load ``init_from``'s actor and critic into the fresh model
        (`agents.training.warm_start.start_from_network`); the value warm-up rollouts
        follow, since this run's reward or shaping may differ from the network's."""
        start_from_network(self.model.policy, self.config.init_from,
                           self.start.initial_network or {}, self.config.progress)
        self.warmup_rollouts = self.config.value_warmup_rollouts

    def warm_start(self) -> dict[str, float]:
        """Clone the teacher into the fresh policy
        (`agents.training.warm_start.imitation_warm_start`); the value warm-up rollouts
        follow."""
        stats = imitation_warm_start(self.model.policy, self.rules, self.config,
                                     lambda: self._warm_start_signal)
        self.imitation_stats = stats
        self.warmup_rollouts = self.config.value_warmup_rollouts
        return stats

    def _warm_start_new_model(self) -> None:
        """Build the model of a new run and warm-start it (``init_from``, or imitation with
        the stop handlers raising `WarmStartInterrupted`)."""
        self.model = self.build_model()
        if self.config.init_from is not None:
            self.start_from_network()
        elif self.config.imitation_games > 0:
            self._in_warm_start = True
            try:
                with stops_raised_in_finalizers_kept_quiet():
                    self.warm_start()
            except KeyboardInterrupt as error:  # Ctrl-C inside a non-Python call
                raise WarmStartInterrupted.by("SIGINT") from error
            finally:
                self._in_warm_start = False

    # expert iteration
    def due_for_expert(self, timesteps: int) -> bool:
        """Whether an expert-iteration step is due (never at or past the last step)."""
        return (self.config.expert_interval > 0 and timesteps >= self.next_expert
                and timesteps < self.stage_end)

    def expert_iteration(self, timesteps: int, logger=None) -> dict[str, float] | None:
        """Search games over the current policy, then fit the network to them
        (`agents.training.expert_step`).

        Everything is seeded from the master seed and ``timesteps``, so a resumed run
        repeats it exactly. A stop request (SIGTERM, Ctrl-C) between chunks abandons the
        step with the network unchanged and the step still due (None is returned).

        Returns:
            ``{"agreement_before", "agreement_after", "loss", "decisions", "fitted",
            "seconds"}``
            and, with ``expert_value_fit``, ``"value_loss"`` (agreement: share of the
            searched moves the greedy policy plays, before and after the fit), or None
            when abandoned.
        """
        config = self.config
        started = time.perf_counter()
        policy_path = self.run_dir / "expert" / "policy.zip"
        save_quietly(self.model, policy_path, self._metadata(timesteps))
        self._write_progress(f"[{timesteps:>10,} steps] expert iteration: "
                             f"{config.expert_games} games of {config.expert_search}")
        searched = search_games(config, self.rules, policy_path, timesteps,
                                should_stop=lambda: self.stop_requested,
                                on_chunk_done=self._games_progress(timesteps, started))
        if searched is None:
            return None
        self.freeze_actor(False)  # a step during the value warm-up trains the actor too
        stats = fit_policy(self.model.policy, config, self.rules, searched, timesteps)
        self.freeze_actor(self.rollouts_done < self.warmup_rollouts)
        stats["seconds"] = time.perf_counter() - started
        before, after = stats["agreement_before"], stats["agreement_after"]
        self.next_expert = self._next_multiple(timesteps, config.expert_interval)
        self.expert_stats = stats
        if logger is not None:
            for key, value in stats.items():
                logger.record(f"expert/{key}", value)
        self._write_progress(
            f"[{timesteps:>10,} steps] expert iteration: {stats['decisions']:,.0f} decisions, "
            f"policy agreed with search {before:.1%} before, {after:.1%} after the fit"
            f" in {stats['seconds']:.0f} s"
        )
        return stats

    def freeze_actor(self, frozen: bool) -> None:
        """Stop (or resume) gradient flow into the actor: value-only updates while frozen."""
        from agents.training.imitation import actor_parameters

        for parameter in actor_parameters(self.model.policy):
            parameter.requires_grad_(not frozen)

    # progress
    def _games_progress(self, timesteps: int, started: float) -> Callable[[int], None]:
        """A callback that writes how many of an expert step's search games are done (and
        the seconds since ``started``) each time a chunk of them ends."""
        done = 0

        def chunk_done(games: int) -> None:
            nonlocal done
            done += games
            self._write_progress(
                f"[{timesteps:>10,} steps] expert games {done}/{self.config.expert_games}"
                f" in {time.perf_counter() - started:.0f} s")
        return chunk_done

    def _write_progress(self, line: str) -> None:
        """A line above the progress bar, or printed alone with ``log_lines``."""
        if self._bar is not None:
            self._bar.write(line)
        elif self.log_lines:
            print(line, flush=True)

    def open_progress(self, start: int) -> None:
        """Start the progress bar at ``start`` steps (and the clock of ``log_lines``' speed)."""
        self._started_at = (time.perf_counter(), start)
        if self.config.progress:
            from tqdm import tqdm

            desc = (f"stage {self.stage + 1}/{len(self.stage_configs)}" if self.staged
                    else "training")
            self._bar = tqdm(total=self.stage_end, initial=start, unit="step",
                             dynamic_ncols=True, desc=desc)

    def advance_progress(self, timesteps: int) -> None:
        """Move the bar to ``timesteps``."""
        if self._bar is not None:
            self._bar.update(timesteps - self._bar.n)

    def close_progress(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    # periodic work
    def due_for_eval(self, timesteps: int) -> bool:
        """Whether an evaluation is due."""
        return timesteps >= self.next_eval

    def due_for_checkpoint(self, timesteps: int) -> bool:
        """Whether a checkpoint is due."""
        return timesteps >= self.next_checkpoint

    def evaluate(self, timesteps: int, logger=None) -> dict:
        """Evaluate against the baselines, log, keep best.zip, add a snapshot on a new best."""
        config = self.config
        interval = config.eval_interval or config.total_timesteps
        self.next_eval = self._next_multiple(timesteps, interval)
        self.last_eval_step = timesteps
        started = time.perf_counter()
        evaluation = self.evaluation
        results = evaluate_learner(self.model, self.rules, evaluation.take(), config.eval_games,
                                   evaluation.seed)
        score = float(np.mean([r["win_rate"] for r in results.values()]))
        if logger is not None:
            _log_evaluation(logger, results, score, len(self.pool.snapshots))
        line = {"timesteps": timesteps, "score": score, "results": results,
                "seconds": round(time.perf_counter() - started, 2)}
        if self.staged:
            line["stage"] = self.stage_names[self.stage]
        with open(self.eval_log, "a") as handle:
            handle.write(json.dumps(line) + "\n")
        self.eval_lines += 1
        self._keep_best(timesteps, score)
        summary = " ".join(f"{s}={r['win_rate']:.2f}" for s, r in results.items())
        self._write_progress(f"[{timesteps:>10,} steps] win rate vs {summary}")
        if (self.on_evaluation is not None and self.on_evaluation(timesteps, score)
                and (timesteps < self.stage_end or not self.last_stage)):
            # (at the run's end there is nothing to stop)
            self.stop_requested = True
        return line

    def _keep_best(self, timesteps: int, score: float) -> None:
        """Save best.zip on a new best score; add a pool snapshot on a new best that
        reaches ``snapshot_min_score``."""
        if score > self.best_score:
            self.best_score = score
            save_quietly(self.model, self.best_checkpoint, self._metadata(timesteps, score=score))
        if score >= self.config.snapshot_min_score and score > self.best_pool_score:
            self.best_pool_score = score
            name = f"snapshot_{timesteps:012d}"
            save_quietly(self.model, self.run_dir / "snapshots" / name, self._metadata(timesteps))
            self.pool.add_snapshot(frozen_copy(self.model, name))

    def checkpoint(self, timesteps: int) -> Path:
        """Write checkpoints/last.zip atomically, with the run state to resume from
        (`agents.training.run_state`).

        Call it only where no rollout is half collected (at a rollout start, or after
        ``learn`` returned), or the resumed run is not the same run.
        """
        self.next_checkpoint = self._next_multiple(timesteps, self.config.checkpoint_interval)
        extra = run_state_members(*export_run_state(self, timesteps))
        path = save_quietly(self.model, self.last_checkpoint, self._metadata(timesteps), extra)
        if self._bar is None:  # the bar shows the steps; a log gets a line per checkpoint
            self._write_progress(f"[{timesteps:>10,} steps] checkpoint {path}"
                                 f"{self._speed_note(timesteps)}")
        return path

    def _speed_note(self, timesteps: int) -> str:
        """``" (N steps/s, stage K/S)"``: the speed since this ``learn`` started."""
        if self._started_at is None:
            return ""
        started, first_step = self._started_at
        seconds = time.perf_counter() - started
        speed = (timesteps - first_step) / seconds if seconds > 0 else 0.0
        stage = (f", stage {self.stage + 1}/{len(self.stage_configs)}" if self.staged else "")
        return f" ({speed:,.0f} steps/s{stage})"

    # signals
    def _install_stop_handlers(self) -> Callable[[], None]:
        """SIGTERM and a first Ctrl-C ask for a polite stop; returns the undo function.

        During the warm start (nothing to save yet) they raise `WarmStartInterrupted`; during
        PPO they set ``stop_requested`` (the run then checkpoints at the next rollout start
        and stops); a second Ctrl-C interrupts at once.
        """
        def request_stop(signum, frame):
            if self._in_warm_start:
                self._warm_start_signal = signal.Signals(signum).name
                raise WarmStartInterrupted.by(self._warm_start_signal)
            if self.stop_requested and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self.stop_requested = True
            self._write_progress("stopping: finishing this rollout, then a last checkpoint "
                                 "(Ctrl-C again to stop at once)")

        previous = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                previous[signum] = signal.signal(signum, request_stop)
            except ValueError:  # not the main thread: no handlers there
                return lambda: None

        def restore() -> None:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

        return restore

    # the job
    def run(self) -> dict[str, Any]:
        """Train to ``total_timesteps`` (continuing the last checkpoint when the start
        says ``resume``).

        Returns:
            A summary: ``timesteps``, ``interrupted``, ``best_score``, ``last_checkpoint``,
            ``best_checkpoint``, ``steps_per_second``.

        Raises:
            WarmStartInterrupted: SIGTERM or Ctrl-C during the warm start (nothing written).
            CheckpointError: resuming a missing, corrupt or incompatible checkpoint.
            TrainConfigError: the warm start's or expert iteration's Ray cannot start.
        """
        import torch

        torch.set_num_threads(self.config.torch_threads)
        undo_handlers = self._install_stop_handlers()
        try:
            return self._run()
        finally:
            undo_handlers()
            self.close_progress()

    def _run(self) -> dict[str, Any]:
        resume = self.start.resume
        if resume:
            self._enter_saved_stage()
        self.build_env()
        done = 0
        if resume:
            done = restore_run(self)
        else:
            self._warm_start_new_model()
            self.start_log = "run"
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.yaml").write_text(
            yaml.safe_dump(self.run_config.to_dict(), sort_keys=False)
        )
        started, start_steps = time.perf_counter(), done
        aborted = False
        try:
            self._run_stages(continuing=resume)
        except KeyboardInterrupt:
            # a second Ctrl-C: the model may be mid-update, so the last checkpoint stands
            self.stop_requested = aborted = True
        timesteps = self._finish(aborted)
        elapsed = time.perf_counter() - started
        return {
            "timesteps": timesteps,
            "interrupted": self.stop_requested,
            "best_score": self.best_score,
            "last_checkpoint": str(self.last_checkpoint),
            "best_checkpoint": str(self.best_checkpoint),
            "steps_per_second": (timesteps - start_steps) / elapsed if elapsed > 0 else 0.0,
            "stage": self.stage_names[self.stage],
        }

    def _run_stages(self, continuing: bool) -> None:
        """PPO to the running stage's end, then each later stage in turn (`_next_stage`),
        until the last ends or a stop is asked for.

        Args:
            continuing: The model continues a step count (a resume): SB3 must not reset
                it (a new run's first ``learn`` does).
        """
        while True:
            remaining = self.stage_end - int(self.model.num_timesteps)
            if remaining > 0:
                self.model.learn(
                    remaining,
                    callback=make_callback(self),
                    reset_num_timesteps=not continuing,
                    tb_log_name="ppo",
                )
            continuing = True
            if self.stop_requested or self.last_stage or not self._end_stage():
                return
            self._next_stage(int(self.model.num_timesteps))

    def _end_stage(self) -> bool:
        """A stage (not the last) has reached its end: checkpoint, evaluate unless an
        evaluation was just taken, checkpoint again (so a resume skips the evaluation).

        Returns:
            Whether the run goes on (an evaluation hook may have asked for a stop).
        """
        timesteps = int(self.model.num_timesteps)
        self.checkpoint(timesteps)
        if self.last_eval_step != timesteps:
            self.evaluate(timesteps)
            self.checkpoint(timesteps)
        self._keep_stage_end()
        return not self.stop_requested

    def _keep_stage_end(self) -> None:
        """Keep the checkpoint just taken at the running stage's end, and best.zip as it
        is then, as ``checkpoints/stage_N.zip`` and ``stage_N.best.zip`` (atomically): the
        start of a ``--from-stage`` run (`agents.training.from_stage`)."""
        if not self.staged:
            return
        kept = stage_end_checkpoint(self.run_dir, self.stage + 1)
        copy_atomically(self.last_checkpoint, kept)
        if self.best_checkpoint.is_file():
            copy_atomically(self.best_checkpoint, stage_end_best(kept))

    def _enter_stage(self, index: int, start: int) -> None:
        """Make stage ``index`` (starting at step ``start``) the running one: its config,
        its opponent mix in the pool and its evaluation opponents."""
        self.stage, self.stage_start = index, start
        self.config = self.stage_configs[index]
        self.pool.set_mix(self.config)
        if index > 0:
            self.evaluation = EvaluationOpponents(
                self.config.eval_opponents, self.rules,
                derived_seed(self.config.seed, SEED_EVALUATION),
            )

    def _next_stage(self, timesteps: int) -> None:
        """Start the next stage at ``timesteps``: a fresh MaskablePPO of its config with
        the previous network grown into it, the step count, last observations, episode
        infos and logger carried over, its schedules counted from its start; with
        ``fresh_pool``, an empty opponent pool."""
        previous = self.model
        self._enter_stage(self.stage + 1, timesteps)
        if self.config.fresh_pool:
            self.pool.drop_snapshots()
            self.best_pool_score = -math.inf
        self.model = model = self.build_model()
        grown = widened_state(previous.policy.state_dict(), model.policy.state_dict())
        model.policy.load_state_dict(grown)
        # the same run goes on: SB3's learn continues these instead of resetting the games
        model.num_timesteps = previous.num_timesteps
        model._n_updates = previous._n_updates
        model._last_obs = previous._last_obs
        model._last_episode_starts = previous._last_episode_starts
        model.ep_info_buffer = previous.ep_info_buffer
        model.ep_success_buffer = previous.ep_success_buffer
        if getattr(previous, "_logger", None) is not None:
            # one TensorBoard log, and the last update's losses still to be written in it
            model.set_logger(previous.logger)
        config = self.config
        self.next_eval = timesteps + (config.eval_interval or config.total_timesteps)
        self.next_checkpoint = timesteps + config.checkpoint_interval
        self.next_expert = timesteps + config.expert_interval
        self.start_log = "stage"
        if config.progress or self.log_lines:
            print(f"[{timesteps:>10,} steps] stage {self.stage + 1}/{len(self.stage_configs)}: "
                  f"{self.stage_names[self.stage]}", flush=True)

    def _enter_saved_stage(self) -> None:
        """Before a resume: make the stage the last checkpoint records the running one.

        Raises:
            CheckpointError: The checkpoint records no stage, or one this config lacks.
        """
        saved = read_metadata(self.last_checkpoint).get("stage")
        if not self.staged:
            if saved is not None:
                raise CheckpointError(
                    f"checkpoint {str(self.last_checkpoint)!r} was written by a run with "
                    "stages; this config has none: resume with the run's own config"
                )
            return
        count = len(self.stage_configs)
        try:
            number, start = saved["number"], saved["start"]
            valid = all(isinstance(v, int) and not isinstance(v, bool) for v in (number, start))
        except (KeyError, TypeError):
            valid = False
        if not valid or not 1 <= number <= count or start < 0:
            raise CheckpointError(
                f"checkpoint {str(self.last_checkpoint)!r} records stage {saved!r}; this "
                f"config has {count} stages: resume with the run's own config"
            )
        self._enter_stage(number - 1, start)

    def _finish(self, aborted: bool) -> int:
        """The steps the run ends at; after a full or politely stopped run, the last
        checkpoint and (unless one was just taken) the last evaluation."""
        timesteps = int(self.model.num_timesteps)
        if self.stopped_at_checkpoint is not None:
            # SB3 took one step of the next rollout before it saw the stop: not saved
            return self.stopped_at_checkpoint
        if aborted:  # what a resume would continue from
            return (read_metadata(self.last_checkpoint)["timesteps"]
                    if self.last_checkpoint.is_file() else 0)
        self.checkpoint(timesteps)
        if not self.stop_requested and self.last_eval_step != timesteps:
            self.evaluate(timesteps)
            self.checkpoint(timesteps)  # records the evaluation, so a resume skips it
        if timesteps >= self.stage_end:  # the last rollout may overshoot the stage's steps
            self._keep_stage_end()
        return timesteps


def _log_evaluation(logger, results: dict, score: float, snapshots: int) -> None:
    """Record an evaluation's ``eval/*`` scalars in an SB3 logger."""
    for spec, result in results.items():
        name = spec.replace(":", "_").replace("/", "_")
        logger.record(f"eval/win_rate_vs_{name}", result["win_rate"])
        logger.record(f"eval/mean_round_score_vs_{name}", result["mean_round_score"])
    logger.record("eval/score", score)
    logger.record("eval/snapshots", snapshots)


def run_training(start: TrainingStart, run_dir: str | Path,
                 on_evaluation: Callable[[int, float], bool] | None = None,
                 log_lines: bool = False) -> dict[str, Any]:
    """Train (or resume) the run of a checked start; see `Trainer.run` (and `Trainer` for
    ``on_evaluation`` and ``log_lines``). The run directory is checked writable first
    (`check_run_dir`: `RunDirError`, a `TrainConfigError`)."""
    check_run_dir(run_dir)
    return Trainer(start, run_dir, on_evaluation=on_evaluation, log_lines=log_lines).run()


def train(config: TrainConfig, run_dir: str | Path, resume: bool = False,
          on_evaluation: Callable[[int, float], bool] | None = None) -> dict[str, Any]:
    """Train (or resume) a run: check the config once (`prepare_start`), then
    `run_training`.

    Raises:
        TrainConfigError: A bad agent spec, ``init_from`` or teacher, or Ray missing
            (before any work); see `Trainer.run` for the rest.
    """
    return run_training(prepare_start(config, resume), run_dir, on_evaluation=on_evaluation)
