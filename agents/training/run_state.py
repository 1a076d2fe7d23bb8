"""Save and restore what a run continues from besides its weights and optimizer, so that
``train.py --resume`` continues the very same run.

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
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.atomic import atomic_path
from agents.ppo.checkpoint import (
    CheckpointError,
    check_compatible,
    load_policy,
    read_member,
    read_metadata,
    restore_model,
)
from agents.ppo.policy import PPOAgent
from agents.training.callbacks import pending_log_values

if TYPE_CHECKING:
    from agents.training.trainer import Trainer

#: Checkpoint member with the JSON part of the training state (see `export_run_state`).
TRAINING_STATE_JSON = "training_state.json"
#: Checkpoint member with the array part of the training state (an ``.npz``, no pickles).
TRAINING_STATE_ARRAYS = "training_state.npz"
TRAINING_STATE_VERSION = 2
#: Prefix of the env's arrays (`SkyjoVecEnv.export_state`) among the training state arrays.
_ENV_PREFIX = "env_"


def _finite_or_none(score: float) -> float | None:
    return None if math.isinf(score) else score


def _opponent_key(trainer: Trainer, agent) -> str:
    """The name of an agent the env's games may be using: the pool's heuristic kind, or
    the snapshot name."""
    for kind, heuristic in trainer.pool.heuristics.items():
        if agent is heuristic:
            return kind
    return agent.name


def export_run_state(
    trainer: Trainer, timesteps: int
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Everything besides weights and optimizer that ``trainer``'s run continues from.

    The env's games, generator and opponents come from `SkyjoVecEnv.export_state`.
    SB3 offers no public API for ``model._last_obs``, ``_last_episode_starts`` and
    ``_n_updates``, so those private fields are read directly.

    Returns:
        ``(JSON-able dict, {name: array})``.
    """
    import torch

    model = trainer.model
    env_state, env_arrays = trainer.vec_env.export_state(
        lambda agent: _opponent_key(trainer, agent)
    )
    # SB3 shuffles minibatches with the legacy global generator, so it is part of the run
    legacy = np.random.get_state(legacy=False)  # noqa: NPY002
    state = {
        "version": TRAINING_STATE_VERSION,
        "timesteps": int(timesteps),
        "n_updates": int(model._n_updates),
        "rollouts_done": trainer.rollouts_done,
        "warmup_rollouts": trainer.warmup_rollouts,
        "next_eval": trainer.next_eval,
        "next_checkpoint": trainer.next_checkpoint,
        "next_expert": trainer.next_expert,
        "last_eval_step": trainer.last_eval_step,
        "eval_lines": trainer.eval_lines,
        "best_score": _finite_or_none(trainer.best_score),
        "best_pool_score": _finite_or_none(trainer.best_pool_score),
        "snapshots": [agent.name for agent in trainer.pool.snapshots],
        "env": env_state,
        "random_opponent_rng": trainer.pool.heuristics["random"].rng.bit_generator.state,
        "numpy_global": {"pos": legacy["state"]["pos"], "has_gauss": legacy["has_gauss"],
                         "gauss": legacy["gauss"]},
        "monitor_episode_count": int(trainer.monitor.episode_count),
        "ep_info_buffer": [
            {"r": float(info["r"]), "l": int(info["l"]), "t": float(info["t"])}
            for info in (model.ep_info_buffer or [])
        ],
        "pending_log": (pending_log_values(model.logger)
                        if getattr(model, "_logger", None) is not None else {}),
        "imitation_stats": trainer.imitation_stats,
    }
    arrays = {_ENV_PREFIX + name: array for name, array in env_arrays.items()}
    arrays["last_obs"] = np.asarray(model._last_obs)
    arrays["last_episode_starts"] = np.asarray(model._last_episode_starts)
    arrays["monitor_returns"] = trainer.monitor.episode_returns
    arrays["monitor_lengths"] = trainer.monitor.episode_lengths
    arrays["torch_rng"] = torch.get_rng_state().numpy()
    arrays["numpy_global_key"] = legacy["state"]["key"]
    if trainer.shaping is not None:
        arrays["shaping_potential"] = trainer.shaping._potential
    return state, arrays


def run_state_members(state: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, bytes]:
    """The checkpoint members (name -> bytes) that hold `export_run_state`'s result."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return {TRAINING_STATE_JSON: json.dumps(state).encode(),
            TRAINING_STATE_ARRAYS: buffer.getvalue()}


def read_run_state(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The run state stored in checkpoint ``path`` (`run_state_members`).

    Raises:
        CheckpointError: The checkpoint has no training state, or a corrupt one.
    """
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
    return state, arrays


def _snapshot_agent(trainer: Trainer, name: str) -> PPOAgent:
    policy = load_policy(trainer.run_dir / "snapshots" / f"{name}.zip")
    policy.set_training_mode(False)
    return PPOAgent(policy, name=name)


def _check_state_fits(trainer: Trainer, state: dict[str, Any]) -> None:
    """Refuse a training state of another version, or of another number of games."""
    where = f"checkpoint {str(trainer.last_checkpoint)!r}"
    if state.get("version") != TRAINING_STATE_VERSION:
        raise CheckpointError(
            f"{where} has training state version {state.get('version')!r}; this skyjo-rl "
            f"resumes version {TRAINING_STATE_VERSION}"
        )
    try:
        saved_games = state.get("env")["games"]["num_games"]
    except (KeyError, TypeError):
        saved_games = None  # import_state names what is missing
    if saved_games is not None and saved_games != trainer.config.n_envs:
        raise CheckpointError(
            f"{where} holds {saved_games} games; this config has "
            f"n_envs={trainer.config.n_envs}: resume with the run's own config"
        )


def _restore_env(trainer: Trainer, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """The env's games and opponents (snapshots loaded from the run's directory), the
    random opponent's generator, the monitor and the shaping."""
    loaded = {}
    for name in state["snapshots"]:
        loaded[name] = _snapshot_agent(trainer, name)
        trainer.pool.add_snapshot(loaded[name])

    def agent(key: str):
        if key in trainer.pool.heuristics:
            return trainer.pool.heuristics[key]
        if key not in loaded:  # a snapshot that left the pool but still plays a game
            loaded[key] = _snapshot_agent(trainer, key)
        return loaded[key]

    env_arrays = {name[len(_ENV_PREFIX):]: array for name, array in arrays.items()
                  if name.startswith(_ENV_PREFIX)}
    try:
        trainer.vec_env.import_state(state.get("env"), env_arrays, agent)
    except CheckpointError:
        raise  # a snapshot that could not be loaded, already named
    except ValueError as error:
        raise CheckpointError(
            f"checkpoint {str(trainer.last_checkpoint)!r} has a damaged env state: {error}"
        ) from error
    trainer.pool.heuristics["random"].rng.bit_generator.state = state["random_opponent_rng"]
    trainer.monitor.episode_returns[...] = arrays["monitor_returns"]
    trainer.monitor.episode_lengths[...] = arrays["monitor_lengths"]
    trainer.monitor.episode_count = int(state["monitor_episode_count"])
    if trainer.shaping is not None:
        trainer.shaping._potential = arrays["shaping_potential"].copy()


def _restore_model_internals(model, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """The MaskablePPO's step count, update count, last observations and episode infos."""
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


def _restore_schedule(trainer: Trainer, state: dict[str, Any]) -> None:
    """The trainer's counters, schedules and best scores."""
    trainer.pending_log = state["pending_log"]
    trainer.rollouts_done = int(state["rollouts_done"])
    trainer.warmup_rollouts = int(state["warmup_rollouts"])
    trainer.next_eval = int(state["next_eval"])
    trainer.next_checkpoint = int(state["next_checkpoint"])
    # checkpoints from before expert iteration existed hold no schedule for it
    trainer.next_expert = int(state.get("next_expert", trainer.config.expert_interval))
    trainer.last_eval_step = state["last_eval_step"]
    trainer.eval_lines = int(state["eval_lines"])
    trainer.imitation_stats = state["imitation_stats"]
    if state["best_score"] is not None:
        trainer.best_score = float(state["best_score"])
    if state["best_pool_score"] is not None:
        trainer.best_pool_score = float(state["best_pool_score"])


def _restore_global_generators(state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """numpy's legacy global generator (SB3 shuffles minibatches with it) and torch's."""
    import torch

    numpy_global = state["numpy_global"]
    np.random.set_state({  # noqa: NPY002 (see export_run_state)
        "bit_generator": "MT19937",
        "state": {"key": arrays["numpy_global_key"], "pos": numpy_global["pos"]},
        "has_gauss": numpy_global["has_gauss"], "gauss": numpy_global["gauss"],
    })
    torch.set_rng_state(torch.from_numpy(arrays["torch_rng"].copy()))


def import_run_state(
    trainer: Trainer, state: dict[str, Any], arrays: dict[str, np.ndarray]
) -> None:
    """Put `export_run_state` back into a freshly built model, env and trainer.

    Raises:
        CheckpointError: Another training state version, another ``n_envs``, a damaged
            env state or a snapshot that does not load.
    """
    _check_state_fits(trainer, state)
    _restore_env(trainer, state, arrays)
    _restore_model_internals(trainer.model, state, arrays)
    _restore_schedule(trainer, state)
    _restore_global_generators(state, arrays)


def best_saved_score(path: Path) -> float:
    """The score recorded in a best.zip (-inf when there is none readable)."""
    try:
        score = read_metadata(path).get("score")
    except CheckpointError:
        return -math.inf
    return -math.inf if score is None else float(score)


def restore_run(trainer: Trainer) -> int:
    """Continue ``trainer``'s run from its last checkpoint; returns its step count.

    Builds the model afresh, loads the weights and optimizer into it, then the run state
    (`import_run_state`); drops what the run wrote after that checkpoint (evaluation lines,
    TensorBoard events), and keeps the better of the checkpoint's best score and
    best.zip's own, so best.zip never goes back to a worse model.

    Raises:
        CheckpointError: A missing, corrupt or incompatible checkpoint, or one without a
            training state.
    """
    path = trainer.last_checkpoint
    metadata = read_metadata(path)
    check_compatible(metadata, trainer.rules, path)
    state, arrays = read_run_state(path)
    trainer.model = trainer.build_model()
    restore_model(path, trainer.model, metadata)
    import_run_state(trainer, state, arrays)
    done = int(state["timesteps"])
    trainer.best_score = max(trainer.best_score, best_saved_score(trainer.best_checkpoint))
    truncate_eval_log(trainer.eval_log, trainer.eval_lines)
    if (trainer.run_dir / "tb").is_dir():
        truncate_tensorboard(trainer.run_dir / "tb", done)
    return done


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
