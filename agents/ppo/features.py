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


class GridFeatures(torch.nn.Module):
    """Maps observations float32 (N, O) to the grid features float32 (N, 7·S + 1)."""

    def __init__(self, rules: SkyjoRules):
        super().__init__()
        layout = ObservationLayout(rules)
        self.slices = layout.describe()
        self.scale = layout.value_scale
        self.num_slots = rules.num_slots
        kinds = line_mates(rules)
        self.num_line_kinds = len(kinds)
        for index, mates in enumerate(kinds):
            self.register_buffer(f"_mates{index}", torch.as_tensor(mates), persistent=False)
        values = rules.card_values.astype(np.int64)
        self.register_buffer("_values", torch.as_tensor(values, dtype=torch.float32),
                             persistent=False)
        self.register_buffer("_counts", torch.as_tensor(rules.card_counts, dtype=torch.float32),
                             persistent=False)
        # value -> index into card_values (-1 for values not in the deck)
        lookup = np.full(values.max() - values.min() + 1, -1, np.int64)
        lookup[values - values.min()] = np.arange(values.size)
        self.low = int(values.min())
        self.register_buffer("_lookup", torch.as_tensor(lookup), persistent=False)

    def _piece(self, obs: torch.Tensor, name: str) -> torch.Tensor:
        return obs[:, self.slices[name]]

    def _card(self, obs: torch.Tensor, name: str) -> torch.Tensor:
        return torch.round(self._piece(obs, name) * self.scale)

    def _chance_of(self, probs: torch.Tensor, card: torch.Tensor) -> torch.Tensor:
        """probs (N, V) gathered at each card value of ``card`` (N, S); 0 off the deck."""
        offset = (card.long() - self.low).clamp(0, self._lookup.numel() - 1)
        index = self._lookup[offset]
        picked = torch.gather(probs, 1, index.clamp(min=0))
        return picked * (index >= 0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Grid features of a batch of observations (see the module docstring)."""
        values = self._card(obs, "own_values")
        hidden = self._piece(obs, "own_hidden") > 0.5
        cleared = self._piece(obs, "own_cleared") > 0.5
        face_up = ~hidden & ~cleared
        unseen = torch.round(self._piece(obs, "unseen_counts") * self._counts)
        probs = unseen / unseen.sum(dim=1, keepdim=True).clamp(min=1.0)
        mean = (probs * self._values).sum(dim=1, keepdim=True)
        expected = torch.where(face_up, values, torch.where(hidden, mean, torch.zeros_like(values)))
        discard = self._card(obs, "discard_top")
        held = self._card(obs, "held_card")
        has_held = self._piece(obs, "has_held_card") > 0.5

        lines = []
        for index in range(self.num_line_kinds):
            mates = getattr(self, f"_mates{index}")
            lines.append((values[:, mates], face_up[:, mates]))  # (N, S, L-1) each

        features = []
        for card, known in ((discard, torch.ones_like(has_held)), (held, has_held)):
            matches = torch.zeros_like(values)
            clears_any = torch.zeros_like(face_up)
            removed = torch.zeros_like(values)
            for kind, (mate_values, mate_up) in enumerate(lines):
                equal = mate_up & (mate_values == card[:, :, None])
                clears = equal.all(dim=2)
                if kind == 0:
                    matches = equal.float().mean(dim=2)
                clears_any = clears_any | clears
                removed = removed + clears * (mate_values * mate_up).sum(dim=2)
            drop = expected - card + clears_any * card + removed
            usable = ~cleared & known
            features += [matches * usable, clears_any * usable, drop * usable / self.scale]

        chance = torch.zeros_like(values)
        for mate_values, mate_up in lines:
            same = mate_up.all(dim=2) & (mate_values == mate_values[:, :, :1]).all(dim=2)
            chance = torch.maximum(chance, same * self._chance_of(probs, mate_values[:, :, 0]))
        features.append(chance * hidden)
        features.append(mean / self.scale)
        return torch.cat([f.float() for f in features], dim=1)


class GridFeaturesExtractor(BaseFeaturesExtractor):
    """SB3 features extractor: the observation followed by its `GridFeatures`.

    Args:
        observation_space: Box of shape (O,), the env's observation space.
        rules: ``SkyjoRules.to_dict()`` of the env (plain data, so SB3 can store it).
    """

    def __init__(self, observation_space: spaces.Box, rules: dict[str, Any]):
        parsed = SkyjoRules.from_dict(rules)
        size = int(np.prod(observation_space.shape))
        if size != ObservationLayout(parsed).size:
            raise ValueError(
                f"GridFeaturesExtractor: the observation space has {size} features but the "
                f"rules give {ObservationLayout(parsed).size}"
            )
        super().__init__(observation_space, features_dim=size + grid_feature_size(parsed))
        self.grid = GridFeatures(parsed)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        """float32 (N, O) -> float32 (N, O + 7·S + 1)."""
        return torch.cat([observations, self.grid(observations)], dim=1)
