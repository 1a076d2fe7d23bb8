"""Decision-time search (``search:BASE``): determinized rollouts of a base agent.

For every decision row with two or more legal actions, `SearchAgent`:

1. rebuilds an engine game from the observation (`agents.search.observed`), the searching
   seat in seat 0;
2. samples ``K`` games of its information set (`skyjo_env.core.sample_information_set`:
   hidden cards and the draw pile redealt from the unseen cards, fresh random streams);
3. for every legal action and every sample, applies the action, then lets the base agent
   (or ``rollout_agent``: the same network in bfloat16 with ``rollout_precision``)
   play every seat to the end of the round or for ``depth`` further decisions (default
   8: short rollouts, since a whole round's luck drowns the differences between
   actions). Every action of a row is tried on the same ``K`` samples with the same
   random streams (common random numbers), to compare actions on equal luck;
4. values a rollout by the searching seat's round-score margin, the mean of the other
   seats' round scores minus its own (finisher penalty included), and picks the action
   with the best mean over the samples (ties go to the lower action id), but keeps the
   base agent's own choice unless the best one beats it by ``confidence_z`` standard
   errors of their paired difference (`choose`);
5. with ``verify_samples`` = M, tests such a switch again on M fresh samples of the two
   actions alone, and keeps it only if it passes there too (the first test picked the
   best of several means, so it favours luck; the fresh one does not).

A rollout cut by ``depth`` or by the turn cap is valued by the margin of expected round
scores (`expected_round_scores`): face-up cards plus the mean unseen card per face-down
card, no final-reveal eliminations; a seat that has already ended the round takes the
finisher penalty when another seat's expected score is as good (without it, at big
tables, where the others' last turns outlast the rollout, going out would look free).
Another value can replace the margin through ``SearchAgent.value_fn``
(`RoundMarginValue` is the default): it gets the rollout games at their end and which of
them reached the round's end. ``leaf=critic`` (`agents.search.values.CriticValue`) values
them with a PPO base agent's value head, in the training reward's units (round margin /
100, +-1 for the game), and, because that head only ever saw positions where its seat
was to act, a value function with ``own_turn_leaves`` has rollouts cut at the first
decision of seat 0 after ``depth`` decisions (at most ``4 * P`` decisions later).
``top_actions=k`` tries only the ``k`` most probable actions under the base policy
(``prior_fn``) and the base agent's own choice, so more samples or depth fit in the
same time.

``opponents=SPEC`` has another agent (``opponent_agent``, built by `agents.registry` from
the spec, with its own seed) play every seat but seat 0 in the rollouts: each rollout step
asks the rollout agent for the rows where seat 0 is to act and the opponent agent for the
others, one ``act`` call each. Without it (the default) the rollout agent plays every
seat, as before.

``lookahead=two`` looks one decision further where the searching seat decides twice in a
row: draw (then place or discard), take the discard (then place) and discard the drawn
card (then reveal). The one-step search values such an action by the base agent's own
follow-up in the rollout; the two-step search applies it to each sample, tries the
follow-ups (the base agent's choice and the ``top_actions`` most probable, or every legal
one) on that sample and stream, each rolled out as a searched action is (``depth``
counted from the follow-up), and values the action on the sample by one follow-up chosen
from what seat 0 sees after the action alone: the samples are grouped by that
observation (one group after a take or a discard, one per drawn card value after a
draw), and a group's follow-up is the one with the best mean. The best of several noisy
means is biased upwards (the winner's curse), most in the small groups of a draw, so the
choice is cross-fitted (`_cross_fitted`): the samples are split into halves (even and odd
index), each half takes the follow-up the other half's samples of its group chose, and a
group met in one half only takes the base agent's follow-up. Every sample's value thus
comes from a choice made without it, and ``choose``, ``verify_samples`` (the retest values
the same way) and `action_values` read one value per (action, sample) as before. Every
other action, and every row without such an action, keeps its one-step value. It costs
one rollout per follow-up tried instead of one per action: a choose-the-source decision
(draw and take) grows from 2 rollouts per sample to up to 2 x (``top_actions`` + 1), 10 at
``top_actions=4`` and 25 with every legal follow-up on the official grid, and a discard of
the drawn card from 1 to up to ``top_actions`` + 1 reveals.

How the settings compare, per decision (`benchmarks/search_strength.py`) and in games
(``evaluate.py``), is recorded in ``docs/results.md`` ("Search").

With ``luck=adjusted`` every rollout's value has the fitted luck of the cards it met
taken out (`agents.search.luck`): the same expected values, smaller standard errors of
the paired comparisons (`experiments/search_luck.py` measures how much smaller).

Not searched: rows with one legal action (that action), and initial reveals (the base
agent decides them; the rebuilt setup phase is not played on, see `observed`).

All rollouts of all rows of one ``act`` call run in one batch, so a tournament's decisions
are searched together. A greedy network (`agents.search.batching.decides_rows_alone`) is
asked for a step's actions once per distinct row, in calls of a few thousand rows laid
out so that every row's logits round as in one call (`agents.search.batching`): faster,
and the same actions. Above ``max_rollout_games`` rollout games the rows are searched in
chunks, and a single row whose rollouts alone exceed it plays them in several batches of
at most ``max_rollout_games`` games: its samples are drawn once, before the split, and
every rollout game carries its own random stream, so the values are those of one batch
for a base agent that decides each row from that row alone (``ev``, ``greedy``, a greedy
network up to floating-point rounding); a base agent that draws from one generator for a
whole batch (``random``) plays other rollouts when the batches change, but the same ones
for a given ``max_rollout_games``. With ``luck=adjusted`` the luck is fitted over each
chunk of rows, so a split row keeps its values but another chunking of the rows changes
them a little (deterministic for a given ``max_rollout_games``). Every numeric setting has
an upper bound (`OPTION_LIMITS`). With a time
budget, samples are added in passes until ``rows x budget_ms`` is spent (at least one
pass); without one (the default), the agent is deterministic for a fixed seed.

`SearchAgent.action_values` returns what the search measured instead of its pick: each
tried action's mean value and the standard error of its paired advantage over the base
agent's move (soft training targets, `agents.training.expert.soft_search_targets`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import NamedTuple, Protocol

import numpy as np

from agents.search.batching import RolloutActor, unique_row_inverse
from agents.search.luck import FEATURES, before_step, luck_adjusted, step_luck
from agents.search.observed import state_from_observations
from skyjo_env.core import (
    layout,
    legal_action_mask,
    num_actions,
    sample_information_set,
    step,
    unseen_counts,
)
from skyjo_env.core.actions import ActionKind, Phase, action_id
from skyjo_env.core.engine import BatchState
from skyjo_env.core.errors import shorten
from skyjo_env.core.jit import jit
from skyjo_env.core.kernels import apply_finisher_penalty
from skyjo_env.core.rules import MAX_TURNS_PER_ROUND, SkyjoRules
from skyjo_env.encoding import ObservationEncoder, ObservationLayout
from skyjo_env.protocol import Agent

#: Stop rollouts before compacting the batch once fewer than this share still run.
_COMPACT_BELOW = 0.75

#: The decisions a two-step action (draw, take, discard the drawn card) leaves to its seat.
_FOLLOW_UP_PHASES = tuple(int(phase) for phase in (Phase.PLACE_DRAWN, Phase.PLACE_DISCARD,
                                                   Phase.REVEAL_AFTER_DISCARD))


#: Leaf values a spec can name (``search(leaf=...)``).
LEAF_KINDS = ("margin", "critic")

#: Rollout precisions a spec can name (``search(rollout_precision=...)``): those of
#: `agents.ppo.inference.PRECISIONS`, restated so that parsing a spec needs no torch (a
#: test keeps the two equal).
ROLLOUT_PRECISIONS = ("float32", "bfloat16")

#: What a search can do with the luck of its rollouts (``search(luck=...)``).
LUCK_KINDS = ("raw", "adjusted")

#: How far a searched action is looked at before the rollout agent plays on
#: (``search(lookahead=...)``): ``one`` (the action alone), ``two`` (an action after which
#: the searching seat decides again, valued by its best searched follow-up).
LOOKAHEAD_KINDS = ("one", "two")

#: Longest ``opponents`` spec (`agents.registry.MAX_SPEC_LENGTH`, restated so that the
#: options need no registry; a test keeps the two equal).
MAX_OPPONENTS_LENGTH = 1024


#: Upper bound of each numeric search option (a bigger value is a `SearchOptionError`):
#: far above every measured setting (``docs/results.md``, "Search": at most 512 samples,
#: 1024 retest samples), low enough that one decision's work stays bounded. ``depth`` is
#: the engine's turn cap (`skyjo_env.core.rules.MAX_TURNS_PER_ROUND`): a rollout never
#: plays past the round's end, so any deeper setting means "to the round's end";
#: ``max_rollout_games`` bounds the memory of one rollout batch (about 3 kB a game).
OPTION_LIMITS: dict[str, int | float] = {
    "samples": 10_000,
    "depth": MAX_TURNS_PER_ROUND,
    "verify_samples": 10_000,
    "top_actions": 1_000,
    "budget_ms": 600_000.0,
    "max_rollout_games": 1_000_000,
}


class SearchOptionError(ValueError):
    """A search option with a bad value."""


def _shown(value: object) -> str:
    """``repr(value)``, cut to a few dozen characters (a 4,000-digit number is not shown
    whole in a one-line error)."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else (
        f"an int of {len(str(abs(value)))} digits")
    return shorten(text, 60)


def _check_short_text(name: str, value: object, what: str) -> None:
    """Refuse search option ``name`` unless it is a non-empty string of at most
    `MAX_OPPONENTS_LENGTH` characters (``what`` says what it should be)."""
    if not isinstance(value, str) or not value.strip():
        raise SearchOptionError(
            f"search option {name} must be {what} or None, got {_shown(value)}")
    if len(value) > MAX_OPPONENTS_LENGTH:
        raise SearchOptionError(
            f"search option {name} is {len(value):,} characters long; at most "
            f"{MAX_OPPONENTS_LENGTH:,}")


@dataclass(frozen=True)
class SearchOptions:
    """Settings of the search.

    Attributes:
        samples: Sampled games per decision (``K``, 1 to 10,000), each tried with every
            legal action.
        depth: Most decisions a rollout plays after the searched action (1 to 100,000, the
            engine's turn cap: deeper is the round's end anyway) before it is valued by the
            estimate (8: about two turns of each of two players).
        budget_ms: Time budget per searched decision in milliseconds (at most 600,000),
            or None (no budget:
            all ``samples``, deterministic). With a budget the samples come in passes of
            ``max(1, samples // 4)`` and no pass starts once the budget is spent (the
            ``verify_samples`` retest comes after, outside the budget).
        max_rollout_games: Most rollout games stepped together (1 to 1,000,000; bounds
            memory: rows are searched in chunks below it, and a row whose rollouts alone
            exceed it plays them in several batches, see the module docstring).
        confidence_z: The action with the best mean value replaces the base agent's own
            choice only when its mean advantage on the same samples exceeds this many
            standard errors (>= 0; 0 always takes the best mean). Rollout values are
            noisy (a round's luck), and with few samples the plain best mean is mostly
            noise, so switching on it plays worse than the base agent.
        leaf: How rollouts are valued: ``margin`` (`RoundMarginValue`, any base agent) or
            ``critic`` (`agents.search.values.CriticValue`: the value head of a PPO base
            agent, rollouts cut at seat 0's next decision; built by `agents.registry`,
            or pass it as ``value_fn``).
        top_actions: Try at most this many actions per decision (2 to 1,000): the base
            agent's choice and the most probable others under the base policy
            (``prior_fn``), or None for every legal action. Fewer rollouts, so more
            samples or depth fit.
        verify_samples: With ``M`` >= 1 (at most 10,000), a best action that differs from
            the base agent's choice is tested again, against that choice only, on ``M``
            fresh samples, and replaces it only when that fresh paired advantage exceeds
            ``confidence_z`` standard errors (0: no second test, the first samples
            decide). The first samples pick the best of several actions, so its advantage
            on them is biased upwards (the winner's curse); fresh samples give an unbiased
            test, and spend rollouts on the one comparison that decides.
        luck: ``raw`` values rollouts as they ended; ``adjusted`` takes out the fitted
            share of the luck of the cards they turned up, drew and swapped out
            (`agents.search.luck`): the same expected values, less noise between actions.
        opponents: The agent spec (`agents.registry`) that plays every seat but the
            searching one in the rollouts, or None (the rollout agent plays every seat).
            Not a search (no search over a search), at most `MAX_OPPONENTS_LENGTH`
            characters; the registry builds it (``opponent_agent``).
        lookahead: ``one`` values every action by rollouts right after it; ``two`` values
            an action after which the searching seat decides again (draw, take the
            discard, discard the drawn card) by its best searched follow-up, chosen per
            observation with cross-fitting (module docstring).
        critic: With ``leaf=critic``, the path of another network (a skyjo-rl checkpoint
            of the same rules) whose value head values the rollouts' leaves instead of the
            base's, e.g. a critic fitted to the search's own games (``skyjo-distill
            --critic-only``); None: the base's. At most `MAX_OPPONENTS_LENGTH` characters;
            the registry loads it (``value_fn``).

    The defaults come from short runs against ``ev`` (recorded in ``docs/results.md``,
    "Search"): rollouts to the round's end let the round's luck swamp the differences
    between actions, so rollouts are short and cut by the expected-score estimate, and a
    switch needs a clear margin.
    """

    samples: int = 32
    depth: int = 8
    budget_ms: float | None = None
    max_rollout_games: int = 20000
    confidence_z: float = 2.0
    leaf: str = "margin"
    top_actions: int | None = None
    verify_samples: int = 0
    rollout_precision: str = "float32"
    luck: str = "raw"
    opponents: str | None = None
    lookahead: str = "one"
    critic: str | None = None

    def __post_init__(self) -> None:
        top = self.top_actions
        if top is not None and (
            not isinstance(top, (int, np.integer)) or isinstance(top, bool) or top < 2
        ):
            raise SearchOptionError(
                f"search option top_actions must be an int >= 2, got {_shown(top)}")
        if self.leaf not in LEAF_KINDS:
            raise SearchOptionError(
                f"search option leaf must be one of {', '.join(LEAF_KINDS)}, got {self.leaf!r}"
            )
        for name in ("samples", "depth", "max_rollout_games"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise SearchOptionError(
                    f"search option {name} must be an int >= 1, got {_shown(value)}")
        if self.luck not in LUCK_KINDS:
            raise SearchOptionError(
                f"search option luck must be one of {', '.join(LUCK_KINDS)}, got {self.luck!r}"
            )
        if self.rollout_precision not in ROLLOUT_PRECISIONS:
            raise SearchOptionError(
                "search option rollout_precision must be one of "
                f"{', '.join(ROLLOUT_PRECISIONS)}, got {self.rollout_precision!r}"
            )
        if self.lookahead not in LOOKAHEAD_KINDS:
            raise SearchOptionError(
                f"search option lookahead must be one of {', '.join(LOOKAHEAD_KINDS)}, "
                f"got {_shown(self.lookahead)}"
            )
        self._check_opponents()
        self._check_critic()
        verify = self.verify_samples
        if not isinstance(verify, (int, np.integer)) or isinstance(verify, bool) or verify < 0:
            raise SearchOptionError(
                f"search option verify_samples must be an int >= 0, got {_shown(verify)}"
            )
        z = self.confidence_z
        if (
            isinstance(z, bool)
            or not isinstance(z, (int, float, np.integer, np.floating))
            or not np.isfinite(z)
            or z < 0
        ):
            raise SearchOptionError(
                f"search option confidence_z must be a finite number >= 0, got {_shown(z)}"
            )
        budget = self.budget_ms
        if budget is not None and (
            isinstance(budget, bool)
            or not isinstance(budget, (int, float, np.integer, np.floating))
            or not np.isfinite(budget)
            or budget <= 0
        ):
            raise SearchOptionError(
                f"search option budget_ms must be a finite number > 0 or None, got {_shown(budget)}"
            )
        self._check_limits()

    def _check_opponents(self) -> None:
        """Refuse an ``opponents`` spec that is not a short non-empty string, or a search."""
        spec = self.opponents
        if spec is None:
            return
        _check_short_text("opponents", spec, "an agent spec")
        if is_search_spec(spec):
            raise SearchOptionError(
                f"search option opponents={_shown(spec)} is a search: a search in the "
                "rollouts is refused (it multiplies a decision's rollouts, about a hundred "
                "times)")

    def _check_critic(self) -> None:
        """Refuse a ``critic`` path that is not a short non-empty string, or one without
        ``leaf=critic`` (the margin leaf reads no network)."""
        path = self.critic
        if path is None:
            return
        _check_short_text("critic", path, "a checkpoint path")
        if self.leaf != "critic":
            raise SearchOptionError(
                f"search option critic={_shown(path)} needs leaf=critic (the {self.leaf} "
                "leaf reads no value head)")

    def _check_limits(self) -> None:
        """Refuse a value above its `OPTION_LIMITS` bound (the types are checked before)."""
        for name, limit in OPTION_LIMITS.items():
            value = getattr(self, name)
            if value is not None and value > limit:
                raise SearchOptionError(
                    f"search option {name} must be at most {limit:,g}, got {_shown(value)}"
                    if isinstance(limit, float) else
                    f"search option {name} must be at most {limit:,}, got {_shown(value)}"
                )


#: What ``search:ppo:PATH`` searches with, and where ``search(OPTIONS):ppo:PATH`` starts
#: (`search_options`): the critic leaf, the policy's top
#: 4 actions, 64 samples, and a switch retested on 128 fresh samples at z = 0.5: the
#: setting measured best over ``ppo_2p`` (its measurements: ``docs/results.md``, "Search").
PPO_SEARCH = SearchOptions(samples=64, depth=12, confidence_z=0.5, leaf="critic",
                           top_actions=4, verify_samples=128)


def search_options(changes: Mapping[str, object], over_network: bool) -> SearchOptions:
    """The settings of ``search(OPTIONS):BASE``: a starting setting, changed only where
    ``OPTIONS`` names a field.

    A network base (``ppo:PATH``) starts from `PPO_SEARCH`, its measured best, so that
    ``search(samples=16):ppo:PATH`` is that setting with 16 samples; any other base starts
    from the `SearchOptions` defaults (the critic leaf, the priors and the retest of
    `PPO_SEARCH` need a network).

    Args:
        changes: Field name -> value, the options the spec names (``top_actions`` None:
            every legal action).
        over_network: Whether the base agent is a network (``ppo:PATH``).

    Returns:
        The settings.

    Raises:
        SearchOptionError: A name that is no `SearchOptions` field, or a bad value.
    """
    known = {field.name for field in fields(SearchOptions)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise SearchOptionError(
            f"unknown search option {unknown[0]!r}; known: {', '.join(sorted(known))}"
        )
    return replace(PPO_SEARCH if over_network else SearchOptions(), **changes)


class ValueFunction(Protocol):
    """Values rollout games for seat 0 (higher is better for the searching seat)."""

    def __call__(self, state: BatchState, round_ended: np.ndarray) -> np.ndarray:
        """Value of each game: float64 (B,); ``round_ended`` bool (B,)."""


class PriorFunction(Protocol):
    """The base agent's preference for each action (higher: more likely)."""

    def __call__(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """float (N, A) from observations float32 (N, O) and masks bool (N, A)."""


class ActionValues(NamedTuple):
    """The search's evidence on each candidate action of R decisions
    (`SearchAgent.action_values`).

    Attributes:
        means: float64 (R, A), the mean rollout value of each tried action (seat 0's
            units: the value function's), NaN for actions not tried.
        errors: float64 (R, A), the standard error of each tried action's mean paired
            advantage over the base agent's choice (0 for that choice), NaN if not tried.
        base_actions: int64 (R,), the base agent's choices.
    """

    means: np.ndarray
    errors: np.ndarray
    base_actions: np.ndarray


class FollowUps(NamedTuple):
    """The follow-up rollouts of ``lookahead=two`` (`SearchAgent._follow_ups`): each
    two-step action of a row (a pair) applied to each of the row's samples (a game).

    Attributes:
        pair_row, pair_action: int (P,), the row and action of each pair.
        pair, sample: int (G,), the pair and sample index of each game.
        group: int (G,), each game's group: its pair and seat 0's observation after the
            action (the follow-up is chosen per group, on that alone).
        base: int64 (C,), the base agent's follow-up in each group.
        candidates: bool (C, A), the follow-ups tried in each group.
        after: The G games after the action.
        luck: float64 (G, len(FEATURES)), the luck of the action itself, or None
            (``luck=raw``).
        start, action: int (F,), the game and follow-up of each follow-up rollout.
    """

    pair_row: np.ndarray
    pair_action: np.ndarray
    pair: np.ndarray
    sample: np.ndarray
    group: np.ndarray
    base: np.ndarray
    candidates: np.ndarray
    after: BatchState
    luck: np.ndarray | None
    start: np.ndarray
    action: np.ndarray


def expected_grid_scores(state: BatchState) -> np.ndarray:
    """Face-up sum plus, per face-down card, the mean of the cards seat 0 cannot locate.

    Uses only what seat 0 sees in the (sampled) game, not the sampled face-down values:
    a cut rollout's estimate then carries no luck of the redeal. float64 (B, P).
    """
    counts = unseen_counts(state, 0).astype(np.float64)
    mean_unseen = counts @ state.rules.card_values / np.maximum(counts.sum(axis=1), 1.0)
    face_up = np.where(state.slot_state == layout.FACE_UP, state.grid, 0).sum(
        axis=2, dtype=np.int64
    )
    hidden = (state.slot_state == layout.HIDDEN).sum(axis=2)
    return face_up + hidden * mean_unseen[:, None]


def expected_round_scores(state: BatchState) -> np.ndarray:
    """`expected_grid_scores`, with the finisher penalty where a seat has already ended the
    round (its last turns cut off by ``depth``): the finisher's expected score is
    penalised when another seat's expected score is as good (RULES.md §11, on expected
    instead of final scores). Without it a cut rollout made going out look free, most of
    all at big tables, where the others' last turns outlast the rollout. float64 (B, P).
    """
    scores = expected_grid_scores(state)
    _penalise_finishers(scores, state.game[:, layout.FINISHER].astype(np.int64), state.params)
    return scores


@jit
def _penalise_finishers(scores, finisher, params):
    """In place: each row's finisher (``finisher[b] >= 0``) penalised by the engine's own
    rule (`apply_finisher_penalty`), here on float expected scores."""
    for b in range(scores.shape[0]):
        if finisher[b] >= 0:
            scores[b], _ = apply_finisher_penalty(scores[b], finisher[b], params)


def margins(scores: np.ndarray) -> np.ndarray:
    """Seat 0's margin: mean of the other seats' scores minus its own. float64 (B,)."""
    scores = scores.astype(np.float64)
    own = scores[:, 0]
    others = (scores.sum(axis=1) - own) / (scores.shape[1] - 1)
    return others - own


class RoundMarginValue:
    """Round-score margin at the round's end; `expected_round_scores` for a cut rollout."""

    def __call__(self, state: BatchState, round_ended: np.ndarray) -> np.ndarray:
        scores = np.where(
            round_ended[:, None], state.seat[:, :, layout.ROUND_SCORE], expected_round_scores(state)
        )
        return margins(scores)


def _take(state: BatchState, index: np.ndarray) -> BatchState:
    """A new batch of the games ``index`` (int array, repeats allowed) of ``state``."""
    return BatchState(
        state.rules, state.params, state.deck, *(array[index] for array in state.arrays[:9])
    )


class SearchAgent:
    """Decision-time search over a base agent (`agents.search` module docstring).

    Args:
        base: The agent that plays every seat in the rollouts (seat 0 only with an
            ``opponent_agent``) and the initial reveals.
        rules: The rules of the games the agent plays.
        seed: Seed of the agent's own generator (samples); the base agent has its own.
        options: The search settings.
        value_fn: Values finished rollouts for seat 0; `RoundMarginValue` when None.
        prior_fn: Action preferences of the base agent (needed for ``top_actions``).
        rollout_agent: The agent that plays the rollouts, when not ``base`` itself
            (needed for ``rollout_precision=bfloat16``: the base network in bfloat16).
        opponent_agent: The agent that plays every seat but seat 0 in the rollouts (built
            from ``options.opponents`` by `agents.registry`; needed when it is set), or
            None: the rollout agent plays every seat.
    """

    def __init__(
        self,
        base: Agent,
        rules: SkyjoRules,
        seed: int,
        options: SearchOptions | None = None,
        value_fn: ValueFunction | None = None,
        prior_fn: PriorFunction | None = None,
        rollout_agent: Agent | None = None,
        opponent_agent: Agent | None = None,
    ):
        self.base = base
        self.rules = rules
        self.options = options or SearchOptions()
        if self.options.leaf == "critic" and value_fn is None:
            raise SearchOptionError(
                "search option leaf=critic needs value_fn (agents.search.values.CriticValue "
                "over the base agent's policy); agents.registry builds it for 'ppo:PATH' bases"
            )
        self.value_fn = value_fn or RoundMarginValue()
        if self.options.top_actions is not None and prior_fn is None:
            raise SearchOptionError(
                "search option top_actions needs prior_fn (the base policy's action "
                "logits); agents.registry builds it for 'ppo:PATH' bases"
            )
        self.prior_fn = prior_fn
        if self.options.rollout_precision != "float32" and rollout_agent is None:
            raise SearchOptionError(
                f"search option rollout_precision={self.options.rollout_precision} needs "
                "rollout_agent (the base network at that precision); agents.registry builds "
                "it for 'ppo:PATH' bases"
            )
        self.rollout_agent = rollout_agent or base
        if self.options.opponents is not None and opponent_agent is None:
            raise SearchOptionError(
                f"search option opponents={self.options.opponents} needs opponent_agent (the "
                "agent it names); agents.registry builds it"
            )
        self.opponent_agent = opponent_agent
        self.name = f"search:{base.name}"
        self.size = ObservationLayout(rules).size
        self._encoder = ObservationEncoder(rules)
        self._rng = np.random.default_rng(np.random.SeedSequence(seed))
        self._rollout_reads = bool(getattr(self.rollout_agent, "reads_observations", True))
        self._opponent_reads = bool(getattr(opponent_agent, "reads_observations", True))
        #: Most rollout games played in one batch so far (at most ``max_rollout_games``).
        self.largest_batch = 0

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Choose one action per row.

        Args:
            observations: float32 (N, O), each from the seat to act.
            action_masks: bool (N, A).

        Returns:
            int64 (N,) legal actions.

        Raises:
            ValueError: Arrays of the wrong shape, a row without a legal action, or an
                observation no game under these rules can show.
        """
        return self.act_with_values(observations, action_masks)[0]

    def act_with_values(
        self, observations: np.ndarray, action_masks: np.ndarray
    ) -> tuple[np.ndarray, ActionValues]:
        """`act`, plus what the search measured on the way: the same moves, and the
        first stage's `ActionValues` of every row (training targets at no extra cost; the
        retest of ``verify_samples`` is not in them).

        Args:
            observations: float32 (N, O), each from the seat to act.
            action_masks: bool (N, A).

        Returns:
            int64 (N,) legal actions, and `ActionValues` of N rows: NaN means and errors
            and base action -1 in the rows the search does not decide (`searchable_rows`).

        Raises:
            ValueError: As `act`.
        """
        observations, masks = self._checked(observations, action_masks)
        n = observations.shape[0]
        legal_counts = masks.sum(axis=1)
        if n and legal_counts.min() == 0:
            raise ValueError(f"row {int(np.argmin(legal_counts))} has no legal action")
        actions = masks.argmax(axis=1).astype(np.int64)  # the only action where there is one
        evidence = ActionValues(np.full(masks.shape, np.nan), np.full(masks.shape, np.nan),
                                np.full(n, -1, np.int64))
        if n == 0:
            return actions, evidence
        decoded = self._encoder.decode(observations)
        phases = decoded["phase"]
        not_own = np.flatnonzero(decoded["current_seat"] != 0)
        if not_own.size:
            raise ValueError(
                f"observation {int(not_own[0])} is not from the seat to act (its current "
                "seat is not the observer), so its mask is not the observer's"
            )
        setup = np.flatnonzero((phases == Phase.INITIAL_REVEAL) & (legal_counts > 1))
        if setup.size:
            actions[setup] = self.base.act(observations[setup], masks[setup])
        searched = np.flatnonzero(_is_searched(phases, legal_counts))
        if searched.size:
            actions[searched], found = self._search(observations[searched], masks[searched])
            for whole, part in zip(evidence, found, strict=True):
                whole[searched] = part
        return actions, evidence

    def _checked(self, observations, action_masks) -> tuple[np.ndarray, np.ndarray]:
        """The inputs as arrays, float (N, O) and bool (N, A), or a `ValueError` naming
        the wrong shape."""
        observations = np.asarray(observations)
        masks = np.asarray(action_masks, dtype=bool)
        n = observations.shape[0] if observations.ndim == 2 else -1
        if observations.ndim != 2 or observations.shape[1] != self.size:
            raise ValueError(
                f"observations must have shape (N, {self.size}), got {observations.shape}"
            )
        actions_count = num_actions(self.rules.num_slots)
        if masks.shape != (n, actions_count):
            raise ValueError(f"action_masks must have shape ({n}, {actions_count}), "
                             f"got {masks.shape}")
        return observations, masks

    def action_values(self, observations: np.ndarray, masks: np.ndarray) -> ActionValues:
        """What the search knows of each candidate action, without choosing: the mean
        rollout value of every action it tries on ``samples`` samples (no time budget, no
        retest), and the standard error of its paired difference with the base agent's
        choice (training targets that keep the search's evidence, not just its pick).

        Args:
            observations: float32 (R, O), each from the seat to act, none in the setup
                phase (`searchable_rows`).
            masks: bool (R, A), two or more legal actions per row.

        Returns:
            `ActionValues` (NaN for the actions not tried).

        Raises:
            ValueError: Arrays of the wrong shape, or a row the search does not decide
                (setup phase, one legal action).
        """
        observations, masks = self._checked(observations, masks)
        searchable = self.searchable_rows(observations, masks)
        if not searchable.all():
            raise ValueError(f"row {int(np.argmin(searchable))} is not searched (setup phase "
                             "or fewer than two legal actions)")
        base_actions = np.asarray(self.base.act(observations, masks), np.int64)
        candidates = self._candidates(observations, masks, base_actions)
        root = state_from_observations(self.rules, observations)
        values = self._sampled_values(root, candidates, self.options.samples)
        return action_evidence(values, candidates, base_actions)

    def searchable_rows(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Rows the search decides (past the setup phase, two or more legal actions):
        bool (R,) from observations float32 (R, O) and masks bool (R, A)."""
        phases = self._encoder.decode(np.asarray(observations))["phase"]
        return _is_searched(phases, np.asarray(masks).sum(axis=1))

    def _search(
        self, observations: np.ndarray, masks: np.ndarray
    ) -> tuple[np.ndarray, ActionValues]:
        """The best action of every row by the mean rollout value (ties: lower id), kept
        only where it beats the base agent's own choice by ``confidence_z`` standard
        errors of the paired (same samples) difference (and, with ``verify_samples``,
        again on fresh samples; not counted in the time budget); else the base agent's
        choice. int64 (R,), with the `ActionValues` of the first stage."""
        options = self.options
        rows = observations.shape[0]
        root = state_from_observations(self.rules, observations)
        base_actions = np.asarray(self.base.act(observations, masks), np.int64)
        masks = self._candidates(observations, masks, base_actions)
        pass_size = options.samples if options.budget_ms is None else max(1, options.samples // 4)
        passes: list[np.ndarray] = []
        done_samples = 0
        started = time.perf_counter()
        budget_s = None if options.budget_ms is None else rows * options.budget_ms / 1000.0
        while done_samples < options.samples:
            count = min(pass_size, options.samples - done_samples)
            pass_started = time.perf_counter()
            passes.append(self._sampled_values(root, masks, count))
            done_samples += count
            if budget_s is not None:
                now = time.perf_counter()
                if now - started + (now - pass_started) > budget_s:
                    break
        values = np.concatenate(passes, axis=2)
        chosen = choose(values, masks, base_actions, options.confidence_z)
        if options.verify_samples:
            chosen = self._verify(root, masks, base_actions, chosen)
        return chosen, action_evidence(values, masks, base_actions)

    def _sampled_values(self, root: BatchState, masks: np.ndarray, count: int) -> np.ndarray:
        """Rollout values of every row's candidate actions on ``count`` fresh samples per
        row, in chunks of rows below ``max_rollout_games``: float64 (R, A, count)."""
        rows = masks.shape[0]
        # rows per chunk so that chunk rollouts stay under max_rollout_games
        widest = int(self._rollouts_per_sample(masks).max())
        chunk_rows = max(1, self.options.max_rollout_games // (count * widest))
        values = np.zeros((rows, masks.shape[1], count), np.float64)
        for first in range(0, rows, chunk_rows):
            part = np.arange(first, min(rows, first + chunk_rows))
            values[part] = self._rollout_values(root, part, masks[part], count)
        return values

    def _verify(
        self, root: BatchState, masks: np.ndarray, base_actions: np.ndarray, chosen: np.ndarray
    ) -> np.ndarray:
        """``chosen`` where it beats ``base_actions`` on ``verify_samples`` fresh samples
        by ``confidence_z`` standard errors, else the base choice. int64 (R,): ``chosen``
        itself, updated in place."""
        challenged = np.flatnonzero(chosen != base_actions)
        if challenged.size == 0:
            return chosen
        pair = np.zeros((challenged.size, masks.shape[1]), bool)
        pair[np.arange(challenged.size), base_actions[challenged]] = True
        pair[np.arange(challenged.size), chosen[challenged]] = True
        values = self._sampled_values(_take(root, challenged), pair, self.options.verify_samples)
        chosen[challenged] = choose(values, pair, base_actions[challenged],
                                    self.options.confidence_z)
        return chosen

    def _candidates(
        self, observations: np.ndarray, masks: np.ndarray, base_actions: np.ndarray
    ) -> np.ndarray:
        """The actions to try: all legal ones, or with ``top_actions`` the base agent's
        choice and the most probable others under ``prior_fn``. bool (R, A)."""
        top = self.options.top_actions
        if top is None or int(masks.sum(axis=1).max()) <= top:
            return masks
        logits = np.where(masks, self.prior_fn(observations, masks), -np.inf)
        best = np.argsort(-logits, axis=1, kind="stable")[:, :top]
        rows = np.arange(masks.shape[0])
        candidates = np.zeros_like(masks)
        candidates[rows[:, None], best] = True
        candidates[rows, base_actions] = True
        return candidates & masks

    def _rollouts_per_sample(self, masks: np.ndarray) -> np.ndarray:
        """Most rollouts one sample of each row needs: its candidate actions, with
        ``lookahead=two`` each two-step action counted once per follow-up it may try (the
        placements and the discard, or ``top_actions`` and the base's). int (R,)."""
        two_step = self._two_step_actions(masks)
        slots = self.rules.num_slots
        top = self.options.top_actions
        follow_ups = slots + 1 if top is None else min(top + 1, slots + 1)
        return (masks & ~two_step).sum(axis=1) + follow_ups * two_step.sum(axis=1)

    def _two_step_actions(self, masks: np.ndarray) -> np.ndarray:
        """The candidates valued by their best follow-up (``lookahead=two``): draw, take
        the discard and discard the drawn card, after which seat 0 decides again. bool
        (R, A), all False with ``lookahead=one``."""
        two_step = np.zeros_like(masks)
        if self.options.lookahead == "two":
            slots = self.rules.num_slots
            ids = [action_id(ActionKind.DRAW, None, slots),
                   action_id(ActionKind.TAKE_DISCARD, None, slots),
                   action_id(ActionKind.DISCARD_DRAWN, None, slots)]
            two_step[:, ids] = masks[:, ids]
        return two_step

    def _rollout_values(
        self, root: BatchState, part: np.ndarray, masks: np.ndarray, count: int
    ) -> np.ndarray:
        """Value of each (row, legal action, sample): float64 (R, A, count), 0 if illegal.

        The samples of every row are drawn first; the rollouts then run in batches of at
        most ``max_rollout_games`` games (one batch unless a single row needs more), and
        ``luck=adjusted`` fits the luck over all of them, as one batch would. With
        ``lookahead=two`` a two-step action's value is that of its cross-fitted follow-up
        (`_follow_ups`, `_cross_fitted`)."""
        actions_count = masks.shape[1]
        samples = [sample_information_set(root, int(b), 0, count, self._rng) for b in part]
        sampled = _concatenate(samples)
        two_step = self._two_step_actions(masks)
        row_of, first_actions, sample_of = _action_plan(masks & ~two_step, count)
        pool, starts = sampled, row_of * count + sample_of  # the game each rollout starts from
        groups = row_of * actions_count + first_actions  # luck groups: a row's action
        first_luck = follow = None
        if two_step.any():
            follow = self._follow_ups(sampled, two_step, count)
            pool = _concatenate([sampled, follow.after])
            starts = np.concatenate([starts, sampled.batch_size + follow.start])
            first_actions = np.concatenate([first_actions, follow.action])
            groups = np.concatenate([groups, part.size * actions_count
                                     + follow.pair[follow.start] * actions_count
                                     + follow.action])
            first_luck = follow.luck
        batch = self.options.max_rollout_games
        played = [self._rollout(_take(pool, starts[first:first + batch]),
                                first_actions[first:first + batch])
                  for first in range(0, first_actions.size, batch)]
        rollout_values = np.concatenate([values for values, _ in played])
        luck = None if played[0][1] is None else np.concatenate([luck for _, luck in played])
        if luck is not None:
            if first_luck is not None:  # the luck of the two-step action itself (a draw)
                luck[row_of.size:] += first_luck[follow.start]
            rollout_values = luck_adjusted(rollout_values, luck, groups)
        values = np.zeros((part.size, actions_count, count), np.float64)
        values[row_of, first_actions[:row_of.size], sample_of] = rollout_values[:row_of.size]
        if follow is not None:
            _, chosen_values = _cross_fitted(follow, rollout_values[row_of.size:])
            values[follow.pair_row[follow.pair], follow.pair_action[follow.pair],
                   follow.sample] = chosen_values
        return values

    def _follow_ups(self, sampled: BatchState, two_step: np.ndarray, count: int) -> FollowUps:
        """Every two-step action of ``two_step`` (bool (R, A)) applied to each of its row's
        ``count`` samples of ``sampled`` (R * count games, row-major), and the follow-ups
        to try after it: the base agent's choice and, with ``top_actions``, the most
        probable others, or every legal one. Both depend only on what seat 0 sees after the
        action: they are chosen once per group of samples with the same observation."""
        pair_row, pair_action = np.nonzero(two_step)
        pair = np.repeat(np.arange(pair_row.size), count)
        sample = np.tile(np.arange(count), pair_row.size)
        after = _take(sampled, pair_row[pair] * count + sample)
        first = pair_action[pair].astype(np.int64)
        before = before_step(after) if self.options.luck == "adjusted" else None
        events = step(after, first)
        luck = None if before is None else step_luck(before, after, first, events)
        if ((after.current_player != 0) | ~np.isin(after.phase, _FOLLOW_UP_PHASES)).any():
            raise RuntimeError("lookahead=two: a two-step action did not leave seat 0 to "
                               "decide again")
        observations = self._encoder.encode(after, np.zeros(after.batch_size, np.int64))
        masks = legal_action_mask(after)
        seen = unique_row_inverse(observations)
        # a group: one row's action and one observation after it (rows never mix)
        _, first_of, group = np.unique(pair * (int(seen.max()) + 1) + seen.ravel(),
                                          return_index=True, return_inverse=True)
        shown, legal = observations[first_of], masks[first_of]
        base = np.asarray(self.base.act(shown, legal), np.int64)
        candidates = self._candidates(shown, legal, base)
        start, action = np.nonzero(candidates[group])
        return FollowUps(pair_row, pair_action, pair, sample, group.ravel(), base, candidates,
                         after, luck, start, action.astype(np.int64))

    def _rollout(
        self, state: BatchState, first_actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Play ``first_actions`` then the base agent to the round's end or the cut.

        Returns:
            Seat-0 values of every game, float64 (B,), and with ``luck=adjusted`` the luck
            of every game, float64 (B, len(FEATURES)) (`agents.search.luck`), else None.
        """
        batch_size = state.batch_size
        self.largest_batch = max(self.largest_batch, batch_size)
        leaves: list[tuple[np.ndarray, BatchState, np.ndarray]] = []
        ids = np.arange(batch_size)  # original game of each row of ``state``
        running = np.ones(batch_size, bool)
        luck = np.zeros((batch_size, len(FEATURES))) if self.options.luck == "adjusted" else None

        def play(actions: np.ndarray) -> np.ndarray:
            before = before_step(state) if luck is not None else None
            stepped = step(state, actions)
            if before is not None:
                luck[ids] += step_luck(before, state, actions, stepped)
            return stepped

        events = play(first_actions.astype(np.int64))
        depth = 0
        actors = (RolloutActor(self.rollout_agent),
                  None if self.opponent_agent is None else RolloutActor(self.opponent_agent))
        own_turn_leaves = bool(getattr(self.value_fn, "own_turn_leaves", False))
        while True:
            ended = running & ((events & (layout.EVENT_ROUND_ENDED | layout.EVENT_TRUNCATED)) != 0)
            if ended.any():
                rows = np.flatnonzero(ended)
                leaves.append((ids[rows], _take(state, rows),
                               (events[rows] & layout.EVENT_ROUND_ENDED) != 0))
                running &= ~ended
            live = np.flatnonzero(running)
            if live.size and depth >= self.options.depth:
                cut = live
                if own_turn_leaves and depth < self.options.depth + 4 * self.rules.num_players:
                    # wait for seat 0's next decision (a turn is at most 3 decisions)
                    cut = live[state.current_player[live] == 0]
                if cut.size:
                    leaves.append((ids[cut], _take(state, cut), np.zeros(cut.size, bool)))
                    running[cut] = False
                    live = np.flatnonzero(running)
            if live.size == 0:
                return self._leaf_values(leaves, batch_size), luck
            if live.size < _COMPACT_BELOW * state.batch_size:
                state, ids = _take(state, live), ids[live]
                running = np.ones(live.size, bool)
                live = np.arange(live.size)
            events = play(self._rollout_actions(state, live, actors))
            depth += 1

    def _rollout_actions(
        self, state: BatchState, live: np.ndarray,
        actors: tuple[RolloutActor, RolloutActor | None],
    ) -> np.ndarray:
        """The rollout's next action in the games ``live`` (int (L,)) of ``state``, -1
        elsewhere: the rollout agent's in every seat, or with an ``opponent_agent`` its
        own in seat 0 and the opponent's in the others (asked through ``actors``, this
        rollout's `RolloutActor` of each: one ``act`` call each, or for a network one
        per slice of its distinct rows). int64 (B,)."""
        masks = legal_action_mask(state)
        actions = np.full(state.batch_size, -1, np.int64)
        own_actor, opponent_actor = actors
        if opponent_actor is None:
            if live.size == state.batch_size:
                observations = self._observe(state)
                actions[:] = own_actor.act(observations, masks)
            else:
                observations = self._observe(state)[live]
                actions[live] = own_actor.act(observations, masks[live])
            return actions
        own = state.current_player[live] == 0
        reads = (self._rollout_reads and own.any()) or (self._opponent_reads and not own.all())
        observations = (self._encoder.encode(state, state.current_player) if reads
                        else np.zeros((state.batch_size, self.size), np.float32))
        for actor, rows in ((own_actor, live[own]), (opponent_actor, live[~own])):
            if rows.size:
                actions[rows] = actor.act(observations[rows], masks[rows])
        return actions

    def _leaf_values(
        self, leaves: list[tuple[np.ndarray, BatchState, np.ndarray]], batch_size: int
    ) -> np.ndarray:
        """Values of all leaves in one ``value_fn`` call (one network pass for a critic).

        Args:
            leaves: (original game ids int (L,), their games, round ended bool (L,)).
            batch_size: Games in the rollout.

        Returns:
            float64 (batch_size,).
        """
        ids = np.concatenate([leaf[0] for leaf in leaves])
        round_ended = np.concatenate([leaf[2] for leaf in leaves])
        values = np.zeros(batch_size, np.float64)
        values[ids] = self.value_fn(_concatenate([leaf[1] for leaf in leaves]), round_ended)
        return values

    def _observe(self, state: BatchState) -> np.ndarray:
        if not self._rollout_reads:
            return np.zeros((state.batch_size, self.size), np.float32)
        return self._encoder.encode(state, state.current_player)


def choose(
    values: np.ndarray, masks: np.ndarray, base_actions: np.ndarray, confidence_z: float
) -> np.ndarray:
    """Pick an action per row from paired rollout values.

    Args:
        values: float64 (R, A, K), the value of each action on each of the K samples
            (every action on the same samples).
        masks: bool (R, A), the legal actions.
        base_actions: int64 (R,), the base agent's choices (legal).
        confidence_z: The best mean replaces the base choice only when its mean paired
            advantage exceeds this many standard errors (0: always the best mean).

    Returns:
        int64 (R,): the best mean action (lowest id among ties) where it is significantly
        better than the base choice, else the base choice.
    """
    rows = np.arange(values.shape[0])
    mean = np.where(masks, values.mean(axis=2), -np.inf)
    best = mean.argmax(axis=1).astype(np.int64)
    advantage, error = paired_advantage(values[rows, best] - values[rows, base_actions])
    switch = advantage > confidence_z * error
    return np.where(switch, best, base_actions)


def action_evidence(
    values: np.ndarray, candidates: np.ndarray, base_actions: np.ndarray
) -> ActionValues:
    """Summarise paired rollout values as `ActionValues`.

    Args:
        values: float64 (R, A, K), each action's value on each of the same K samples.
        candidates: bool (R, A), the actions tried.
        base_actions: int64 (R,), the base agent's choices (tried).

    Returns:
        Per action the mean value and the standard error of its paired advantage over
        the base choice, NaN where not tried.
    """
    rows = np.arange(values.shape[0])
    _, error = paired_advantage(values - values[rows, base_actions][:, None, :])
    return ActionValues(np.where(candidates, values.mean(axis=2), np.nan),
                        np.where(candidates, error, np.nan), base_actions)


def paired_advantage(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of paired differences over their last axis (the samples).

    Args:
        differences: float (..., K), one action's value minus another's on each of the
            same K samples.

    Returns:
        float64 (...,) means and standard errors (0 with a single sample).
    """
    samples = differences.shape[-1]
    error = (differences.std(axis=-1, ddof=1) / np.sqrt(samples) if samples > 1
             else np.zeros(differences.shape[:-1]))
    return differences.mean(axis=-1), error


def is_search_spec(spec: str) -> bool:
    """Whether the agent spec ``spec`` names a search (``search``, ``search:BASE`` or
    ``search(OPTIONS):BASE``), which may not be searched over or play inside a search."""
    spec = spec.strip()
    return spec == "search" or spec.startswith(("search:", "search("))


def _is_searched(phases: np.ndarray, legal_counts: np.ndarray) -> np.ndarray:
    """The decisions the search makes: past the setup phase (whose reveals the base agent
    decides), with a choice to make. bool (R,) from int (R,) phases and legal counts."""
    return (phases != Phase.INITIAL_REVEAL) & (legal_counts > 1)


def _action_plan(masks: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The one-step rollouts of ``masks`` (bool (R, A)) on ``count`` samples per row, row
    by row, action-major and sample-minor (every action sees the same samples and
    streams): (row, action, sample), int (N,) each."""
    row_of, action_of, sample_of = [], [], []
    for i in range(masks.shape[0]):
        legal = np.flatnonzero(masks[i])
        row_of.append(np.full(legal.size * count, i))
        action_of.append(np.repeat(legal, count))
        sample_of.append(np.tile(np.arange(count), legal.size))
    return np.concatenate(row_of), np.concatenate(action_of), np.concatenate(sample_of)


def _cross_fitted(follow: FollowUps, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each two-step (action, sample)'s value: that of the follow-up chosen without it.

    The samples are split in two halves (even and odd sample index). In each observation
    group the follow-up with the best mean (ties: lower id) on one half is the one whose
    value the other half's samples take, and the other way round, so no sample's value
    comes from a choice its own noise made (the maximum of noisy means is biased upwards,
    most in the small groups a draw splits the samples into). A group with samples in one
    half only takes the base agent's follow-up there: its few samples would pick mostly
    noise, and the base choice is what the one-step search plays after the action.

    Args:
        follow: The follow-ups (`SearchAgent._follow_ups`).
        values: float64 (N,), the rollout value of each ``(follow.start, follow.action)``.

    Returns:
        Per game (``follow.pair``, ``follow.sample`` order) the follow-up chosen for it,
        int64 (G,), and its value there, float64 (G,).
    """
    games, actions_count = follow.pair.size, follow.candidates.shape[1]
    table = np.zeros((games, actions_count))
    table[follow.start, follow.action] = values
    groups = follow.candidates.shape[0]
    half = follow.sample % 2
    best, seen = [], []
    for h in (0, 1):
        inside = half == h
        sums = np.zeros((groups, actions_count))
        np.add.at(sums, follow.group[inside], table[inside])
        sizes = np.bincount(follow.group[inside], minlength=groups)
        means = np.where(follow.candidates, sums / np.maximum(sizes, 1)[:, None], -np.inf)
        best.append(means.argmax(axis=1))
        seen.append(sizes > 0)
    other = 1 - half
    from_other = np.where(other == 0, best[0][follow.group], best[1][follow.group])
    other_seen = np.where(other == 0, seen[0][follow.group], seen[1][follow.group])
    chosen = np.where(other_seen, from_other, follow.base[follow.group]).astype(np.int64)
    return chosen, table[np.arange(games), chosen]


def _concatenate(batches: list[BatchState]) -> BatchState:
    """One batch holding the games of ``batches`` (same rules) in order."""
    if len(batches) == 1:
        return batches[0]
    first = batches[0]
    arrays = [np.concatenate(parts) for parts in zip(*(b.arrays[:9] for b in batches), strict=True)]
    return BatchState(first.rules, first.params, first.deck, *arrays)


__all__ = [
    "OPTION_LIMITS",
    "PPO_SEARCH",
    "ActionValues",
    "LUCK_KINDS",
    "ROLLOUT_PRECISIONS",
    "PriorFunction",
    "RoundMarginValue",
    "SearchAgent",
    "SearchOptionError",
    "SearchOptions",
    "ValueFunction",
    "action_evidence",
    "choose",
    "is_search_spec",
    "search_options",
    "expected_grid_scores",
    "expected_round_scores",
    "margins",
    "paired_advantage",
]
