"""The training config: `TrainConfig` (one documented field per YAML key; unknown keys
are an error) and `load_train_config`. What the config names beyond its own values (agent
specs, ``init_from``, Ray) is checked once per training start by
`agents.training.start.prepare_start`.

Validation is pydantic's (strict types, bounds, no NaN/inf), but every error reaches the
caller as ONE line naming the key, the value and what is allowed, in a `TrainConfigError`:

    config key 'n_envs': got True (bool), expected an integer >= 1
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import annotated_types
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from agents.evaluation.games import MAX_RECORDS_BYTES, max_games
from agents.ppo.architecture import FEATURES, Activation, Features
from agents.ppo.checkpoint import (
    MAX_LAYER_WIDTH,
    MAX_LAYERS,
    MAX_NETWORK_PARAMETERS,
    network_parameter_count,
)
from agents.registry import AgentSpecError, search_options_text
from agents.training.budgets import (
    MAX_DATA_GAMES,
    MAX_EPOCHS,
    MAX_SNAPSHOTS,
    MAX_TIMESTEPS,
    MAX_TORCH_THREADS,
    MAX_TRAINING_BYTES,
    MAX_WARMUP_ROLLOUTS,
    game_state_bytes,
    gib,
    rollout_bytes,
)
from skyjo_env.core.errors import shorten
from skyjo_env.core.rules import SkyjoRules, available_presets, load_rules, read_yaml_mapping
from skyjo_env.core.safe_yaml import parse_yaml, show_path

OpponentKind = Literal["random", "greedy", "ev", "self"]

OPPONENT_KINDS: tuple[str, ...] = get_args(OpponentKind)

OpponentDraw = Literal["seat", "table"]

#: Largest master seed: SB3 seeds numpy's legacy global generator (which takes < 2**32)
#: with it; the margin leaves room for seeds formed by adding small offsets to it.
MAX_SEED = 2**31 - 1

#: Most Ray workers for data generation (a bound against typos, not a Ray limit).
MAX_DATA_WORKERS = 1024

#: Largest ``win_bonus`` (a bound against typos: 10 already outweighs any round margin).
MAX_WIN_BONUS = 10.0

#: The most characters of a value (or an unknown key) that a message repeats.
VALUE_CHARS = 80
#: The most characters of a `TrainConfigError` message.
MESSAGE_CHARS = 2000

_SPEC_FORMS = "random, greedy, ev, package.module:Class or ppo:PATH"

#: Keys no stage may set: one run plays one env (its games, seeds and reward) throughout.
RUN_KEYS: tuple[str, ...] = ("rules", "num_players", "seed", "n_envs", "gamma", "shaping",
                             "stages")
#: Keys only the first stage may set: how a new run's network starts (a later stage
#: continues the network of the stage before).
START_KEYS: tuple[str, ...] = ("init_from", "imitation_teacher", "imitation_games",
                               "imitation_epochs", "value_warmup_rollouts")
#: The key of a stage that names it (in messages, eval.jsonl, checkpoints, ``--set``).
STAGE_NAME = "name"
#: The key of a new stage in an extending file that names the base stage it follows
#: (`merge_config_data`).
STAGE_AFTER = "after"
#: The key of a stage in an extending file that removes the base's stage of that name
#: (``drop: true``; `merge_config_data`).
STAGE_DROP = "drop"
#: The key of a config file that names the file it builds on (`read_composed_config`).
EXTENDS = "extends"
#: Most files one ``extends`` chain may hold (a bound against runaway chains).
MAX_EXTENDS_DEPTH = 16


class TrainConfigError(ValueError):
    """A bad training config: a one-line message naming the key, the value and what is allowed."""

    def __init__(self, message: str):
        super().__init__(shorten(str(message), MESSAGE_CHARS))  # always one line, bounded


class TrainConfig(BaseModel):
    """Everything a training run depends on. YAML keys equal these field names.

    Raises:
        TrainConfigError: (a `ValueError`) on construction or assignment, for an unknown
            key, a value of the wrong type (bools are not ints, 3.0 is not an int, lists
            are not scalars; an int is a valid float), NaN/inf, a value out of bounds, or
            inconsistent keys (``batch_size > n_envs * n_steps``, rules that do not load).
    """

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        allow_inf_nan=False,
        validate_assignment=True,
        use_attribute_docstrings=True,
    )

    rules: str = Field("official", min_length=1)
    """Rules preset name (configs/rules/) or path to a rules YAML file."""
    num_players: int = Field(2, ge=2)
    """Seats at the table (overrides the preset's num_players)."""
    total_timesteps: int = Field(3_000_000, ge=1, le=MAX_TIMESTEPS)
    """Learner decisions to train for."""
    seed: int = Field(0, ge=0, le=MAX_SEED)
    """Master seed: games, learner seats, opponents, network initialisation."""
    n_envs: int = Field(256, ge=1)
    """Games stepped together in the batched VecEnv (with the rollout, at most
    `agents.training.budgets.MAX_TRAINING_BYTES` of memory: `rollout_bytes`)."""
    n_steps: int = Field(64, ge=1)
    """Steps per env per rollout (rollout size = n_envs * n_steps; see ``n_envs``)."""
    batch_size: int = Field(8192, ge=1)
    """Minibatch size for the PPO update."""
    n_epochs: int = Field(2, ge=1, le=MAX_EPOCHS)
    """Passes over each rollout."""
    learning_rate: float = Field(5e-4, gt=0)
    """Adam step size, decayed linearly to learning_rate_final."""
    learning_rate_final: float = Field(1e-4, ge=0)
    """Step size at the end of training."""
    gamma: float = Field(1.0, gt=0, le=1)
    """Discount factor per learner decision. Below 1, a losing learner gains by stalling
    (postponing the round end), so the default does not discount."""
    gae_lambda: float = Field(0.95, ge=0, le=1)
    """GAE lambda."""
    clip_range: float = Field(0.2, gt=0)
    """PPO clip range."""
    ent_coef: float = Field(0.01, ge=0)
    """Entropy bonus."""
    vf_coef: float = Field(0.5, ge=0)
    """Value loss weight."""
    max_grad_norm: float = Field(0.5, gt=0)
    """Gradient clipping."""
    net_arch: list[Annotated[int, Field(ge=1, le=MAX_LAYER_WIDTH)]] = Field(
        default_factory=lambda: [128, 128], min_length=1, max_length=MAX_LAYERS
    )
    """Hidden layer sizes of the policy and value networks (separate networks): what a
    checkpoint may describe (`agents.ppo.checkpoint.MAX_LAYERS` layers of at most
    ``MAX_LAYER_WIDTH`` units, at most `agents.ppo.checkpoint.MAX_NETWORK_PARAMETERS`
    parameters for the rules)."""
    activation: Activation = "relu"
    """Hidden activation: relu or tanh (relu is much cheaper on a CPU)."""
    features: Features = "grid"
    """Network input: ``raw`` (the observation), ``grid`` (the observation plus the
    column arithmetic of `agents.ppo.features.GridFeaturesExtractor`), ``grid_feeding``
    (``grid`` plus what a discard would give the next seat, `FeedingFeatures`),
    ``grid_feeding_waits`` (also the chances that unseen cards clear own lines) or
    ``grid_feeding_waits_risk`` (also how the round and game would end now, per seat:
    `RiskFeatures`)."""
    torch_threads: int = Field(1, ge=1, le=MAX_TORCH_THREADS)
    """torch intra-op threads (1 is fastest on small shared machines)."""
    opponent_mix: dict[OpponentKind, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.3, "ev": 0.3, "self": 0.3}
    )
    """Probability of each opponent kind (random, greedy, ev, self), drawn per game and
    seat or per game (``opponent_draw``)."""
    opponent_draw: OpponentDraw = "seat"
    """How ``opponent_mix`` is drawn for a new game: ``seat`` (each opponent seat draws its
    own kind, so most tables are mixed) or ``table`` (one kind for all the opponent seats:
    the learner meets tables of (P-1) ``ev``, of (P-1) ``greedy``, ..., as they are
    evaluated; with ``self`` each seat still draws its own snapshot). A stage may change it."""
    max_snapshots: int = Field(8, ge=1, le=MAX_SNAPSHOTS)
    """Most frozen learner snapshots kept in the opponent pool (oldest dropped)."""
    fresh_pool: bool = False
    """Start the stage with an empty opponent pool, as a new run from a saved network
    does: the previous stages' snapshots leave (``self`` seats play the heuristics until
    one joins) and the bar for a new snapshot starts again, so the first of this stage's
    evaluations that reaches ``snapshot_min_score`` adds one. Snapshots of an earlier,
    weaker network (or one with other inputs, which cannot share a stacked forward pass)
    stop being opponents. No effect on a run's first stage (its pool starts empty)."""
    snapshot_min_score: float = Field(0.3, ge=0, le=1)
    """Evaluation score (mean win rate vs eval_opponents) a new best must reach before it
    joins the pool: weak early policies would only teach the learner to beat weak play."""
    shaping: float = Field(1.0, ge=0)
    """Weight of the potential-based shaping reward (0 = off); see `GridPotentialShaping`."""
    win_bonus: float = Field(0.0, ge=0, le=MAX_WIN_BONUS)
    """Extra weight of winning in the training reward (0 = the env's reward alone): at the
    end of each game the learner also earns ``win_bonus`` times the env's placement reward
    (`skyjo_env.rewards.placement_rewards`: +1/k among the k lowest totals, -1/(P-k)
    otherwise; `agents.training.shaping.win_bonus_wrapper`). The env's round margins
    weigh the same at every table size while a win is worth less against more seats; this
    weighs winning up again. A stage may change it; its critic then values the new reward.
    Not with ``expert_value_fit`` (the search games' outcomes lack the bonus)."""
    init_from: str | None = Field(None, min_length=1)
    """A saved network (a checkpoint ``.zip``: ``models/ppo_2p.zip``, a run's ``best.zip``)
    whose actor and critic weights this run starts from, in place of the imitation warm
    start (skipped; the value warm-up rollouts still run). The optimizer, the opponent
    pool and the step count start fresh: to continue a stopped run use ``--resume``
    instead. The network must be trained for this run's rules and have its ``activation``;
    a smaller one is grown into this config's (hidden layers as many and no wider than
    ``net_arch``, ``features`` the same or an earlier kind), computing the same actions
    and values at first (`agents.ppo.checkpoint.widened_state`). Checked before any work."""
    imitation_teacher: str = Field("ev", min_length=1)
    """Agent spec whose moves the policy clones before PPO (see `agents.training.imitation`);
    not used with ``init_from``."""
    imitation_games: int = Field(3000, ge=0, le=MAX_DATA_GAMES)
    """Full teacher self-play games recorded for the warm start (0 = start from scratch)."""
    imitation_epochs: int = Field(4, ge=1, le=MAX_EPOCHS)
    """Passes over the recorded decisions."""
    data_workers: int = Field(0, ge=0, le=MAX_DATA_WORKERS)
    """Workers generating the warm start's demonstrations and expert iteration's search
    games: 0 plays them in this process;
    N >= 1 runs them as Ray tasks, at most N at once, on a local Ray started for them (and
    stopped after) or on ``ray_address``. The data is the same for any value: the games
    come in fixed-size chunks, each seeded from the seed and its index alone (see
    `agents.training.imitation.run_chunks`). N >= 1 needs Ray (the ``distributed`` extra)."""
    ray_address: str | None = Field(None, min_length=1)
    """Ray cluster the data workers join (``auto``, ``ray://host:10001``); null starts a
    local Ray. Only with ``data_workers`` >= 1."""
    value_warmup_rollouts: int = Field(3, ge=0, le=MAX_WARMUP_ROLLOUTS)
    """After the warm start, rollouts during which only the value network learns, so the
    first policy updates use sensible advantages instead of a random critic's."""
    expert_interval: int = Field(0, ge=0, le=MAX_TIMESTEPS)
    """Learner decisions between expert-iteration steps (0 = none). Each step, the search
    ``expert_search`` over the current policy plays ``expert_games`` self-play games; the
    actor is fitted to the searched moves (and with ``expert_value_fit`` the critic to the
    games' outcomes), then PPO continues (`agents.training.expert`). Searched games are slow
    (seconds each on one core). What it gained is recorded in docs/results.md."""
    expert_search: str = Field(
        "search(samples=32,leaf=critic,depth=12,confidence_z=1,top_actions=4,verify_samples=0)",
        min_length=1,
    )
    """The search of expert iteration, without its base: ``search`` or
    ``search(OPTIONS)`` (see `agents.registry`; unnamed options keep `PPO_SEARCH`'s, as over
    any network); the base is the current policy. The
    default is the critic search that expert iteration was first measured with
    (docs/results.md); ``PPO_SEARCH``'s retest makes a stronger but slower teacher."""
    expert_games: int = Field(64, ge=1, le=MAX_DATA_GAMES)
    """Self-play games of the search per expert-iteration step (played by ``data_workers``
    like the warm start's)."""
    expert_epochs: int = Field(2, ge=1, le=MAX_EPOCHS)
    """Passes over each expert-iteration step's decisions."""
    expert_anchor: float = Field(0.5, ge=0, lt=1)
    """Weight of the policy's own action probabilities in the fit's targets, the rest on the
    searched move (`agents.training.imitation.clone_policy`), so the fit does not chase the
    search's rare, noisy surprises (docs/results.md). Not used with
    ``expert_soft_temperature``."""
    expert_soft_temperature: float | None = Field(None, gt=0)
    """null fits the actor to the searched moves (hard targets, ``expert_anchor``); a
    number fits it to soft targets of that temperature instead: the policy's probabilities
    times ``exp(advantage / temperature)``, the advantage being the search's mean rollout
    value of each action minus that of the policy's move (`agents.training.expert`). Soft
    targets keep how sure the search was; docs/results.md compares them with hard ones."""
    expert_value_fit: bool = False
    """Fit the critic to the search games' outcomes too. Off by default: refitting the
    critic on one step's games can spoil it as the next search's leaf value
    (docs/results.md); PPO keeps training it anyway."""
    expert_learning_rate: float = Field(1e-4, gt=0)
    """Adam step size of the expert-iteration fit (its own optimizer; PPO's is untouched)."""
    eval_interval: int = Field(500_000, ge=0, le=MAX_TIMESTEPS)
    """Learner decisions between evaluations (0 = only at the end)."""
    eval_games: int = Field(400, ge=1)
    """Full games per baseline in each evaluation (duplicated deals, seats rotated); at
    most what one tournament may play at this table (`agents.evaluation.games.max_games`)."""
    eval_opponents: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["greedy", "ev"], min_length=1
    )
    """Agent specs evaluated against (all seats but the learner's). At least one: every
    run evaluates at least at the end, and best.zip and the pool's snapshots follow the
    evaluation score."""
    checkpoint_interval: int = Field(250_000, ge=1, le=MAX_TIMESTEPS)
    """Learner decisions between checkpoints."""
    progress: bool = True
    """Show a progress bar."""
    stages: list[dict[str, Any]] = Field(default_factory=list)
    """An ordered list of stages run one after the other in one run directory (empty: one
    stage, this config). Each stage is a mapping of keys of this config that override the
    others for that stage (plus an optional ``name``); its ``total_timesteps`` are the
    stage's own steps, not a running total. A stage may grow the network (``features``,
    ``net_arch``: the previous stage's network is grown into the new one, computing the
    same actions and values at first), change the learning-rate schedule, the opponent
    mix, the expert iteration and the evaluations; it starts a fresh optimizer. The keys
    of `RUN_KEYS` belong to the whole run, and those of `START_KEYS` only to the first
    stage. Every stage is checked before any work (`TrainConfig.stage_configs`); see
    docs/training.md."""

    #: The rules `resolve_rules` returns, loaded by the validation (once per validation).
    _rules: SkyjoRules | None = PrivateAttr(None)
    #: The configs of the stages (`stage_configs`), built by the validation.
    _stage_list: list[TrainConfig] | None = PrivateAttr(None)

    def __init__(self, **data: Any) -> None:
        _refuse_unknown_keys(data)
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise TrainConfigError(_one_line(error, data)) from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):  # pydantic's own bookkeeping
            super().__setattr__(name, value)
            return
        _refuse_unknown_keys({name: value})
        previous = getattr(self, name)
        try:
            super().__setattr__(name, value)
        except ValidationError as error:
            # a whole-config check fails after pydantic has stored the value: put it back
            self.__dict__[name] = previous
            raise TrainConfigError(_one_line(error, {name: value})) from None

    @field_validator("opponent_mix")
    @classmethod
    def _weights_have_a_positive_sum(cls, mix: dict[str, float]) -> dict[str, float]:
        if sum(mix.values()) <= 0:
            raise ValueError("the weights sum to 0")
        return mix

    @field_validator("eval_opponents")
    @classmethod
    def _specs_are_distinct(cls, specs: list[str]) -> list[str]:
        repeated = sorted({s for s in specs if specs.count(s) > 1})
        if repeated:
            # results are keyed by spec: a repeat would be played and then overwritten
            raise ValueError(f"{shorten(', '.join(map(repr, repeated)), VALUE_CHARS)} repeated")
        return specs

    @model_validator(mode="after")
    def _keys_agree(self) -> TrainConfig:
        rollout = self.n_envs * self.n_steps
        if self.batch_size > rollout:
            raise TrainConfigError(
                f"config key 'batch_size': got {_show(self.batch_size)}, expected at most "
                f"n_envs * n_steps = {self.n_envs} * {self.n_steps} = {rollout}"
            )
        try:
            search_options_text(self.expert_search)  # its options: prepare_start
        except AgentSpecError:
            raise TrainConfigError(
                f"config key 'expert_search': got {_show(self.expert_search)}, expected "
                f"{_ALLOWED['expert_search']}"
            ) from None
        if self.ray_address is not None and self.data_workers == 0:
            # a cluster address with in-process generation would be silently ignored
            raise TrainConfigError(
                f"config key 'ray_address': got {_show(self.ray_address)}, but data_workers "
                "is 0 (in-process data generation); set data_workers >= 1 to use Ray, or "
                "ray_address: null"
            )
        if self.win_bonus > 0 and self.expert_value_fit:
            # the critic would be fitted to outcomes without the bonus it is trained with
            raise TrainConfigError(
                f"config key 'win_bonus': got {_show(self.win_bonus)}, but expert_value_fit "
                "is true (the search games' outcomes lack the bonus); set win_bonus: 0 or "
                "expert_value_fit: false"
            )
        self._rules = self._load_rules()
        self._check_budgets(self._rules)
        self._stage_list = _build_stages(self) if self.stages else None
        return self

    def _check_budgets(self, rules: SkyjoRules) -> None:
        """Refuse what the run would only fail at later: an evaluation above its cap, a
        network a checkpoint may not hold, games and a rollout too big to allocate
        (`agents.training.budgets`)."""
        most_games = max_games(rules.num_players)
        if self.eval_games > most_games:
            raise TrainConfigError(
                f"config key 'eval_games': got {_show(self.eval_games)}, expected at most "
                f"{most_games} for {rules.num_players} players (an evaluation's records are "
                f"capped at {gib(MAX_RECORDS_BYTES)})"
            )
        parameters = network_parameter_count(self.net_arch, rules)
        if parameters > MAX_NETWORK_PARAMETERS:
            raise TrainConfigError(
                f"config key 'net_arch': got {_show(self.net_arch)}, a network of about "
                f"{parameters:,} parameters for these rules; at most "
                f"{MAX_NETWORK_PARAMETERS:,} (what a checkpoint may hold)"
            )
        games = self.n_envs * game_state_bytes(rules)
        if games > MAX_TRAINING_BYTES:
            raise TrainConfigError(
                f"config key 'n_envs': got {_show(self.n_envs)}, games taking about "
                f"{gib(games)} of memory; at most {gib(MAX_TRAINING_BYTES)} for the games "
                "and rollout (agents.training.budgets.MAX_TRAINING_BYTES)"
            )
        needed = rollout_bytes(self.n_envs, self.n_steps, rules)
        if needed > MAX_TRAINING_BYTES:
            raise TrainConfigError(
                f"config keys 'n_envs' and 'n_steps': got {self.n_envs} * {self.n_steps}, "
                f"games and a rollout taking about {gib(needed)} of memory; at most "
                f"{gib(MAX_TRAINING_BYTES)} (agents.training.budgets.MAX_TRAINING_BYTES)"
            )

    def stage_configs(self) -> list[TrainConfig]:
        """The config of each stage, in order: this config updated with the stage's keys
        (without ``stages``); ``[self]`` for a config without stages.

        The stages were checked when this config was validated (`_build_stages`).
        """
        if not self.stages:
            return [self]
        if self._stage_list is None:
            self._stage_list = _build_stages(self)
        return list(self._stage_list)

    def stage_names(self) -> list[str]:
        """Each stage's name: its ``name`` key, or ``stage N`` (1 = the first)."""
        return [stage_label(index, stage, quoted=False)
                for index, stage in enumerate(self.stages or [{}])]

    def resolve_rules(self) -> SkyjoRules:
        """The `SkyjoRules` this config trains for (preset + num_players), as the
        validation loaded them (a config built without validation loads them now).

        Raises:
            TrainConfigError: the preset or file does not load (names ``rules``), or it
                refuses ``num_players`` (names ``num_players``).
        """
        if self._rules is None:
            self._rules = self._load_rules()
        return self._rules

    def _load_rules(self) -> SkyjoRules:
        """Read the rules file once; a preset that loads but refuses ``num_players`` is
        told apart from one that does not load."""
        try:
            preset = load_rules(self.rules)
        except (ValueError, OSError) as error:  # OSError: an unreadable rules file
            raise TrainConfigError(f"config key 'rules': {error}") from error
        try:
            return preset.replace(num_players=self.num_players)
        except ValueError as error:
            raise TrainConfigError(
                f"config key 'num_players': got {self.num_players} for rules "
                f"{_quote(self.rules)}: {error}"
            ) from error

    def policy_architecture(self) -> dict[str, Any]:
        """The network this config builds, as a checkpoint's metadata records it:
        ``{"net_arch": list[int], "activation": str, "features": str}``."""
        return {"net_arch": list(self.net_arch), "activation": self.activation,
                "features": self.features}

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as written to config.yaml (keys in field order)."""
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: Any) -> TrainConfig:
        """Build from plain data.

        Raises:
            TrainConfigError: ``data`` is not a mapping, names an unknown key, or holds a
                bad value (see the class docstring).
        """
        if not isinstance(data, dict):
            raise TrainConfigError(
                f"training config must be a mapping of key: value, got {type(data).__name__}"
            )
        _refuse_unknown_keys(data)  # before ``cls(**data)``, which needs string keys
        return cls(**data)


def load_train_config(path: str | Path | None = None, settings: Sequence[str] = (),
                      **overrides: Any) -> TrainConfig:
    """Defaults, updated from a YAML file (if given, with its ``extends`` chain:
    `read_composed_config`), then by ``settings`` (``KEY=VALUE`` texts: `apply_setting`),
    then from ``overrides`` (not None).

    Raises:
        TrainConfigError: the file (or one it extends) is missing, unreadable, not valid
            YAML or not a mapping, an ``extends`` chain loops, a setting is malformed, or
            the merged data is not a valid `TrainConfig` (a bad stage included).
    """
    data: dict[str, Any] = {}
    if path is not None:
        data = read_composed_config(Path(path))
    for setting in settings:
        apply_setting(data, setting)
    data.update({k: v for k, v in overrides.items() if v is not None})
    return TrainConfig.from_dict(data)


# --- composition: extends, stages merged by name, --set ---------------------------------


def read_composed_config(path: Path) -> dict[str, Any]:
    """The mapping a training-config file holds, with what it ``extends``.

    ``extends: OTHER.yaml`` (a path relative to the file that says it) names a config this
    one builds on; its keys replace the base's, whole (a mapping such as
    ``opponent_mix`` is replaced, not merged), except ``stages``: when every stage of the
    extending file names (``name``) a stage of the base, each is merged into its
    namesake, key by key (so a recipe for another table size changes a stage's steps in
    one line), a stage with a new name and ``after: NAME`` is added right after the
    base's stage ``NAME``, and ``{name: NAME, drop: true}`` removes the base's stage
    ``NAME``; otherwise the list replaces the base's. Chains are allowed,
    loops are not.

    Raises:
        TrainConfigError: a file of the chain is missing or bad (`read_config_file`),
            ``extends`` is not a path string, the chain loops or is longer than
            `MAX_EXTENDS_DEPTH`, or a stage's ``after`` names no stage of its base, or a
            ``drop`` is not ``true`` alone.
    """
    return _read_chain(path, ())


def _read_chain(path: Path, including: tuple[Path, ...]) -> dict[str, Any]:
    where = Path(path)
    if where.resolve() in [p.resolve() for p in including]:
        chain = " -> ".join(str(p) for p in (*including, where))
        raise TrainConfigError(f"training config {show_path(where)} extends itself: {chain}")
    if len(including) >= MAX_EXTENDS_DEPTH:
        raise TrainConfigError(
            f"training config {show_path(where)}: the extends chain holds more than "
            f"{MAX_EXTENDS_DEPTH} files"
        )
    data = read_config_file(where)
    base_name = data.pop(EXTENDS, None)
    if base_name is None:
        return data
    if not isinstance(base_name, str) or not base_name.strip():
        raise TrainConfigError(
            f"training config {show_path(where)}: key 'extends': got {_show(base_name)}, expected "
            "the path of another training config, relative to this file"
        )
    base_path = where.parent / base_name
    if not base_path.is_file():
        raise TrainConfigError(
            f"training config {show_path(where)}: extends {_quote(base_name)}, which is not a file "
            f"({show_path(base_path)})"
        )
    base = _read_chain(base_path, (*including, where))
    try:
        return merge_config_data(base, data)
    except TrainConfigError as error:
        raise TrainConfigError(f"training config {show_path(where)}: {error}") from None


def merge_config_data(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated with ``changes`` as `read_composed_config` composes files (keys
    replaced whole; ``stages`` merged by name when every changed stage names a base one,
    to change or ``drop`` it, or is a new one placed ``after`` one). Neither argument is
    modified.

    Raises:
        TrainConfigError: a stage's ``after`` names no stage of ``base``, or the stage
            that says it has no new name; a ``drop`` that is not ``true`` or comes with
            keys other than ``name``.
    """
    merged = {**base, **changes}
    old, new = base.get("stages"), changes.get("stages")
    if _named_stage_lists(old, new):
        merged["stages"] = _merged_stages(old, new)
    return merged


def _merged_stages(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` with each stage of ``new`` that names one merged into it, key by key, and
    each that says ``after: NAME`` (without that key) right after stage ``NAME`` (a base
    stage or one added above it; several after one stage in their order), and each that
    says ``drop: true`` removed."""
    dropped = {stage[STAGE_NAME] for stage in new if stage.get(STAGE_DROP) is True}
    by_name = {stage[STAGE_NAME]: stage for stage in new if STAGE_AFTER not in stage}
    added: dict[str, list[dict]] = {}
    for stage in new:
        if STAGE_AFTER in stage:
            following = {k: v for k, v in stage.items() if k != STAGE_AFTER}
            added.setdefault(stage[STAGE_AFTER], []).append(following)

    def followers(name: Any) -> list[dict]:
        """The stages added after stage ``name``, each followed by its own followers."""
        return [chained for stage in added.get(name, [])
                for chained in (stage, *followers(stage[STAGE_NAME]))]

    merged = []
    for stage in old:
        if stage.get(STAGE_NAME) not in dropped:
            merged.append({**stage, **by_name.get(stage.get(STAGE_NAME), {})})
        merged.extend(followers(stage.get(STAGE_NAME)))
    return merged


def _named_stage_lists(old: Any, new: Any) -> bool:
    """Whether ``new`` is a non-empty list of stages that each name a stage of ``old``
    (to change or ``drop`` it) or add one ``after`` a stage of ``old``
    (`_check_added_stage` and `_check_dropped_stage` refuse a bad ``after`` or ``drop``)."""
    if not (isinstance(old, list) and isinstance(new, list) and new):
        return False
    _check_stage_references(old)
    _check_stage_references(new)
    names = {stage.get(STAGE_NAME) for stage in old if isinstance(stage, dict)} - {None}
    added: list = []  # the names of the stages added above, in order
    for index, stage in enumerate(new):
        if isinstance(stage, dict) and STAGE_AFTER in stage:
            _check_added_stage(index, stage, names, added)
            added.append(stage[STAGE_NAME])
        if isinstance(stage, dict) and STAGE_DROP in stage:
            _check_dropped_stage(index, stage, names)
    return all(isinstance(stage, dict) and (stage.get(STAGE_NAME) in names
                                            or STAGE_AFTER in stage) for stage in new)


def _check_stage_references(stages: list) -> None:
    """Refuse a stage whose ``name`` or ``after`` is not a string: stages are matched by
    name when lists merge."""
    for index, stage in enumerate(stages):
        for key in (STAGE_NAME, STAGE_AFTER):
            if isinstance(stage, dict) and key in stage and not isinstance(stage[key], str):
                raise TrainConfigError(f"stage {index + 1}: key {key!r}: got "
                                       f"{_quote(stage[key])}, expected a stage name (text)")


def _listed_names(base_names: set) -> str:
    """The base's stage names for a message, sorted (or that it names none)."""
    return ", ".join(sorted(map(str, base_names))) or "it has none named"


def _check_added_stage(index: int, stage: dict, base_names: set, added: list) -> None:
    """Refuse a stage added ``after`` a stage that is neither the base's nor added above
    it (``added``, their names), or one without a new name."""
    where = stage_label(index, stage)
    after = stage[STAGE_AFTER]
    if after not in base_names and after not in added:
        above = f"; added above it: {', '.join(map(str, added))}" if added else ""
        raise TrainConfigError(
            f"{where}: key 'after': got {_quote(after)}, expected the name of a stage of the "
            f"config it extends ({_listed_names(base_names)}) or of a stage added above it"
            f"{above}"
        )
    name = stage.get(STAGE_NAME)
    if name is None or name in base_names:
        raise TrainConfigError(
            f"{where}: a stage added 'after' another needs a new 'name' (one the config it "
            "extends does not use; a stage named like a base stage is merged into it)"
        )
    if name in added:
        raise TrainConfigError(f"{where}: a stage named {_quote(name)} is added above it "
                               "already; each added stage needs its own name")


def _check_dropped_stage(index: int, stage: dict, base_names: set) -> None:
    if stage.get(STAGE_NAME) not in base_names:
        raise TrainConfigError(
            f"{stage_label(index, stage)}: 'drop' needs the 'name' of a stage of the config it "
            f"extends ({_listed_names(base_names)})"
        )
    extra = sorted(str(key) for key in stage if key not in (STAGE_NAME, STAGE_DROP))
    if stage[STAGE_DROP] is not True or extra:
        raise TrainConfigError(
            f"{stage_label(index, stage)}: key 'drop': got {_quote(stage[STAGE_DROP])}"
            + (f" with {', '.join(map(repr, extra))}" if extra else "")
            + ", expected 'drop: true' beside the 'name' of a stage of the config it extends, "
            "alone (it removes that stage)"
        )


def apply_setting(data: dict[str, Any], setting: str) -> None:
    """Apply one ``KEY=VALUE`` (``train.py --set``) to config data, in place.

    ``VALUE`` is read as YAML (``3e-4``, ``[256, 256]``, ``null``, ``{ev: 1.0}``).
    ``KEY`` is a config key, or a dotted path into one: ``opponent_mix.ev`` sets one entry
    of the mapping (the others kept, from the data or the defaults), and
    ``stages.NAME.KEY`` (``NAME`` a stage's name, or its number, 1 = the first) sets a key
    of one stage (``stages.2.opponent_mix.ev`` one entry of that stage's mix, the others
    from the stage or the base).

    Raises:
        TrainConfigError: not ``KEY=VALUE``, a value that is not YAML, an unknown key, or
            a path through something that is not a mapping or a stage.
    """
    key, equals, text = setting.partition("=")
    key = key.strip()
    if not equals or not key:
        raise TrainConfigError(
            f"--set {_quote(setting)}: expected KEY=VALUE, e.g. learning_rate=0.0003, "
            "opponent_mix.ev=0.5 or stages.finetune.total_timesteps=2000000"
        )
    try:
        value = parse_yaml(text)  # as a config file's values: no aliases, dates as text
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or error
        raise TrainConfigError(f"--set {_quote(setting)}: the value is not "
                               f"YAML ({problem})") from None
    if isinstance(value, str) and _EXPONENT_NUMBER.match(value):
        value = float(value)  # YAML 1.1 reads 3e-4 (no dot) as a string
    path = key.split(".")
    if path[0] == "stages" and len(path) > 2:
        stage = _stage_to_set(data, path[1], setting)
        _set_path(stage, path[2:], value, _stage_base(data), setting)
        return
    _set_path(data, path, value, TrainConfig().to_dict(), setting)


#: A number in exponent notation without a decimal point (``3e-4``), which YAML 1.1 reads
#: as a string.
_EXPONENT_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")


def _set_path(target: dict[str, Any], path: list[str], value: Any, fallback: dict[str, Any],
              setting: str) -> None:
    """``target[path[0]][path[1]]... = value``; a mapping missing from ``target`` on the
    way starts as a copy of ``fallback``'s (so one entry changes, the others stay)."""
    try:
        _refuse_unknown_keys({path[0]: None})
    except TrainConfigError as error:
        raise TrainConfigError(f"--set {_quote(setting)}: {error}") from None
    for depth, part in enumerate(path[:-1]):
        current = target.get(part, fallback.get(part) if depth == 0 else None)
        if current is None:
            current = {}
        if not isinstance(current, dict):
            raise TrainConfigError(
                f"--set {_quote(setting)}: {'.'.join(path[: depth + 1])} is not a mapping"
            )
        target[part] = dict(current)
        target = target[part]
    target[path[-1]] = value


def _stage_to_set(data: dict[str, Any], which: str, setting: str) -> dict[str, Any]:
    """The stage of ``data`` that ``stages.WHICH`` names (by name, or number from 1)."""
    stages = data.get("stages")
    if not isinstance(stages, list) or not stages:
        raise TrainConfigError(f"--set {_quote(setting)}: the config has no stages")
    for index, stage in enumerate(stages):
        if isinstance(stage, dict) and (stage.get(STAGE_NAME) == which or str(index + 1) == which):
            stages[index] = dict(stage)
            return stages[index]
    names = ", ".join(stage_label(i, s) for i, s in enumerate(stages))
    raise TrainConfigError(f"--set {_quote(setting)}: no stage {_quote(which)}; the stages "
                           f"are {shorten(str(names), 400)}")


def _stage_base(data: dict[str, Any]) -> dict[str, Any]:
    """What a stage's missing keys come from: the data, then the defaults."""
    return {**TrainConfig().to_dict(), **{k: v for k, v in data.items() if k != "stages"}}


# --- stages ------------------------------------------------------------------------------


def stage_label(index: int, stage: Any, quoted: bool = True) -> str:
    """How messages name stage ``index`` (0 = the first): ``stage 2 ('feeding')``, or
    ``stage 2`` when it has no name (with ``quoted=False``: ``feeding`` or ``stage 2``)."""
    name = stage.get(STAGE_NAME) if isinstance(stage, dict) else None
    if not quoted:
        return name if isinstance(name, str) and name else f"stage {index + 1}"
    return f"stage {index + 1}" + (f" ({_quote(name)})" if isinstance(name, str) and name else "")


def _build_stages(config: TrainConfig) -> list[TrainConfig]:
    """The config of each of ``config.stages``, each checked (keys, values, growth from
    the stage before).

    Raises:
        TrainConfigError: one line naming the stage and the key: a stage that is not a
            mapping or is empty, a name that is not a string or is repeated, a key of
            `RUN_KEYS`, a key of `START_KEYS` after the first stage, an unknown key or a bad
            value, or a network the previous stage's cannot grow into.
    """
    base = config.model_dump(exclude={"stages"})
    built: list[TrainConfig] = []
    seen: set[str] = set()
    for index, stage in enumerate(config.stages):
        label = stage_label(index, stage)
        changes = _stage_changes(stage, index, label, seen)
        try:
            stage_config = TrainConfig(**{**base, **changes})
        except TrainConfigError as error:
            raise TrainConfigError(f"{label}: {error}") from None
        if built:
            _check_growth(built[-1], stage_config, label)
        built.append(stage_config)
    return built


def _stage_changes(stage: Any, index: int, label: str, seen: set[str]) -> dict[str, Any]:
    """The keys stage ``index`` changes, checked as far as they can be alone."""
    if not isinstance(stage, dict):
        raise TrainConfigError(
            f"{label}: got {_show(stage)}, expected a mapping of config keys to the values "
            "this stage changes"
        )
    name = stage.get(STAGE_NAME)
    if STAGE_NAME in stage:
        if not isinstance(name, str) or not name.strip() or name.strip().isdigit():
            raise TrainConfigError(
                f"{label}: key 'name': got {_show(name)}, expected a non-empty string that "
                "is not a number"
            )
        if name in seen:
            raise TrainConfigError(
                f"{label}: key 'name': {_quote(name)} names an earlier stage too")
        seen.add(name)
    changes = {key: value for key, value in stage.items() if key != STAGE_NAME}
    if not changes:
        raise TrainConfigError(
            f"{label}: empty stage; a stage sets at least one config key (e.g. total_timesteps)"
        )
    for key in changes:
        if key in RUN_KEYS:
            raise TrainConfigError(
                f"{label}: config key {key!r} cannot change between stages of one run; set "
                "it once, outside stages"
            )
        if index > 0 and key in START_KEYS:
            raise TrainConfigError(
                f"{label}: config key {key!r} applies to the first stage only (how a new "
                "run's network starts); a later stage continues the network of the stage "
                "before"
            )
    try:
        _refuse_unknown_keys(changes)
    except TrainConfigError as error:
        raise TrainConfigError(f"{label}: {error}") from None
    return changes


def _check_growth(before: TrainConfig, after: TrainConfig, label: str) -> None:
    """Refuse a stage whose network the previous stage's cannot grow into
    (`agents.ppo.checkpoint.widened_state`: as many hidden layers, none narrower, the same
    activation, the same or a later kind of features)."""
    old, new = before.net_arch, after.net_arch
    if len(new) != len(old) or any(n < o for n, o in zip(new, old, strict=True)):
        raise TrainConfigError(
            f"{label}: config key 'net_arch': got {_quote(new)}, which the previous stage's "
            f"{old!r} cannot grow into (layers only widen: as many layers, none narrower)"
        )
    if after.activation != before.activation:
        raise TrainConfigError(
            f"{label}: config key 'activation': got {after.activation!r}, but the previous "
            f"stage's network uses {before.activation!r} (growth keeps the activation)"
        )
    if FEATURES.index(after.features) < FEATURES.index(before.features):
        raise TrainConfigError(
            f"{label}: config key 'features': got {after.features!r}, an earlier kind than "
            f"the previous stage's {before.features!r} (growth only adds inputs: "
            f"{' < '.join(FEATURES)})"
        )


def read_config_file(path: Path) -> dict[str, Any]:
    """The mapping a training-config YAML file holds (an empty file gives ``{}``).

    Raises:
        TrainConfigError: the path is missing or a directory, the file cannot be read or
            decoded, is larger than `skyjo_env.core.safe_yaml.MAX_YAML_BYTES`, is not
            valid YAML or uses anchors, aliases or non-plain tags (the message gives line
            and column), or holds no mapping.
    """
    try:
        return read_yaml_mapping(path, "training config", "key: value")
    except ValueError as error:  # one line, from `skyjo_env.core.safe_yaml.load_yaml_file`
        raise TrainConfigError(str(error)) from None


# --- one-line messages ---------------------------------------------------------------

#: What a field allows, where its type and bounds alone do not say it.
_ALLOWED = {
    "net_arch": f"a list of 1 to {MAX_LAYERS} integers in 1..{MAX_LAYER_WIDTH} (hidden layer "
    "sizes)",
    "opponent_mix": f"a mapping of opponent kinds ({', '.join(OPPONENT_KINDS)}) to finite "
    "weights >= 0 with a positive sum",
    "init_from": "null (the imitation warm start) or the path of a checkpoint .zip",
    "imitation_teacher": f"an agent spec ({_SPEC_FORMS})",
    "eval_opponents": f"a non-empty list of distinct agent specs ({_SPEC_FORMS})",
    "expert_search": "'search' or 'search(OPTIONS)' without a base, e.g. "
    "'search(samples=8,depth=8)' (the base is the current policy)",
    "expert_soft_temperature": "null (fit the searched moves) or a finite number > 0 (the "
    "soft targets' temperature)",
    "stages": "a list of mappings (each the config keys one stage changes, and an optional "
    "name)",
    "ray_address": "null (start a local Ray) or a non-empty Ray address string ('auto', "
    "'ray://host:10001')",
}

_BOUNDS = ((annotated_types.Ge, "ge", ">="), (annotated_types.Gt, "gt", ">"),
           (annotated_types.Le, "le", "<="), (annotated_types.Lt, "lt", "<"))

_TYPE_WORDS = {int: "an integer", float: "a finite number", bool: "true or false",
               str: "a non-empty string"}


def allowed_values(key: str) -> str:
    """What the `TrainConfig` field ``key`` allows, in words (``"an integer >= 1"``)."""
    if key == "rules":  # presets listed when asked, not at import
        return f"a rules preset name ({', '.join(available_presets())}) or a path to a YAML file"
    if key in _ALLOWED:
        return _ALLOWED[key]
    info = TrainConfig.model_fields[key]
    if get_origin(info.annotation) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in get_args(info.annotation))
    bounds = {symbol: getattr(m, attribute) for m in info.metadata
              for kind, attribute, symbol in _BOUNDS if isinstance(m, kind)}
    words = _TYPE_WORDS[info.annotation]
    if info.annotation is int and ">=" in bounds and "<=" in bounds:
        return f"{words} in {bounds['>=']}..{bounds['<=']}"
    limits = " and ".join(f"{symbol} {value}" for symbol, value in bounds.items())
    return f"{words} {limits}" if limits else words


def _quote(value: Any) -> str:
    """``repr(value)`` for a message, at most `VALUE_CHARS` characters."""
    return shorten(repr(value), VALUE_CHARS)


def _show(value: Any) -> str:
    text = _quote(value)
    kind = "null" if value is None else type(value).__name__
    return f"{text} ({kind})"


def _one_line(error: ValidationError, data: dict[str, Any]) -> str:
    """The first problem of ``error`` as one line naming the key (and the others' keys)."""
    problems = error.errors()
    first = problems[0]
    if not first["loc"]:  # a whole-config check, already phrased in `_keys_agree`
        return str(first.get("ctx", {}).get("error", first["msg"]))
    key = str(first["loc"][0])
    message = f"config key {key!r}: got {_show(data.get(key))}, expected {allowed_values(key)}"
    if first["type"] == "value_error":  # a field validator's reason
        message += f" ({first['ctx']['error']})"
    elif len(first["loc"]) > 1:  # inside a list or mapping: say where
        where = "".join(f"[{part!r}]" for part in first["loc"][1:] if part != "[key]")
        message += f" (bad entry {key}{where})"
    others = sorted({str(p["loc"][0]) for p in problems[1:] if p["loc"]} - {key})
    if others:
        message += f"; also bad: {', '.join(map(repr, others))}"
    return message


def _refuse_unknown_keys(data: dict[Any, Any]) -> None:
    known = list(TrainConfig.model_fields)
    unknown = [key for key in data if key not in known]
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    more = (f" (and {len(unknown) - 1} more: {_quote(unknown[1:])})"
            if len(unknown) > 1 else "")
    raise TrainConfigError(
        f"unknown training config key {_quote(key)}{hint}{more}; known "
        f"keys: {', '.join(known)}"
    )
