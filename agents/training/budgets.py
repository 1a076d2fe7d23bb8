"""What a training run may ask for: bounds on `agents.training.config.TrainConfig` values
that match what the run will later need, so that a config too big to run is refused at
its start, in one line, rather than as a traceback (or a hang) after the warm start.

* Memory: `rollout_bytes` estimates what ``n_envs`` games and a rollout of
  ``n_envs * n_steps`` decisions take (the batched game state, SB3's rollout buffer and
  its flattened copy), refused above `MAX_TRAINING_BYTES`.
* The network: at most `agents.ppo.checkpoint.MAX_LAYERS` hidden layers of at most
  `agents.ppo.checkpoint.MAX_LAYER_WIDTH` units (what a checkpoint may describe) and at
  most `agents.ppo.checkpoint.MAX_NETWORK_PARAMETERS` parameters.
* The evaluation: ``eval_games`` at most `agents.evaluation.games.max_games` for the
  table (the evaluation's records are capped).
* Time: passes over data at most `MAX_EPOCHS`, step counts at most what a checkpoint may
  record (`agents.ppo.checkpoint.MAX_TIMESTEPS`, 2**53), data
  games at most `MAX_DATA_GAMES`, and so on: sanity bounds far above any config we run,
  so that a typo or a sweep range to 1e23 cannot start a run that never ends.
"""

from __future__ import annotations

from agents.ppo.checkpoint import MAX_TIMESTEPS
from skyjo_env.core import layout
from skyjo_env.core.actions import num_actions
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout

#: The most memory a run's games and rollout may take by `rollout_bytes` (4 GiB; the
#: shipped configs take about 20 MB).
MAX_TRAINING_BYTES = 4 << 30
#: The most passes over a rollout or a data set (``n_epochs``, ``imitation_epochs``,
#: ``expert_epochs``; the configs use 1 to 8).
MAX_EPOCHS = 1000
#: The most games recorded for the warm start or per expert-iteration step (the configs
#: record 64 to 3000; 3000 two-seat games of demonstrations take about 0.5 GB).
MAX_DATA_GAMES = 100_000
#: The most rollouts of value warm-up after the warm start (the configs run 0 to 3).
MAX_WARMUP_ROLLOUTS = 10_000
#: The most frozen snapshots kept in the opponent pool (each a network in memory).
MAX_SNAPSHOTS = 1000
#: The most torch threads (a bound against typos).
MAX_TORCH_THREADS = 1024

#: float32 values per decision in SB3's rollout buffer besides the observation and the
#: mask: action, reward, return, episode start, value, log-probability, advantage.
_BUFFER_SCALARS = 7


def game_state_bytes(rules: SkyjoRules) -> int:
    """Bytes one game of the batched env holds: the engine's state arrays
    (`skyjo_env.core.engine.new_batch`: grids, slot states, both piles, game and seat
    fields, stream) and the env's per-game observation and mask buffers, twice (the
    opponents' copies)."""
    players, slots, deck = rules.num_players, rules.num_slots, rules.deck_size
    engine = (layout.NUM_GAME_FIELDS * 4 + players * slots * (2 + 1) * 2 + 2 * deck * 2
              + players * layout.NUM_SEAT_FIELDS * 4 + 8)
    buffers = ObservationLayout(rules).size * 4 + num_actions(slots)
    return engine + 2 * buffers


def decision_bytes(rules: SkyjoRules) -> int:
    """Bytes one decision takes in SB3's (maskable) rollout buffer: the float32
    observation, the float32 action mask and `_BUFFER_SCALARS` float32 scalars."""
    return 4 * (ObservationLayout(rules).size + num_actions(rules.num_slots) + _BUFFER_SCALARS)


def rollout_bytes(n_envs: int, n_steps: int, rules: SkyjoRules) -> int:
    """Estimated bytes of a run's games and rollout: ``n_envs`` games
    (`game_state_bytes`) and a rollout buffer of ``n_envs * n_steps`` decisions
    (`decision_bytes`) with the flattened copy SB3 makes of it for the update."""
    return n_envs * game_state_bytes(rules) + 2 * n_envs * n_steps * decision_bytes(rules)


def gib(size: int) -> str:
    """``size`` bytes in GiB, for messages (``"4 GiB"``, ``"12.3 GiB"``)."""
    return f"{size / 2**30:.3g} GiB"


__all__ = [
    "MAX_DATA_GAMES",
    "MAX_EPOCHS",
    "MAX_SNAPSHOTS",
    "MAX_TIMESTEPS",
    "MAX_TORCH_THREADS",
    "MAX_TRAINING_BYTES",
    "MAX_WARMUP_ROLLOUTS",
    "decision_bytes",
    "game_state_bytes",
    "gib",
    "rollout_bytes",
]
