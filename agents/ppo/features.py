"""Grid features for the PPO networks, computed in torch from the observation vector.

An MLP fed card values as scalars learns "these two cards are equal" only with great
effort, yet equal cards in a column are what Skyjo turns on: three of a kind in a column
clear it. `GridFeaturesExtractor` hands the network, beside the raw observation, the
column (and, in variants, row) arithmetic of its own grid for the two cards it can
place, the discard top and the held card:

========================  ======  ===========================================================
feature                   size    content (per own slot ``s``, card ``c``)
========================  ======  ===========================================================
``discard_matches``       S       face-up column-mates of ``s`` (row-mates when only rows
                                  clear) equal to the discard top, / their number
``discard_clears``        S       1 where placing the discard top at ``s`` clears a line
``discard_drop``          S       expected points the own grid loses by placing the discard
                                  top at ``s`` (face-down cards at the unseen mean, cleared
                                  lines included) / value_scale
``held_matches``          S       the same three for the held card (zeros when the observer
``held_clears``           S       does not know one)
``held_drop``             S
``reveal_clear_chance``   S       for a face-down ``s`` whose line-mates are a face-up set
                                  of equal cards: the chance (card counting) that it shows
                                  their value and the line clears
``unseen_mean``           1       mean value of the cards this seat has not seen
                                  / value_scale
========================  ======  ===========================================================

Everything is a function of the observation, so the features add no information, only
make it easy to use; the environment's observation layout (and its version) is unchanged.
The extractor has no parameters; a checkpoint records ``features: grid`` in its metadata
and the loader (`agents.ppo.checkpoint.build_policy`) rebuilds the extractor from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout

#: per-slot features, in output order (then ``unseen_mean``: 7·S + 1 values in all)
SLOT_FEATURES = (
    "discard_matches",
    "discard_clears",
    "discard_drop",
    "held_matches",
    "held_clears",
    "held_drop",
    "reveal_clear_chance",
)


#: Expected round scores are divided by this in `RiskFeatures` (a 4-player grid at the
#: start of a round is worth about 60 points).
RISK_SCALE = 50.0


def grid_feature_size(rules: SkyjoRules) -> int:
    """Extra features `GridFeaturesExtractor` appends to the observation."""
    return len(SLOT_FEATURES) * rules.num_slots + 1


def line_mates(rules: SkyjoRules) -> list[np.ndarray]:
    """For each line kind that the rules clear, int64 (S, L-1): the other slots of each
    slot's column (rows - 1 of them) or row (cols - 1). Column first."""
    rows, cols = rules.rows, rules.cols
    slots = np.arange(rules.num_slots)
    kinds = []
    if rules.column_elimination and rows >= 2:
        kinds.append(np.array([[r * cols + s % cols for r in range(rows) if r != s // cols]
                               for s in slots], dtype=np.int64))
    if rules.row_elimination and cols >= 2:
        kinds.append(np.array([[(s // cols) * cols + c for c in range(cols) if c != s % cols]
                               for s in slots], dtype=np.int64))
    return kinds


def unseen_probabilities(unseen: torch.Tensor) -> torch.Tensor:
    """The chance that an unseen card has each value: unseen counts float32 (N, V) divided
    by their sum (by 1 when nothing is unseen, giving zeros), float32 (N, V)."""
    return unseen / unseen.sum(dim=1, keepdim=True).clamp(min=1.0)


class _ObservationFeatures(torch.nn.Module):
    """A parameter-free module over observations: index tables and constants are buffers
    that are not saved (a checkpoint records only the features name; they are rebuilt
    from the rules)."""

    def _buffer(self, name: str, array: np.ndarray) -> None:
        self.register_buffer(name, torch.as_tensor(array), persistent=False)


class GridFeatures(_ObservationFeatures):
    """Maps observations float32 (N, O) to the grid features float32 (N, 7·S + 1).

    One fused pass, so that a batch of one costs a few dozen small torch ops rather than a
    hundred, and a large batch a few passes over small tensors: two ``index_select`` calls
    pull the own grid, the two placeable cards and the unseen counts out of the
    observation; face-up values are kept with ``nan`` elsewhere, so one comparison against
    a line's mates is false for face-down and cleared mates alike; the discard top and the
    held card go through the line arithmetic side by side, as a card axis of size 2. Every
    feature is computed with the same float32 operations, in the same order, as the plain
    per-card, per-line formulation (masks applied with ``where`` rather than by
    multiplying, which differs at most in the sign of a zero), so the outputs are equal.
    """

    def __init__(self, rules: SkyjoRules):
        super().__init__()
        layout = ObservationLayout(rules)
        self.slices = layout.describe()
        self.scale = layout.value_scale
        self.num_slots = slots = rules.num_slots
        kinds = line_mates(rules)
        self.num_line_kinds = len(kinds)
        self.mate_counts = [mates.shape[1] for mates in kinds]
        for index, mates in enumerate(kinds):
            self._buffer(f"_mates{index}", mates.reshape(-1))  # (S·(L-1),) for index_select
            self._buffer(f"_first_mate{index}", mates[:, 0].copy())
        cut = self.slices
        # numbers: own values, discard top, held card (all x value_scale), unseen counts
        # (x copies in the deck); flags: own hidden, own cleared, has_held_card
        numbers = [cut["own_values"], cut["discard_top"], cut["held_card"], cut["unseen_counts"]]
        flags = [cut["own_hidden"], cut["own_cleared"], cut["has_held_card"]]
        self._buffer("_number_index", _indices(numbers))
        self._buffer("_flag_index", _indices(flags))
        values = rules.card_values.astype(np.int64)
        self._buffer("_number_scale", np.concatenate([
            np.full(slots + 2, self.scale, np.float32), np.asarray(rules.card_counts, np.float32)]))
        self._buffer("_values", values.astype(np.float32))
        # card value - low -> index into card_values; values off the deck -> V, a zero column
        self.low = int(values.min())
        lookup = np.full(values.max() - self.low + 1, values.size, np.int64)
        lookup[values - self.low] = np.arange(values.size)
        self._buffer("_lookup", lookup)
        self._buffer("_zero", np.zeros((), np.float32))
        self._buffer("_nan", np.full((), np.nan, np.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Grid features of a batch of observations (see the module docstring)."""
        batch, slots, zero = obs.shape[0], self.num_slots, self._zero
        numbers = torch.round(obs.index_select(1, self._number_index) * self._number_scale)
        flags = obs.index_select(1, self._flag_index) > 0.5
        values, cards, unseen = numbers[:, :slots], numbers[:, slots:slots + 2], numbers[:, slots + 2:]
        hidden, cleared, has_held = flags[:, :slots], flags[:, slots:2 * slots], flags[:, 2 * slots:]
        face_up = ~(hidden | cleared)
        probs = unseen_probabilities(unseen)
        mean = (probs * self._values).sum(dim=1, keepdim=True)
        expected = torch.where(face_up, values, torch.where(hidden, mean, zero))
        up_values = torch.where(face_up, values, self._nan)  # nan equals nothing
        card = cards[:, :, None]  # (N, 2, 1): discard top, held card
        slot_prob = self._probability_of(probs, values)

        matches = clears = removed = chance = None
        for index, count in enumerate(self.mate_counts):
            mates = up_values.index_select(1, getattr(self, f"_mates{index}"))
            mates = mates.view(batch, slots, count)  # (N, S, L-1)
            equal = mates[:, None] == card[:, :, :, None]  # (N, 2, S, L-1)
            line_clears = equal.all(dim=3)
            # a line clears only when all its mates are face up, so their sum is finite
            line_removed = torch.where(line_clears, mates.sum(dim=2)[:, None], zero)
            same = (mates == mates[:, :, :1]).all(dim=2)
            first_prob = slot_prob.index_select(1, getattr(self, f"_first_mate{index}"))
            line_chance = torch.where(same, first_prob, zero)
            if index == 0:
                matches = equal.float().mean(dim=3)
                clears, removed, chance = line_clears, line_removed, line_chance
            else:
                clears = clears | line_clears
                removed = removed + line_removed
                chance = torch.maximum(chance, line_chance)
        if matches is None:  # no line clears under these rules
            matches = removed = torch.zeros_like(values)[:, None].expand(-1, 2, -1)
            clears = torch.zeros_like(face_up)[:, None].expand(-1, 2, -1)
            chance = torch.zeros_like(values)
        drop = expected[:, None] - card + torch.where(clears, card, zero) + removed
        known = torch.cat([torch.ones_like(has_held), has_held], dim=1)
        usable = ~cleared[:, None] & known[:, :, None]  # (N, 2, S)
        per_card = torch.stack([torch.where(usable, matches, zero), (clears & usable).float(),
                                torch.where(usable, drop, zero) / self.scale], dim=2)
        return torch.cat([per_card.view(batch, 6 * slots), torch.where(hidden, chance, zero),
                          mean / self.scale], dim=1)

    def _probability_of(self, probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """probs (N, V) at each card value of ``values`` (N, S); 0 for values off the deck."""
        offset = (values - self.low).clamp(0, self._lookup.numel() - 1).long()
        padded = torch.nn.functional.pad(probs, (0, 1))  # column V: values off the deck
        return torch.gather(padded, 1, torch.take(self._lookup, offset))


class FeedingFeatures(_ObservationFeatures):
    """Maps observations float32 (N, O) to what this seat's next discard would give the
    next seat (the one that may take it), float32 (N, S + 2), and with ``waits`` also
    which cards its own lines wait for, float32 (N, 2·S + 3):

    ========================  ======  =======================================================
    feature                   size    content
    ========================  ======  =======================================================
    ``slot_feeds``            S       1 where the own face-up card at ``s``, swapped out to
                                      the discard pile, would let the next seat clear a line
                                      (its other cards of that line face up and equal to it)
    ``held_feeds``            1       the same for the held card (0 when not known)
    ``hidden_feed_chance``    1       the chance (card counting) that an unseen card, e.g.
                                      a face-down one swapped out, would let it clear one
    ``place_clear_chance``    S       (``waits``) for an own slot whose line-mates are face up
                                      and equal: the chance that an unseen card has their
                                      value, i.e. that a drawn card placed there (or the
                                      face-down card there, revealed) clears the line
    ``draw_clear_chance``     1       (``waits``) the chance that an unseen card clears at
                                      least one own line
    ========================  ======  =======================================================

    Matching a pair's value against the unseen-card counts is a lookup an MLP learns
    badly, as it does equality. The next seat's grid is the first opponent block of the
    observation (opponents are in relative seat order). Like `GridFeatures`, a function
    of the observation only.
    """

    def __init__(self, rules: SkyjoRules, waits: bool = False):
        super().__init__()
        layout = ObservationLayout(rules)
        cut = layout.describe()
        self.num_slots = slots = rules.num_slots
        self.scale = layout.value_scale
        self.waits = waits
        self.mate_counts = []
        for index, mates in enumerate(line_mates(rules)):
            self.mate_counts.append(mates.shape[1])
            self._buffer(f"_mates{index}", mates.reshape(-1))

        def next_seat(piece: slice) -> slice:
            return slice(piece.start, piece.start + slots)

        numbers = [cut["own_values"], cut["held_card"], next_seat(cut["opponent_values"]),
                   cut["unseen_counts"]]
        flags = [cut["own_hidden"], cut["own_cleared"], cut["has_held_card"],
                 next_seat(cut["opponent_hidden"]), next_seat(cut["opponent_cleared"])]
        self._buffer("_number_index", _indices(numbers))
        self._buffer("_flag_index", _indices(flags))
        self._buffer("_number_scale", np.concatenate([
            np.full(2 * slots + 1, self.scale, np.float32),
            np.asarray(rules.card_counts, np.float32)]))
        self._buffer("_values", rules.card_values.astype(np.float32))
        self._buffer("_nan", np.full((), np.nan, np.float32))

    def _completing(self, up: torch.Tensor, cleared: torch.Tensor) -> torch.Tensor:
        """For a grid's face-up values ``up`` (N, S; nan elsewhere) and its cleared mask:
        float32 (N, S, K) per slot and line kind, the value that, placed there, clears the
        line (its mates face up and equal; the slot itself not cleared), else nan (K >= 1:
        a nan column when no line clears under these rules)."""
        batch, slots = up.shape
        completing = []
        for index, count in enumerate(self.mate_counts):
            mates = up.index_select(1, getattr(self, f"_mates{index}")).view(batch, slots, count)
            same = (mates == mates[:, :, :1]).all(dim=2) & ~cleared
            completing.append(torch.where(same, mates[:, :, 0], self._nan))
        if not completing:
            return torch.full((batch, slots, 1), float("nan"))
        return torch.stack(completing, dim=2)

    def _value_in(self, wanted: torch.Tensor) -> torch.Tensor:
        """bool (N, V): which card values occur in ``wanted`` (N, ...)."""
        return (self._values[None, :, None] == wanted.reshape(wanted.shape[0], 1, -1)).any(dim=2)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Feeding (and waiting) features of a batch of observations (class docstring)."""
        batch, slots, nan = obs.shape[0], self.num_slots, self._nan
        numbers = torch.round(obs.index_select(1, self._number_index) * self._number_scale)
        flags = obs.index_select(1, self._flag_index) > 0.5
        own, held = numbers[:, :slots], numbers[:, slots:slots + 1]
        upcoming, unseen = numbers[:, slots + 1:2 * slots + 1], numbers[:, 2 * slots + 1:]
        own_hidden, own_cleared = flags[:, :slots], flags[:, slots:2 * slots]
        has_held = flags[:, 2 * slots:2 * slots + 1]
        next_hidden, next_cleared = flags[:, 2 * slots + 1:3 * slots + 1], flags[:, 3 * slots + 1:]
        next_up = torch.where(next_hidden | next_cleared, nan, upcoming)  # nan equals nothing
        wanted = self._completing(next_up, next_cleared).view(batch, 1, -1)  # (N, 1, S·K)
        own_up = torch.where(own_hidden | own_cleared, nan, own)
        slot_feeds = (own_up[:, :, None] == wanted).any(dim=2)
        held_feeds = (held[:, :, None] == wanted).any(dim=2) & has_held
        probs = unseen_probabilities(unseen)
        chance = (probs * self._value_in(wanted)).sum(dim=1, keepdim=True)
        parts = [slot_feeds.float(), held_feeds.float(), chance]
        if self.waits:
            own_wanted = self._completing(own_up, own_cleared)  # (N, S, K)
            is_value = own_wanted[:, :, :, None] == self._values  # (N, S, K, V)
            per_line = (is_value * probs[:, None, None, :]).sum(dim=3)
            parts += [per_line.amax(dim=2),
                      (probs * self._value_in(own_wanted)).sum(dim=1, keepdim=True)]
        return torch.cat(parts, dim=1)


class RiskFeatures(_ObservationFeatures):
    """Maps observations float32 (N, O) to how the round and the game would end if they
    ended now, float32 (N, 2·P + 6): what going out risks, seen from this seat.

    ==========================  ======  ===================================================
    feature                     size    content (seats in relative order, own first)
    ==========================  ======  ===================================================
    ``seat_hidden``             P       each seat's face-down cards / S
    ``seat_expected``           P       each seat's expected round score: face-up cards plus
                                        face-down ones at the unseen mean, / RISK_SCALE
    ``round_margin``            1       own expected round score minus the lowest other
                                        seat's, / RISK_SCALE (>= 0: going out now would
                                        likely be penalised)
    ``fewest_hidden``           1       the fewest face-down cards of any other seat / S
    ``one_away``                1       the share of other seats with at most one face-down
                                        card (they may go out on their next turn)
    ``total_margin``            1       own total minus the lowest other total / target
    ``game_margin``             1       the same with each seat's expected round score
                                        added / target
    ``game_nearness``           1       the highest total plus expected round score of any
                                        seat / target (>= 1: this round likely ends the game)
    ==========================  ======  ===================================================

    In four-player games, going out pays only when the agent beats the lowest of three
    grids, a minimum over sums of masked products that an MLP fits slowly, while a
    penalised round doubles its score. Like `GridFeatures`, a function of the observation
    only.
    """

    def __init__(self, rules: SkyjoRules):
        super().__init__()
        layout = ObservationLayout(rules)
        cut = layout.describe()
        self.num_slots = rules.num_slots
        self.num_players = rules.num_players
        numbers = [cut["own_values"], cut["opponent_values"], cut["unseen_counts"],
                   cut["total_scores"]]
        flags = [cut["own_hidden"], cut["opponent_hidden"], cut["own_cleared"],
                 cut["opponent_cleared"]]
        values = rules.card_values.astype(np.float32)
        self._buffer("_number_index", _indices(numbers))
        self._buffer("_flag_index", _indices(flags))
        seats = rules.num_players * rules.num_slots
        self._buffer("_number_scale", np.concatenate([
            np.full(seats, layout.value_scale, np.float32),
            np.asarray(rules.card_counts, np.float32), np.ones(rules.num_players, np.float32)]))
        self._buffer("_values", values)
        self._buffer("_zero", np.zeros((), np.float32))
        self._buffer("_target", np.full((), rules.target_score, np.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Risk features of a batch of observations (class docstring)."""
        batch, slots, players = obs.shape[0], self.num_slots, self.num_players
        seats = players * slots
        numbers = obs.index_select(1, self._number_index) * self._number_scale
        flags = obs.index_select(1, self._flag_index) > 0.5
        grids = torch.round(numbers[:, :seats]).view(batch, players, slots)
        unseen = torch.round(numbers[:, seats:-players])
        totals = numbers[:, -players:]  # already / target
        hidden = flags[:, :seats].view(batch, players, slots)
        cleared = flags[:, seats:].view(batch, players, slots)
        probs = unseen_probabilities(unseen)
        mean = (probs * self._values).sum(dim=1, keepdim=True)  # (N, 1)
        face_up = ~(hidden | cleared)
        hidden_count = hidden.float().sum(dim=2)  # (N, P)
        expected = torch.where(face_up, grids, self._zero).sum(dim=2) + hidden_count * mean
        others = expected[:, 1:]
        fewest = hidden_count[:, 1:].amin(dim=1, keepdim=True)
        one_away = (hidden_count[:, 1:] <= 1).float().mean(dim=1, keepdim=True)
        end_totals = totals + expected / self._target
        return torch.cat([
            hidden_count / slots, expected / RISK_SCALE,
            (expected[:, :1] - others.amin(dim=1, keepdim=True)) / RISK_SCALE,
            fewest / slots, one_away,
            totals[:, :1] - totals[:, 1:].amin(dim=1, keepdim=True),
            end_totals[:, :1] - end_totals[:, 1:].amin(dim=1, keepdim=True),
            end_totals.amax(dim=1, keepdim=True),
        ], dim=1)


def risk_feature_size(rules: SkyjoRules) -> int:
    """Extra features `RiskFeatures` gives: 2·P + 6."""
    return 2 * rules.num_players + 6


def feeding_feature_size(rules: SkyjoRules, waits: bool = False) -> int:
    """Extra features `FeedingFeatures` gives: S + 2, or 2·S + 3 with ``waits``."""
    return rules.num_slots + 2 + (rules.num_slots + 1 if waits else 0)


def _indices(pieces: list[slice]) -> np.ndarray:
    """int64 indices of the observation covered by ``pieces``, in order."""
    return np.concatenate([np.arange(p.start, p.stop) for p in pieces]).astype(np.int64)


class GridFeaturesExtractor(BaseFeaturesExtractor):
    """SB3 features extractor: the observation followed by its `GridFeatures` and, with
    ``feeding``, its `FeedingFeatures` (with their waiting part when ``waits``).

    Args:
        observation_space: Box of shape (O,), the env's observation space.
        rules: ``SkyjoRules.to_dict()`` of the env (plain data, so SB3 can store it).
        feeding: Append the `FeedingFeatures` (``features: grid_feeding``).
        waits: With ``feeding``, append their waiting part too (``grid_feeding_waits``).
        risk: With ``waits``, append the `RiskFeatures` too (``grid_feeding_waits_risk``).
    """

    def __init__(self, observation_space: spaces.Box, rules: dict[str, Any],
                 feeding: bool = False, waits: bool = False, risk: bool = False):
        parsed = SkyjoRules.from_dict(rules)
        size = int(np.prod(observation_space.shape))
        if size != ObservationLayout(parsed).size:
            raise ValueError(
                f"GridFeaturesExtractor: the observation space has {size} features but the "
                f"rules give {ObservationLayout(parsed).size}"
            )
        if risk and not (feeding and waits):
            raise ValueError("GridFeaturesExtractor: risk features extend grid_feeding_waits; "
                             "pass feeding=True and waits=True with risk=True")
        extra = grid_feature_size(parsed)
        if feeding:
            extra += feeding_feature_size(parsed, waits)
        if risk:
            extra += risk_feature_size(parsed)
        super().__init__(observation_space, features_dim=size + extra)
        #: Equal for two extractors exactly when they compute the same function of an
        #: observation (same rules, same feature set): their rows may be computed together.
        self.function_key = ("GridFeaturesExtractor", parsed, feeding, waits, risk)
        self.grid = GridFeatures(parsed)
        self.feeding = FeedingFeatures(parsed, waits) if feeding else None
        self.risk = RiskFeatures(parsed) if risk else None

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        """float32 (N, O) -> float32 (N, ``features_dim``): the observation, then the
        features (7·S + 1 grid; S + 2 feeding; S + 1 waiting; 2·P + 6 risk)."""
        parts = [observations, self.grid(observations)]
        if self.feeding is not None:
            parts.append(self.feeding(observations))
        if self.risk is not None:
            parts.append(self.risk(observations))
        return torch.cat(parts, dim=1)


def features_extractor_kwargs(features: str, rules: SkyjoRules) -> dict[str, Any]:
    """The ``policy_kwargs`` entries that give a policy the network input ``features``
    (``raw``, ``grid``, ``grid_feeding``, ``grid_feeding_waits`` or
    ``grid_feeding_waits_risk``; see
    `agents.training.config.TrainConfig.features`)."""
    if features == "raw":
        return {}
    return {"features_extractor_class": GridFeaturesExtractor,
            "features_extractor_kwargs": {"rules": rules.to_dict(),
                                          "feeding": features != "grid",
                                          "waits": features.startswith("grid_feeding_waits"),
                                          "risk": features == "grid_feeding_waits_risk"}}


def features_name(extractor: torch.nn.Module) -> str:
    """The ``features`` name of a built policy's features extractor."""
    if not isinstance(extractor, GridFeaturesExtractor):
        return "raw"
    if extractor.feeding is None:
        return "grid"
    if extractor.risk is not None:
        return "grid_feeding_waits_risk"
    return "grid_feeding_waits" if extractor.feeding.waits else "grid_feeding"
