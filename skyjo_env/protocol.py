"""The agent protocol: the small interface every policy offers to the environments.

An agent acts for many games at once from what its seats may know: the observation
vectors of `skyjo_env.encoding` and the legal-action masks. It owns its randomness, so
swapping an opponent never changes the cards dealt. The environments (single-agent view,
training VecEnv) drive opponents through this protocol; `agents/` builds the baselines and
the PPO adapter on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from skyjo_env.core.jit import jit


@runtime_checkable
class Agent(Protocol):
    """A policy for one or more seats.

    Attributes:
        name: Short name used in reports.

    An agent that chooses from the masks alone may also set ``reads_observations = False``
    (a class or instance attribute; absent means True): the environments then skip
    encoding its seats' observations and hand it rows of unspecified content instead.

    An agent whose choice starts from a function of each observation row alone may offer
    it as ``shared_features`` (`SharedFeatures`; None or absent: not offered), together
    with ``act_on_features(features, action_masks)``, which chooses exactly as ``act``
    from those rows of the function's output. When several agents with equal
    ``shared_features.key`` act in one turn, the training games compute the function once
    over all their rows and hand each agent its own rows (`shared_features`).

    Such an agent may also offer ``shared_acting`` (`SharedActing`; None or absent: not
    offered): when several agents with equal features keys and equal
    ``shared_acting.key`` act in one turn, the training games ask the first of them to
    choose for all their rows in one call (`SharedActing.act_together`); without
    ``shared_features`` it is not used.
    """

    name: str

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Choose one legal action per row.

        Args:
            observations: float32 (N, obs_size), each row one seat's observation.
            action_masks: bool (N, num_actions), True where legal; every row has one.

        Returns:
            int64 (N,) action ids, each legal in its row.
        """
        ...


@runtime_checkable
class SharedFeatures(Protocol):
    """A function of each observation row alone that agents may share (see `Agent`).

    Attributes:
        key: Hashable; equal keys promise the same function, bit for bit, row by row
            (row ``n`` of the output depends on observation ``n`` only, whatever the other
            rows are).
    """

    key: object

    def __call__(self, observations: np.ndarray):
        """float32 (N, obs_size) -> N rows, indexable by an int64 array of row numbers."""
        ...


def shared_features(agent) -> SharedFeatures | None:
    """``agent.shared_features`` when the agent offers one (see `Agent`), else None."""
    return getattr(agent, "shared_features", None)


@runtime_checkable
class SharedActing(Protocol):
    """One call in which several agents sharing their features choose (see `Agent`).

    Attributes:
        key: Hashable; agents whose ``shared_acting.key`` are equal (and whose
            ``shared_features.key`` are equal) may be asked together, through any one of
            them.
    """

    key: object

    def act_together(self, agents: Sequence, members: np.ndarray, features,
                     action_masks: np.ndarray) -> np.ndarray:
        """The actions of several agents for their rows, in one call.

        Args:
            agents: The agents to act, each with an equal ``shared_acting.key``.
            members: int64 (K,), each row's agent, an index into ``agents``.
            features: K rows of the agents' shared features, in row order.
            action_masks: bool (K, A), True where legal; every row has one.

        Returns:
            int64 (K,): row ``k``'s action, the one ``agents[members[k]].act_on_features``
            would choose for it (an implementation says how exactly, e.g. up to float
            rounding at near-ties).
        """
        ...


def shared_acting(agent) -> SharedActing | None:
    """``agent.shared_acting`` when the agent offers one (see `Agent`), else None."""
    return getattr(agent, "shared_acting", None)


@jit
def pick_legal(action_masks, uniforms, out):
    """Row ``n``'s ``floor(uniforms[n] * k)``-th legal action (of its ``k``) into ``out[n]``;
    -1 for a row without any legal action."""
    for n in range(action_masks.shape[0]):
        legal = 0
        for a in range(action_masks.shape[1]):
            legal += action_masks[n, a]
        pick = min(int(uniforms[n] * legal), legal - 1)
        out[n] = -1
        for a in range(action_masks.shape[1]):
            if action_masks[n, a]:
                if pick == 0:
                    out[n] = a
                    break
                pick -= 1


def sample_legal(action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``action_masks`` (bool (N, A)) -> int64 (N,).

    One uniform draw per row from ``rng``; -1 for a row with no legal action.
    """
    masks = np.ascontiguousarray(action_masks, dtype=np.bool_)
    if masks.ndim == 1:
        masks = masks.reshape(1, -1)
    out = np.empty(masks.shape[0], np.int64)
    pick_legal(masks, rng.random(masks.shape[0]), out)
    return out


def reads_observations(agent) -> bool:
    """Whether ``agent`` needs its observations encoded (see `Agent`)."""
    return bool(getattr(agent, "reads_observations", True))


class RandomAgent:
    """Uniform over the legal actions, from its own generator (it never reads the
    observations)."""

    reads_observations = False

    def __init__(self, seed: int | np.random.Generator | None = None, name: str = "random"):
        self.name = name
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Uniformly random legal actions (see `Agent.act`)."""
        return sample_legal(np.asarray(action_masks, dtype=bool), self.rng)
