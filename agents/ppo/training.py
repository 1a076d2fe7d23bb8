"""PPO self-play training (sb3-contrib MaskablePPO on the batched `SkyjoVecEnv`).

`train(config, run_dir)` is the whole job; `train.py` is a thin command line over it.

Run directory layout::

    RUN_DIR/config.yaml            the resolved config (what was actually run)
    RUN_DIR/tb/                    TensorBoard events (SB3 scalars, eval/*, hparams)
    RUN_DIR/checkpoints/last.zip   latest checkpoint (atomic), used by --resume
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
crediting a good swap at once instead of at the round end.

Opponents: for each game and each opponent seat, one draw from ``opponent_mix``
(``random``, ``greedy``, ``ev``, ``self``); ``self`` picks a uniformly random frozen
snapshot of the learner, taken every time the evaluation score reaches a new best of at
least ``snapshot_min_score`` (with no snapshot yet, ``self`` falls back to the heuristics).

Expert iteration (``expert_interval`` > 0, `agents.ppo.expert`): at the start of a
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
depends on (`TRAINING_STATE_JSON`, `TRAINING_STATE_ARRAYS`: every game of the env with its
random stream, learner seats and opponents, the env's, the random opponent's, numpy's and
torch's generators, the shaping potentials, evaluation and checkpoint schedules, best
scores, snapshots). A run killed at any moment and resumed writes the same ``eval.jsonl``
and ends with the same weights as a run never stopped; what the lost segment wrote is
removed (`truncate_eval_log`, `truncate_tensorboard`), and ``best.zip`` is never replaced
by a worse model.
"""

from __future__ import annotations

import io
import json
import math
import signal
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.atomic import atomic_path
from agents.evaluation.tournament import play_tournament
from agents.ppo.checkpoint import (
    CheckpointError,
    check_compatible,
    checkpoint_metadata,
    load_policy,
    read_member,
    read_metadata,
    restore_model,
    save_checkpoint,
)
from agents.ppo.config import TrainConfig, check_agent_specs, check_warm_start
from agents.ppo.policy import PPOAgent
from agents.ppo.pool import (
    SEED_EVALUATION,
    SEED_EXPERT_DATA,
    SEED_EXPERT_SHUFFLE,
    SEED_EXPERT_TEACHER,
    SEED_IMITATION_DATA,
    SEED_IMITATION_SHUFFLE,
    SEED_IMITATION_TEACHER,
    OpponentPool,
    derived_seed,
    frozen_copy,
)
from agents.ppo.shaping import shaping_wrapper
from agents.registry import make_agent
from skyjo_env.core.rules import (
    SkyjoRules,
)
from skyjo_env.encoding import ObservationLayout

#: Checkpoint member with the JSON part of the training state (see `Trainer.run_state`).
TRAINING_STATE_JSON = "training_state.json"
#: Checkpoint member with the array part of the training state (an ``.npz``, no pickles).
TRAINING_STATE_ARRAYS = "training_state.npz"
TRAINING_STATE_VERSION = 2
#: Prefix of the env's arrays (`SkyjoVecEnv.export_state`) among the training state arrays.
_ENV_PREFIX = "env_"


class WarmStartInterrupted(CheckpointError):
    """SIGTERM or Ctrl-C arrived during the imitation warm start, before any checkpoint.

    A `CheckpointError` because it means exactly that: the run has no checkpoint to resume
    (the command line reports it in one line).
    """

    @classmethod
    def by(cls, signal_name: str) -> WarmStartInterrupted:
        """The error for a stop by ``signal_name`` (``SIGTERM``, ``SIGINT``)."""
        return cls(f"training stopped by {signal_name} during the imitation warm start, before "
                   "its first checkpoint: nothing was saved and there is nothing to resume; "
                   "start the run again without --resume")


def evaluate_learner(model, rules: SkyjoRules, specs: list[str], games: int, seed: int) -> dict:
    """Full-game results of the learner against each baseline spec.

    Every baseline and deal is seeded from ``seed`` alone (`derived_seed`), so an
    evaluation carries no random state over from the previous one.

    Returns:
        ``{spec: {"win_rate", "win_rate_ci", "mean_round_score", "mean_total"}}`` with the
        learner in every seat in turn and all other seats held by the baseline.
    """
    results = {}
    for index, spec in enumerate(specs):
        learner = PPOAgent(model, name="learner")
        others = [
            make_agent(spec, rules, seed=derived_seed(seed, index, 1 + k))
            for k in range(rules.num_players - 1)
        ]
        outcome = play_tournament(
            [learner, *others], rules, games, derived_seed(seed, index, 0), progress=False,
            ratings=False,
        )
        stats = outcome.agents[0]
        results[spec] = {
            "win_rate": stats.win_rate,
            "win_rate_ci": list(stats.win_rate_ci),
            "mean_round_score": stats.mean_round_score,
            "mean_total": stats.mean_total,
        }
    return results


# ---------------------------------------------------------------- what the lost segment wrote


def truncate_eval_log(path: Path, lines: int) -> None:
    """Keep the first ``lines`` lines of ``path`` (an ``eval.jsonl``), atomically.

    The lines after them were written after the checkpoint a resumed run starts from; the
    resumed run writes them again.
    """
    if not path.is_file():
        return
    kept = path.read_text().splitlines(keepends=True)[:lines]
    with atomic_path(path) as temporary:
        temporary.write_text("".join(kept))


def truncate_tensorboard(tb_dir: Path, timesteps: int) -> int:
    """Drop every TensorBoard event logged at a step after ``timesteps``, atomically per file.

    SB3 logs at a step once its rollout is collected, before the checkpoint at that step is
    taken, so the events after ``timesteps`` are exactly those of the segment a resumed run
    replays. Each event file is rewritten under its own name (TensorBoard orders files by
    name, and the resumed run's file sorts after it). A record cut short by a kill ends
    the file's reading.

    Returns:
        The number of events dropped.
    """
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    dropped = 0
    for path in sorted(tb_dir.rglob("events.out.tfevents*")):
        records = list(RawEventFileLoader(str(path)).Load())
        kept = [r for r in records if event_pb2.Event.FromString(r).step <= timesteps]
        if len(kept) == len(records):
            continue
        dropped += len(records) - len(kept)
        with atomic_path(path) as temporary, open(temporary, "wb") as handle:
            writer = RecordWriter(handle)
            for record in kept:
                writer.write(record)
    return dropped


# ---------------------------------------------------------------- the callback


def _make_callback(trainer: Trainer):
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import HParam

    class TrainerCallback(BaseCallback):
        """Progress bar, periodic evaluation, snapshots, checkpoints, polite stops."""

        def _on_training_start(self) -> None:
            if trainer.pending_log is not None:
                # resumed: hparams and warm-start figures are logged already; put back what
                # the last update recorded for the next dump
                restore_pending_log(self.logger, trainer.pending_log)
                trainer.pending_log = None
            else:
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


def _save(model, path: Path, metadata: dict, extra_members: dict | None = None) -> Path:
    """`save_checkpoint` without touching torch's global generator (it builds a network to
    check the file against), so where checkpoints fall never changes the run."""
    import torch

    with torch.random.fork_rng(devices=[]):
        return save_checkpoint(model, path, metadata, extra_members=extra_members)


def _generator_state(generator: np.random.Generator) -> dict:
    return generator.bit_generator.state


def _set_generator_state(generator: np.random.Generator, state: dict) -> None:
    generator.bit_generator.state = state


class Trainer:
    """One training run in a run directory (see the module docstring).

    Args:
        config: the run's config.
        run_dir: its directory.
        on_evaluation: called as ``on_evaluation(timesteps, score)`` after each evaluation
            (``score``: the mean win rate against ``eval_opponents``); answering True
            before the last step asks for the polite stop a SIGTERM asks for (finish the
            rollout and its update, checkpoint, stop; the summary says ``interrupted``).
            Sweeps prune trials through it (`agents.sweep.runner.PruningHook`).
    """

    def __init__(self, config: TrainConfig, run_dir: str | Path,
                 on_evaluation: Callable[[int, float], bool] | None = None):
        # a bad evaluation spec fails before any work; the warm start is checked in run(),
        # which knows whether one will happen (a resumed run needs no init_from or teacher)
        check_agent_specs(config, resuming=True)
        self.config = config
        self.on_evaluation = on_evaluation
        self.rules = config.resolve_rules()
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
        self.env = env
        return self.env

    def build_model(self):
        """A fresh MaskablePPO for the env."""
        import torch
        from sb3_contrib import MaskablePPO

        from agents.ppo.features import features_extractor_kwargs

        config = self.config
        start, end = config.learning_rate, config.learning_rate_final
        policy_kwargs = {
            "net_arch": {"pi": list(config.net_arch), "vf": list(config.net_arch)},
            "activation_fn": {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[config.activation],
        }
        policy_kwargs.update(features_extractor_kwargs(config.features, self.rules))
        # seed= goes through SB3's public set_random_seed: python, numpy and torch global
        # generators, the action space, and env.seed(seed) (the VecEnv's documented seeding)
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

    # the run's state beside the weights
    def _opponent_key(self, agent) -> str:
        """The name of an agent the env's games may be using: the pool's heuristic kind, or
        the snapshot name."""
        for kind, heuristic in self.pool.heuristics.items():
            if agent is heuristic:
                return kind
        return agent.name

    def run_state(self, timesteps: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything besides weights and optimizer that the run continues from.

        The env's games, generator and opponents come from `SkyjoVecEnv.export_state`.
        SB3 offers no public API for ``model._last_obs``, ``_last_episode_starts`` and
        ``_n_updates``, so those private fields are read directly.

        Returns:
            ``(JSON-able dict, {name: array})``.
        """
        import torch

        model = self.model
        env_state, env_arrays = self.vec_env.export_state(self._opponent_key)
        # SB3 shuffles minibatches with the legacy global generator, so it is part of the run
        legacy = np.random.get_state(legacy=False)  # noqa: NPY002
        state = {
            "version": TRAINING_STATE_VERSION,
            "timesteps": int(timesteps),
            "n_updates": int(model._n_updates),
            "rollouts_done": self.rollouts_done,
            "warmup_rollouts": self.warmup_rollouts,
            "next_eval": self.next_eval,
            "next_checkpoint": self.next_checkpoint,
            "next_expert": self.next_expert,
            "last_eval_step": self.last_eval_step,
            "eval_lines": self.eval_lines,
            "best_score": None if math.isinf(self.best_score) else self.best_score,
            "best_pool_score": None if math.isinf(self.best_pool_score) else self.best_pool_score,
            "snapshots": [agent.name for agent in self.pool.snapshots],
            "env": env_state,
            "random_opponent_rng": _generator_state(self.pool.heuristics["random"].rng),
            "numpy_global": {"pos": legacy["state"]["pos"], "has_gauss": legacy["has_gauss"],
                             "gauss": legacy["gauss"]},
            "monitor_episode_count": int(self.monitor.episode_count),
            "ep_info_buffer": [
                {"r": float(info["r"]), "l": int(info["l"]), "t": float(info["t"])}
                for info in (model.ep_info_buffer or [])
            ],
            "pending_log": (pending_log_values(model.logger)
                            if getattr(model, "_logger", None) is not None else {}),
            "imitation_stats": self.imitation_stats,
        }
        arrays = {_ENV_PREFIX + name: array for name, array in env_arrays.items()}
        arrays["last_obs"] = np.asarray(model._last_obs)
        arrays["last_episode_starts"] = np.asarray(model._last_episode_starts)
        arrays["monitor_returns"] = self.monitor.episode_returns
        arrays["monitor_lengths"] = self.monitor.episode_lengths
        arrays["torch_rng"] = torch.get_rng_state().numpy()
        arrays["numpy_global_key"] = legacy["state"]["key"]
        if self.shaping is not None:
            arrays["shaping_potential"] = self.shaping._potential
        return state, arrays

    def _snapshot_agent(self, name: str) -> PPOAgent:
        policy = load_policy(self.run_dir / "snapshots" / f"{name}.zip")
        policy.set_training_mode(False)
        return PPOAgent(policy, name=name)

    def load_run_state(self, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Put `run_state` back into a freshly built model, env and trainer."""
        import torch

        if state.get("version") != TRAINING_STATE_VERSION:
            raise CheckpointError(
                f"checkpoint {str(self.last_checkpoint)!r} has training state version "
                f"{state.get('version')!r}; this skyjo-rl resumes version {TRAINING_STATE_VERSION}"
            )
        env_state = state.get("env")
        try:
            saved_games = env_state["games"]["num_games"]
        except (KeyError, TypeError):
            saved_games = None  # import_state below names what is missing
        if saved_games is not None and saved_games != self.config.n_envs:
            raise CheckpointError(
                f"checkpoint {str(self.last_checkpoint)!r} holds {saved_games} games; this "
                f"config has n_envs={self.config.n_envs}: resume with the run's own config"
            )
        loaded = {}
        for name in state["snapshots"]:
            loaded[name] = self._snapshot_agent(name)
            self.pool.add_snapshot(loaded[name])

        def agent(key: str):
            if key in self.pool.heuristics:
                return self.pool.heuristics[key]
            if key not in loaded:  # a snapshot that left the pool but still plays a game
                loaded[key] = self._snapshot_agent(key)
            return loaded[key]

        model = self.model
        env_arrays = {name[len(_ENV_PREFIX):]: array for name, array in arrays.items()
                      if name.startswith(_ENV_PREFIX)}
        try:
            self.vec_env.import_state(env_state, env_arrays, agent)
        except CheckpointError:
            raise  # a snapshot that could not be loaded, already named
        except ValueError as error:
            raise CheckpointError(
                f"checkpoint {str(self.last_checkpoint)!r} has a damaged env state: {error}"
            ) from error
        _set_generator_state(self.pool.heuristics["random"].rng, state["random_opponent_rng"])
        self.monitor.episode_returns[...] = arrays["monitor_returns"]
        self.monitor.episode_lengths[...] = arrays["monitor_lengths"]
        self.monitor.episode_count = int(state["monitor_episode_count"])
        if self.shaping is not None:
            self.shaping._potential = arrays["shaping_potential"].copy()
        model.num_timesteps = int(state["timesteps"])
        model._n_updates = int(state["n_updates"])
        model._last_obs = arrays["last_obs"].copy()
        model._last_episode_starts = arrays["last_episode_starts"].copy()
        model.ep_info_buffer = deque(
            ({"r": np.float32(i["r"]), "l": np.int32(i["l"]), "t": i["t"]}
             for i in state["ep_info_buffer"]),
            maxlen=model._stats_window_size,
        )
        model.ep_success_buffer = deque(maxlen=model._stats_window_size)
        self.pending_log = state["pending_log"]
        self.rollouts_done = int(state["rollouts_done"])
        self.warmup_rollouts = int(state["warmup_rollouts"])
        self.next_eval = int(state["next_eval"])
        self.next_checkpoint = int(state["next_checkpoint"])
        # checkpoints from before expert iteration existed hold no schedule for it
        self.next_expert = int(state.get("next_expert", self.config.expert_interval))
        self.last_eval_step = state["last_eval_step"]
        self.eval_lines = int(state["eval_lines"])
        self.imitation_stats = state["imitation_stats"]
        if state["best_score"] is not None:
            self.best_score = float(state["best_score"])
        if state["best_pool_score"] is not None:
            self.best_pool_score = float(state["best_pool_score"])
        numpy_global = state["numpy_global"]
        np.random.set_state({  # noqa: NPY002 (see run_state)
            "bit_generator": "MT19937",
            "state": {"key": arrays["numpy_global_key"], "pos": numpy_global["pos"]},
            "has_gauss": numpy_global["has_gauss"], "gauss": numpy_global["gauss"],
        })
        torch.set_rng_state(torch.from_numpy(arrays["torch_rng"].copy()))

    def _best_saved_score(self) -> float:
        """The score recorded in best.zip (-inf when there is none readable)."""
        try:
            score = read_metadata(self.best_checkpoint).get("score")
        except CheckpointError:
            return -math.inf
        return -math.inf if score is None else float(score)

    def restore(self) -> int:
        """Continue the run from its last checkpoint; returns its step count.

        Builds the model afresh, loads the weights and optimizer into it, then the run state
        (`load_run_state`); drops what the run wrote after that checkpoint (evaluation lines,
        TensorBoard events), and keeps the better of the checkpoint's best score and
        best.zip's own, so best.zip never goes back to a worse model.

        Raises:
            CheckpointError: A missing, corrupt or incompatible checkpoint, or one without a
                training state.
        """
        path = self.last_checkpoint
        metadata = read_metadata(path)
        check_compatible(metadata, self.rules, path)
        try:
            state = json.loads(read_member(path, TRAINING_STATE_JSON))
            with np.load(io.BytesIO(read_member(path, TRAINING_STATE_ARRAYS)),
                         allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except (ValueError, OSError, KeyError) as error:
            if isinstance(error, CheckpointError):
                raise
            raise CheckpointError(
                f"checkpoint {str(path)!r} has a corrupt training state: {error}"
            ) from error
        self.model = self.build_model()
        restore_model(path, self.model, metadata)
        self.load_run_state(state, arrays)
        done = int(state["timesteps"])
        self.best_score = max(self.best_score, self._best_saved_score())
        truncate_eval_log(self.eval_log, self.eval_lines)
        if (self.run_dir / "tb").is_dir():
            truncate_tensorboard(self.run_dir / "tb", done)
        return done

    # warm starts: a saved network or imitation
    def start_from_network(self) -> None:
        """Load ``init_from``'s actor and critic into the fresh model (`run` has checked
        the network with `agents.ppo.config.check_warm_start`; a smaller network, of an
        earlier kind of ``features`` or narrower hidden layers, is grown with zero weights
        from what it lacked: `agents.ppo.checkpoint.widened_state`); the value
        warm-up rollouts follow, since this run's reward or shaping may differ from the
        network's."""
        from agents.ppo.checkpoint import load_policy_weights, read_metadata

        path = self.config.init_from
        metadata = read_metadata(path)
        load_policy_weights(path, self.model.policy, widen=True)
        self.warmup_rollouts = self.config.value_warmup_rollouts
        if self.config.progress:
            print(f"warm start: the network of {path} ({metadata.get('timesteps', 0):,} steps)")

    def warm_start(self) -> dict[str, float]:
        """Clone the teacher into the fresh policy (see `agents.ppo.imitation`)."""
        from agents.ppo.config import TrainConfigError
        from agents.ppo.imitation import (
            ChunksStopped,
            DataWorkersError,
            clone_policy,
            collect_chunked_demonstrations,
        )

        config = self.config
        started = time.perf_counter()
        # deals and teachers seeded per chunk (a teacher per chunk): the same data for any
        # data_workers
        try:
            with self._warm_start_bar(config.imitation_games, "game",
                                      f"{config.imitation_teacher} games") as bar:
                observations, masks, actions = collect_chunked_demonstrations(
                    self.rules, config.imitation_teacher, config.imitation_games,
                    derived_seed(config.seed, SEED_IMITATION_DATA),
                    derived_seed(config.seed, SEED_IMITATION_TEACHER),
                    workers=config.data_workers, ray_address=config.ray_address,
                    should_stop=lambda: self._warm_start_signal is not None,
                    on_chunk_done=bar.update,
                )
        except DataWorkersError as error:  # Ray missing, or it cannot start or connect
            raise TrainConfigError(str(error)) from None  # the message names data_workers
        except ChunksStopped:
            raise WarmStartInterrupted.by(self._warm_start_signal) from None
        with self._warm_start_bar(config.imitation_epochs, "epoch",
                                  f"cloning on {len(actions):,} decisions") as bar:

            def epoch_done() -> None:
                bar.update()
                if self._warm_start_signal is not None:  # its exception was swallowed
                    raise WarmStartInterrupted.by(self._warm_start_signal)

            stats = clone_policy(
                self.model.policy, observations, masks, actions, config.imitation_epochs,
                seed=derived_seed(config.seed, SEED_IMITATION_SHUFFLE),
                on_epoch_done=epoch_done,
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

    def _warm_start_bar(self, total: int, unit: str, what: str):
        """A tqdm bar over a part of the warm start, disabled (updates do nothing) without
        ``progress``: its games and its cloning epochs take most of a minute before
        training shows anything."""
        from tqdm import tqdm

        return tqdm(total=total, unit=unit, dynamic_ncols=True, desc=f"warm start: {what}",
                    disable=not self.config.progress)

    # expert iteration
    def due_for_expert(self, timesteps: int) -> bool:
        """Whether an expert-iteration step is due (never at or past the last step)."""
        return (self.config.expert_interval > 0 and timesteps >= self.next_expert
                and timesteps < self.config.total_timesteps)

    def expert_iteration(self, timesteps: int, logger=None) -> dict[str, float] | None:
        """Search games over the current policy, then fit the network to them.

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
        import torch

        from agents.ppo.config import TrainConfigError
        from agents.ppo.expert import collect_expert_games, fit_to_search, teacher_spec
        from agents.ppo.imitation import ChunksStopped, DataWorkersError

        config = self.config
        started = time.perf_counter()
        policy_path = self.run_dir / "expert" / "policy.zip"
        _save(self.model, policy_path, self._metadata(timesteps))
        spec = teacher_spec(config.expert_search, str(policy_path))
        self._write_progress(f"[{timesteps:>10,} steps] expert iteration: "
                             f"{config.expert_games} games of {config.expert_search}")
        try:
            # building the ppo agent for the search draws torch's global generator: kept
            # out of the run, so where the games are played (here or Ray) changes nothing
            with torch.random.fork_rng(devices=[]):
                searched = collect_expert_games(
                    self.rules, spec, config.expert_games,
                    derived_seed(config.seed, SEED_EXPERT_DATA, timesteps),
                    derived_seed(config.seed, SEED_EXPERT_TEACHER, timesteps),
                    gamma=config.gamma, workers=config.data_workers,
                    ray_address=config.ray_address, should_stop=lambda: self.stop_requested,
                )
        except ChunksStopped:
            return None
        except DataWorkersError as error:
            raise TrainConfigError(str(error)) from None
        self.freeze_actor(False)  # a step during the value warm-up trains the actor too
        stats = fit_to_search(
            self.model.policy, searched.played, ObservationLayout(self.rules),
            config.expert_epochs, config.expert_learning_rate, config.expert_anchor,
            derived_seed(config.seed, SEED_EXPERT_SHUFFLE, timesteps),
            config.shaping if config.expert_value_fit else None,
            searched.values, config.expert_soft_temperature,
        )
        self.freeze_actor(self.rollouts_done < self.warmup_rollouts)
        stats["seconds"] = time.perf_counter() - started
        before, after = stats["agreement_before"], stats["agreement_after"]
        self.next_expert = (timesteps // config.expert_interval + 1) * config.expert_interval
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

    def _write_progress(self, line: str) -> None:
        if self._bar is not None:
            self._bar.write(line)

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
            self.model, self.rules, config.eval_opponents, config.eval_games,
            derived_seed(config.seed, SEED_EVALUATION),
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
        with open(self.eval_log, "a") as handle:
            handle.write(json.dumps(line) + "\n")
        self.eval_lines += 1
        if score > self.best_score:
            self.best_score = score
            _save(self.model, self.best_checkpoint, self._metadata(timesteps, score=score))
        if score >= config.snapshot_min_score and score > self.best_pool_score:
            self.best_pool_score = score
            name = f"snapshot_{timesteps:012d}"
            _save(self.model, self.run_dir / "snapshots" / name, self._metadata(timesteps))
            self.pool.add_snapshot(frozen_copy(self.model, name))
        if self._bar is not None:
            summary = " ".join(f"{s}={r['win_rate']:.2f}" for s, r in results.items())
            self._bar.write(f"[{timesteps:>10,} steps] win rate vs {summary}")
        if (self.on_evaluation is not None and self.on_evaluation(timesteps, score)
                and timesteps < config.total_timesteps):  # at the end there is nothing to stop
            self.stop_requested = True
        return line

    def checkpoint(self, timesteps: int) -> Path:
        """Write checkpoints/last.zip atomically, with the run state to resume from.

        Call it only where no rollout is half collected (at a rollout start, or after
        ``learn`` returned), or the resumed run is not the same run.
        """
        step = self.config.checkpoint_interval
        self.next_checkpoint = (timesteps // step + 1) * step
        state, arrays = self.run_state(timesteps)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        extra = {TRAINING_STATE_JSON: json.dumps(state).encode(),
                 TRAINING_STATE_ARRAYS: buffer.getvalue()}
        return _save(self.model, self.last_checkpoint, self._metadata(timesteps), extra)

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
            if self._bar is not None:
                self._bar.write("stopping: finishing this rollout, then a last checkpoint "
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
    def run(self, resume: bool = False) -> dict[str, Any]:
        """Train to ``total_timesteps`` (continuing the last checkpoint when ``resume``).

        Returns:
            A summary: ``timesteps``, ``interrupted``, ``best_score``, ``last_checkpoint``,
            ``best_checkpoint``, ``steps_per_second``.

        Raises:
            WarmStartInterrupted: SIGTERM or Ctrl-C during the warm start (nothing written).
            CheckpointError: ``resume`` with a missing, corrupt or incompatible checkpoint.
            TrainConfigError: a new run whose warm start cannot happen (a bad ``init_from``
                or ``imitation_teacher``; `agents.ppo.config.check_warm_start`).
        """
        import torch

        torch.set_num_threads(self.config.torch_threads)
        undo_handlers = self._install_stop_handlers()
        try:
            return self._run(resume)
        finally:
            undo_handlers()
            self.close_progress()

    def _run(self, resume: bool) -> dict[str, Any]:
        if not resume:
            check_warm_start(self.config, self.rules)
        self.build_env()
        done = 0
        if resume:
            done = self.restore()
        else:
            self.model = self.build_model()
            if self.config.init_from is not None:
                self.start_from_network()
            elif self.config.imitation_games > 0:
                self._in_warm_start = True
                try:
                    self.warm_start()
                except KeyboardInterrupt as error:  # Ctrl-C inside a non-Python call
                    raise WarmStartInterrupted.by("SIGINT") from error
                finally:
                    self._in_warm_start = False
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.yaml").write_text(
            yaml.safe_dump(self.config.to_dict(), sort_keys=False)
        )
        remaining = self.config.total_timesteps - done
        started, start_steps = time.perf_counter(), done
        aborted = False
        try:
            if remaining > 0:
                self.model.learn(
                    remaining,
                    callback=_make_callback(self),
                    reset_num_timesteps=not resume,
                    tb_log_name="ppo",
                )
        except KeyboardInterrupt:
            # a second Ctrl-C: the model may be mid-update, so the last checkpoint stands
            self.stop_requested = aborted = True
        timesteps = int(self.model.num_timesteps)
        if self.stopped_at_checkpoint is not None:
            # SB3 took one step of the next rollout before it saw the stop: not saved
            timesteps = self.stopped_at_checkpoint
        elif aborted:  # what a resume would continue from
            timesteps = (read_metadata(self.last_checkpoint)["timesteps"]
                         if self.last_checkpoint.is_file() else 0)
        else:
            self.checkpoint(timesteps)
            if not self.stop_requested and self.last_eval_step != timesteps:
                self.evaluate(timesteps)
                self.checkpoint(timesteps)  # records the evaluation, so a resume skips it
        elapsed = time.perf_counter() - started
        return {
            "timesteps": timesteps,
            "interrupted": self.stop_requested,
            "best_score": self.best_score,
            "last_checkpoint": str(self.last_checkpoint),
            "best_checkpoint": str(self.best_checkpoint),
            "steps_per_second": (timesteps - start_steps) / elapsed if elapsed > 0 else 0.0,
        }


def train(config: TrainConfig, run_dir: str | Path, resume: bool = False,
          on_evaluation: Callable[[int, float], bool] | None = None) -> dict[str, Any]:
    """Train (or resume) a run; see `Trainer.run` (and `Trainer` for ``on_evaluation``)."""
    return Trainer(config, run_dir, on_evaluation=on_evaluation).run(resume=resume)
