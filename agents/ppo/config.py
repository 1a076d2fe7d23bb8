"""The training config: `TrainConfig` (one documented field per YAML key; unknown keys
are an error) and `load_train_config`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyjo_env.core.rules import (
    SkyjoRules,
    dataclass_from_dict,
    load_rules,
    read_yaml_mapping,
)

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
    column arithmetic of `agents.ppo.features.GridFeaturesExtractor`)."""
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
    """Agent spec whose moves the policy clones before PPO (see `agents.ppo.imitation`)."""
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
