"""What the compiled heuristics share: observation decoding, legal-choice helpers, the agent shell.

A heuristic's kernel writes one action id per row, chosen only among the actions that row's
mask allows (so a rule can never need a replacement action), or -1 when the mask allows
no action of the phase the observation shows, and returns `first_illegal` of its output.
`CompiledHeuristic.act` turns a -1, or an illegal id from a broken rule, into a
`HeuristicChoiceError`: an illegal choice is never swapped for some other legal action.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core.actions import Phase, describe_action
from skyjo_env.core.engine import rules_params
from skyjo_env.core.jit import jit
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout

INITIAL_REVEAL = int(Phase.INITIAL_REVEAL)
CHOOSE_SOURCE = int(Phase.CHOOSE_SOURCE)
PLACE_DRAWN = int(Phase.PLACE_DRAWN)
PLACE_DISCARD = int(Phase.PLACE_DISCARD)
REVEAL_AFTER_DISCARD = int(Phase.REVEAL_AFTER_DISCARD)
NUM_PHASES = len(Phase)

# indices into the `offsets` array handed to the kernels
OWN_VALUES, OWN_HIDDEN, OWN_CLEARED = 0, 1, 2
OPP_VALUES, OPP_HIDDEN, OPP_CLEARED = 3, 4, 5
DISCARD_TOP, HELD_CARD, PHASE, UNSEEN, FINAL_LAP, ROUND_TURNS = 6, 7, 8, 9, 10, 11
_OFFSET_PIECES = (
    "own_values",
    "own_hidden",
    "own_cleared",
    "opponent_values",
    "opponent_hidden",
    "opponent_cleared",
    "discard_top",
    "held_card",
    "phase",
    "unseen_counts",
    "final_lap",
    "round_turns",
)


class HeuristicChoiceError(ValueError):
    """A heuristic found no legal action for a row, or (a bug in its rule) chose an illegal one."""


def layout_arrays(rules: SkyjoRules) -> tuple[np.ndarray, np.ndarray, float]:
    """``(offsets, geometry, value_scale)``: where each piece starts in the observation,
    the rules as the engine's kernels read them (`rules_params`), and the value scale."""
    layout = ObservationLayout(rules)
    slices = layout.describe()
    offsets = np.array([slices[name].start for name in _OFFSET_PIECES], dtype=np.int64)
    return offsets, rules_params(rules), layout.value_scale


def check_inputs(observations, action_masks, size: int):
    """Contiguous float32 (N, O) observations and bool (N, A) masks; one row may be 1-D."""
    observations = np.ascontiguousarray(observations, dtype=np.float32)
    action_masks = np.ascontiguousarray(action_masks, dtype=np.bool_)
    if observations.ndim == 1:
        observations, action_masks = observations[None], action_masks.reshape(1, -1)
    if observations.shape[1] != size:
        raise ValueError(
            f"observations have {observations.shape[1]} features; these rules give {size}"
        )
    if not action_masks.any(axis=1).all():
        raise ValueError("every row of action_masks needs at least one legal action")
    return observations, action_masks


def choice_error(name: str, rules: SkyjoRules, phase_start: int, row: int,
                 observation: np.ndarray, mask: np.ndarray, action: int) -> HeuristicChoiceError:
    """The error for one row whose kernel choice ``action`` is -1 or not allowed by ``mask``.

    Args:
        name: The agent's name, for the message.
        rules: The agent's rules (to name actions).
        phase_start: Where the one-hot phase starts in an observation.
        row: The row's index in the batch, for the message.
        observation: float32 (O,), the row's observation.
        mask: bool (A,), the row's legal-action mask.
        action: The kernel's choice; -1 = no legal action of the observed phase.
    """
    phase = Phase(int(np.argmax(observation[phase_start:phase_start + NUM_PHASES])))
    allowed = np.flatnonzero(mask).tolist()
    if action < 0:
        return HeuristicChoiceError(
            f"{name}: row {row}'s observation shows phase {phase.name} but its action mask "
            f"allows no action of that phase (legal ids {allowed}); pass the observation and mask "
            f"of the same seat and state"
        )
    return HeuristicChoiceError(
        f"{name} chose illegal action {describe_action(action, rules.num_slots, rules.cols)} "
        f"in row {row} (phase {phase.name}, legal ids {allowed}): its rule must pick among the legal actions"
    )


# ---------------------------------------------------------------- decoding


@jit
def card(obs, n, index, scale):
    """The card value stored at ``obs[n, index]`` (values are stored divided by ``scale``)."""
    return np.floor(obs[n, index] * scale + 0.5)


@jit
def own_grid(obs, n, offsets, slots, scale, values, hidden, cleared):
    """Decode row ``n``'s own grid into ``values`` (float64), ``hidden`` and ``cleared``."""
    for s in range(slots):
        values[s] = card(obs, n, offsets[OWN_VALUES] + s, scale)
        hidden[s] = obs[n, offsets[OWN_HIDDEN] + s] > 0.5
        cleared[s] = obs[n, offsets[OWN_CLEARED] + s] > 0.5


@jit
def phase_of(obs, n, offsets):
    """The phase id of row ``n`` (its one-hot argmax)."""
    best = 0
    for k in range(NUM_PHASES):
        if obs[n, offsets[PHASE] + k] > obs[n, offsets[PHASE] + best]:
            best = k
    return best


# ---------------------------------------------------------------- legal choices


@jit
def choose_source(mask, slots, take):
    """TAKE_DISCARD if ``take`` and the mask allows it, else DRAW if allowed, else -1.

    The engine always allows DRAW when it asks for a source, so -1 means the observation
    and the mask disagree.
    """
    if take and mask[slots + 1]:
        return slots + 1
    if mask[slots]:
        return slots
    return -1


@jit
def first_illegal(masks, out):
    """The first row ``n`` whose ``out[n]`` is -1 or not allowed by ``masks[n]``, else -1.

    Each kernel ends with this check, so `CompiledHeuristic.act` never returns an illegal
    action and pays nothing in Python when every choice is legal.
    """
    for n in range(out.shape[0]):
        if out[n] < 0 or out[n] >= masks.shape[1] or not masks[n, out[n]]:
            return n
    return -1


@jit
def place_action(slots, slot):
    """The PLACE id of ``slot``, or -1 for no slot (-1)."""
    return slots + 2 + slot if slot >= 0 else -1


class CompiledHeuristic:
    """Shared plumbing of the heuristics: layout arrays, input checks, the kernel call.

    The rules are deterministic functions of the observation, so ``seed`` is accepted
    (the registry passes one to every agent) but unused.
    """

    def __init__(self, rules: SkyjoRules | None, name: str):
        self.name = name
        self.rules = rules or SkyjoRules()
        self.offsets, self.geometry, self.scale = layout_arrays(self.rules)
        self.size = ObservationLayout(self.rules).size

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for a batch: observations float32 (N, O), masks bool (N, A) -> int64 (N,).

        Raises:
            ValueError: Observations of other rules, or a row with no legal action.
            HeuristicChoiceError: A row's mask allows no action of the phase its
                observation shows (they come from different states).
        """
        observations, action_masks = check_inputs(observations, action_masks, self.size)
        out = np.empty(observations.shape[0], np.int64)
        bad = self._decide(observations, action_masks, out)
        if bad >= 0:
            raise choice_error(self.name, self.rules, int(self.offsets[PHASE]), bad,
                               observations[bad], action_masks[bad], int(out[bad]))
        return out

    def _decide(self, observations: np.ndarray, action_masks: np.ndarray,
                out: np.ndarray) -> int:
        """Fill ``out`` with the kernel's choices; returns `first_illegal` of them."""
        raise NotImplementedError
