"""PPO self-play training (sb3-contrib MaskablePPO on the batched `SkyjoVecEnv`).

`train(config, run_dir)` is the whole job; `train.py` is a thin command line over it.

Run directory layout::

    RUN_DIR/config.yaml            the resolved config (what was actually run)
    RUN_DIR/tb/                    TensorBoard events (SB3 scalars, eval/*, hparams)
    RUN_DIR/checkpoints/last.zip   latest checkpoint (atomic), used by --resume
    RUN_DIR/best.zip               best checkpoint by evaluation score
    RUN_DIR/snapshots/*.zip        frozen learner snapshots in the opponent pool
    RUN_DIR/eval.jsonl             one line per evaluation

Reward (the env's, see `skyjo_env.vec_env.SkyjoVecEnv`): at each round end
``-(own round score - mean of the others') / 100``; at the game end ``+1/k`` to each of the
``k`` winners and ``-1/(P-k)`` to the others. The objective is winning whole games; the
round term is the dense signal that gets there. On top, training adds potential-based
shaping (`GridPotentialShaping`, weight ``shaping``): with ``Phi`` = minus the expected
value of the learner's own grid / 100 (face-down cards at the deck mean), each step earns
``gamma * Phi(next) - Phi(previous)`` (``Phi`` = 0 after the episode's end). Summed over an
episode this is a constant, so it leaves the best policy unchanged (Ng et al., 1999) while
crediting a good swap at once instead of at the round end.

Opponents: for each game and each opponent seat, one draw from ``opponent_mix``
(``random``, ``greedy``, ``ev``, ``self``); ``self`` picks a uniformly random frozen
snapshot of the learner, taken every time the evaluation score reaches a new best of at
least ``snapshot_min_score`` (with no snapshot yet, ``self`` falls back to the heuristics).
"""

from __future__ import annotations

import json
import math
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.evaluation.tournament import play_tournament
from agents.ppo.checkpoint import (
    check_compatible,
    checkpoint_metadata,
    load_model,
    read_metadata,
    save_checkpoint,
)
from agents.ppo.config import TrainConfig
from agents.ppo.policy import PPOAgent
from agents.ppo.pool import OpponentPool, frozen_copy
from agents.ppo.shaping import shaping_wrapper
from agents.registry import make_agent
from skyjo_env.core.rules import (
    SkyjoRules,
)
from skyjo_env.encoding import ObservationLayout


def evaluate_learner(model, rules: SkyjoRules, specs: list[str], games: int, seed: int) -> dict:
    """Full-game results of the learner against each baseline spec.

    Returns:
        ``{spec: {"win_rate", "win_rate_ci", "mean_round_score", "mean_total"}}`` with the
        learner in every seat in turn and all other seats held by the baseline.
    """
    results = {}
    for index, spec in enumerate(specs):
        learner = PPOAgent(model, name="learner")
        others = [
            make_agent(spec, rules, seed=seed + 10 * index + k)
            for k in range(rules.num_players - 1)
        ]
        outcome = play_tournament(
            [learner, *others], rules, games, seed + index, progress=False, ratings=False
        )
        stats = outcome.agents[0]
        results[spec] = {
            "win_rate": stats.win_rate,
            "win_rate_ci": list(stats.win_rate_ci),
            "mean_round_score": stats.mean_round_score,
            "mean_total": stats.mean_total,
        }
    return results


def _make_callback(trainer: Trainer):
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import HParam

    class TrainerCallback(BaseCallback):
        """Progress bar, periodic evaluation, snapshots and checkpoints."""

        def _on_training_start(self) -> None:
            config = trainer.config
            hparams = {
                k: (v if isinstance(v, (int, float, str, bool)) else json.dumps(v))
                for k, v in config.to_dict().items()
            }
            self.logger.record(
                "hparams",
                HParam(hparams, {"eval/score": 0.0, "rollout/ep_rew_mean": 0.0}),
                exclude=("stdout", "log", "json", "csv"),
            )
            for key, value in trainer.imitation_stats.items():
                self.logger.record(f"imitation/{key}", value)
            trainer.open_progress(self.num_timesteps)
            self.rollouts = 0
            trainer.freeze_actor(trainer.warmup_rollouts > 0)

        def _on_rollout_end(self) -> None:
            self.rollouts += 1
            if self.rollouts > trainer.warmup_rollouts:
                trainer.freeze_actor(False)

        def _on_step(self) -> bool:
            trainer.advance_progress(self.num_timesteps)
            if trainer.due_for_eval(self.num_timesteps):
                trainer.evaluate(self.num_timesteps, self.logger)
            if trainer.due_for_checkpoint(self.num_timesteps):
                trainer.checkpoint(self.num_timesteps)
            return not trainer.stop_requested

        def _on_training_end(self) -> None:
            trainer.freeze_actor(False)
            trainer.close_progress()

    return TrainerCallback()


class Trainer:
    """One training run in a run directory (see the module docstring)."""

    def __init__(self, config: TrainConfig, run_dir: str | Path):
        self.config = config
        self.rules = config.resolve_rules()
        self.run_dir = Path(run_dir)
        self.pool = OpponentPool(config, self.rules)
        self.best_score = -math.inf
        self.best_pool_score = -math.inf
        self.next_eval = config.eval_interval or config.total_timesteps
        self.next_checkpoint = config.checkpoint_interval
        self.stop_requested = False
        self.last_eval_step: int | None = None
        self._bar = None
        self.model = None
        self.env = None
        self.imitation_stats: dict[str, float] = {}
        self.warmup_rollouts = 0

    # paths
    @property
    def last_checkpoint(self) -> Path:
        """Path of the latest checkpoint."""
        return self.run_dir / "checkpoints" / "last.zip"

    @property
    def best_checkpoint(self) -> Path:
        """Path of the best checkpoint by evaluation score."""
        return self.run_dir / "best.zip"

    def _metadata(self, timesteps: int, **extra: Any) -> dict[str, Any]:
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

        # VecMonitor sits below the shaping, so rollout/ep_rew_mean is the env's own reward
        env = VecMonitor(
            SkyjoVecEnv(
                num_envs=self.config.n_envs, rules=self.rules, opponents=self.pool,
                seed=self.config.seed,
            )
        )
        if self.config.shaping > 0:
            env = shaping_wrapper(
                env, ObservationLayout(self.rules), self.config.gamma, self.config.shaping
            )
        self.env = env
        return self.env

    def build_model(self):
        """A fresh MaskablePPO for the env."""
        import torch
        from sb3_contrib import MaskablePPO

        config = self.config
        start, end = config.learning_rate, config.learning_rate_final
        policy_kwargs = {
            "net_arch": {"pi": list(config.net_arch), "vf": list(config.net_arch)},
            "activation_fn": {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[config.activation],
        }
        if config.features == "grid":
            from agents.ppo.features import GridFeaturesExtractor

            policy_kwargs["features_extractor_class"] = GridFeaturesExtractor
            policy_kwargs["features_extractor_kwargs"] = {"rules": self.rules.to_dict()}
        return MaskablePPO(
            "MlpPolicy",
            self.env,
            learning_rate=lambda remaining: end + (start - end) * remaining,
            n_steps=config.n_steps,
            batch_size=config.batch_size,
            n_epochs=config.n_epochs,
            gamma=config.gamma,
            gae_lambda=config.gae_lambda,
            clip_range=config.clip_range,
            ent_coef=config.ent_coef,
            vf_coef=config.vf_coef,
            max_grad_norm=config.max_grad_norm,
            policy_kwargs=policy_kwargs,
            tensorboard_log=str(self.run_dir / "tb"),
            seed=config.seed,
            device="cpu",
            verbose=0,
        )

    def restore(self) -> int:
        """Load the last checkpoint and the snapshot pool; returns its step count."""
        metadata = read_metadata(self.last_checkpoint)
        check_compatible(metadata, self.rules, self.last_checkpoint)
        self.model = load_model(self.last_checkpoint, env=self.env)
        for name in metadata.get("snapshots", []):
            path = self.run_dir / "snapshots" / f"{name}.zip"
            if path.is_file():
                self.pool.add_snapshot(PPOAgent(load_model(path), name=name))
        if metadata.get("best_score") is not None:
            self.best_score = float(metadata["best_score"])
        if metadata.get("best_pool_score") is not None:
            self.best_pool_score = float(metadata["best_pool_score"])
        done = int(metadata["timesteps"])
        interval = self.config.eval_interval
        self.next_eval = (done // interval + 1) * interval if interval else self.config.total_timesteps
        step = self.config.checkpoint_interval
        self.next_checkpoint = (done // step + 1) * step
        return done

    # imitation warm start
    def warm_start(self) -> dict[str, float]:
        """Clone the teacher into the fresh policy (see `agents.ppo.imitation`)."""
        from agents.ppo.imitation import clone_policy, collect_demonstrations

        config = self.config
        started = time.perf_counter()
        teacher = make_agent(config.imitation_teacher, self.rules, seed=config.seed + 500)
        observations, masks, actions = collect_demonstrations(
            self.rules, [teacher], config.imitation_games, config.seed + 501
        )
        stats = clone_policy(
            self.model.policy, observations, masks, actions, config.imitation_epochs,
            seed=config.seed,
        )
        stats["decisions"] = float(len(actions))
        stats["seconds"] = time.perf_counter() - started
        self.imitation_stats = stats
        self.warmup_rollouts = config.value_warmup_rollouts
        if config.progress:
            print(
                f"warm start: cloned {config.imitation_teacher} on {len(actions):,} decisions "
                f"({stats['accuracy']:.1%} agreement) in {stats['seconds']:.0f} s"
            )
        return stats

    def freeze_actor(self, frozen: bool) -> None:
        """Stop (or resume) gradient flow into the actor: value-only updates while frozen."""
        from agents.ppo.imitation import actor_parameters

        for parameter in actor_parameters(self.model.policy):
            parameter.requires_grad_(not frozen)

    # progress
    def open_progress(self, start: int) -> None:
        """Start the progress bar at ``start`` steps."""
        if self.config.progress:
            from tqdm import tqdm

            self._bar = tqdm(total=self.config.total_timesteps, initial=start, unit="step",
                             dynamic_ncols=True, desc="training")

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
        self.next_eval = (timesteps // interval + 1) * interval
        self.last_eval_step = timesteps
        started = time.perf_counter()
        results = evaluate_learner(
            self.model, self.rules, config.eval_opponents, config.eval_games, config.seed + 7
        )
        score = float(np.mean([r["win_rate"] for r in results.values()]))
        if logger is not None:
            for spec, result in results.items():
                name = spec.replace(":", "_").replace("/", "_")
                logger.record(f"eval/win_rate_vs_{name}", result["win_rate"])
                logger.record(f"eval/mean_round_score_vs_{name}", result["mean_round_score"])
            logger.record("eval/score", score)
            logger.record("eval/snapshots", len(self.pool.snapshots))
        line = {"timesteps": timesteps, "score": score, "results": results,
                "seconds": round(time.perf_counter() - started, 2)}
        with open(self.run_dir / "eval.jsonl", "a") as handle:
            handle.write(json.dumps(line) + "\n")
        if score > self.best_score:
            self.best_score = score
            save_checkpoint(self.model, self.best_checkpoint, self._metadata(timesteps, score=score))
        if score >= config.snapshot_min_score and score > self.best_pool_score:
            self.best_pool_score = score
            name = f"snapshot_{timesteps:012d}"
            save_checkpoint(self.model, self.run_dir / "snapshots" / name,
                            self._metadata(timesteps))
            self.pool.add_snapshot(frozen_copy(self.model, name))
        if self._bar is not None:
            summary = " ".join(f"{s}={r['win_rate']:.2f}" for s, r in results.items())
            self._bar.write(f"[{timesteps:>10,} steps] win rate vs {summary}")
        return line

    def checkpoint(self, timesteps: int) -> Path:
        """Write checkpoints/last.zip atomically."""
        step = self.config.checkpoint_interval
        self.next_checkpoint = (timesteps // step + 1) * step
        return save_checkpoint(self.model, self.last_checkpoint, self._metadata(timesteps))

    # the job
    def run(self, resume: bool = False) -> dict[str, Any]:
        """Train to ``total_timesteps`` (continuing the last checkpoint when ``resume``).

        Returns:
            A summary: ``timesteps``, ``best_score``, ``last_checkpoint``, ``best_checkpoint``,
            ``steps_per_second``.
        """
        import torch

        torch.set_num_threads(self.config.torch_threads)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.build_env()
        done = 0
        if resume:
            done = self.restore()
        else:
            self.model = self.build_model()
            if self.config.imitation_games > 0:
                self.warm_start()
        (self.run_dir / "config.yaml").write_text(
            yaml.safe_dump(self.config.to_dict(), sort_keys=False)
        )
        remaining = self.config.total_timesteps - done
        started, start_steps = time.perf_counter(), done
        previous_handler = signal.getsignal(signal.SIGTERM)

        def request_stop(signum, frame):  # a polite kill: checkpoint, then stop
            self.stop_requested = True

        try:
            signal.signal(signal.SIGTERM, request_stop)
        except ValueError:  # not the main thread
            previous_handler = None
        try:
            if remaining > 0:
                self.model.learn(
                    remaining,
                    callback=_make_callback(self),
                    reset_num_timesteps=not resume,
                    tb_log_name="ppo",
                )
        except KeyboardInterrupt:
            self.stop_requested = True
        finally:
            self.close_progress()
            if previous_handler is not None:
                signal.signal(signal.SIGTERM, previous_handler)
        timesteps = int(self.model.num_timesteps)
        self.checkpoint(timesteps)
        if not self.stop_requested and self.last_eval_step != timesteps:
            self.evaluate(timesteps)
        elapsed = time.perf_counter() - started
        return {
            "timesteps": timesteps,
            "interrupted": self.stop_requested,
            "best_score": self.best_score,
            "last_checkpoint": str(self.last_checkpoint),
            "best_checkpoint": str(self.best_checkpoint),
            "steps_per_second": (timesteps - start_steps) / elapsed if elapsed > 0 else 0.0,
        }


def train(config: TrainConfig, run_dir: str | Path, resume: bool = False) -> dict[str, Any]:
    """Train (or resume) a run; see `Trainer.run`."""
    return Trainer(config, run_dir).run(resume=resume)
