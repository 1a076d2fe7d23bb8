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

import copy
import dataclasses
import json
import math
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.ppo import (
    PPOAgent,
    check_compatible,
    checkpoint_metadata,
    load_model,
    read_metadata,
    save_checkpoint,
)
from agents.registry import make_agent
from agents.tournament import play_tournament
from skyjo_env.core.rules import (
    SkyjoRules,
    dataclass_from_dict,
    load_rules,
    read_yaml_mapping,
)
from skyjo_env.encoding import ObservationLayout

OPPONENT_KINDS = ("random", "greedy", "ev", "self")
ACTIVATIONS = ("relu", "tanh")
FEATURES = ("raw", "grid")


@dataclass
class TrainConfig:
    """Everything a training run depends on. YAML keys equal these field names."""

    rules: str = "official"
    """Rules preset name (configs/rules/) or path to a rules YAML file."""
    num_players: int = 2
    """Seats at the table (overrides the preset's num_players)."""
    total_timesteps: int = 3_000_000
    """Learner decisions to train for."""
    seed: int = 0
    """Master seed: games, learner seats, opponents, network initialisation."""
    n_envs: int = 256
    """Games stepped together in the batched VecEnv."""
    n_steps: int = 64
    """Steps per env per rollout (rollout size = n_envs * n_steps)."""
    batch_size: int = 8192
    """Minibatch size for the PPO update."""
    n_epochs: int = 2
    """Passes over each rollout."""
    learning_rate: float = 5e-4
    """Adam step size, decayed linearly to learning_rate_final."""
    learning_rate_final: float = 1e-4
    """Step size at the end of training."""
    gamma: float = 1.0
    """Discount factor per learner decision. Below 1, a losing learner gains by stalling
    (postponing the round end), so the default does not discount."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""
    net_arch: list[int] = field(default_factory=lambda: [128, 128])
    """Hidden layer sizes of the policy and value networks (separate networks)."""
    activation: str = "relu"
    """Hidden activation: relu or tanh (relu is much cheaper on a CPU)."""
    features: str = "grid"
    """Network input: ``raw`` (the observation) or ``grid`` (the observation plus the
    column arithmetic of `agents.features.GridFeaturesExtractor`)."""
    torch_threads: int = 1
    """torch intra-op threads (1 is fastest on small shared machines)."""
    opponent_mix: dict[str, float] = field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.3, "ev": 0.3, "self": 0.3}
    )
    """Probability of each opponent kind per game and seat (random, greedy, ev, self)."""
    max_snapshots: int = 8
    """Most frozen learner snapshots kept in the opponent pool (oldest dropped)."""
    snapshot_min_score: float = 0.3
    """Evaluation score (mean win rate vs eval_opponents) a new best must reach before it
    joins the pool: weak early policies would only teach the learner to beat weak play."""
    shaping: float = 1.0
    """Weight of the potential-based shaping reward (0 = off); see `GridPotentialShaping`."""
    imitation_teacher: str = "ev"
    """Agent spec whose moves the policy clones before PPO (see `agents.imitation`)."""
    imitation_games: int = 3000
    """Full teacher self-play games recorded for the warm start (0 = start from scratch)."""
    imitation_epochs: int = 4
    """Passes over the recorded decisions."""
    value_warmup_rollouts: int = 3
    """After the warm start, rollouts during which only the value network learns, so the
    first policy updates use sensible advantages instead of a random critic's."""
    eval_interval: int = 500_000
    """Learner decisions between evaluations (0 = only at the end)."""
    eval_games: int = 400
    """Full games per baseline in each evaluation (duplicated deals, seats rotated)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["greedy", "ev"])
    """Agent specs evaluated against (all seats but the learner's)."""
    checkpoint_interval: int = 250_000
    """Learner decisions between checkpoints."""
    progress: bool = True
    """Show a progress bar."""

    def __post_init__(self) -> None:
        def positive(name: str) -> None:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"TrainConfig.{name}={value!r} is invalid: allowed an int >= 1")

        for name in ("total_timesteps", "n_envs", "n_steps", "batch_size", "n_epochs",
                     "eval_games", "checkpoint_interval", "torch_threads", "max_snapshots",
                     "imitation_epochs"):
            positive(name)
        for name in ("imitation_games", "value_warmup_rollouts"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"TrainConfig.{name}={value!r} is invalid: allowed an int >= 0")
        if not isinstance(self.eval_interval, int) or self.eval_interval < 0:
            raise ValueError(
                f"TrainConfig.eval_interval={self.eval_interval!r} is invalid: allowed an int >= 0"
            )
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"TrainConfig.seed={self.seed!r} is invalid: allowed an int >= 0")
        unknown = sorted(set(self.opponent_mix) - set(OPPONENT_KINDS))
        if unknown:
            raise ValueError(
                f"TrainConfig.opponent_mix has unknown kinds {unknown}: allowed {OPPONENT_KINDS}"
            )
        weights = list(self.opponent_mix.values())
        if not weights or any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError(
                f"TrainConfig.opponent_mix={self.opponent_mix!r} is invalid: allowed "
                "non-negative weights with a positive sum"
            )
        if self.batch_size > self.n_envs * self.n_steps:
            raise ValueError(
                f"TrainConfig.batch_size={self.batch_size} is invalid: allowed at most "
                f"n_envs * n_steps = {self.n_envs * self.n_steps}"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"TrainConfig.activation={self.activation!r} is invalid: allowed {list(ACTIVATIONS)}"
            )
        if self.features not in FEATURES:
            raise ValueError(
                f"TrainConfig.features={self.features!r} is invalid: allowed {list(FEATURES)}"
            )
        if not self.net_arch or any(not isinstance(n, int) or n < 1 for n in self.net_arch):
            raise ValueError(
                f"TrainConfig.net_arch={self.net_arch!r} is invalid: allowed a list of ints >= 1"
            )
        for name in ("learning_rate", "learning_rate_final", "gamma", "gae_lambda",
                     "clip_range", "ent_coef", "vf_coef", "max_grad_norm", "shaping",
                     "snapshot_min_score"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"TrainConfig.{name}={value!r} is invalid: allowed a number >= 0")
        if not 0 < self.gamma <= 1 or not 0 <= self.gae_lambda <= 1:
            raise ValueError("TrainConfig.gamma must lie in (0, 1] and gae_lambda in [0, 1]")
        self.resolve_rules()

    def resolve_rules(self) -> SkyjoRules:
        """The `SkyjoRules` this config trains for (preset + num_players)."""
        return load_rules(self.rules, num_players=self.num_players)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as written to config.yaml."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from plain data; unknown keys raise `ValueError` naming them."""
        return dataclass_from_dict(cls, data, "training config", "key")


def load_train_config(path: str | Path | None = None, **overrides: Any) -> TrainConfig:
    """Defaults, updated from a YAML file (if given), then from ``overrides`` (not None)."""
    data: dict[str, Any] = {}
    if path is not None:
        data = read_yaml_mapping(Path(path), "training config", "key: value")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return TrainConfig.from_dict(data)


# ------------------------------------------------------------------ opponent pool


class OpponentPool:
    """Per-game opponent draws from the configured mix of heuristics and snapshots."""

    def __init__(self, config: TrainConfig, rules: SkyjoRules):
        self.rules = rules
        self.kinds = [k for k in OPPONENT_KINDS if config.opponent_mix.get(k, 0) > 0]
        weights = np.array([config.opponent_mix[k] for k in self.kinds], dtype=np.float64)
        self.weights = weights / weights.sum()
        # greedy and ev are always built: "self" falls back on them before any snapshot
        self.heuristics = {
            kind: make_agent(kind, rules, seed=config.seed + 1000 + i)
            for i, kind in enumerate(("random", "greedy", "ev"))
        }
        self.snapshots: list[PPOAgent] = []
        self.max_snapshots = config.max_snapshots

    def add_snapshot(self, agent: PPOAgent) -> None:
        """Add a frozen learner copy, dropping the oldest beyond ``max_snapshots``."""
        self.snapshots.append(agent)
        del self.snapshots[: -self.max_snapshots]

    def _draw(self, rng: np.random.Generator):
        kind = self.kinds[rng.choice(len(self.kinds), p=self.weights)]
        if kind == "self":
            if self.snapshots:
                return self.snapshots[rng.integers(len(self.snapshots))]
            kind = "ev" if "ev" in self.kinds else "greedy"
        return self.heuristics[kind]

    def __call__(self, rng: np.random.Generator) -> list:
        """Opponents for the ``P - 1`` seats after the learner in one new game."""
        return [self._draw(rng) for _ in range(self.rules.num_players - 1)]


# ------------------------------------------------------------------ reward shaping


def grid_potential(observations: np.ndarray, layout: ObservationLayout) -> np.ndarray:
    """``Phi`` of each observation: minus the learner's expected grid value / 100.

    Args:
        observations: float32 (N, O).
        layout: The observation layout.

    Returns:
        float64 (N,): ``-(face-up sum + face-down count * deck mean) / 100``.
    """
    pieces = layout.describe()
    rules = layout.rules
    deck_mean = float(rules.deck_array().mean())
    face_up = observations[:, pieces["own_values"]].sum(axis=1) * layout.value_scale
    face_down = observations[:, pieces["own_hidden"]].sum(axis=1)
    return -(face_up + face_down * deck_mean) / 100.0


def _shaping_wrapper(venv, layout: ObservationLayout, gamma: float, weight: float):
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class GridPotentialShaping(VecEnvWrapper):
        """Adds ``weight * (gamma * Phi(next) - Phi(previous))`` to each reward, with
        ``Phi`` = `grid_potential` and ``Phi`` = 0 once an episode has ended."""

        def __init__(self):
            super().__init__(venv)
            self._potential = np.zeros(venv.num_envs)

        def reset(self):
            observations = self.venv.reset()
            self._potential = grid_potential(observations, layout)
            return observations

        def step_wait(self):
            observations, rewards, dones, infos = self.venv.step_wait()
            following = grid_potential(observations, layout)
            after = np.where(dones, 0.0, following)
            rewards = rewards + weight * (gamma * after - self._potential)
            self._potential = following
            return observations, rewards.astype(np.float32), dones, infos

        def action_masks(self) -> np.ndarray:
            """The wrapped env's masks (bool (N, A)), for MaskablePPO."""
            return self.venv.action_masks()

    return GridPotentialShaping()


# ------------------------------------------------------------------ callbacks


def _frozen_copy(model, name: str) -> PPOAgent:
    snapshot = copy.copy(model)
    snapshot.policy = copy.deepcopy(model.policy)
    snapshot.policy.set_training_mode(False)
    return PPOAgent(snapshot, name=name)


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


# ------------------------------------------------------------------ trainer


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
            env = _shaping_wrapper(
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
            from agents.features import GridFeaturesExtractor

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
        """Clone the teacher into the fresh policy (see `agents.imitation`)."""
        from agents.imitation import clone_policy, collect_demonstrations

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
        from agents.imitation import actor_parameters

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
            self.pool.add_snapshot(_frozen_copy(self.model, name))
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
